// Isolation: timeouts kill the whole process group, crashes and garbage become verdicts.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <thread>

#include "gpu_watch.hpp"
#include "helpers.hpp"
#include "judge.hpp"
#include "process.hpp"

using namespace lab;
using namespace lab::test;

namespace {

const std::string kFake = LAB_TEST_FAKE_LESSON;

// Dead = gone, or a zombie waiting for a parent that is not us.
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && line.size() > close + 2 && line[close + 2] == 'Z';
}

LessonOutcome judge_mode(const std::string& mode, std::vector<std::string> extra = {}, double timeout = 10) {
  std::vector<std::string> args{"--mode", mode};
  args.insert(args.end(), extra.begin(), extra.end());
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.build = "test";
  return judge_program(fake_lesson(args, standard_rules(), timeout), kFake, opt);
}

}  // namespace

TEST_SUITE("process") {

TEST_CASE("--keep: the judged run's result file and printed output are kept, named by lesson and build") {
  TempDir keep;
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.build = "solution";
  opt.keep = keep.path() / "runs";  // made when missing
  const LessonConfig lesson = fake_lesson({"--mode", "result"}, standard_rules());
  const LessonOutcome o = judge_program(lesson, kFake, opt);
  CHECK(o.verdict == Verdict::pass);
  const fs::path json_file = opt.keep / (lesson.name + "-solution.json");
  const fs::path text_file = opt.keep / (lesson.name + "-solution.txt");
  REQUIRE(fs::exists(json_file));
  REQUIRE(fs::exists(text_file));
  // The kept file is the one the checker judged: the program's result, with this run's nonce.
  const json kept = json::parse(read_text(json_file));
  CHECK(kept.at("lesson").get<std::string>() == lesson.name);
  CHECK(kept.contains("nonce"));
}

TEST_CASE("a program that ignores SIGTERM is killed at its time limit") {
  ProcessOptions p;
  p.argv = {kFake, "--mode", "sleep", "--json", "/dev/null"};
  p.timeout_s = 0.3;
  p.grace_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  const ProcessResult r = run_process(p);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.timed_out);
  CHECK(r.signal == SIGKILL);
  CHECK(took < 3.0);
  CHECK(describe(r, 0.3) == "timed out after 0.3 s (its process group was killed)");
}

TEST_CASE("a grandchild dies with its parent's process group") {
  TempDir dir;
  const fs::path pidfile = dir.path() / "grandchild.pid";
  ProcessOptions p;
  p.argv = {kFake, "--mode", "grandchild", "--pidfile", pidfile.string(), "--json", "/dev/null"};
  p.timeout_s = 0.5;
  p.grace_s = 0.2;
  const ProcessResult r = run_process(p);
  CHECK(r.timed_out);
  pid_t grandchild = 0;
  std::ifstream(pidfile) >> grandchild;
  REQUIRE(grandchild > 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = process_gone(grandchild);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(gone);
  if (!gone) ::kill(grandchild, SIGKILL);
}

TEST_CASE("segfault, exec failure, bounded output") {
  ProcessOptions p;
  p.argv = {kFake, "--mode", "segv", "--json", "/dev/null"};
  ProcessResult r = run_process(p);
  CHECK(r.signal == SIGSEGV);
  CHECK(describe(r, 1) == "killed by signal 11 (Segmentation fault)");

  p.argv = {"/nonexistent/program"};
  r = run_process(p);
  CHECK_FALSE(r.started);
  CHECK(describe(r, 1) == "could not start: No such file or directory");

  TempDir dir;
  const fs::path result = dir.path() / "r.json";
  p.argv = {kFake, "--mode", "noisy", "--json", result.string()};
  p.stdout_path = dir.path() / "out.txt";
  p.max_output_bytes = 100000;
  r = run_process(p);
  CHECK(r.exited_ok());
  CHECK(r.output_truncated);
  CHECK(fs::file_size(p.stdout_path) == 100000);
  CHECK(fs::exists(result));
}

TEST_CASE("judge: a good program passes and its points add up") {
  const LessonOutcome o = judge_mode("result", {"--exercise-ms", "1.0"});
  CHECK(o.verdict == Verdict::pass);
  CHECK(o.reason == "");
  CHECK(o.runs == 1);
  CHECK(o.score == 10);
  CHECK(o.max_score == 10);
  CHECK(o.device["name"] == "Fake GPU");
}

TEST_CASE("judge: the result leaves the program's reach at its end: code at exit cannot change it") {
  // The checker hands the result file by descriptor (--result-fd), in a folder of its own; the
  // harness closes it once written. The same program given a name (--json) is rewritten.
  const LessonOutcome o = judge_mode("rewrites-at-exit");
  CHECK(o.verdict == Verdict::pass);
  CHECK(o.score == 10);
  CHECK(contains(o.output, "the result is out of reach"));
  TempDir t("lab-test-at-exit");
  const fs::path named = t.path() / "result.json";
  ProcessOptions p;
  p.argv = {kFake, "--mode", "rewrites-at-exit", "--json", named.string(), "--nonce", "n"};
  REQUIRE(run_process(p).exited_ok());
  CHECK(read_text(named) == "{\"forged\": true}");  // what --result-fd prevents
}

TEST_CASE("judge: every way a program can misbehave is an error with its reason") {
  auto timeout = judge_mode("sleep", {}, 0.5);
  CHECK(timeout.verdict == Verdict::error);
  CHECK(timeout.reason == "timeout");
  CHECK(timeout.message == "timed out after 0.5 s (its process group was killed): an endless loop, a deadlock, or a kernel far slower than expected?");
  CHECK(timeout.score == 0);
  CHECK(timeout.rules.size() == 3);
  CHECK(timeout.rules[0].verdict == Verdict::error);

  auto crash = judge_mode("segv");
  CHECK(crash.verdict == Verdict::error);
  CHECK(crash.reason == "crash");
  CHECK(crash.message == "the program crashed: killed by signal 11 (Segmentation fault)");

  // The system-call filter, asked for where the lesson allows it: a program it ends (SIGSYS)
  // is an error that says why; a lesson that opts out (11: files and processes are its subject)
  // is not asked.
  JudgeOptions filtered;
  filtered.inspect = false;
  filtered.syscall_filter = true;
  const LessonOutcome stopped = judge_program(fake_lesson({"--mode", "forks"}, standard_rules()), kFake, filtered);
  CHECK(stopped.verdict == Verdict::error);
  CHECK(stopped.reason == "crash");
  CHECK(contains(stopped.message, "SIGSYS: the system-call filter stopped it starting a thread, a process"));
  LessonConfig unfiltered = fake_lesson({"--mode", "forks"}, standard_rules());
  unfiltered.syscall_filter = false;
  CHECK(judge_program(unfiltered, kFake, filtered).verdict == Verdict::pass);
  CHECK(judge_mode("forks").verdict == Verdict::pass);  // the checker's option off

  auto garbage = judge_mode("garbage");
  CHECK(garbage.reason == "result");
  CHECK(contains(garbage.message, "the result file is not valid JSON"));
  // The program's output is kept for feedback, with escape codes and invalid bytes removed.
  CHECK(contains(garbage.output, "PASS ??? all tests passed"));
  CHECK_FALSE(contains(garbage.output, "\x1b"));

  auto forged = judge_mode("wrong-nonce");
  CHECK(forged.reason == "result");
  CHECK(forged.message == "the result file's nonce does not match this run's: it was not written by this run of the harness");

  auto silent = judge_mode("no-result");
  CHECK(silent.reason == "result");
  CHECK(contains(silent.message, "the program wrote no result (result-0.json is empty): it ended before its harness did"));

  auto exit3 = judge_mode("exit3");
  CHECK(exit3.reason == "exit");
  CHECK(exit3.message == "the program exited with code 3 (exit 3: a CUDA or runtime error stopped it: see the output)");
  CHECK(contains(exit3.output, "illegal memory access"));

  // "No GPU" (exit 77) is believed only where the checker itself sees none.
  auto nogpu = judge_mode("nogpu");
  if (probe_gpu().gpu_present) {
    CHECK(nogpu.verdict == Verdict::error);
    CHECK(nogpu.reason == "exit");
    CHECK(contains(nogpu.message, "but the checker sees one"));
  } else {
    CHECK(nogpu.verdict == Verdict::environment);
    CHECK(nogpu.reason == "no-gpu");
    CHECK(nogpu.message == "no usable GPU: no CUDA device is available");
  }

  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  auto missing = judge_program(fake_lesson({}, standard_rules()), "/nonexistent/solution", opt);
  CHECK(missing.reason == "missing");
  CHECK(missing.message == "no program at /nonexistent/solution: build it first");
}

TEST_CASE("judge: wrong results fail correctness and earn no speed points") {
  const LessonOutcome o = judge_mode("result", {"--wrong"});
  CHECK(o.verdict == Verdict::fail);
  CHECK(o.rules[0].verdict == Verdict::fail);
  CHECK(o.rules[0].message == "\"exercise\" gives wrong results (1000x777: 12 mismatches, first at [999]). Check the tail.");
  CHECK(o.rules[1].verdict == Verdict::fail);
  CHECK(o.score == 0);
}

TEST_CASE("judge: re-runs never mix runs; the median run decides") {
  TempDir dir;
  const std::string counter = (dir.path() / "count").string();
  // Run 1: 3.0x over naive at 1% spread is too close to 3x; run 2 (1.2 ms, 2.5x) fails; the two
  // disagree, so run 3 (0.9 ms, 3.3x) is made, and the median run (the first) decides.
  auto o = judge_mode("sequence", {"--baseline-ms", "3.0", "--exercise-ms", "1.0,1.2,0.9", "--counter", counter});
  CHECK(o.runs == 3);
  CHECK(o.rules[1].verdict == Verdict::ambiguous);
  CHECK(o.rules[1].reading->value == doctest::Approx(3.0));
  CHECK(contains(o.rules[1].message, "the median of 3 runs"));

  // Still too close after three runs: ambiguous, with the points (the benefit of the doubt).
  const std::string counter2 = (dir.path() / "count2").string();
  auto a = judge_mode("sequence", {"--baseline-ms", "3.0", "--exercise-ms", "1.0", "--counter", counter2});
  CHECK(a.runs == 3);
  CHECK(a.rules[1].verdict == Verdict::ambiguous);
  CHECK(a.verdict == Verdict::ambiguous);
  CHECK(a.score == 10);
  CHECK(contains(a.message, "benefit of the doubt"));

  // One lucky run among clear failures cannot make a pass: 2x, 2x... and a 4x is outvoted.
  const std::string counter3 = (dir.path() / "count3").string();
  auto lucky = judge_mode("sequence", {"--baseline-ms", "4.0", "--exercise-ms", "2.0,1.0,2.0", "--counter", counter3});
  CHECK(lucky.runs == 1);  // a clear failure is not re-run at all
  CHECK(lucky.rules[1].verdict == Verdict::fail);
  const std::string counter4 = (dir.path() / "count4").string();
  auto near = judge_mode("sequence", {"--baseline-ms", "2.8", "--exercise-ms", "1.0,0.5,1.0", "--counter", counter4});
  CHECK(near.runs == 3);  // 2.8x is within 10% of 3x: re-run; 5.6x then 2.8x: the median fails
  CHECK(near.rules[1].verdict == Verdict::fail);
}

TEST_CASE("judge: the program's own word on its environment decides nothing") {
  // The program says its clocks were throttled; the checker saw nothing of the kind (and with no
  // GPU here it watched nothing): a clear failure stays a failure, with no re-run.
  auto o = judge_mode("result", {"--exercise-ms", "2.0", "--env-bad"});
  CHECK(o.runs == 1);
  CHECK(o.rules[0].verdict == Verdict::pass);
  CHECK(o.rules[1].verdict == Verdict::fail);
  CHECK(o.diagnostics.empty());
}

TEST_CASE("sanitizer: findings with file:line, and a missing tool is not the student's fault") {
  const std::string log =
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at transpose(float *, const float *, int)+0x70 in /tmp/grading/staging/05-shared/exercise.cu:31\n"
      "=========     by thread (0,0,0) in block (3,0,0)\n"
      "=========     Host Frame: main [0x1234] in /tmp/grading/lessons/05-shared/submission\n"
      "=========\n"
      "========= Invalid __global__ write of size 4 bytes\n"
      "=========     at transpose(float *, const float *, int)+0x70 in /tmp/grading/staging/05-shared/exercise.cu:31\n"
      "========= Error: Race reported between Write access at tile_kernel+0x1a0 in /src/lessons/05-shared/exercise.cu:12\n"
      "=========     and Read access at tile_kernel+0x2b0 in /src/lessons/05-shared/exercise.cu:15 [1024 hazards]\n"
      "========= ERROR SUMMARY: 3 errors\n";
  auto f = parse_sanitizer_log("memcheck", log);
  REQUIRE(f.size() == 2);
  CHECK(f[0].what == "Invalid __global__ write of size 4 bytes");
  CHECK(f[0].location == "05-shared/exercise.cu:31");
  CHECK(f[0].count == 2);
  CHECK(f[1].what == "Race reported between Write access at tile_kernel+0x1a0");
  CHECK(f[1].location == "05-shared/exercise.cu:12");

  // A stand-in compute-sanitizer that finds an error.
  TempDir dir;
  const fs::path tool = dir.path() / "fake-sanitizer";
  write_text(tool, "#!/bin/sh\nwhile [ \"$1\" != \"--log-file\" ]; do shift; done\n"
                   "printf '========= Invalid __global__ read of size 4 bytes\\n=========     at k+0x1 in /x/90-fake/exercise.cu:7\\n' > \"$2\"\n"
                   "exit 86\n");
  fs::permissions(tool, fs::perms::owner_all);
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.sanitize = true;
  opt.sanitizer_cmd = {tool.string()};
  auto o = judge_program(fake_lesson({"--mode", "result"}, standard_rules()), kFake, opt);
  REQUIRE(o.sanitizer);
  CHECK(o.sanitizer->verdict == Verdict::fail);
  CHECK(o.reason == "sanitizer");
  CHECK(o.verdict == Verdict::fail);
  CHECK(o.score == 10);  // the sanitizer line carries no points of its own
  CHECK(contains(o.sanitizer->message, "memcheck found 1 error(s), first: Invalid __global__ read of size 4 bytes at 90-fake/exercise.cu:7"));

  opt.sanitizer_cmd = {"no-such-sanitizer-here"};
  auto none = judge_program(fake_lesson({"--mode", "result"}, standard_rules()), kFake, opt);
  CHECK(none.sanitizer->verdict == Verdict::environment);
  CHECK(none.sanitizer->message == "compute-sanitizer is not on PATH, so nothing was checked");
}

// A stand-in compute-sanitizer: a shell script (after its #! line) in `dir`; its path.
static std::string fake_sanitizer(const TempDir& dir, const std::string& name, const std::string& script) {
  const fs::path path = dir.path() / name;
  write_text(path, "#!/bin/sh\n" + script);
  fs::permissions(path, fs::perms::owner_all);
  return path.string();
}

TEST_CASE("sanitizer: racecheck's hazards in precompiled library kernels are shown, not judged") {
  // Found on the H200: racecheck reports hazards inside cuBLAS's own TMA/wgmma kernels (nvjet_*),
  // which carry no source line; the lesson's code is built with -lineinfo, so its races do.
  TempDir dir;
  auto sanitizer = [&](const std::string& name, const std::string& races) {
    return fake_sanitizer(dir, name,
                          "tool=$2\nwhile [ \"$1\" != \"--log-file\" ]; do shift; done\nlog=$2\nshift 2\n"
                          "\"$@\" || exit $?\n[ \"$tool\" = racecheck ] || exit 0\n"
                          "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do\n"
                          "  echo \"========= Error: Race reported between Read access at nvjet_sm90_$i+0x960\" >> \"$log\"\ndone\n" +
                              races + "exit 86\n");
  };
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.sanitize = true;
  opt.sanitizer_cmd = {sanitizer("library-only", "")};
  const LessonOutcome library = judge_program(fake_lesson({"--mode", "result"}, standard_rules()), kFake, opt);
  REQUIRE(library.sanitizer);
  CHECK(library.sanitizer->verdict == Verdict::pass);
  CHECK(contains(library.sanitizer->message, "racecheck reported 10 hazard(s) in precompiled library code, not judged"));
  CHECK(library.verdict == Verdict::pass);

  // The lesson's own race, logged after more library hazards than are kept, still fails.
  opt.sanitizer_cmd = {sanitizer("own-race", "echo '========= Error: Race reported between Write access at tile+0x1a0 in "
                                             "/src/90-fake/exercise.cu:12' >> \"$log\"\n")};
  const LessonOutcome own = judge_program(fake_lesson({"--mode", "result"}, standard_rules()), kFake, opt);
  REQUIRE(own.sanitizer);
  CHECK(own.sanitizer->verdict == Verdict::fail);
  CHECK(contains(own.sanitizer->message, "racecheck found 1 error(s), first: Race reported between Write access at tile+0x1a0 at 90-fake/exercise.cu:12"));
  CHECK(own.verdict == Verdict::fail);
}

TEST_CASE("sanitizer: a run counts only when the program wrote its result, with that run's nonce") {
  // Found by a red-team pass: an exercise that ended the process (exit 0) at a size only the
  // sanitizers' --quick runs use had its racy kernel never run under them, and read "no errors".
  TempDir dir;
  auto sanitizer = [&](const std::string& name, const std::string& body) {
    return fake_sanitizer(dir, name, "while [ \"$1\" != \"--log-file\" ]; do shift; done\nshift 2\n" + body);
  };
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.sanitize = true;
  opt.sanitizer_cmd = {sanitizer("runs-it", "exec \"$@\"\n")};
  const LessonOutcome ran = judge_program(fake_lesson({"--mode", "result"}, standard_rules()), kFake, opt);
  REQUIRE(ran.sanitizer);
  CHECK(ran.sanitizer->verdict == Verdict::pass);
  CHECK(ran.sanitizer->message == "memcheck and racecheck found no errors in the lesson's code");
  opt.sanitizer_cmd = {sanitizer("ends-early", "exit 0\n")};
  const LessonOutcome early = judge_program(fake_lesson({"--mode", "result"}, standard_rules()), kFake, opt);
  REQUIRE(early.sanitizer);
  CHECK(early.sanitizer->verdict == Verdict::error);
  CHECK(contains(early.sanitizer->message, "memcheck: the program exited with code 0 without its result"));
  CHECK(early.verdict == Verdict::error);
}

TEST_CASE("the system-call filter is asked for under compute-sanitizer, not under ncu") {
  // Stand-in tools that keep the command line they were given and find nothing.
  TempDir dir;
  auto tool = [&](const std::string& name) {
    const fs::path path = dir.path() / name;
    write_text(path, "#!/bin/sh\necho \"$@\" >> '" + (dir.path() / (name + ".args")).string() + "'\n");
    fs::permissions(path, fs::perms::owner_all);
    return path.string();
  };
  std::vector<Rule> rules = standard_rules();
  Rule counter;
  counter.id = "c";
  counter.kind = RuleKind::counter;
  counter.variant = "exercise";
  counter.counter = "global_load_efficiency";
  counter.min = 0.8;
  counter.points = 1;
  rules.push_back(counter);
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.sanitize = true;
  opt.sanitizer_cmd = {tool("sanitizer")};
  opt.ncu_cmd = {tool("ncu")};
  opt.syscall_filter = true;
  auto lines = [&](const std::string& name) {
    std::ifstream in(dir.path() / (name + ".args"));
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  judge_program(fake_lesson({"--mode", "result"}, rules), kFake, opt);
  REQUIRE(lines("sanitizer").size() == 2);  // memcheck, racecheck
  for (const auto& line : lines("sanitizer")) CHECK(contains(line, " --restrict-syscalls"));
  // ncu's code in the program opens a lock file once profiling starts: no filter there.
  REQUIRE(lines("ncu").size() == 1);
  CHECK_FALSE(contains(lines("ncu")[0], "--restrict-syscalls"));
  // ncu reads a call at the graded size, and the program writes its checks of it.
  CHECK(contains(lines("ncu")[0], " --profile --variant exercise "));
  CHECK(contains(lines("ncu")[0], " --json "));
  CHECK_FALSE(contains(lines("ncu")[0], "--quick"));

  // A lesson that opts out (11) is not filtered there either.
  fs::remove(dir.path() / "sanitizer.args");
  fs::remove(dir.path() / "ncu.args");
  LessonConfig unfiltered = fake_lesson({"--mode", "result"}, rules);
  unfiltered.syscall_filter = false;
  judge_program(unfiltered, kFake, opt);
  REQUIRE(lines("sanitizer").size() == 2);
  for (const auto& line : lines("sanitizer")) CHECK_FALSE(contains(line, "--restrict-syscalls"));
}

TEST_CASE("judge: with a pristine program, a baseline slowed in the student's process buys nothing") {
  // The student's run reports its baseline at 40 ms against 1 ms (40x, bar 3x): the run of the
  // pristine program, the same lesson with no student code, times it at 2 ms (2x: a fail).
  TempDir dir;
  const fs::path pristine = dir.path() / "pristine";
  // It is asked to measure no roofs (the rules use the student's run's): without --no-ceilings
  // it fails, and the speedup rule would be environment.
  write_text(pristine, "#!/bin/sh\ncase \" $* \" in *\" --no-ceilings \"*) ;; *) exit 3 ;; esac\n"
                       "exec \"" + kFake + "\" \"$@\" --baseline-ms 2\n");
  fs::permissions(pristine, fs::perms::owner_all);
  const LessonConfig lesson =
      fake_lesson({"--mode", "result", "--baseline-ms", "40"}, standard_rules());
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  const LessonOutcome trusting = judge_program(lesson, kFake, opt);
  CHECK(trusting.rules[1].verdict == Verdict::pass);  // without it: the slowed baseline counts

  opt.pristine = pristine;
  const LessonOutcome o = judge_program(lesson, kFake, opt);
  REQUIRE(o.rules.size() == 3);
  CHECK(o.rules[0].verdict == Verdict::pass);
  CHECK(o.rules[1].verdict == Verdict::fail);
  CHECK(o.rules[1].reading->value == doctest::Approx(2.0));
  CHECK(contains(o.rules[1].message, "timed in a run of the pristine lesson"));
  // The student's program was told to leave the baseline out (--skip-variant): no reading of
  // its own is quoted, and the pristine one stands in the record's variant list.
  CHECK(contains(o.rules[1].message, "no code of yours: 2 ms)"));
  CHECK(o.rules[2].verdict == Verdict::pass);  // the exercise's own time is its run's

  // A pristine program that cannot run is the machine's problem, not the student's: the
  // exercise's results cannot be checked out of process, so nothing is judged.
  opt.pristine = dir.path() / "missing";
  const LessonOutcome unchecked = judge_program(lesson, kFake, opt);
  CHECK(unchecked.verdict == Verdict::environment);
  CHECK(unchecked.reason == "replay");
  CHECK(contains(unchecked.message, "could not be checked out of process: the course's program failed"));
  // In a lesson that does not replay, only the speedup rule waits for it.
  LessonConfig no_replay = lesson;
  no_replay.replay = false;
  const LessonOutcome broken = judge_program(no_replay, kFake, opt);
  CHECK(broken.rules[0].verdict == Verdict::pass);
  CHECK(broken.rules[1].verdict == Verdict::environment);
  CHECK(contains(broken.rules[1].message, "could not be timed in the checker's run of the pristine lesson"));
  CHECK(broken.rules[2].verdict == Verdict::pass);
}

TEST_CASE("judge: the exercise's results are judged out of process, from its record") {
  // The student's program writes its record through a descriptor the checker hands it; the
  // pristine program (here the same stand-in, which replays as a lesson does) checks the
  // recorded values against its own reference.
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.pristine = kFake;
  auto judged = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--mode", "result"});
    return judge_program(fake_lesson(args, standard_rules()), kFake, opt);
  };
  const LessonOutcome right = judged({});
  CHECK(right.verdict == Verdict::pass);
  CHECK(right.score == 10);
  REQUIRE(right.results_checked.size() == 1);
  CHECK(right.results_checked[0]["state"] == "replayed");
  CHECK(right.results_checked[0]["checks"] == 1);
  CHECK(results_checked_line(right.results_checked) ==
        "results checked out of process by the course's program: 1 comparison from the run's record");

  // Its own process says right, its recorded values are wrong: the verdict was not earned.
  const LessonOutcome forged = judged({"--record", "forged"});
  CHECK(forged.verdict == Verdict::error);
  CHECK(forged.reason == "unverified-result");
  CHECK(contains(forged.message, "exercise on \"1000x777\": its own process judged it right, but the "
                                 "values it recorded, checked by the course's program, are wrong"));
  CHECK(contains(forged.message, "got 4, expected 3"));

  // No record of a check the course's program makes: nothing to judge it on.
  const LessonOutcome silent = judged({"--record", "none"});
  CHECK(silent.verdict == Verdict::error);
  CHECK(silent.reason == "unverified-result");
  CHECK(contains(silent.message, "recorded no values for what the course's program checks (exercise: 1000x777)"));

  // A record larger than any harness writes is not replayed.
  const LessonOutcome huge = judged({"--record", "huge"});
  CHECK(huge.verdict == Verdict::error);
  CHECK(huge.reason == "unverified-result");
  CHECK(contains(huge.message, "its record holds 65 MiB, more than a harness writes (at most 64)"));

  // Wrong and saying so: an ordinary fail, with the check made out of process beside its own.
  const LessonOutcome wrong = judged({"--wrong"});
  CHECK(wrong.verdict == Verdict::fail);
  CHECK(wrong.rules[0].verdict == Verdict::fail);

  // Without a pristine program, or in a lesson that does not replay, nothing is recorded or
  // replayed: the forgery's own word stands (what docs/grading-security.md says of such runs).
  opt.pristine.clear();
  const LessonOutcome unreplayed = judged({"--record", "forged"});
  CHECK(unreplayed.verdict == Verdict::pass);
  CHECK(results_checked_line(unreplayed.results_checked) ==
        "results judged in the program's own process: no pristine program (--baselines in-process)");
  opt.pristine = kFake;
  LessonConfig no_replay = fake_lesson({"--mode", "result", "--record", "forged"}, standard_rules());
  no_replay.replay = false;
  CHECK(judge_program(no_replay, kFake, opt).verdict == Verdict::pass);
}

TEST_CASE("replayed checks: failures added, a disagreement or a gap is an error") {
  const json student = json::parse(R"({"variants": [
      {"name": "naive", "role": "baseline", "correct": true, "checks": []},
      {"name": "exercise", "role": "exercise", "correct": true,
       "checks": [{"case": "small", "ok": true}, {"case": "big", "ok": false, "message": "x"}]}],
    "environment_ok": true, "diagnostics": []})");
  const json replayed = json::parse(R"({"variants": [
      {"name": "naive", "role": "baseline", "correct": false,
       "checks": [{"case": "small", "ok": false, "message": "not the exercise"}]},
      {"name": "exercise", "role": "exercise", "correct": false,
       "checks": [{"case": "small", "ok": true}, {"case": "big", "ok": false, "message": "got 2, expected 1"}]}],
    "replay": {"entries": 2, "used": 2, "missing": [], "unused": [], "error": ""}})");
  json doc = student;
  Replayed counted;
  CHECK(use_replayed_checks(doc, replayed, &counted) == "");
  CHECK_FALSE(doc.contains("results_checked"));  // the checker's finding, not the program's word
  CHECK(doc["variants"][0] == student["variants"][0]);  // only exercises are replayed
  const json& ex = doc["variants"][1];
  CHECK(ex["correct"] == false);
  REQUIRE(ex["checks"].size() == 3);
  CHECK(ex["checks"][2]["case"] == "checked out of process: big");
  CHECK(ex["checks"][2]["message"] == "got 2, expected 1");
  CHECK(counted.checks == 2);
  CHECK(counted.to_json() == json{{"state", "replayed"}, {"checks", 2}, {"entries", 2}});

  json disagrees = replayed;  // "small" was right in its own process, wrong from its record
  disagrees["variants"][1]["checks"][0] = {{"case", "small"}, {"ok", false}, {"message", "got 5, expected 1"}};
  doc = student;
  CHECK(contains(use_replayed_checks(doc, disagrees), "exercise on \"small\": its own process judged it right"));

  // The same case checked twice (two warm-up calls): right then wrong in its own process, and
  // so from its record. The second answers for the second: a fail, not a disagreement.
  json twice_student = student, twice_replayed = replayed;
  twice_student["variants"][1]["checks"] = json::parse(
      R"([{"case": "warm-up", "ok": true}, {"case": "warm-up", "ok": false, "message": "stale"}])");
  twice_replayed["variants"][1]["checks"] = json::parse(
      R"([{"case": "warm-up", "ok": true}, {"case": "warm-up", "ok": false, "message": "got 7, expected 9"}])");
  doc = twice_student;
  CHECK(use_replayed_checks(doc, twice_replayed) == "");
  CHECK(doc["variants"][1]["correct"] == false);
  std::swap(twice_student["variants"][1]["checks"][0]["ok"], twice_student["variants"][1]["checks"][1]["ok"]);
  doc = twice_student;  // right the second time in its own process, wrong from its record
  CHECK(contains(use_replayed_checks(doc, twice_replayed), "exercise on \"warm-up\": its own process judged it right"));

  json gap = replayed;
  gap["replay"]["missing"] = {"exercise: timed call 3"};
  doc = student;
  CHECK(contains(use_replayed_checks(doc, gap), "recorded no values for what the course's program checks (exercise: timed call 3)"));

  json unreadable = replayed;
  unreadable["replay"]["error"] = "line 4: not an entry of a record";
  doc = student;
  CHECK(use_replayed_checks(doc, unreadable) == "the student's program's record cannot be read: line 4: not an entry of a record");

  doc = student;
  CHECK(contains(use_replayed_checks(doc, json::parse(R"({"variants": []})")), "no \"replay\" in its result"));
}

TEST_CASE("replayed checks: thousands of failing checked calls are judged at once") {
  // A fast wrong exercise: every checked timed call wrong, in its own process and from its
  // record. Matching each replayed check by a scan of the student's checks took 214 s for 6,000
  // on this machine (lesson 08's skips_timed_calls held the selftest for 218 s on the H100).
  constexpr int kCalls = 6000;
  json mine = json::array(), theirs = json::array();
  for (int k = 0; k < kCalls; ++k) {
    const std::string name = "2^28 integers, timed call " + std::to_string(k);
    mine.push_back({{"case", name}, {"ok", false}, {"message", "got 12345, expected 12346"}});
    theirs.push_back({{"case", name}, {"ok", false}, {"message", "got 12345, expected 12346"}});
  }
  json doc = {{"variants", json::array({{{"name", "exercise"}, {"role", "exercise"},
                                         {"correct", false}, {"checks", mine}}})}};
  const json replayed = {
      {"variants", json::array({{{"name", "exercise"}, {"role", "exercise"}, {"checks", theirs}}})},
      {"replay", {{"entries", kCalls}, {"missing", json::array()}}}};
  const auto t0 = std::chrono::steady_clock::now();
  Replayed counted;
  CHECK(use_replayed_checks(doc, replayed, &counted) == "");
  // Generous: about 0.04 s here. A bound on the grade path's own cost, not a benchmark.
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 10.0);
  CHECK(doc["variants"][0]["checks"].size() == 2 * kCalls);
  CHECK(doc["variants"][0]["checks"][kCalls]["case"] == "checked out of process: 2^28 integers, timed call 0");
  CHECK(counted.checks == kCalls);
}

TEST_CASE("pristine baselines: replaced, added, or the run's environment") {
  const json student = json::parse(R"({"variants": [
      {"name": "naive", "correct": true, "time_ms": {"median": 40}, "checks": []},
      {"name": "exercise", "correct": true, "time_ms": {"median": 1}}],
    "environment_ok": true, "diagnostics": []})");
  const json pristine = json::parse(R"({"variants": [
      {"name": "naive", "correct": true, "time_ms": {"median": 2}},
      {"name": "exercise", "correct": true}],
    "environment_ok": true, "diagnostics": []})");
  const Findings calm;  // the checker saw the pristine run undisturbed
  auto pristine_error = [](const Findings& f, const std::string& name) {
    const auto p = f.pristine.find(name);
    return p == f.pristine.end() ? std::string("(none)") : p->second.error.value_or("(no error)");
  };
  json doc = student;
  Findings found;
  use_pristine_baselines(doc, found, pristine, &calm, "", {"naive"});
  CHECK(doc["variants"][0]["time_ms"]["median"] == 2);
  CHECK(found.pristine.at("naive").measured);
  CHECK(pristine_error(found, "naive") == "(no error)");
  // What the checker found stays its own: nothing of it is written into the student's document.
  CHECK(doc["variants"][0] == pristine["variants"][0]);
  CHECK(doc["variants"][1] == student["variants"][1]);  // the exercise is never replaced
  CHECK(found.environment_ok);

  json skipped = student;  // the student's program left the baseline out: it is added
  skipped["variants"].erase(0);
  Findings skipped_found;
  use_pristine_baselines(skipped, skipped_found, pristine, &calm, "", {"naive"});
  REQUIRE(skipped["variants"].size() == 2);
  CHECK(skipped["variants"][1]["name"] == "naive");
  CHECK(skipped["variants"][1]["time_ms"]["median"] == 2);

  json failed = student;
  Findings failed_found;
  use_pristine_baselines(failed, failed_found, json(), nullptr, "(timeout) timed out after 90 s", {"naive"});
  CHECK_FALSE(failed["variants"][0].contains("time_ms"));
  CHECK_FALSE(failed["variants"][0].contains("pristine_error"));
  CHECK_FALSE(failed_found.pristine.at("naive").measured);
  CHECK(pristine_error(failed_found, "naive") == "(timeout) timed out after 90 s");

  json untimed = student;  // it ran, but did not time the baseline
  Findings untimed_found;
  use_pristine_baselines(untimed, untimed_found, pristine, &calm, "", {"naive", "exercise"});
  CHECK(pristine_error(untimed_found, "exercise") == "the pristine run did not time it");

  json broken_course = pristine;  // the course's own baseline wrong: not the student's loss
  broken_course["variants"][0]["correct"] = false;
  json wrong = student;
  Findings wrong_found;
  use_pristine_baselines(wrong, wrong_found, broken_course, &calm, "", {"naive"});
  CHECK_FALSE(wrong["variants"][0].contains("time_ms"));
  CHECK(pristine_error(wrong_found, "naive") == "the course's starter gave wrong results for it");
  Rule speedup = make_rule("speedup", RuleKind::speedup, 3.0);
  CHECK(evaluate_rule(speedup, wrong, wrong_found).verdict == Verdict::environment);

  // The pristine run's environment is the checker's word on it, never its document's.
  Findings busy;
  busy.environment_ok = false;
  busy.disturbance = {"another process used the GPU"};
  json disturbed = student;
  Findings disturbed_found;
  use_pristine_baselines(disturbed, disturbed_found, pristine, &busy, "", {"naive"});
  CHECK_FALSE(disturbed_found.environment_ok);
  CHECK(disturbed_found.disturbance ==
        std::vector<std::string>{"while the baselines were timed in the pristine run: another process used the GPU"});
  CHECK(disturbed == doc);
  json says_disturbed = pristine;
  says_disturbed["environment_ok"] = false;
  Findings not_disturbed;
  json student_copy = student;
  use_pristine_baselines(student_copy, not_disturbed, says_disturbed, &calm, "", {"naive"});
  CHECK(not_disturbed.environment_ok);
}

}  // TEST_SUITE
