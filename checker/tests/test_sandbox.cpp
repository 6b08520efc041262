// Containment (docs/grading-security.md): nothing a student's program starts outlives it, however
// it detaches; it cannot reach hidden folders; a killed checker takes every process with it; each
// build and program is bounded (processes, file size, open files, memory where a cgroup can be
// made) and told which bound it hit; as root, builds run as a user of their own.
// Where the kernel gives no namespaces (a container without CAP_SYS_ADMIN), the namespace cases
// say why and stop; the weak mode (a subreaper) is tested everywhere.
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <iostream>
#include <sstream>
#include <thread>

#include "cgroup.hpp"
#include "grade.hpp"
#include "helpers.hpp"
#include "process.hpp"
#include "sandbox.hpp"

using namespace lab;
using namespace lab::test;

namespace {

const std::string kEscaper = LAB_TEST_ESCAPER;

// Sets a policy for one test and puts the previous one back.
struct PolicyScope {
  SandboxPolicy saved = sandbox_policy();
  explicit PolicyScope(SandboxPolicy p) { set_sandbox_policy(std::move(p)); }
  ~PolicyScope() { set_sandbox_policy(saved); }
};

SandboxPolicy policy_of(Containment mode) {
  SandboxPolicy p;
  p.mode = mode;
  return p;
}

// Live (not zombie) processes whose command line holds `token`, seen from here.
int processes_with(const std::string& token) {
  int n = 0;
  DIR* proc = opendir("/proc");
  if (!proc) return -1;
  while (dirent* e = readdir(proc)) {
    if (std::atoi(e->d_name) <= 0) continue;
    const std::string dir = std::string("/proc/") + e->d_name;
    std::string cmdline = read_text(dir + "/cmdline");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (!contains(cmdline, " " + token + " ")) continue;
    const std::string stat = read_text(dir + "/stat");
    if (!contains(stat, ") Z ")) ++n;
  }
  closedir(proc);
  return n;
}

std::string new_token() { return "tok" + random_hex(6); }

bool have_namespaces() {
  std::string why;
  if (namespaces_available(why)) return true;
  MESSAGE("PID and mount namespaces are not available here (" << why << "): namespace cases skipped");
  return false;
}

ProcessResult run_escaper(const std::vector<std::string>& args, const fs::path& out = {},
                          const fs::path& workdir = {}) {
  ProcessOptions p;
  p.argv = {kEscaper};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  p.timeout_s = 10;
  p.stdout_path = p.stderr_path = out;
  p.workdir = workdir;
  return run_process(p);
}

// The strongest containment this machine allows: namespaces, else the subreaper.
SandboxPolicy contained_policy() {
  std::string why;
  return policy_of(namespaces_available(why) ? Containment::namespaces : Containment::weak);
}

// The number after `word` in `text` ("started 23 processes"), or -1.
long number_after(const std::string& text, const std::string& word) {
  const auto at = text.find(word);
  return at == std::string::npos ? -1 : std::atol(text.c_str() + at + word.size());
}

// A folder the build user may write, as the grading build is.
void give_to_build_user(const fs::path& dir) {
  REQUIRE(chown(dir.c_str(), kBuildUser, kBuildUser) == 0);
}

const fs::path kFakeCourse = fs::path(LAB_TEST_DATA_DIR) / "fake-course";

// The fake course's main build, configured (a grading build takes its compilers from there).
fs::path configured_fake_course(const fs::path& dir, const std::string& generator = LAB_TEST_GENERATOR) {
  const fs::path main_build = dir / "build";
  ProcessOptions configure;
  configure.kind = ProcessKind::tool;
  configure.argv = {LAB_TEST_CMAKE, "-S", kFakeCourse.string(), "-B", main_build.string(), "-G", generator};
  configure.stdout_path = configure.stderr_path = dir / "configure.log";
  configure.timeout_s = 120;
  REQUIRE_MESSAGE(run_process(configure).exited_ok(), read_text(configure.stdout_path));
  return main_build;
}

const std::string kGoodExercise =
    "const char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 1.0; }\n";

void detached_processes_die() {
  TempDir dir("lab-sandbox");
  fs::permissions(dir.path(), fs::perms::all);  // writable for anyone: only death stops the write
  for (const std::string how : {"setsid", "double-fork", "daemon"}) {
    CAPTURE(how);
    const std::string token = new_token();
    const fs::path late = dir.path() / ("late-" + how);
    const ProcessResult r = run_escaper({token, "detach", how, late.string(), "300"});
    CHECK(r.exited_ok());
    // Gone when run_process returns, before anyone judges the lesson.
    CHECK(processes_with(token) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    CHECK_FALSE(fs::exists(late));
  }
}

}  // namespace

TEST_SUITE("sandbox") {

TEST_CASE("the system-call filter's probe: on this machine (as on the GPU machines) it works") {
  // The probe installs the filter in a child, is refused a file and is killed for a fork; grade
  // refuses to run where it fails (main.cpp, use_syscall_filter).
  std::string why;
  CHECK_MESSAGE(syscall_filter_available(why), why);
  CHECK(why.empty());
  CHECK(use_syscall_filter(true, true));
  CHECK_FALSE(use_syscall_filter(false, true));  // --no-syscall-filter
  // Where the kernel refuses: grade refuses too, naming why and the way out; run goes on without.
  auto refused = [](std::string& w) {
    w = "seccomp refused the filter: Invalid argument";
    return false;
  };
  try {
    use_syscall_filter(true, true, refused);
    FAIL("grade went on without the filter");
  } catch (const ConfigError& e) {
    CHECK(contains(e.what(), "cannot filter a lesson program's system calls (seccomp refused the filter"));
    CHECK(contains(e.what(), "Pass --no-syscall-filter to grade without it"));
  }
  CHECK_FALSE(use_syscall_filter(true, false, refused));
}

TEST_CASE("weak mode: a detached grandchild (setsid, double fork, daemon) is killed after the program") {
  PolicyScope scope(policy_of(Containment::weak));
  detached_processes_die();
}

TEST_CASE("namespaces: a detached grandchild (setsid, double fork, daemon) dies with the program") {
  if (!have_namespaces()) return;
  PolicyScope scope(policy_of(Containment::namespaces));
  detached_processes_die();
}

TEST_CASE("namespaces: a hidden folder cannot be read or written; the work folder and the program can") {
  if (!have_namespaces()) return;
  TempDir dir("lab-sandbox");
  const fs::path secret = dir.path() / "other-student";
  write_text(secret / "exercise.cu", "TOP SECRET kernel\n");
  const fs::path work = dir.path() / "work";
  fs::create_directories(work);
  SandboxPolicy policy = policy_of(Containment::namespaces);
  policy.hide_from_programs = {secret, dir.path()};  // the program lives elsewhere; work is shown
  PolicyScope scope(policy);

  const fs::path out = work / "out.txt";
  const std::string token = new_token();
  ProcessResult r = run_escaper({token, "read", (secret / "exercise.cu").string()}, out, work);
  CHECK(r.exited_ok());
  std::string said = read_text(out);
  CHECK_FALSE(contains(said, "TOP SECRET"));
  CHECK(contains(said, "cannot read"));

  r = run_escaper({token, "write", (secret / "planted.txt").string()}, out, work);
  CHECK(contains(read_text(out), "cannot write"));
  CHECK_FALSE(fs::exists(secret / "planted.txt"));

  r = run_escaper({token, "write", (work / "result.json").string()}, out, work);
  CHECK(contains(read_text(out), "wrote"));
  CHECK(fs::exists(work / "result.json"));
}

// What a build started under the current policy reads from @p file (the escaper's "read": the
// file's text, or why it cannot), through @p out, which the checker writes outside the namespace.
static std::string build_reads(const fs::path& file, const fs::path& out) {
  ProcessOptions p;
  p.kind = ProcessKind::build;
  p.argv = {kEscaper, new_token(), "read", file.string()};
  p.stdout_path = out;
  CHECK(run_process(p).exited_ok());
  return read_text(out);
}

TEST_CASE("namespaces: a build sees the folders shown to it, but not what is hidden inside them") {
  if (!have_namespaces()) return;
  TempDir dir("lab-sandbox");
  const fs::path home = dir.path() / "home", course = home / "course";
  write_text(course / "lessons" / "harness.txt", "HARNESS\n");
  write_text(course / "solutions" / "answer.txt", "ANSWER\n");
  write_text(home / "private.txt", "PRIVATE\n");
  SandboxPolicy policy = policy_of(Containment::namespaces);
  policy.hide_from_builds = {home, course / "solutions"};  // as grade hides $HOME and the solutions
  policy.show_to_builds = {course};
  PolicyScope scope(policy);
  const fs::path out = dir.path() / "out.txt";  // written by the checker, outside the namespace
  CHECK(build_reads(course / "lessons" / "harness.txt", out) == "HARNESS\n");
  CHECK(contains(build_reads(course / "solutions" / "answer.txt", out), "cannot read"));
  CHECK(contains(build_reads(home / "private.txt", out), "cannot read"));
}

TEST_CASE("namespaces: a course under /tmp stays visible to its builds behind their private /tmp") {
  if (!have_namespaces()) return;
  TempDir dir("lab-sandbox");  // under /tmp (or $TMPDIR), as a copy of the course may be
  const fs::path course = dir.path() / "course", main_build = course / "build" / "release",
                 grading = course / "build" / "grading-selftest", deps = dir.path() / "deps";
  write_text(course / "lessons" / "harness.txt", "HARNESS\n");
  write_text(grading / "CMakeCache.txt", "GRADING\n");
  write_text(deps / "include" / "dep.hpp", "DEP\n");
  write_text(main_build / "CMakeCache.txt", "LAB_DEPS_DIR:PATH=" + deps.string() + "\n");
  const std::vector<fs::path> shown = shown_to_builds(course, grading, main_build);
  CHECK(shown == std::vector<fs::path>{course, grading, main_build / "_deps", deps});
  TempDir work("lab-sandbox-work");
  const fs::path out = work.path() / "out.txt";
  auto reads_with = [&](const std::vector<fs::path>& show, const fs::path& file) {
    SandboxPolicy policy = policy_of(Containment::namespaces);
    policy.private_tmp = true;
    policy.show_to_builds = show;
    PolicyScope scope(policy);
    return build_reads(file, out);
  };
  for (const fs::path& file :
       {course / "lessons" / "harness.txt", grading / "CMakeCache.txt", deps / "include" / "dep.hpp"})
    CHECK(reads_with(shown, file) == read_text(file));
  // What selftest's builds had before: nothing shown, so a course under /tmp was not there.
  if (dir.path().string().rfind("/tmp/", 0) == 0)
    CHECK(contains(reads_with({}, grading / "CMakeCache.txt"), "cannot read"));
}

TEST_CASE("namespaces: every folder anyone may write is the run's own (/var/tmp, /run/lock ...)") {
  // Issue 48: a submission left 200,001 files in /var/tmp and /run/lock, shared between students,
  // and the next student's correct lesson 11 was graded 0/10.
  const std::vector<std::string>& dirs = sandbox_detail::private_folders();
  CHECK(&dirs == &sandbox_detail::private_folders());  // scanned once per process, not per run
  CHECK(std::find(dirs.begin(), dirs.end(), "/tmp") != dirs.end());
  for (const char* shared : {"/var/tmp", "/run/lock", "/dev/shm"})
    if (fs::is_directory(shared) && !fs::is_symlink(shared))
      CHECK(std::find(dirs.begin(), dirs.end(), shared) != dirs.end());
  if (!have_namespaces() || !fs::is_directory("/var/tmp")) return;
  const fs::path before = fs::path("/var/tmp") / ("lab-left-" + random_hex(4));
  write_text(before, "previous student's cache\n");
  // Readable by all, not executable: an executable named on the command line is shown to a run.
  fs::permissions(before, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
  SandboxPolicy policy = policy_of(Containment::namespaces);
  policy.private_tmp = true;
  PolicyScope scope(policy);
  TempDir work("lab-sandbox-work");
  const fs::path out = work.path() / "out.txt";
  run_escaper({new_token(), "read", before.string()}, out, work.path());
  CHECK(contains(read_text(out), "cannot read"));  // not there: the run's /var/tmp is empty
  const fs::path left = fs::path("/var/tmp") / ("lab-leaves-" + random_hex(4));
  run_escaper({new_token(), "write", left.string()}, out, work.path());
  CHECK(contains(read_text(out), "wrote " + left.string()));
  CHECK_FALSE(fs::exists(left));  // and what it wrote there went with the run
  fs::remove(before);
}

TEST_CASE("namespaces: a private /tmp, and as root a program runs as uid 65534") {
  if (!have_namespaces()) return;
  TempDir dir("lab-sandbox");  // under /tmp (or $TMPDIR): the next student's files would be here
  write_text(dir.path() / "left-behind.txt", "previous student's output\n");
  SandboxPolicy policy = policy_of(Containment::namespaces);
  policy.private_tmp = true;
  policy.run_as_nobody = true;
  PolicyScope scope(policy);
  TempDir work("lab-sandbox-work");
  const fs::path out = work.path() / "out.txt";
  run_escaper({new_token(), "read", (dir.path() / "left-behind.txt").string()}, out, work.path());
  const bool tmp_hidden = dir.path().string().rfind("/tmp/", 0) == 0;
  if (tmp_hidden) CHECK(contains(read_text(out), "cannot read"));

  if (geteuid() != 0) {
    MESSAGE("not root: the uid 65534 case needs root");
    return;
  }
  // A file only root may read, in a folder the program can see (its work folder: /var/tmp is
  // the run's own now).
  const fs::path shown = work.path() / ("lab-sandbox-" + random_hex(4));
  write_text(shown, "root only\n");
  fs::permissions(shown, fs::perms::owner_read | fs::perms::owner_write);
  run_escaper({new_token(), "read", shown.string()}, out, work.path());
  const std::string said = read_text(out);
  fs::remove(shown);
  CHECK_FALSE(contains(said, "root only"));
  CHECK(contains(said, "Permission denied"));

  // Its home is its work folder, not the grader's (a tool that looks into $HOME, such as ncu,
  // would meet "Permission denied" in /root and not start).
  ProcessOptions p;
  p.argv = {"/bin/sh", "-c", "echo \"home=$HOME\"; id -u"};
  p.workdir = work.path();
  p.stdout_path = out;
  REQUIRE(run_process(p).exited_ok());
  CHECK(read_text(out) == "home=" + work.path().string() + "\n65534\n");
}

TEST_CASE("namespaces: a program writes its record through the descriptor it is handed, never by name") {
  if (!have_namespaces()) return;
  if (geteuid() != 0) {
    MESSAGE("not root: the uid 65534 case needs root");
    return;
  }
  SandboxPolicy policy = policy_of(Containment::namespaces);
  policy.run_as_nobody = true;
  PolicyScope scope(policy);
  TempDir records("lab-sandbox-records");  // the checker's own folder (mode 0700, root's)
  TempDir work("lab-sandbox-work");
  const fs::path record = records.path() / "record-0.txt";
  const fs::path out = work.path() / "out.txt";
  ProcessOptions p;
  // run_process appends "--record-fd N": $1 and $2 of the script.
  p.argv = {"/bin/bash", "-c",
            "printf 'param\\tsteps\\t7\\n' >&\"$2\"; cat '" + record.string() +
                "' 2>/dev/null || echo cannot-open; id -u",
            "sh"};
  p.workdir = work.path();
  p.stdout_path = out;
  p.record_path = record;
  REQUIRE(run_process(p).exited_ok());
  CHECK(read_text(record) == "param\tsteps\t7\n");
  CHECK(read_text(out) == "cannot-open\n65534\n");
  CHECK((fs::status(record).permissions() & (fs::perms::group_all | fs::perms::others_all)) ==
        fs::perms::none);
}

TEST_CASE("namespaces: a SIGKILLed checker leaves no process of the run behind") {
  if (!have_namespaces()) return;
  const std::string token = new_token();
  const pid_t checker = fork();
  REQUIRE(checker >= 0);
  if (checker == 0) {
    // A checker-like process: contained run of a program that detaches and stays.
    set_sandbox_policy(policy_of(Containment::namespaces));
    ProcessOptions p;
    p.argv = {kEscaper, token, "hold", "setsid"};
    p.timeout_s = 60;
    run_process(p);
    _exit(0);
  }
  bool running = false;
  for (int i = 0; i < 500 && !running; ++i) {
    running = processes_with(token) >= 2;  // the program and its detached child
    if (!running) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(running);
  kill(checker, SIGKILL);
  waitpid(checker, nullptr, 0);
  int left = -1;
  for (int i = 0; i < 200 && left != 0; ++i) {
    left = processes_with(token);
    if (left != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(left == 0);
}

TEST_CASE("a sandbox that cannot be set up is a start failure that says why, not a verdict") {
  if (!have_namespaces()) return;
  SandboxPolicy policy = policy_of(Containment::namespaces);
  PolicyScope scope(policy);
  ProcessOptions p;
  p.argv = {"/nonexistent/program"};
  const ProcessResult r = run_process(p);
  CHECK_FALSE(r.started);
  CHECK(r.start_error == "No such file or directory");
}

TEST_CASE("containment is chosen or refused with the reason") {
  std::string note;
  CHECK(choose_containment("weak", note) == Containment::weak);
  CHECK(note.empty());
  std::string why;
  if (namespaces_available(why)) {
    CHECK(choose_containment("namespaces", note) == Containment::namespaces);
    CHECK(choose_containment("auto", note) == Containment::namespaces);
  } else {
    MESSAGE("no namespaces here (" << why << "): the refusal is checked instead");
    CHECK_THROWS_WITH_AS(choose_containment("namespaces", note),
                         doctest::Contains("--containment=weak"), ConfigError);
    CHECK(choose_containment("auto", note) == Containment::weak);
    CHECK(contains(note, "containment: weak"));
  }
}

TEST_CASE("limits: a program that starts processes without end is stopped at its process limit") {
  SandboxPolicy policy = contained_policy();
  policy.run_as_nobody = true;
  policy.program_limits.processes = 24;
  PolicyScope scope(policy);
  if (geteuid() != 0 && !cgroup_support().processes) {
    MESSAGE("neither root nor a cgroup here (" << cgroup_support().why_not << "): nothing bounds processes");
    return;
  }
  TempDir work("lab-sandbox-work");
  const fs::path out = work.path() / "out.txt";
  const std::string token = new_token();
  // Stops by itself at 200, so that a checker without the limit fails here instead of forking on.
  const ProcessResult r = run_escaper({token, "fork-many", "200"}, out, work.path());
  const std::string said = read_text(out);
  INFO(said);
  CHECK(r.exited_ok());
  const long started = number_after(said, "started ");
  CHECK(started >= 0);
  CHECK(started < 24);
  CHECK(contains(said, "fork: Resource temporarily unavailable"));
  if (cgroup_support().processes) {  // the kernel counted the refusals: the checker can say why
    CHECK(contains(r.limit, "tried to run more than 24 processes and threads at once"));
    CHECK(contains(describe(r, 10), "exited with code 0: it tried to run more than 24 processes"));
  }
  CHECK(processes_with(token) == 0);  // and every one of them is gone
}

TEST_CASE("limits: a program that writes a huge file is killed at the file size limit, and told so") {
  SandboxPolicy policy = contained_policy();
  policy.run_as_nobody = true;
  policy.program_limits.file_bytes = 1 << 20;
  PolicyScope scope(policy);
  TempDir work("lab-sandbox-work");
  const fs::path big = work.path() / "big.bin";
  const ProcessResult r = run_escaper({new_token(), "write-big", big.string(), "64"}, work.path() / "out.txt", work.path());
  CHECK(r.signal == SIGXFSZ);
  CHECK(fs::file_size(big) == 1 << 20);
  CHECK(contains(describe(r, 10), "killed by signal 25 (File size limit exceeded): it wrote a file of more "
                                  "than 1 MiB, the most one file may hold here"));
}

TEST_CASE("limits: a program that opens files without end is refused past its limit") {
  SandboxPolicy policy = contained_policy();
  policy.program_limits.open_files = 32;
  PolicyScope scope(policy);
  TempDir work("lab-sandbox-work");
  const fs::path out = work.path() / "out.txt";
  const ProcessResult r = run_escaper({new_token(), "open-many", "1000"}, out, work.path());
  const std::string said = read_text(out);
  INFO(said);
  CHECK(r.exited_ok());
  // The standard streams (and whatever else it inherited) count too; its own output says why.
  const long opened = number_after(said, "opened ");
  CHECK(opened > 0);
  CHECK(opened <= 32 - 3);
  CHECK(contains(said, "then: Too many open files"));
}

TEST_CASE("limits: a program over its memory limit is killed, and told so (where a cgroup can be made)") {
  if (!cgroup_support().memory) {
    MESSAGE("no cgroup for memory here (" << cgroup_support().why_not << "): memory is not bounded");
    return;
  }
  SandboxPolicy policy = contained_policy();
  policy.program_limits.memory_bytes = 64 << 20;
  PolicyScope scope(policy);
  TempDir work("lab-sandbox-work");
  const fs::path out = work.path() / "out.txt";
  const ProcessResult r = run_escaper({new_token(), "allocate", "512"}, out, work.path());
  INFO(read_text(out));
  CHECK(r.signal == SIGKILL);
  CHECK(contains(describe(r, 10), "its processes used more than 64 MiB of memory together, the limit here"));
  CHECK_FALSE(contains(read_text(out), "allocated"));
}

TEST_CASE("builds: as root a build runs as uid 65533; a file it writes is bounded, and its tools say so") {
  if (geteuid() != 0) {
    MESSAGE("not root: builds run as the grader's own user");
    return;
  }
  TempDir dir("lab-sandbox-build");
  give_to_build_user(dir.path());
  SandboxPolicy policy = contained_policy();
  policy.unprivileged_builds = true;
  policy.private_tmp = true;
  policy.show_to_builds = {dir.path()};  // in the private /tmp, as the grading build can be
  policy.build_limits.file_bytes = 1 << 20;
  PolicyScope scope(policy);
  CHECK(builds_run_as_build_user());
  CHECK(contains(describe_policy(policy), "builds run as uid 65533"));

  ProcessOptions p;
  p.kind = ProcessKind::build;
  p.argv = {"/usr/bin/id", "-u"};
  p.stdout_path = dir.path() / "id.txt";
  CHECK(run_process(p).exited_ok());
  CHECK(read_text(dir.path() / "id.txt") == "65533\n");

  // A build's file size limit does not kill the tool (the grading build's logs say the rest).
  p.argv = {kEscaper, new_token(), "write-big", (dir.path() / "huge.o").string(), "8"};
  p.stdout_path = dir.path() / "out.txt";
  const ProcessResult r = run_process(p);
  CHECK(r.exited_ok());
  CHECK(contains(read_text(p.stdout_path), "wrote 1 MiB, then: File too large"));
  struct stat st {};
  CHECK(stat((dir.path() / "huge.o").c_str(), &st) == 0);
  CHECK(st.st_uid == kBuildUser);
}

TEST_CASE("grading build: as root the student's file compiles as uid 65533, which cannot read root's files") {
  if (geteuid() != 0) {
    MESSAGE("not root: builds run as the grader's own user");
    return;
  }
  TempDir tmp("lab-sandbox-course");
  fs::permissions(tmp.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);  // weak mode: reachable
  const fs::path source = kFakeCourse, main_build = configured_fake_course(tmp.path());
  const fs::path grading = tmp.path() / "grading";

  SandboxPolicy policy = contained_policy();
  policy.unprivileged_builds = true;
  policy.private_tmp = true;
  policy.hide_from_builds = {source / "solutions"};
  policy.show_to_builds = {source, grading};
  policy.build_limits.file_bytes = 3 << 20;
  PolicyScope scope(policy);
  GradingBuild build(source, main_build, grading, 2);
  build.prepare();
  INFO(read_text(grading / "build-user.log"));
  REQUIRE(builds_run_as_build_user());  // the starter compiled as uid 65533: no fallback to root

  LessonConfig lesson;
  lesson.name = "90-fake";
  const fs::path exercise = tmp.path() / "alice" / "90-fake" / "exercise.cu";
  write_text(exercise, kGoodExercise);
  const GradingBuild::Built ok = build.build(lesson, exercise);
  CHECK_MESSAGE(ok.ok, ok.message << ok.output);
  struct stat st {};
  CHECK(stat(ok.program.c_str(), &st) == 0);
  CHECK(st.st_uid == kBuildUser);

  // A file only root may read, in a folder the build sees: the compiler, as uid 65533, cannot.
  const fs::path secret = grading / "secret.h";
  write_text(secret, "ROOT_ONLY_TOKEN\n");
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  write_text(exercise, "#include \"" + secret.string() + "\"\n");
  const GradingBuild::Built up_front = build.build(lesson, exercise);  // refused before any compiler
  CHECK_FALSE(up_front.ok);
  CHECK(contains(up_front.message, "names a file by its absolute path"));
  // Staged past that check, the compiler itself cannot read it.
  write_text(grading / "staging" / "90-fake" / "exercise.cu", "#include \"" + secret.string() + "\"\n");
  const GradingBuild::Built refused = build.build(lesson);
  CHECK_FALSE(refused.ok);
  CHECK(contains(refused.output, "Permission denied"));
  CHECK_FALSE(contains(refused.output + read_text(grading / "logs" / "90-fake.log"), "ROOT_ONLY_TOKEN"));

  // An object file past the build's file size limit: the student is told which limit.
  write_text(exercise, "char big[16 << 20] = {1};\nconst char* exercise_mode() { return big; }\n"
                       "double exercise_ms() { return 1.0; }\n");
  const GradingBuild::Built huge = build.build(lesson, exercise);
  CHECK_FALSE(huge.ok);
  CHECK(contains(huge.message, "went over a limit: a file it wrote grew past 3 MiB, the most one file may hold here"));
  build.clear_student_files();
}

TEST_CASE("grading build: where uid 65533 cannot reach the course, builds run as root, and say why") {
  if (geteuid() != 0) {
    MESSAGE("not root: builds run as the grader's own user");
    return;
  }
  TempDir tmp("lab-sandbox-course");  // mode 0700: in weak mode nothing hides or shows folders
  const fs::path main_build = configured_fake_course(tmp.path()), grading = tmp.path() / "grading";
  SandboxPolicy policy = policy_of(Containment::weak);
  policy.unprivileged_builds = true;
  PolicyScope scope(policy);
  GradingBuild build(kFakeCourse, main_build, grading, 2);
  std::ostringstream said;
  std::streambuf* const saved = std::cerr.rdbuf(said.rdbuf());
  build.prepare();
  std::cerr.rdbuf(saved);
  CHECK_FALSE(builds_run_as_build_user());
  CHECK_FALSE(contains(describe_policy(sandbox_policy()), "uid 65533"));
  CHECK(contains(said.str(), "lab-check: builds run as root: as uid 65533 the grading build could not compile"));
  CHECK(contains(said.str(), "must be reachable by other users"));

  LessonConfig lesson;
  lesson.name = "90-fake";
  const fs::path exercise = tmp.path() / "alice" / "90-fake" / "exercise.cu";
  write_text(exercise, kGoodExercise);
  const GradingBuild::Built ok = build.build(lesson, exercise);
  CHECK_MESSAGE(ok.ok, ok.message << ok.output);
  build.clear_student_files();
}

// An exercise.cu that compiles for minutes: each constant takes g++ about a second, within its
// per-evaluation limits; 100000 of them.
const std::string kEndlessCompile =
    "#include <utility>\n"
    "template <int K> constexpr long spin() {\n"
    "  long s = K;\n"
    "  for (long i = 0; i < 1000; ++i)\n"
    "    for (long j = 0; j < 1000; ++j) s += i ^ j;\n"
    "  return s;\n}\n"
    "template <int K> constexpr long spun = spin<K>();\n"
    "template <int... K> long total(std::integer_sequence<int, K...>) { return (spun<K> + ...); }\n"
    "const char* exercise_mode() { return total(std::make_integer_sequence<int, 100000>()) ? \"result\" : \"\"; }\n"
    "double exercise_ms() { return 1.0; }\n";

// A contained grading build of the fake course with its two lessons, and a student's folder.
struct TwoLessonGrading {
  explicit TwoLessonGrading(const std::string& generator = LAB_TEST_GENERATOR) : generator(generator) {}
  std::string generator;
  PolicyScope scope{contained_policy()};
  TempDir tmp{"lab-sandbox-course"};
  fs::path main_build = configured_fake_course(tmp.path(), generator), grading = tmp.path() / "grading";
  GradingBuild build{kFakeCourse, main_build, grading, 2};
  LessonConfig first{lesson_named("90-fake")}, second{lesson_named("91-other")};
  fs::path alice = tmp.path() / "alice";

  static LessonConfig lesson_named(const std::string& name) {
    LessonConfig l;
    l.name = name;
    return l;
  }
};

TEST_CASE("grading build: one build makes every lesson, past one that does not compile; each lesson's step then compiles nothing, or repeats only its own errors") {
  // Both generators a site may configure with: Ninja keeps going with -k 0, make with -k.
  std::string generator = LAB_TEST_GENERATOR;
  SUBCASE("the tests' generator") {}
  SUBCASE("Unix Makefiles") { generator = "Unix Makefiles"; }
  CAPTURE(generator);
  TwoLessonGrading g(generator);
  GradingBuild& build = g.build;
  const fs::path& grading = g.grading;
  const fs::path& alice = g.alice;
  const LessonConfig &broken = g.first, &good = g.second;
  build.prepare();
  build.clear_student_files();
  write_text(alice / "90-fake" / "exercise.cu", "this is not C++ (BROKEN-90);\n");
  write_text(alice / "91-other" / "exercise.cu", kGoodExercise);
  // An earlier student's program is gone once the new file is staged, before anything builds.
  write_text(grading / "lessons" / "91-other" / "submission", "an earlier student's program");
  CHECK(build.stage_submission(broken, alice / "90-fake" / "exercise.cu") == "");
  CHECK(build.stage_submission(good, alice / "91-other" / "exercise.cu") == "");
  CHECK_FALSE(fs::exists(grading / "lessons" / "91-other" / "submission"));

  build.build_all({"90-fake", "91-other"});
  {
    INFO(read_text(grading / "logs" / "all-lessons.log"));
    CHECK(contains(read_text(grading / "logs" / "all-lessons.log"), "BROKEN-90"));
    CHECK(fs::exists(grading / "lessons" / "91-other" / "submission"));  // built past 90-fake's error
  }

  // The good lesson's own step finds its program made: its log compiles and links nothing.
  const GradingBuild::Built ok = build.build(good);
  const std::string good_log = read_text(grading / "logs" / "91-other.log");
  INFO(good_log);
  CHECK_MESSAGE(ok.ok, ok.message << ok.output);
  CHECK_FALSE(contains(good_log, "Building"));
  CHECK_FALSE(contains(good_log, "Linking"));

  // The broken one's step compiles it again: its log and feedback hold its errors, nothing else.
  const GradingBuild::Built failed = build.build(broken);
  const std::string broken_log = read_text(grading / "logs" / "90-fake.log");
  INFO(broken_log);
  CHECK_FALSE(failed.ok);
  CHECK(contains(failed.message, "did not compile"));
  CHECK(contains(failed.output, "90-fake/exercise.cu:1"));
  CHECK(contains(broken_log, "BROKEN-90"));
  CHECK_FALSE(contains(broken_log, "91-other"));
  build.clear_student_files();
}

TEST_CASE("grading build: a compiler message that reads like a missing target is the student's error, not the grader's") {
  // Found by a red-team pass: the log was searched for "unknown target '<lesson>-submission'",
  // and a static_assert saying so stopped `lab-check grade` for every submission after it.
  std::string generator = LAB_TEST_GENERATOR;
  SUBCASE("the tests' generator") {}
  SUBCASE("Unix Makefiles") { generator = "Unix Makefiles"; }
  CAPTURE(generator);
  TwoLessonGrading g(generator);
  g.build.prepare();
  g.build.clear_student_files();
  const fs::path exercise = g.alice / "90-fake" / "exercise.cu";
  write_text(exercise,
             "static_assert(sizeof(int) == 3, \"ninja: error: unknown target '90-fake-submission'\\n"
             "make: *** No rule to make target '90-fake-submission'\");\n");
  REQUIRE(g.build.stage_submission(g.first, exercise) == "");
  GradingBuild::Built b;
  CHECK_NOTHROW(b = g.build.build(g.first));
  CHECK_FALSE(b.ok);
  CHECK(contains(b.message, "did not compile"));
  // A lesson the grading build really lacks is still the grader's error, which stops the command.
  CHECK_THROWS_AS(g.build.build(TwoLessonGrading::lesson_named("99-absent")), ConfigError);
  g.build.clear_student_files();
}

TEST_CASE("grading build: a lesson that never stops compiling costs the overall limit, then its own, and no other lesson's verdict") {
  TwoLessonGrading g;
  GradingBuild& build = g.build;
  const fs::path& alice = g.alice;
  const LessonConfig &bomb = g.first, &good = g.second;
  write_text(alice / "91-other" / "exercise.cu", kGoodExercise);
  // First one ordinary submission, so the harness objects are built as between two students.
  build.prepare();
  build.clear_student_files();
  write_text(alice / "90-fake" / "exercise.cu", kGoodExercise);
  for (const LessonConfig* l : {&bomb, &good}) REQUIRE(build.stage_submission(*l, alice / l->name / "exercise.cu") == "");
  build.build_all({"90-fake", "91-other"});
  build.clear_student_files();

  write_text(alice / "90-fake" / "exercise.cu", kEndlessCompile);
  build.set_time_limits(2, 8);
  for (const LessonConfig* l : {&bomb, &good}) REQUIRE(build.stage_submission(*l, alice / l->name / "exercise.cu") == "");
  const auto t0 = std::chrono::steady_clock::now();
  build.build_all({"90-fake", "91-other"});
  const GradingBuild::Built ok = build.build(good);
  const GradingBuild::Built bombed = build.build(bomb);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_MESSAGE(ok.ok, ok.message << ok.output);
  CHECK_FALSE(bombed.ok);
  CHECK(contains(bombed.message, "building your exercise.cu timed out after 8 s"));
  CHECK(took >= 2 + 8);
  CHECK(took < 2 + 8 + 30);  // the two limits, and the good lesson's few seconds
  build.clear_student_files();
}

TEST_CASE("a file exercise.cu names that it may not read, or that would block the compiler, is refused before any compiler runs") {
  TempDir dir("lab-reads");
  const fs::path lesson = dir.path() / "lesson", system = dir.path() / "system";
  write_text(lesson / "exercise.cuh", "// the interface\n");
  write_text(lesson / "mutants" / "taught_path.cu", "// a solution\n");
  write_text(system / "vector", "// a system header\n");
  REQUIRE(mkfifo((system / "pipe.h").c_str(), 0600) == 0);
  fs::create_symlink("/dev/ptmx", system / "terminal.h");
  SubmissionReads reads;
  reads.files = {fs::canonical(lesson / "exercise.cuh")};
  reads.folders = {fs::canonical(system)};
  reads.search = {lesson, system};
  auto refused = [&](const std::string& source) { return refuse_unsafe_reads(source, reads); };
  // What a student writes: the interface, system headers; a directive's text in a literal or a
  // comment reads nothing; a digit separator is no character literal.
  CHECK(refused("#include \"exercise.cuh\"\n#include <vector>\nint big = 1'000;\n"
                "const char* s = \"#include </dev/ptmx>\"; // #include </dev/ptmx>\n"
                "/*\n#include </dev/ptmx>\n*/\n") == "");
  for (const std::string bad :
       {"#include \"/dev/ptmx\"", "  #  include </dev/ptmx>", "%:include \"/dev/ptmx\"",
        "#inc\\\nlude \"/dev/ptmx\"", "/* c */ #include_next </dev/ptmx>", "#import </dev/ptmx>",
        "#embed \"/dev/ptmx\"", "#if __has_include(\"/dev/ptmx\")\n#endif",
        "#include \"../lesson/mutants/taught_path.cu\"", "#include \"mutants/taught_path.cu\"",
        "#include <pipe.h>", "#include <terminal.h>", "#define F \"/dev/ptmx\"\n#include F",
        "asm(\".incbin \\\"/dev/ptmx\\\"\");", "asm(\".INCLUDE \\\"/dev/ptmx\\\"\");",
        "_Pragma(\"GCC dependency \\\"/dev/ptmx\\\"\")"}) {
    CAPTURE(bad);
    CHECK_FALSE(refused(bad + "\n").empty());
  }
  CHECK(contains(refused("int a;\n#include \"/dev/ptmx\"\n"),
                 "exercise.cu line 2: #include \"/dev/ptmx\" names a file by its absolute path; a "
                 "submission may read only its own exercise.cu, its lesson's exercise.cuh"));
  CHECK(contains(refused("#include <pipe.h>\n"), "#include <pipe.h> is not a regular file (a device, a FIFO"));
  CHECK(contains(refused("#include <terminal.h>\n"), "is not a regular file"));
  CHECK(contains(refused("#include \"mutants/taught_path.cu\"\n"), "taught_path.cu, which a submission may not read"));
  CHECK(contains(refused("#define F \"/dev/ptmx\"\n#include F\n"), "line 2: #include names its file through a macro"));
  // Line control would hide the exercise's source lines from racecheck (found in review).
  for (const std::string bad : {"#line 1 \"gen\"", "  # line 7", "%:line 3", "# 1 \"gen\"", "#li\\\nne 1"}) {
    CAPTURE(bad);
    CHECK(contains(refused("int a;\n" + bad + "\n"), "line 2: a #line directive renames the source lines"));
  }
  CHECK(refused("int lines = 1; // #line 1\nconst char* s = \"#line 2\";\n") == "");
}

TEST_CASE("a depfile's first rule lists the inputs, escaped blanks and $$ undone") {
  CHECK(depfile_inputs("x.o: a.cu /usr/include/b.h \\\n  c\\ d.h \\\n e$$f.h\nother.h:\n") ==
        std::vector<std::string>{"a.cu", "/usr/include/b.h", "c d.h", "e$f.h"});
  CHECK(depfile_inputs("C:x.o : a.cu\n").size() == 1);
  CHECK(depfile_inputs("no rule here\n").empty());
}

TEST_CASE("grading build: a submission that includes a device file is an error naming it, with no compiler waiting on it") {
  TwoLessonGrading g;
  g.build.prepare();
  g.build.set_time_limits(20, 20);  // the old checker waited out its limits on /dev/ptmx
  g.build.clear_student_files();
  const fs::path exercise = g.alice / "90-fake" / "exercise.cu";
  write_text(exercise, "#include \"/dev/ptmx\"\n" + kGoodExercise);
  const auto t0 = std::chrono::steady_clock::now();
  const GradingBuild::Built b = g.build.build(g.first, exercise);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_FALSE(b.ok);
  CHECK(contains(b.message, "#include \"/dev/ptmx\""));
  CHECK(took < 10);
  g.build.clear_student_files();
}

TEST_CASE("grading build: a submission whose compile read a course file it may not read is an error naming it (the compiler's own list)") {
  // Both generators: Ninja keeps the list in its deps log, make beside the object (<object>.d).
  std::string generator = LAB_TEST_GENERATOR;
  SUBCASE("the tests' generator") {}
  SUBCASE("Unix Makefiles") { generator = "Unix Makefiles"; }
  CAPTURE(generator);
  TwoLessonGrading g(generator);
  g.build.prepare();
  g.build.clear_student_files();
  const fs::path exercise = g.alice / "90-fake" / "exercise.cu";
  // System headers and its own file: built.
  write_text(exercise, "#include <vector>\n#include <cstdio>\n" + kGoodExercise);
  const GradingBuild::Built ok = g.build.build(g.first, exercise);
  CHECK_MESSAGE(ok.ok, ok.message << ok.output);

  // The solution, named by its path: refused before the build.
  const fs::path solution = kFakeCourse / "solutions" / "90-fake" / "exercise.cu";
  const std::string reads_solution = "#include \"" + solution.string() + "\"\n";
  write_text(exercise, reads_solution);
  const GradingBuild::Built up_front = g.build.build(g.first, exercise);
  CHECK_FALSE(up_front.ok);
  CHECK(contains(up_front.message, "names a file by its absolute path"));

  // Where such a name got past that scan, the compiler's list of what it read catches it: the
  // lesson is an error naming the file, and its program is not left to run.
  write_text(g.grading / "staging" / "90-fake" / "exercise.cu", reads_solution);
  const GradingBuild::Built after = g.build.build(g.first);
  INFO(after.message);
  CHECK_FALSE(after.ok);
  CHECK(contains(after.message, "your exercise.cu read "));
  CHECK(contains(after.message, "solutions/90-fake/exercise.cu"));
  CHECK_FALSE(fs::exists(after.program));
  g.build.clear_student_files();
}

TEST_CASE("grading build: build limits are in proportion to the course's own compile time, and a submission whose every lesson hangs costs minutes") {
  TwoLessonGrading g;
  g.build.prepare();
  const double pristine = g.build.pristine_compile_s();
  CHECK(pristine > 0);
  CHECK(g.build.lesson_time_limit() == doctest::Approx(std::max(GradingBuild::kTimeFloorS, GradingBuild::kTimeFactor * pristine)));
  CHECK(g.build.lesson_time_limit() < GradingBuild::kBuildTimeoutS);
  g.build.set_time_proportion(2, 3);
  const double limit = std::max(3.0, 2 * pristine);
  CHECK(g.build.lesson_time_limit() == doctest::Approx(limit));

  // Both lessons compile without end: the overall build, then the steps' one shared limit, then
  // the least a step gets.
  g.build.clear_student_files();
  for (const LessonConfig* l : {&g.first, &g.second}) {
    write_text(g.alice / l->name / "exercise.cu", kEndlessCompile);
    REQUIRE(g.build.stage_submission(*l, g.alice / l->name / "exercise.cu") == "");
  }
  const auto t0 = std::chrono::steady_clock::now();
  g.build.build_all({"90-fake", "91-other"});
  const GradingBuild::Built first = g.build.build(g.first), second = g.build.build(g.second);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(first.message << " / " << second.message << " / " << took << " s, limit " << limit);
  CHECK(contains(first.message, "timed out after"));
  CHECK(contains(second.message, "timed out after"));
  CHECK(took < 2 * limit + GradingBuild::kLeastStepS + 30);
  g.build.clear_student_files();
}

TEST_CASE("two commands on one grading build or output folder take turns (flock)") {
  TempDir dir("lab-sandbox");
  const fs::path lock = dir.path() / "lab-check.lock";
  int order[2], go[2];
  REQUIRE(pipe(order) == 0);
  REQUIRE(pipe(go) == 0);
  const pid_t other = fork();
  REQUIRE(other >= 0);
  if (other == 0) {
    char c;
    (void)!read(go[0], &c, 1);  // the parent holds the lock now
    FileLock mine(lock);        // so this waits for it
    (void)!write(order[1], "b", 1);
    _exit(0);
  }
  auto first = std::make_unique<FileLock>(lock);
  (void)!write(go[1], "x", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  (void)!write(order[1], "a", 1);
  first.reset();
  int status = 0;
  waitpid(other, &status, 0);
  char seen[3] = {};
  CHECK(read(order[0], seen, 2) == 2);
  CHECK(std::string(seen) == "ab");
  for (int fd : {order[0], order[1], go[0], go[1]}) close(fd);
}

}  // TEST_SUITE
