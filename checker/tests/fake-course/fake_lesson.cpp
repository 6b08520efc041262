// A stand-in for a lesson program, for the checker's tests. It takes the options every lesson
// takes (--json PATH --seed N --nonce HEX --quick) plus --mode, and misbehaves on request:
//   result      write a valid result (times from --exercise-ms / --baseline-ms, spread --spread,
//               --wrong makes the exercise incorrect, --env-bad sets environment_ok false)
//   sequence    like result, but --exercise-ms takes a comma list: run k uses item k (the run
//               count is kept in --counter FILE), to test re-runs
//   sleep       sleep forever, ignoring SIGTERM (the checker must escalate to SIGKILL)
//   grandchild  fork a child that writes its pid to --pidfile and sleeps; then sleep
//   segv        crash with SIGSEGV
//   garbage     print binary junk and write a result file that is not JSON
//   wrong-nonce write a valid result with someone else's nonce
//   no-result   exit 0 without writing anything
//   exit3       print a CUDA-like error and exit 3
//   nogpu       print "no CUDA device" and exit 77
//   noisy       print 50 MB on stdout, then write a valid result
//   rewrites-at-exit  a valid result, then at exit a forged one through the result's descriptor
//               (--result-fd) or name (--json)
//   forks       start a child process, then write a valid result; with --restrict-syscalls (the
//               checker's request for the system-call filter) it ends by SIGSYS instead, as the
//               filter would end it (lab/syscall_filter.hpp; tried for real in common/tests)
// --variant NAME (repeatable) times only those variants ("naive", "exercise"), as a lesson does;
// --skip-variant NAME (repeatable) leaves that one untimed.
// Records and replays as a lesson does (lab/record.hpp): --record-fd N writes the exercise's one
// comparison ("1000x777", values 1 2 3; 1 2 4 when --wrong) to descriptor N; --record forged
// writes 1 2 4 while the result says right, --record none writes nothing, --record huge adds
// 65 MiB of blank lines. --replay PATH checks
// the exercise from such a record (untimed; "replay" in the result) against 1 2 3.
// --profile is taken as the run under ncu (the checker's counters); there --when-profiled wrong
// makes the exercise incorrect and --when-profiled forged forges its record, as above.
// Built with -DFAKE_COURSE (checker/tests/fake-course), the default mode and the exercise's time
// come from the student's exercise.cu instead: const char* exercise_mode(); double exercise_ms().
// With LAB_FAKE_EXPECT_GPU=X it exits 3 unless it sees GPU X alone (CUDA_VISIBLE_DEVICES=X, PCI order).
// With LAB_FAKE_UNSEEN=PATH it exits 3 if it can see PATH (a file the test left in the host's /tmp).
// Where the checker asks for a trace (LAB_TRACE_FILE), it also plays the tracer: with the times it
// reported, or --trace-exercise-ms / --trace-baseline-ms for the exercise's / the baseline's; --trace none|early|garbage writes none, one
// without its end line, or a damaged one.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#ifdef FAKE_COURSE
const char* exercise_mode();
double exercise_ms();
#endif

namespace {

std::string arg_json, arg_nonce, arg_mode = "result", arg_pidfile, arg_counter, arg_exercise = "1.0";
#ifdef FAKE_LESSON_NAME
std::string arg_lesson = FAKE_LESSON_NAME;
#else
std::string arg_lesson = "90-fake";
#endif
double arg_baseline = 4.0, arg_spread = 0.01, arg_trace_exercise = 0, arg_trace_baseline = 0;
std::string arg_trace = "ok";
bool arg_wrong = false, arg_env_bad = false, arg_quick = false, arg_restrict = false;
long arg_seed = 0;
std::vector<std::string> arg_only;  // --variant: empty, every variant
std::vector<std::string> arg_skipped;  // --skip-variant
int arg_record_fd = -1;
int arg_result_fd = -1;  // --result-fd: the result goes there (then it is closed), as a lesson's
std::string arg_record = "right", arg_replay;
bool arg_profile = false;
bool arg_no_ceilings = false;  // --no-ceilings: no "ceilings" in the result
std::string arg_when_profiled;  // wrong, forged
bool arg_swap_tracer = false;   // --swap-tracer: puts a file of its own where the tracer was

bool wanted(const std::string& variant) {
  if (std::find(arg_skipped.begin(), arg_skipped.end(), variant) != arg_skipped.end()) return false;
  if (!arg_replay.empty()) return variant == "exercise" ||  // a replay: every exercise
         std::find(arg_only.begin(), arg_only.end(), variant) != arg_only.end();
  return arg_only.empty() || std::find(arg_only.begin(), arg_only.end(), variant) != arg_only.end();
}
bool timed(const std::string& variant) { return wanted(variant) && (variant != "exercise" || arg_replay.empty()); }

void write_record(bool wrong) {
  if (arg_record_fd < 0 || arg_record == "none" || !wanted("exercise")) return;
  if (arg_record == "huge") {  // 65 MiB of blank lines: more than any harness writes
    const std::string blank(1 << 20, '\n');
    for (int i = 0; i < 65; ++i)
      if (write(arg_record_fd, blank.data(), blank.size()) != static_cast<ssize_t>(blank.size())) std::exit(3);
  }
  const std::string text = std::string("check\texercise\t1000x777\t3\t3\n0:0x1p+0 1:0x1p+1 2:") +
                           (wrong || arg_record == "forged" ? "0x1p+2" : "0x1.8p+1") + "\n";
  if (write(arg_record_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) std::exit(3);
}

// The replay of the record: {ok, message, found}.
struct Replayed {
  bool ok = false, found = false;
  std::string message;
};
Replayed replay() {
  Replayed r;
  std::ifstream in(arg_replay);
  for (std::string line; std::getline(in, line);) {
    if (line != "check\texercise\t1000x777\t3\t3") continue;
    std::string values;
    std::getline(in, values);
    r.found = true;
    r.ok = values == "0:0x1p+0 1:0x1p+1 2:0x1.8p+1";
    r.message = r.ok ? "" : "1 of 3 elements differ; first at [2]: got 4, expected 3";
  }
  if (!r.found) r.message = "the student's program recorded no values for this check";
  return r;
}

// What checker/tracer would write for a ceiling, the baseline and the exercise, 30 samples each
// spread evenly around their median, each opened by a lead-in and closed 2 us late by a probe.
void write_trace(double exercise_ms) {
  const char* path = std::getenv("LAB_TRACE_FILE");
  if (!path || arg_trace == "none") return;
  std::ofstream t(path);
  t << "lab-trace 2\n";
  unsigned correlation = 100;
  auto edge = [&](int measurement, int variant, int sample, int kind) {
    t << "T " << ++correlation << " " << measurement << " " << variant << " " << sample << " 1 "
      << kind << "\n";
    return correlation;
  };
  const double medians[] = {0.5, arg_trace_baseline > 0 ? arg_trace_baseline : arg_baseline,
                           arg_trace_exercise > 0 ? arg_trace_exercise : exercise_ms};
  for (int m = 0; m < 3; ++m)
    for (int sample = -1; sample < 30; ++sample) {
      if ((m == 1 && !timed("naive")) || (m == 2 && !timed("exercise"))) break;
      const unsigned open = edge(m, m - 1, sample, 0), close = edge(m, m - 1, sample, 1);
      t << "S " << open << " " << close << " "
        << static_cast<long long>(1e6 * medians[m] * (1 + arg_spread * (sample - 14.5) / 14.5)) + 2000
        << "\n";
    }
  if (arg_trace == "garbage") t << "S 12 seven\n";
  if (arg_trace != "early") t << "E 0\n";
}

// The result, where the checker asked for it: through the handed descriptor, closed after it
// as the harness closes it, or by name.
void put_result(const std::string& text) {
  if (arg_result_fd >= 0) {
    if (write(arg_result_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) std::exit(3);
    close(arg_result_fd);
    return;
  }
  const std::string tmp = arg_json + ".tmp";
  std::ofstream(tmp) << text;
  std::rename(tmp.c_str(), arg_json.c_str());
}

void write_result(const std::string& nonce, double exercise_ms, bool wrong) {
  write_trace(exercise_ms);
  write_record(wrong);
  const Replayed replayed = arg_replay.empty() ? Replayed{} : replay();
  if (!arg_replay.empty()) wrong = !replayed.ok;
  auto q = [](double m, double f) { return m * f; };
  std::ostringstream o;
  auto timing = [&](double m) {
    std::ostringstream t;
    t << "{\"median\": " << m << ", \"median_low\": " << q(m, 1 - arg_spread)
      << ", \"median_high\": " << q(m, 1 + arg_spread) << ", \"min\": " << q(m, 1 - 2 * arg_spread) << ", \"q1\": "
      << q(m, 1 - arg_spread) << ", \"q3\": " << q(m, 1 + arg_spread) << ", \"max\": "
      << q(m, 1 + 3 * arg_spread) << ", \"mean\": " << m << ", \"stddev\": 0.01, \"n\": 30}";
    return t.str();
  };
  const double bytes = 1e9;
  const double copy_gbs = 2800;
  const double ex_gbs = bytes / (exercise_ms * 1e-3) / 1e9;
  const double base_gbs = bytes / (arg_baseline * 1e-3) / 1e9;
  o << "{\n  \"schema\": \"cuda-perf-lab/result/1\", \"lesson\": \"" << arg_lesson
    << "\", \"build\": \"fake\", \"nonce\": \"" << nonce << "\", \"complete\": true,\n"
    << "  \"device\": {\"name\": \"Fake GPU\", \"cc\": \"9.0\", \"sms\": 132, \"l2_bytes\": 52428800,"
       " \"peak_bandwidth_gbs\": 3352.3, \"driver\": 13000, \"runtime\": 13000, \"debug_build\": false},\n"
    << (arg_no_ceilings ? std::string()
                        : "  \"ceilings\": {\"copy_gbs\": " + std::to_string(copy_gbs) + ", \"launch_us\": 2.3},\n")
    << "  \"config\": {\"seed\": " << arg_seed << ", \"quick\": " << (arg_quick ? "true" : "false") << "},\n"
    << "  \"variants\": [\n";
  std::ostringstream naive, exercise;
  naive << "    {\"name\": \"naive\", \"role\": \"baseline\", \"correct\": true, \"time_ms\": " << timing(arg_baseline)
        << ", \"bytes\": " << bytes << ", \"gbs\": " << base_gbs << ", \"fraction_of_copy\": " << base_gbs / copy_gbs << "}";
  exercise << "    {\"name\": \"exercise\", \"role\": \"exercise\", \"correct\": " << (wrong ? "false" : "true")
           << ", \"checks\": [{\"case\": \"1000x777\", \"ok\": " << (wrong ? "false" : "true")
           << ", \"mismatches\": " << (wrong ? 12 : 0) << ", \"message\": \""
           << (!arg_replay.empty() ? replayed.message : wrong ? "12 mismatches, first at [999]" : "") << "\"}]";
  if (timed("exercise"))
    exercise << ", \"time_ms\": " << timing(exercise_ms) << ", \"bytes\": " << bytes << ", \"gbs\": " << ex_gbs
             << ", \"fraction_of_copy\": " << ex_gbs / copy_gbs;
  exercise << "}";
  // As a lesson does, every variant is listed, in its place; only the wanted ones are timed.
  o << (timed("naive") ? naive.str() : "    {\"name\": \"naive\", \"role\": \"baseline\", \"correct\": true}")
    << ",\n";
  o << (wanted("exercise") ? exercise.str()
                           : "    {\"name\": \"exercise\", \"role\": \"exercise\", \"correct\": true}")
    << "\n";
  o << "  ],\n"
    << "  \"metrics\": {\"overlap_efficiency\": {\"value\": 0.8, \"low\": 0.78, \"high\": 0.82, \"unit\": \"\"}},\n"
    << "  \"diagnostics\": [" << (arg_env_bad ? "\"GPU clock 1410 MHz is below 90% of its 1980 MHz default: throttled?\"" : "")
    << "],\n  \"environment_ok\": " << (arg_env_bad ? "false" : "true");
  if (!arg_replay.empty())
    o << ",\n  \"replay\": {\"entries\": " << (replayed.found ? 1 : 0) << ", \"used\": "
      << (replayed.found ? 1 : 0) << ", \"missing\": ["
      << (replayed.found ? "" : "\"exercise: 1000x777\"") << "], \"unused\": [], \"error\": \"\"}";
  o << "\n}\n";
  put_result(o.str());
}

[[noreturn]] void sleep_forever() {
  for (;;) pause();
}

int next_count() {
  int n = 0;
  if (arg_counter.empty()) return 0;
  std::ifstream(arg_counter) >> n;
  std::ofstream(arg_counter) << n + 1;
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--json") arg_json = next();
    else if (a == "--nonce") arg_nonce = next();
    else if (a == "--seed") arg_seed = std::atol(next().c_str());
    else if (a == "--quick") arg_quick = true;
    else if (a == "--budget-s") next();  // the real harness's time budget: nothing to pace here
    else if (a == "--mode") arg_mode = next();
    else if (a == "--pidfile") arg_pidfile = next();
    else if (a == "--counter") arg_counter = next();
    else if (a == "--exercise-ms") arg_exercise = next();
    else if (a == "--baseline-ms") arg_baseline = std::atof(next().c_str());
    else if (a == "--spread") arg_spread = std::atof(next().c_str());
    else if (a == "--trace") arg_trace = next();
    else if (a == "--trace-exercise-ms") arg_trace_exercise = std::atof(next().c_str());
    else if (a == "--trace-baseline-ms") arg_trace_baseline = std::atof(next().c_str());
    else if (a == "--lesson") arg_lesson = next();
    else if (a == "--wrong") arg_wrong = true;
    else if (a == "--env-bad") arg_env_bad = true;
    else if (a == "--variant") arg_only.push_back(next());
    else if (a == "--skip-variant") arg_skipped.push_back(next());
    else if (a == "--record-fd") arg_record_fd = std::atoi(next().c_str());
    else if (a == "--result-fd") arg_result_fd = std::atoi(next().c_str());
    else if (a == "--record") arg_record = next();
    else if (a == "--replay") arg_replay = next();
    else if (a == "--restrict-syscalls") arg_restrict = true;
    else if (a == "--profile") arg_profile = true;
    else if (a == "--no-ceilings") arg_no_ceilings = true;
    else if (a == "--when-profiled") arg_when_profiled = next();
    else if (a == "--swap-tracer") arg_swap_tracer = true;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  // The checker shows a lesson program one GPU (pin_to_one_gpu): LAB_FAKE_EXPECT_GPU names it.
  if (const char* gpu = std::getenv("LAB_FAKE_EXPECT_GPU")) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    const char* order = std::getenv("CUDA_DEVICE_ORDER");
    if (!visible || std::strcmp(visible, gpu) != 0 || !order || std::strcmp(order, "PCI_BUS_ID") != 0) {
      std::fprintf(stderr, "sees CUDA_VISIBLE_DEVICES=%s CUDA_DEVICE_ORDER=%s, not GPU %s alone\n",
                   visible ? visible : "(unset)", order ? order : "(unset)", gpu);
      return 3;
    }
  }
  if (const char* unseen = std::getenv("LAB_FAKE_UNSEEN"); unseen && access(unseen, F_OK) == 0) {
    std::fprintf(stderr, "sees %s, a file of the host's /tmp\n", unseen);
    return 3;
  }
  // Lesson 11's exercise may write files: one that puts its own library where the checker staged
  // its tracer, for the next run to load. This one answers wrong in a run that finds its own file.
  if (const char* tracer = std::getenv("CUDA_INJECTION64_PATH"); arg_swap_tracer && tracer) {
    std::string first;
    std::getline(std::ifstream(tracer), first);
    if (first == "swapped tracer") arg_wrong = true;
    std::remove(tracer);
    std::ofstream(tracer) << "swapped tracer\n";
  }
  if (arg_profile && arg_when_profiled == "wrong") arg_wrong = true;
  if (arg_profile && arg_when_profiled == "forged") arg_record = "forged";
#ifdef FAKE_COURSE
  arg_mode = exercise_mode();
  arg_exercise = std::to_string(exercise_ms());
#endif
  if (arg_json.empty() && arg_result_fd < 0) {
    std::fprintf(stderr, "usage: fake_lesson --json PATH | --result-fd N [--mode M]\n");
    return 2;
  }
  const std::string m = arg_mode;
  if (m == "result") write_result(arg_nonce, std::atof(arg_exercise.c_str()), arg_wrong);
  else if (m == "sequence") {
    std::vector<std::string> items;
    std::stringstream s(arg_exercise);
    for (std::string item; std::getline(s, item, ',');) items.push_back(item);
    const int k = next_count();
    write_result(arg_nonce, std::atof(items[std::min<std::size_t>(k, items.size() - 1)].c_str()), arg_wrong);
  } else if (m == "sleep") {
    signal(SIGTERM, SIG_IGN);
    sleep_forever();
  } else if (m == "grandchild") {
    const pid_t child = fork();
    if (child == 0) {
      std::ofstream(arg_pidfile) << getpid() << "\n";
      sleep_forever();
    }
    sleep_forever();
  } else if (m == "segv") {
    raise(SIGSEGV);
  } else if (m == "garbage") {
    std::printf("\x1b[31mPASS\x1b[0m \xff\xfe\x01 all tests passed\n");
    put_result("{\"schema\": \"cuda-perf-lab/result/1\", \"variants\": [");
  } else if (m == "rewrites-at-exit") {
    // A right result, then code at exit (a static's destructor in a real exercise) that writes a
    // faster one wherever it can still reach: the descriptor it was handed, or the file by name.
    write_result(arg_nonce, 1.0, false);
    static const int fd = arg_result_fd;
    std::atexit([] {
      static const char forged[] = "{\"forged\": true}";
      if (fd < 0) std::ofstream(arg_json) << forged;
      else if (write(fd, forged, sizeof forged - 1) < 0) std::fprintf(stderr, "the result is out of reach\n");
    });
  } else if (m == "wrong-nonce") {
    write_result("00000000000000000000000000000000", 1.0, false);
  } else if (m == "no-result") {
    std::printf("PASS\n");
  } else if (m == "exit3") {
    std::fprintf(stderr, "CUDA error: an illegal memory access was encountered\n");
    return 3;
  } else if (m == "nogpu") {
    std::fprintf(stderr, "no CUDA device is available\n");
    return 77;
  } else if (m == "forks") {
    if (arg_restrict) raise(SIGSYS);
    const pid_t child = fork();
    if (child == 0) _exit(0);
    write_result(arg_nonce, 1.0, false);
  } else if (m == "noisy") {
    std::string line(1000, 'x');
    line += '\n';
    for (int i = 0; i < 50000; ++i) std::fwrite(line.data(), 1, line.size(), stdout);
    write_result(arg_nonce, 1.0, false);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", m.c_str());
    return 2;
  }
  return 0;
}
