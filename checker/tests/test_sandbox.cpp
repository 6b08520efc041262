// Containment (docs/grading-security.md): nothing a student's program starts outlives it, however
// it detaches; it cannot reach hidden folders; a killed checker takes every process with it.
// Where the kernel gives no namespaces (a container without CAP_SYS_ADMIN), the namespace cases
// say why and stop; the weak mode (a subreaper) is tested everywhere.
#include <doctest/doctest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

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
  // A file only root may read, in a folder the program can see.
  const fs::path shown = fs::path("/var/tmp") / ("lab-sandbox-" + random_hex(4));
  write_text(shown, "root only\n");
  fs::permissions(shown, fs::perms::owner_read | fs::perms::owner_write);
  run_escaper({new_token(), "read", shown.string()}, out, work.path());
  const std::string said = read_text(out);
  fs::remove(shown);
  CHECK_FALSE(contains(said, "root only"));
  CHECK(contains(said, "Permission denied"));
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
