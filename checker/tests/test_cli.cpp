// lab-check as a user runs it, against a miniature course (tests/fake-course) built with the
// host compiler: list, run, doctor, grade (compile errors, crashes, missing lessons, resume), merge.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>

#include "grade.hpp"
#include "gpu_watch.hpp"
#include "helpers.hpp"
#include "process.hpp"
#include "sandbox.hpp"

using namespace lab;
using namespace lab::test;

namespace {

struct Cli {
  int code = -1;
  std::string out, err;
};

// One configured and built fake course for every test case here.
struct FakeCourse {
  TempDir tmp{"lab-check-cli"};
  fs::path source = fs::path(LAB_TEST_DATA_DIR) / "fake-course";
  fs::path build = tmp.path() / "build";
  bool ok = false;
  std::string log;

  FakeCourse() {
    for (const std::vector<std::string>& cmd :
         {std::vector<std::string>{LAB_TEST_CMAKE, "-S", source.string(), "-B", build.string(), "-G", LAB_TEST_GENERATOR},
          std::vector<std::string>{LAB_TEST_CMAKE, "--build", build.string(), "-j", "2"}}) {
      ProcessOptions p;
      p.argv = cmd;
      p.timeout_s = 120;
      p.stdout_path = p.stderr_path = tmp.path() / "setup.log";
      const ProcessResult r = run_process(p);
      log += read_text(tmp.path() / "setup.log");
      if (!r.exited_ok()) return;
    }
    ok = true;
  }

  // lab-check with this course; grading is contained by namespaces where the kernel allows them,
  // else (a container without CAP_SYS_ADMIN) in the weak mode, which must be asked for.
  std::vector<std::string> command(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {LAB_TEST_LAB_CHECK, "--source-dir", source.string(), "--build-dir", build.string()};
    std::string why;
    if (!namespaces_available(why)) argv.push_back("--containment=weak");
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  Cli run(std::vector<std::string> args, std::vector<std::string> env = {}) const {
    ProcessOptions p;
    p.argv = command(args);
    p.env = std::move(env);
    p.timeout_s = 120;
    p.stdout_path = tmp.path() / "cli.out";
    p.stderr_path = tmp.path() / "cli.err";
    const ProcessResult r = run_process(p);
    return {r.started && r.signal == 0 ? r.exit_code : -1, read_text(p.stdout_path), read_text(p.stderr_path)};
  }
};

const FakeCourse& course() {
  static FakeCourse c;
  REQUIRE_MESSAGE(c.ok, c.log);
  return c;
}

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("list shows lessons, rules and points") {
  const Cli r = course().run({"list"});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "90-fake  A fake lesson  (10 points, timeout 20 s)"));
  CHECK(contains(r.out, "speedup: speedup of exercise over naive >= 3.00x  [3 pt]"));
  CHECK(contains(r.out, "2 lessons, 12 points"));
  // The args every run of a lesson gets (none in the fake course), as the lesson-args test reads them.
  const Cli j = course().run({"--format", "json", "list"});
  CHECK(json::parse(j.out)[0]["args"] == json::array());
}

TEST_CASE("run: the solution passes (exit 0), the starter fails with its hint (exit 1)") {
  const Cli solution = course().run({"run", "--build", "solution"});
  INFO(solution.out << solution.err);
  CHECK(solution.code == 0);
  CHECK(contains(solution.out, "pass        90-fake (solution)  10/10"));
  CHECK(contains(solution.out, "total 12/12"));

  const Cli starter = course().run({"run", "90"});
  CHECK(starter.code == 1);
  CHECK(contains(starter.out, "Only 2.00x faster than the naive version, needs 3.00x."));
  CHECK_FALSE(contains(starter.out, "\x1b["));  // not a terminal: no colour

  const Cli js = course().run({"--format", "json", "run", "--build", "solution"});
  CHECK(js.code == 0);
  const json doc = json::parse(js.out);
  CHECK(doc["score"] == 12);
  CHECK(doc["lessons"][0]["rules"][1]["verdict"] == "pass");

  CHECK_FALSE(contains(solution.out, "timed in a run of the pristine lesson"));  // run's default

  // The baseline timed by the course's starter, in a process of its own, which is brought up to
  // date first (here: older than its objects, as after a change to the harness, it is relinked).
  const fs::path starter_program = course().build / "lessons" / "90-fake" / "starter";
  const auto long_ago = fs::file_time_type::clock::now() - std::chrono::hours(24 * 365);
  fs::last_write_time(starter_program, long_ago);
  const Cli pristine = course().run({"--baselines", "pristine", "run", "--build", "solution"});
  INFO(pristine.out << pristine.err);
  CHECK(pristine.code == 0);
  CHECK(contains(pristine.out, "timed in a run of the pristine lesson"));
  CHECK(fs::last_write_time(starter_program) > long_ago + std::chrono::hours(24));
  const Cli misspelt = course().run({"--baselines", "pristin", "run"});
  CHECK(misspelt.code == 2);

  // Every program sees one GPU, the first the checker was given, numbered as NVML numbers it.
  const Cli pinned = course().run({"run", "--build", "solution"},
                                  {"CUDA_VISIBLE_DEVICES=3,1", "LAB_FAKE_EXPECT_GPU=3"});
  INFO(pinned.out << pinned.err);
  CHECK(pinned.code == 0);
  const Cli unpinned = course().run({"run", "--build", "solution"}, {"LAB_FAKE_EXPECT_GPU=1"});
  CHECK(unpinned.code == 1);  // the stand-in sees GPU 0, not 1: it exits 3, an error

  // Where namespaces are had, a program of `run` has a /tmp of its own: what else runs on the
  // machine (a build, another run) neither reaches its files nor shows in lesson 11's write audit.
  std::string why;
  if (namespaces_available(why)) {
    const fs::path host_file = fs::path("/tmp") / ("lab-cli-host-file-" + std::to_string(::getpid()));
    std::ofstream(host_file) << "left by another program\n";
    const std::string unseen = "LAB_FAKE_UNSEEN=" + host_file.string();
    const Cli own_tmp = course().run({"run", "--build", "solution"}, {unseen});
    INFO(own_tmp.out << own_tmp.err);
    CHECK(own_tmp.code == 0);
    const Cli host_tmp = course().run({"--containment=weak", "run", "--build", "solution"}, {unseen});
    CHECK(host_tmp.code == 1);  // weak mode: the host's /tmp, so the stand-in sees the file
    fs::remove(host_file);
  }

  const Cli unknown = course().run({"run", "07"});
  CHECK(unknown.code == 2);
  CHECK(contains(unknown.err, "lab-check: no lesson \"07\" (lessons: 90-fake, 91-other)"));
}

TEST_CASE("doctor: the machine's report, or one sentence and exit 3 without a GPU") {
  const Cli r = course().run({"doctor"});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "GPU        Fake GPU (compute capability 9.0, 132 SMs, L2 50 MiB)"));
  CHECK(contains(r.out, "driver     CUDA 13.0, runtime 12.8"));
  CHECK(contains(r.out, "copy_gbs = 2850.1"));

  // The main command's: the device and the tools, no ceilings, no counter probe.
  const Cli quick = course().run({"doctor", "--quick"});
  CHECK(quick.code == 0);
  CHECK(contains(quick.out, "GPU        Fake GPU (compute capability 9.0, 132 SMs, L2 50 MiB)"));
  CHECK_FALSE(contains(quick.out, "ceilings"));
  CHECK(contains(quick.out, "counters   not asked (--quick)"));

  setenv("FAKE_NO_GPU", "1", 1);
  const Cli none = course().run({"doctor"});
  unsetenv("FAKE_NO_GPU");
  CHECK(none.code == 3);
  CHECK(contains(none.err, "No usable NVIDIA GPU here: no CUDA-capable device is detected The lessons need one"));
}

TEST_CASE("grade: builds each student's files against the pristine harness, survives them, resumes") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "subs";
  const fs::path out = c.tmp.path() / "graded";
  write_text(subs / "alice" / "90-fake" / "exercise.cu",
             "const char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 0.5; }\n");
  write_text(subs / "alice" / "91-other" / "exercise.cu",
             "const char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 1.0; }\n");
  write_text(subs / "bob" / "90-fake" / "exercise.cu", "this is not C++;\n");
  write_text(subs / "carol" / "lessons" / "91-other" / "exercise.cu",
             "const char* exercise_mode() { return \"segv\"; }\ndouble exercise_ms() { return 1.0; }\n");

  const Cli r = c.run({"grade", (subs / "alice").string(), (subs / "bob").string(), (subs / "carol").string(),
                       "--out", out.string(), "-j", "2"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);

  const json alice = json::parse(read_text(out / "alice" / "gradescope.json"));
  CHECK(alice["score"] == 12);
  CHECK(alice["max_score"] == 12);
  // grade's default: the baselines timed by the course's starter, contained like every program.
  CHECK(contains(r.out, "baselines: timed, and results checked, in a process of their own by the course's starter"));
  const json alice_record = json::parse(read_text(out / "alice" / "result.json"));
  CHECK(contains(alice_record["baselines"].get<std::string>(), "--baselines pristine"));
  CHECK(contains(r.out, "system calls: filtered from the first exercise call on"));
  CHECK(contains(alice_record["system_calls"].get<std::string>(), "filtered from the first exercise call on"));
  CHECK(contains(alice_record["lessons"][0]["rules"][1]["message"].get<std::string>(),
                 "timed in a run of the pristine lesson"));
  // Both lessons' results judged out of process, 91-other's too, which has no speedup rule.
  for (const json& lesson : alice_record["lessons"])
    CHECK(lesson["results_checked"][0]["state"] == "replayed");
  // Where each lesson's time went: on its table line, and in the record.
  CHECK(std::regex_search(r.out, std::regex("alice  90-fake  pass  [0-9.]+/[0-9.]+  [0-9.]+ s \\(build [0-9.]+, "
                                            "program [0-9.]+, pristine [0-9.]+, ncu [0-9.]+\\)")));
  for (const json& lesson : alice_record["lessons"]) {
    CHECK(lesson["pristine_s"].get<double>() > 0);  // the course's program replayed the record
    CHECK(lesson["pristine_s"].get<double>() <= lesson["program_s"].get<double>());
    CHECK(lesson.contains("counters_s"));
  }

  const json bob = json::parse(read_text(out / "bob" / "result.json"));
  CHECK(bob["complete"] == true);
  CHECK(bob["lessons"][0]["verdict"] == "error");
  CHECK(bob["lessons"][0]["reason"] == "compile");
  const std::string errors = bob["lessons"][0]["output"];
  CHECK(contains(errors, "90-fake/exercise.cu:1"));
  CHECK(contains(errors, "error"));
  CHECK_FALSE(contains(errors, "staging/"));  // the grading folder's paths are not shown
  CHECK(bob["lessons"][1]["reason"] == "not-submitted");
  CHECK(bob["score"] == 0);

  const json carol = json::parse(read_text(out / "carol" / "result.json"));
  CHECK(carol["lessons"][0]["reason"] == "not-submitted");
  CHECK(carol["lessons"][1]["reason"] == "crash");
  CHECK(fs::exists(out / "carol" / "junit.xml"));

  // Graded already: skipped unless --force.
  const Cli again = c.run({"grade", (subs / "alice").string(), "--out", out.string()});
  CHECK(again.code == 0);
  CHECK(contains(again.out, "already graded"));

  // Asked for: the baselines timed in the student's own program, and no system-call filter.
  const fs::path in_process_out = c.tmp.path() / "graded-in-process";
  const Cli in_process = c.run({"--baselines", "in-process", "--no-syscall-filter", "grade",
                                (subs / "alice").string(), "--out", in_process_out.string()});
  INFO(in_process.out << in_process.err);
  CHECK(in_process.code == 0);
  CHECK(contains(in_process.out, "baselines: timed in the student's program"));
  const json alice_in_process = json::parse(read_text(in_process_out / "alice" / "result.json"));
  CHECK(alice_in_process["score"] == 12);
  CHECK(contains(alice_in_process["baselines"].get<std::string>(), "--baselines in-process"));
  CHECK(contains(in_process.out, "system calls: not filtered (--no-syscall-filter)"));
  CHECK(alice_in_process["system_calls"] == "not filtered (--no-syscall-filter)");
  CHECK_FALSE(contains(alice_in_process["lessons"][0]["rules"][1]["message"].get<std::string>(),
                       "pristine"));

  const fs::path csv = c.tmp.path() / "grades.csv";
  const fs::path book = c.tmp.path() / "grades.json";
  const Cli m = c.run({"merge", out.string(), "--csv", csv.string(), "--json", book.string()});
  CHECK(m.code == 0);
  CHECK(read_text(csv) == "student,90-fake,91-other,total\nalice,10,2,12\nbob,0,0,0\ncarol,0,0,0\n");
  CHECK(json::parse(read_text(book))["students"].size() == 3);
}

TEST_CASE("grade: an empty submission and a machine without a GPU are said up front") {
  const FakeCourse& c = course();
  const fs::path empty = c.tmp.path() / "empty-subs" / "nobody";
  fs::create_directories(empty);
  const Cli r = c.run({"grade", empty.string(), "--out", (c.tmp.path() / "empty-graded").string()});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(contains(r.err, "holds no NN-topic/exercise.cu"));
  if (!probe_gpu().gpu_present) CHECK(r.err.rfind("lab-check: no usable GPU here", 0) == 0);
}

TEST_CASE("grade: an exercise that defines or calls what it may not is never run, and is told why") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "sealed";
  const fs::path out = c.tmp.path() / "sealed-graded";
  const fs::path forged = c.tmp.path() / "forged.json";
  write_text(subs / "mallory" / "90-fake" / "exercise.cu",
             "#include <cstdio>\n"
             "const char* exercise_mode() {\n"
             "  if (std::FILE* f = std::fopen(\"" + forged.string() + "\", \"w\")) std::fclose(f);\n"
             "  return \"result\";\n}\n"
             "double exercise_ms() { return 0.25; }\n");
  write_text(subs / "mallory" / "91-other" / "exercise.cu",
             "struct Early { Early(); } early;\nEarly::Early() {}\nint helper() { return 1; }\n"
             "const char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 1.0; }\n");
  const Cli r = c.run({"grade", (subs / "mallory").string(), "--out", out.string()});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  const json mallory = json::parse(read_text(out / "mallory" / "result.json"));
  CHECK(mallory["score"] == 0);
  CHECK(mallory["lessons"][0]["verdict"] == "error");
  CHECK(mallory["lessons"][0]["reason"] == "forbidden");
  CHECK(contains(mallory["lessons"][0]["message"], "fopen"));
  CHECK_FALSE(fs::exists(forged));  // inspected, not run
  CHECK(mallory["lessons"][1]["reason"] == "forbidden");
  CHECK(contains(mallory["lessons"][1]["message"], "`helper()`"));
  CHECK(contains(mallory["lessons"][1]["message"], "before main"));
}

}  // TEST_SUITE

TEST_SUITE("cli") {

TEST_CASE("Ctrl-C: the running lesson's whole group dies, temporary folders go, exit 130") {
  TempDir dir;
  const fs::path source = dir.path() / "src", build = dir.path() / "build", tmp = dir.path() / "tmp";
  const fs::path pidfile = dir.path() / "grandchild.pid";
  write_text(source / "lessons" / "90-fake" / "check.toml",
             "lesson = \"90-fake\"\nargs = [\"--mode\", \"grandchild\", \"--pidfile\", \"" + pidfile.string() +
                 "\"]\n[[rule]]\nid = \"correct\"\nkind = \"correct\"\nvariant = \"exercise\"\n");
  write_text(build / "CMakeCache.txt", "");
  fs::create_directories(build / "lessons" / "90-fake");
  fs::copy_file(LAB_TEST_FAKE_LESSON, build / "lessons" / "90-fake" / "starter");
  // The stand-in has no exercise of its own: an empty object passes the seal.
  const std::string standin = LAB_TEST_STANDIN_OBJECT;
  write_text(build / "lessons" / "90-fake" / "starter.objects",
             "exercise=" + standin + "\ninterface=" + standin + "\nharness=" + standin +
                 "\nlibrary=" + standin + "\nsource=standin_exercise.cpp\n");
  fs::create_directories(tmp);

  const pid_t checker = fork();
  REQUIRE(checker >= 0);
  if (checker == 0) {
    setenv("TMPDIR", tmp.c_str(), 1);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    // Weak containment: the pid the grandchild writes is then this machine's (in a PID namespace
    // it would be the namespace's own); test_sandbox.cpp covers the namespaces.
    execl(LAB_TEST_LAB_CHECK, LAB_TEST_LAB_CHECK, "--source-dir", source.c_str(), "--build-dir",
          build.c_str(), "--containment=weak", "run", static_cast<char*>(nullptr));
    _exit(127);
  }
  pid_t grandchild = 0;
  for (int i = 0; i < 500 && grandchild == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream(pidfile) >> grandchild;
  }
  REQUIRE(grandchild > 0);
  kill(checker, SIGINT);
  int status = 0;
  waitpid(checker, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGINT);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = kill(grandchild, 0) != 0 || contains(read_text("/proc/" + std::to_string(grandchild) + "/stat"), ") Z ");
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
  if (!gone) kill(grandchild, SIGKILL);
  CHECK(fs::is_empty(tmp));
}

}  // TEST_SUITE

TEST_SUITE("sandbox") {

TEST_CASE("grade: no #include of another submission, the solutions or a host file reaches a build or its feedback") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "includers";
  const fs::path out = c.tmp.path() / "includers-graded";
  // A host file any user may read, where builds look (their /tmp is their own): the compiler
  // reads it, and only the feedback filter keeps it out.
  const fs::path host_file = fs::path("/var/tmp") / ("lab-check-cli-" + random_hex(6) + "-host-secret.h");
  write_text(host_file, "HOSTSECRET_TOKEN root:x:0:0 here\n");
  fs::permissions(host_file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                 fs::perms::others_read);
  struct RemoveAfter {
    fs::path p;
    ~RemoveAfter() { fs::remove(p); }
  } remove_after{host_file};
  write_text(subs / "alice" / "90-fake" / "exercise.cu",
             "// ALICE-MARKER\nconst char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 1.0; }\n");
  write_text(subs / "alice" / "91-other" / "exercise.cu",
             "// ALICE-MARKER\nconst char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 1.0; }\n");
  // Today's tree would compile both into full copies of someone else's work.
  write_text(subs / "mallory" / "90-fake" / "exercise.cu",
             "#include \"" + (subs / "alice" / "90-fake" / "exercise.cu").string() + "\"\n");
  write_text(subs / "mallory" / "91-other" / "exercise.cu",
             "#include \"" + (c.source / "solutions" / "91-other" / "exercise.cu").string() + "\"\n");
  write_text(subs / "eve" / "90-fake" / "exercise.cu", "#include \"" + host_file.string() + "\"\n");

  const Cli r = c.run({"grade", (subs / "alice").string(), (subs / "mallory").string(), (subs / "eve").string(),
                       "--out", out.string(), "-j", "2"});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const json mallory = json::parse(read_text(out / "mallory" / "result.json"));
  CHECK(mallory["lessons"][0]["reason"] == "compile");
  CHECK(mallory["lessons"][1]["reason"] == "compile");
  CHECK(mallory["score"] == 0);
  CHECK_FALSE(contains(mallory.dump(), "ALICE-MARKER"));
  const json eve = json::parse(read_text(out / "eve" / "result.json"));
  CHECK(eve["lessons"][0]["reason"] == "compile");
  const std::string feedback = read_text(out / "eve" / "result.json") + read_text(out / "eve" / "gradescope.json");
  CHECK_FALSE(contains(feedback, "HOSTSECRET"));
  CHECK(contains(eve["lessons"][0]["message"].get<std::string>(), "names a file by its absolute path"));
  CHECK(contains(mallory["containment"].get<std::string>(), "namespaces") !=
        contains(mallory["containment"].get<std::string>(), "weak"));
  CHECK(mallory["baselines"] == "timed, and results checked, in a process of their own by the course's starter (--baselines pristine)");

  // Nothing of the last student stays in the grading build: starters staged, no programs.
  const fs::path grading = c.build / "grading";
  for (const std::string lesson : {"90-fake", "91-other"}) {
    CHECK(read_text(grading / "staging" / lesson / "exercise.cu") ==
          read_text(c.source / "lessons" / lesson / "exercise.cu"));
    CHECK_FALSE(fs::exists(grading / "lessons" / lesson / "submission"));
  }
}

TEST_CASE("grade: two commands at once into one output folder give the verdicts of one after the other") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "concurrent";
  auto exercise = [](const std::string& mode, double ms) {
    return "const char* exercise_mode() { return \"" + mode + "\"; }\ndouble exercise_ms() { return " +
           std::to_string(ms) + "; }\n";
  };
  write_text(subs / "s1" / "90-fake" / "exercise.cu", exercise("result", 1.0));
  write_text(subs / "s1" / "91-other" / "exercise.cu", exercise("result", 2.0));
  write_text(subs / "s2" / "90-fake" / "exercise.cu", "not C++ at all;\n");
  write_text(subs / "s2" / "91-other" / "exercise.cu", exercise("exit3", 1.0));
  write_text(subs / "s3" / "90-fake" / "exercise.cu", exercise("result", 2.0));
  write_text(subs / "s3" / "91-other" / "exercise.cu", exercise("segv", 1.0));
  write_text(subs / "s4" / "90-fake" / "exercise.cu", exercise("no-result", 1.0));
  const std::vector<std::string> first = {(subs / "s1").string(), (subs / "s2").string()};
  const std::vector<std::string> second = {(subs / "s3").string(), (subs / "s4").string(), (subs / "s1").string()};

  // Both at once, into one output folder, through the one default grading build.
  const fs::path together = c.tmp.path() / "together";
  std::vector<pid_t> running;
  for (const auto* group : {&first, &second}) {
    std::vector<std::string> args = {"grade"};
    args.insert(args.end(), group->begin(), group->end());
    for (const std::string& a : std::vector<std::string>{"--out", together.string(), "--force", "-j", "1"}) args.push_back(a);
    const std::vector<std::string> argv = c.command(args);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      const int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      std::vector<char*> cargv;
      for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    running.push_back(pid);
  }
  for (pid_t pid : running) {
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  // The same, one after the other.
  const fs::path apart = c.tmp.path() / "apart";
  for (const auto* group : {&first, &second}) {
    std::vector<std::string> args = {"grade"};
    args.insert(args.end(), group->begin(), group->end());
    for (const std::string& a : std::vector<std::string>{"--out", apart.string(), "--force", "-j", "1"}) args.push_back(a);
    CHECK(c.run(args).code == 0);
  }
  auto verdicts = [](const fs::path& record) {
    std::string v;
    const json doc = json::parse(read_text(record));
    for (const auto& l : doc["lessons"])
      v += l["lesson"].get<std::string>() + " " + l["verdict"].get<std::string>() + " " +
           l["reason"].get<std::string>() + " " + l["score"].dump() + "\n";
    return v;
  };
  for (const std::string s : {"s1", "s2", "s3", "s4"}) {
    CAPTURE(s);
    CHECK(verdicts(together / s / "result.json") == verdicts(apart / s / "result.json"));
  }
  CHECK(contains(verdicts(apart / "s2" / "result.json"), "90-fake error compile"));
  CHECK(contains(verdicts(apart / "s3" / "result.json"), "91-other error crash"));
}

}  // TEST_SUITE

TEST_SUITE("cli") {

TEST_CASE("grade: a failure of the checker in one lesson is that lesson's error; the next lesson and student are graded") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "contained", out = c.tmp.path() / "contained-graded";
  for (const std::string student : {"s1", "s2"})
    for (const std::string lesson : {"90-fake", "91-other"})
      write_text(subs / student / lesson / "exercise.cu",
                 "const char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 1.0; }\n");
  const std::vector<LessonConfig> lessons = load_lessons(c.source.string());
  REQUIRE(lessons.size() == 2);
  GradingBuild build(c.source, c.build, c.tmp.path() / "grading-contained", 2);
  GradeOptions opt;
  opt.out = out;
  // The judge fails as the checker's own code may (a library's exception), once; every other
  // lesson gets a stand-in's verdict.
  int judged = 0;
  bool fail_next = true;
  opt.judge_lesson = [&](const LessonConfig& lesson, const fs::path&, const JudgeOptions&) {
    ++judged;
    if (fail_next && lesson.name == "90-fake") {
      fail_next = false;
      throw std::runtime_error("[json.exception.type_error.302] type must be boolean\nsecond line");
    }
    return lesson_outcome(lesson, "submission", Verdict::fail, "", "judged by the stand-in");
  };
  std::optional<Report> s1, s2;
  REQUIRE_NOTHROW(s1 = grade_submission(subs / "s1", lessons, build, opt));
  REQUIRE_NOTHROW(s2 = grade_submission(subs / "s2", lessons, build, opt));
  CHECK(judged == 4);
  REQUIRE(s1);
  const json record = json::parse(read_text(out / "s1" / "result.json"));
  CHECK(record["complete"] == true);
  CHECK(record["lessons"][0]["verdict"] == "error");
  CHECK(record["lessons"][0]["reason"] == "checker");
  const std::string message = record["lessons"][0]["message"];
  CHECK(contains(message, "the checker failed while grading this lesson, not because of your code "
                          "([json.exception.type_error.302] type must be boolean)"));
  CHECK_FALSE(contains(message, "\n"));
  CHECK(record["lessons"][1]["message"] == "judged by the stand-in");
  REQUIRE(s2);
  CHECK(s2->lessons[0].message == "judged by the stand-in");
  CHECK(s2->lessons[1].message == "judged by the stand-in");
  // The checker's failure is not a grading to keep: the next run grades s1 again, s2 not.
  CHECK_FALSE(grade_record_complete(out / "s1" / "result.json"));
  CHECK(grade_submission(subs / "s1", lessons, build, opt).has_value());
  CHECK_FALSE(grade_submission(subs / "s2", lessons, build, opt).has_value());
  CHECK(json::parse(read_text(out / "s1" / "result.json"))["lessons"][0]["message"] == "judged by the stand-in");
}

TEST_CASE("grade: a student's file is read once; what is hashed is what is built and judged") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "read-once", out = c.tmp.path() / "read-once-graded";
  const fs::path exercise = subs / "s" / "90-fake" / "exercise.cu";
  const std::string good = "const char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 1.0; }\n";
  write_text(exercise, good);
  const std::vector<LessonConfig> all = load_lessons(c.source.string());
  const std::vector<LessonConfig> lessons(all.begin(), all.begin() + 1);
  REQUIRE(lessons.front().name == "90-fake");
  GradingBuild build(c.source, c.build, c.tmp.path() / "grading-read-once", 2);
  GradeOptions opt;
  opt.out = out;
  opt.judge_lesson = [](const LessonConfig& lesson, const fs::path&, const JudgeOptions&) {
    return lesson_outcome(lesson, "submission", Verdict::fail, "", "judged by the stand-in");
  };
  // The file changes while the grading waits for the output folder's lock (another command):
  // the first reading is the one hashed, so it is the one graded.
  std::optional<Report> report;
  const fs::path lock = out / "s" / ".lock";
  auto other = std::make_unique<FileLock>(lock);
  std::thread grading([&] { report = grade_submission(subs / "s", lessons, build, opt); });
  // Until the grading waits on that lock: /proc/locks shows a blocked flock as "->", with the
  // file's inode after the device ("08:01:<inode> ").
  struct stat st {};
  REQUIRE(::stat(lock.c_str(), &st) == 0);
  auto waiting = [&] {
    std::istringstream locks(read_text("/proc/locks"));
    for (std::string line; std::getline(locks, line);)
      if (contains(line, "->") && contains(line, ":" + std::to_string(st.st_ino) + " ")) return true;
    return false;
  };
  for (int i = 0; i < 1200 && !waiting(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(waiting());
  write_text(exercise, "not C++ (changed while waiting);\n");
  other.reset();
  grading.join();
  REQUIRE(report);
  CHECK(report->lessons[0].message == "judged by the stand-in");
  // And its hash is that of the good file: handed in again, it is not graded again.
  write_text(exercise, good);
  CHECK_FALSE(grade_submission(subs / "s", lessons, build, opt).has_value());
}

TEST_CASE("grade: `a b` and `a_b` are never graded into one folder; a changed submission is graded again") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "slugs", out = c.tmp.path() / "slugs-graded";
  write_text(subs / "first" / "a b" / "90-fake" / "exercise.cu", "not C++ (a b);\n");
  write_text(subs / "second" / "a_b" / "90-fake" / "exercise.cu", "not C++ (a_b);\n");
  const std::string a_space = (subs / "first" / "a b").string(), a_under = (subs / "second" / "a_b").string();

  Cli r = c.run({"grade", a_space, "--out", out.string()});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const json graded = json::parse(read_text(out / "a_b" / "result.json"));
  CHECK(graded["folder"] == "a b");
  CHECK(graded["content_hash"].get<std::string>().size() == 64);
  // Another command with the other folder: refused before anything is graded, naming both.
  r = c.run({"grade", a_under, "--out", out.string()});
  CHECK(r.code == 2);
  CHECK(contains(r.err, (out / "a_b").string() + " holds the grading of the submission folder \"a b\", and " +
                            a_under + " would be graded into it too"));
  CHECK_FALSE(contains(r.out, "already graded"));
  CHECK(json::parse(read_text(out / "a_b" / "result.json")) == graded);
  // Both in one command: the same.
  r = c.run({"grade", a_space, a_under, "--out", (c.tmp.path() / "slugs-together").string()});
  CHECK(r.code == 2);
  CHECK(contains(r.err, a_space + " and " + a_under));

  // The same submission again: already graded. Changed: graded again, whatever the folder's name.
  r = c.run({"grade", a_space, "--out", out.string()});
  CHECK(r.code == 0);
  CHECK(contains(r.out, "already graded"));
  write_text(subs / "first" / "a b" / "91-other" / "exercise.cu", "not C++ either;\n");
  r = c.run({"grade", a_space, "--out", out.string()});
  CHECK(r.code == 0);
  CHECK_FALSE(contains(r.out, "already graded"));
  const json regraded = json::parse(read_text(out / "a_b" / "result.json"));
  CHECK(regraded["content_hash"] != graded["content_hash"]);
  CHECK(regraded["lessons"][1]["reason"] == "compile");
}

TEST_CASE("grade: two sections' `alice` are never graded into one folder by two commands") {
  // One command refuses them by their shared output folder; two commands, one after the other,
  // used to grade the second over the first (the record named only the folder's name).
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "sections", out = c.tmp.path() / "sections-graded";
  write_text(subs / "sec1" / "alice" / "90-fake" / "exercise.cu", "not C++ (sec1);\n");
  write_text(subs / "sec2" / "alice" / "90-fake" / "exercise.cu", "not C++ (sec2);\n");
  Cli r = c.run({"grade", (subs / "sec1" / "alice").string(), "--out", out.string()});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const json first = json::parse(read_text(out / "alice" / "result.json"));
  CHECK(first["folder_path"] == (subs / "sec1" / "alice").string());
  r = c.run({"grade", (subs / "sec2" / "alice").string(), "--out", out.string()});
  CHECK(r.code == 2);
  CHECK(contains(r.err, "holds the grading of the submission folder \"alice\" at " + (subs / "sec1" / "alice").string()));
  CHECK(json::parse(read_text(out / "alice" / "result.json")) == first);
  // Graded meanwhile by another command (after its own check of the output folders): the lock
  // taken, the folder is looked at again, and this submission alone is refused.
  GradingBuild build(c.source, c.build, c.tmp.path() / "grading-sections", 1);
  GradeOptions opt;
  opt.out = out;
  CHECK_THROWS_WITH_AS(grade_submission(subs / "sec2" / "alice", load_lessons(c.source.string()), build, opt),
                       doctest::Contains(("holds the grading of the submission folder \"alice\" at " +
                                          (subs / "sec1" / "alice").string() + ": " +
                                          (subs / "sec2" / "alice").string() + " is not graded into it").c_str()),
                       SubmissionRefused);
  CHECK(json::parse(read_text(out / "alice" / "result.json")) == first);
}

TEST_CASE("grade: a class holding issue 52's hostile submissions is graded to the end, the others' verdicts unchanged") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "class52";
  const std::string right = "const char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 0.5; }\n";
  write_text(subs / "alice" / "90-fake" / "exercise.cu", right);
  std::string line = "int a[] = {";  // one 40 KB line: nvcc's caret line under it once crashed grade
  for (int i = 0; i < 20000; ++i) line += "1,";
  write_text(subs / "caret" / "90-fake" / "exercise.cu", line + "1 1};\n");
  write_text(subs / "device" / "90-fake" / "exercise.cu", "#include \"/dev/ptmx\"\n");
  fs::create_directories(subs / "linker");
  fs::create_directory_symlink("../alice/90-fake", subs / "linker" / "90-fake");
  write_text(subs / "zoe" / "90-fake" / "exercise.cu", right);
  std::vector<std::string> args = {"grade"};
  for (const char* who : {"alice", "caret", "device", "linker", "zoe"}) args.push_back((subs / who).string());
  args.insert(args.end(), {"--out", (c.tmp.path() / "class52-graded").string()});
  const Cli all = c.run(args);
  INFO(all.out << all.err);
  REQUIRE(all.code == 0);
  const Cli alone = c.run({"grade", (subs / "alice").string(), (subs / "zoe").string(), "--out",
                           (c.tmp.path() / "class52-alone").string()});
  REQUIRE(alone.code == 0);
  for (const char* who : {"alice", "zoe"}) {
    const json in_class = json::parse(read_text(c.tmp.path() / "class52-graded" / who / "result.json"));
    const json by_itself = json::parse(read_text(c.tmp.path() / "class52-alone" / who / "result.json"));
    CHECK(in_class["score"] == by_itself["score"]);
    CHECK(in_class["lessons"][0]["verdict"] == "pass");
    CHECK(in_class["lessons"][0]["verdict"] == by_itself["lessons"][0]["verdict"]);
  }
  for (const char* who : {"caret", "device", "linker"}) {
    const json r = json::parse(read_text(c.tmp.path() / "class52-graded" / who / "result.json"));
    CHECK(r["complete"] == true);
    CHECK(r["lessons"][0]["verdict"] == "error");
  }
}

TEST_CASE("grade: a lesson folder that links to another student's is refused, naming the link; theirs is unchanged") {
  const FakeCourse& c = course();
  const fs::path subs = c.tmp.path() / "linked", out = c.tmp.path() / "linked-graded";
  write_text(subs / "alice" / "90-fake" / "exercise.cu",
             "const char* exercise_mode() { return \"result\"; }\ndouble exercise_ms() { return 0.5; }\n");
  fs::create_directories(subs / "mallory" / "lessons");
  fs::create_directory_symlink("../alice/90-fake", subs / "mallory" / "90-fake");
  fs::create_directory_symlink("../../alice/90-fake", subs / "mallory" / "lessons" / "91-other");
  const Cli r = c.run({"grade", (subs / "alice").string(), (subs / "mallory").string(), "--out", out.string()});
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  const json mallory = json::parse(read_text(out / "mallory" / "result.json"));
  CHECK(mallory["score"] == 0);
  CHECK(mallory["lessons"][0]["verdict"] == "error");
  CHECK(contains(mallory["lessons"][0]["message"], "90-fake is a link to ../alice/90-fake, outside the submission folder"));
  CHECK(contains(mallory["lessons"][1]["message"],
                 "lessons/91-other is a link to ../../alice/90-fake, outside the submission folder"));
  CHECK(json::parse(read_text(out / "alice" / "result.json"))["lessons"][0]["verdict"] == "pass");
}

TEST_CASE("merge, roofline: an output path that is a link or a FIFO is refused before anything is written") {
  const FakeCourse& c = course();
  const fs::path dir = c.tmp.path() / "outputs";
  Report bob;
  bob.name = "bob";
  bob.complete = true;
  write_report_files(dir / "graded" / "bob", bob);
  write_text(dir / "precious.txt", "precious");
  fs::create_symlink(dir / "precious.txt", dir / "grades.csv");
  Cli r = c.run({"merge", (dir / "graded").string(), "--csv", (dir / "grades.csv").string()});
  CHECK(r.code == 2);
  CHECK(contains(r.err, "lab-check: --csv " + (dir / "grades.csv").string() + " is a symbolic link, not a regular file"));
  CHECK(fs::is_symlink(fs::symlink_status(dir / "grades.csv")));
  CHECK(read_text(dir / "precious.txt") == "precious");
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  r = c.run({"merge", (dir / "graded").string(), "--csv", (dir / "new.csv").string(), "--json", (dir / "fifo").string()});
  CHECK(r.code == 2);
  CHECK(contains(r.err, "--json " + (dir / "fifo").string() + " is a FIFO"));
  CHECK_FALSE(fs::exists(dir / "new.csv"));
  r = c.run({"roofline", (dir / "precious.txt").string(), "--svg", (dir / "fifo").string()});
  CHECK(r.code == 2);
  CHECK(contains(r.err, "--svg " + (dir / "fifo").string() + " is a FIFO"));
  CHECK(fs::is_fifo(fs::symlink_status(dir / "fifo")));
  // A regular file there is replaced.
  write_text(dir / "old.csv", "old");
  r = c.run({"merge", (dir / "graded").string(), "--csv", (dir / "old.csv").string()});
  CHECK(r.code == 0);
  CHECK(read_text(dir / "old.csv") == "student,total\nbob,0\n");
}

}  // TEST_SUITE
