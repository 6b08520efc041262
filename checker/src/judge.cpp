#include "judge.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "counters.hpp"
#include "files.hpp"
#include "gpu_watch.hpp"
#include "inspect.hpp"
#include "process.hpp"
#include "runs.hpp"

namespace lab {

namespace {

constexpr std::size_t kOutputTail = 4096;

struct Attempt {
  bool ok = false;
  Verdict verdict = Verdict::error;
  std::string reason, message, output;
  json doc;
  Findings findings;     // the checker's own about this run (the program's word is in doc)
  double program_s = 0;  // wall time of the lesson program itself
  json corroboration;    // corroboration_json of this run (null when it gave no result)
  bool untraceable = false;  // the tracer cannot run here and grading requires it: no re-runs
  std::uint32_t seed = 0;    // of its inputs
  std::optional<Replayed> replayed;  // where its results were checked out of process
};

// The tracer for one run: the library copied into the work folder (a lesson program sees nothing
// of the checker's own folders), or why there is none. Copied again before every run: the folder
// is the program's, and a program that may write files (lesson 11) could put a library of its own
// in the copy's place for the next run to load.
struct Tracing {
  fs::path library;
  std::string missing;
};

Tracing stage_tracer(const JudgeOptions& opt, const fs::path& work) {
  Tracing t;
  if (opt.corroborate == Corroborate::off) return t;
  if (opt.tracer.empty()) {
    t.missing = "lab-check has no tracer (its build did not make checker/tracer)";
    return t;
  }
  std::error_code ec;
  const fs::path copy = work / "lab-tracer.so";
  fs::remove_all(copy, ec);  // whatever is there (a link, a folder) goes; the copy is a new file
  if (!ec) fs::copy_file(opt.tracer, copy, ec);
  if (ec) t.missing = "its tracer " + opt.tracer.string() + " could not be copied: " + ec.message();
  else t.library = copy;
  return t;
}

// Whether the tracer loads here, seen in a traced run of the probe (asked once per probe).
bool tracer_loads_here(const JudgeOptions& opt) {
  static std::map<std::string, bool> known;
  const auto it = known.find(opt.tracer_probe.string());
  if (it != known.end()) return it->second;
  TempDir work("lab-check-tracer-probe");
  const Tracing tracing = stage_tracer(opt, work.path());
  bool loads = false;
  if (!tracing.library.empty()) {
    ProcessOptions p;
    p.argv = {opt.tracer_probe.string(), "--probe"};
    p.workdir = work.path();
    p.timeout_s = 60;
    const fs::path trace = work.path() / "trace-probe.txt";
    p.env = {"CUDA_INJECTION64_PATH=" + tracing.library.string(), "LAB_TRACE_FILE=" + trace.string()};
    loads = run_process(p).exited_ok() && read_trace(trace).set_up;
  }
  known[opt.tracer_probe.string()] = loads;
  return loads;
}

// A report's variants by name (unique, lab::validate_result): looked up once each, so judging
// takes time linear in the number of variants.
std::unordered_map<std::string_view, const ReportedVariant*> variants_by_name(const RunReport& report) {
  std::unordered_map<std::string_view, const ReportedVariant*> out;
  for (const ReportedVariant& v : report.variants) out.emplace(v.name, &v);
  return out;
}

std::string first_line(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) return line;
  return "";
}

}  // namespace

std::string implausible_rates(const json& doc) {
  const json ceilings = doc.value("ceilings", json::object());
  auto ceiling = [&](const char* key) {
    return ceilings.contains(key) && ceilings[key].is_number() ? ceilings[key].get<double>() : 0.0;
  };
  // The compute roof is the FP32 FMA rate, or a tensor-core rate where the lesson measured one
  // (lesson 12 BF16, lesson 05 TF32 from FP32 inputs): a rate past the highest is past every
  // pipe the lesson's data can use.
  const double copy = ceiling("copy_gbs");
  const double fp32 = ceiling("fp32_gflops"), bf16 = ceiling("bf16_tensor_gflops"),
               tf32 = ceiling("tf32_tensor_gflops");
  const double flops_roof = std::max({fp32, bf16, tf32});
  const char* roof_name = flops_roof == fp32 ? "FP32 roof"
                          : flops_roof == bf16 ? "BF16 tensor roof"
                                               : "TF32 tensor roof";
  // The link is full duplex: copies in and out at once (lesson 07's overlap) may add up.
  const double link = ceiling("h2d_pinned_gbs") + ceiling("d2h_pinned_gbs");
  for (const auto& v : doc.value("variants", json::array())) {
    // A wrong variant fails its correctness rule, and its speed counts for nothing anyway: the
    // bound is for a variant that was validated and is still too fast to be true.
    if (!v.is_object() || !v.value("correct", true) || !v.contains("time_ms") || !v["time_ms"].is_object())
      continue;
    const std::string name = v.value("name", std::string("?"));
    const bool cold = mode_of(doc, v) == Mode::Cold;
    const Rates rates = rates_of(doc, v);
    const double gbs = rates.gbs, gflops = rates.gflops;
    auto say = [&](double rate, const char* unit, double roof, const char* what, double margin) {
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    "implausible: \"%s\" reached %.0f %s, %.2fx the %s measured in the same run "
                    "(at most %.2fx is physically possible): its timed calls cannot have done the "
                    "work they declare",
                    name.c_str(), rate, unit, rate / roof, what, margin);
      return std::string(buf);
    };
    if (v.value("host_link", false)) {
      if (link > 0 && gbs > kLinkMargin * link) return say(gbs, "GB/s", link, "pinned host link (both directions together)", kLinkMargin);
    } else if (cold && copy > 0 && gbs > kCopyMargin * copy) {
      return say(gbs, "GB/s", copy, "copy ceiling", kCopyMargin);
    }
    if (flops_roof > 0 && gflops > kFlopsMargin * flops_roof)
      return say(gflops, "GFLOP/s", flops_roof, roof_name, kFlopsMargin);
  }
  return "";
}

bool gpu_of_another_generation(const LessonConfig& lesson, const GpuObservation& seen) {
  return lesson.compute_capability_major != 0 && seen.watched && seen.gpu_present &&
         seen.cc_major != 0 && seen.cc_major != lesson.compute_capability_major;
}

Findings findings_of_watch(const GpuObservation& seen) {
  Findings found;
  const std::string disturbed = seen.disturbance();
  found.environment_ok = disturbed.empty();
  if (!disturbed.empty()) found.disturbance.push_back(disturbed);
  return found;
}

namespace {

// Whether this lesson's programs run under the system-call filter (lab/syscall_filter.hpp):
// every run the checker judges and the sanitizers' runs. Not ncu's: its code in the program opens
// a lock file when it starts profiling, after the filter is in place (measured on an H200).
bool filtered(const LessonConfig& lesson, const JudgeOptions& opt) {
  return opt.syscall_filter && lesson.syscall_filter;
}

// What a run's end says about the filter: SIGSYS is the filter's answer to a forbidden call.
std::string filter_note(const ProcessResult& r, const LessonConfig& lesson, const JudgeOptions& opt) {
  if (r.signal != SIGSYS || !filtered(lesson, opt)) return "";
  return " (SIGSYS: the system-call filter stopped it starting a thread, a process or a program, "
         "or tracing one, which no exercise may do)";
}

// Copies run `index`'s result file (from `handed`) and printed output (from `work`) to
// keep/NAME.json and keep/NAME.txt, replacing an earlier run's (a file this run did not write is
// removed); a copy that fails is said, never a reason to stop judging.
void keep_run(const fs::path& keep, const std::string& name, const fs::path& handed,
              const fs::path& work, int index) {
  const std::string tag = std::to_string(index);
  std::error_code ec;
  fs::create_directories(keep, ec);
  for (const auto& [from, to] : {std::pair{handed / ("result-" + tag + ".json"), keep / (name + ".json")},
                                 std::pair{work / ("output-" + tag + ".txt"), keep / (name + ".txt")}}) {
    // Missing, or a link the program made: no file of an earlier run is left to pass for this one's.
    if (!fs::is_regular_file(fs::symlink_status(from))) {
      fs::remove(to, ec);
      continue;
    }
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) std::cerr << "lab-check: --keep: cannot copy " << from.string() << " to " << to.string() << ": " << ec.message() << "\n";
  }
}

// One run of a lesson program. `name` tells its files apart in the work folder ("" for the
// student's program, "pristine-" for the pristine one); `more` goes after the lesson's args.
// `seed`: the inputs' (a replay uses the student's run's); `handed`: the checker's own folder
// where the program's result (and `record`: its record, ProcessOptions::record_path) go through
// descriptors, "" for a result in `work` (--json).
Attempt run_once(const LessonConfig& lesson, const fs::path& program, const JudgeOptions& opt,
                 const Tracing& tracing, const fs::path& work, int index, double timeout,
                 const std::string& name = "", const std::vector<std::string>& more = {},
                 std::optional<std::uint32_t> given_seed = {}, const fs::path& handed = {},
                 bool record = false) {
  Attempt a;
  const std::string tag = name + std::to_string(index);
  const fs::path json_path = (handed.empty() ? work : handed) / ("result-" + tag + ".json");
  const fs::path trace_path = work / ("trace-" + tag + ".txt");
  const fs::path log = work / ("output-" + tag + ".txt");
  const std::string nonce = random_hex(16);
  const std::uint32_t seed = given_seed ? *given_seed : random_seed();
  a.seed = seed;

  ProcessOptions p;
  p.argv.push_back(program.string());
  for (const auto& arg : lesson.args) p.argv.push_back(arg);
  for (const auto& arg : more) p.argv.push_back(arg);
  if (handed.empty()) p.argv.insert(p.argv.end(), {"--json", json_path.string()});
  else p.result_path = json_path;
  for (const auto& arg : {std::string("--seed"), std::to_string(seed), std::string("--nonce"), nonce})
    p.argv.push_back(arg);
  if (opt.quick) p.argv.push_back("--quick");
  if (filtered(lesson, opt)) p.argv.push_back("--restrict-syscalls");
  // Measurements stop within a budget that leaves room to write the result before the kill.
  p.argv.push_back("--budget-s");
  p.argv.push_back(std::to_string(0.8 * timeout));
  p.workdir = work;
  p.timeout_s = timeout;
  p.stdout_path = p.stderr_path = log;
  if (record) p.record_path = handed / ("record-" + tag + ".txt");
  // The CUDA driver loads the tracer into the program at its first CUDA call (cuInit), before
  // any code of the exercise can run.
  if (!tracing.library.empty())
    p.env = {"CUDA_INJECTION64_PATH=" + tracing.library.string(), "LAB_TRACE_FILE=" + trace_path.string()};
  GpuWatch watch;  // the checker's own eyes on the GPU while the program runs
  const ProcessResult r = run_process(p);
  const GpuObservation seen = watch.stop();
  a.program_s = r.wall_s;
  a.output = printable(file_tail(log, kOutputTail));
  const std::string how = describe(r, timeout);

  if (!r.started) {
    a.reason = reason::missing;
    a.message = "could not run " + program.string() + ": " + r.start_error;
    return a;
  }
  if (r.timed_out) {
    a.reason = reason::timeout;
    a.message = how + ": an endless loop, a deadlock, or a kernel far slower than expected?";
    return a;
  }
  if (r.signal != 0) {
    a.reason = reason::crash;
    a.message = "the program crashed: " + how + filter_note(r, lesson, opt);
    return a;
  }
  if (r.exit_code == 77) {
    // "No GPU" is the checker's call: the student's process can exit 77 too.
    const std::string said = first_line(a.output);
    if (gpu_of_another_generation(lesson, seen)) {
      a.verdict = Verdict::environment;
      a.reason = reason::no_gpu;
      a.message = "not applicable on this GPU" + (said.empty() ? std::string() : ": " + said);
      return a;
    }
    if (seen.watched && seen.gpu_present) {
      a.reason = reason::exit;
      a.message = "the program said it found no usable GPU (exit 77), but the checker sees one: "
                  "did exercise.cu end the program?" + (said.empty() ? std::string() : " (" + said + ")");
      return a;
    }
    a.verdict = Verdict::environment;
    a.reason = reason::no_gpu;
    a.message = "no usable GPU" + (said.empty() ? std::string() : ": " + said);
    return a;
  }
  // Exit 1 means a variant was wrong: its result is judged. Any other code (a CUDA error that
  // stopped the run, an exercise that ended the process) is an error, result file or not.
  if (r.exit_code != 0 && r.exit_code != 1) {
    a.reason = reason::exit;
    a.message = "the program " + how;
    if (r.exit_code == 2) a.message += " (exit 2: a usage error; check the lesson's args)";
    if (r.exit_code == 3) a.message += " (exit 3: a CUDA or runtime error stopped it: see the output)";
    return a;
  }
  LoadedResult loaded = load_result(json_path, nonce, lesson.name);
  if (!loaded.ok) {
    a.reason = reason::result;
    a.message = loaded.error + (r.exit_code != 0 ? " (the program " + how + ")" : std::string());
    return a;
  }
  if (const std::string why = implausible_rates(loaded.doc); !why.empty()) {
    a.reason = reason::implausible;
    a.message = why;
    return a;
  }
  // Every reported time against the checker's own instrument.
  CorroborationResult c{Corroboration::off, "", {}};
  if (opt.corroborate != Corroborate::off)
    c = tracing.library.empty() ? CorroborationResult{Corroboration::unavailable, tracing.missing, {}}
                                : corroborate(loaded.doc, read_trace(trace_path));
  a.corroboration = corroboration_json(c);
  // A disagreement is the program's doing only on a GPU nobody else used: another process's work
  // that runs between the tracer's events and the program's moves them apart (measured under load:
  // lesson 09's stream loop 5% apart on an H200, 8% on the H100). There the run is not judged.
  const bool shared_gpu = !seen.disturbance().empty();
  // A variant with wrong results earns nothing for its time, so its disagreement is not the
  // run's verdict: its wrong result is (a student learns more from "wrong" than from
  // "unverified"). Its name goes on the unverified list, and no timed rule may use its time
  // (evaluate_rule): a forged time of a wrong baseline still buys nothing.
  std::vector<std::string> unverified;
  bool only_wrong_variants = c.state == Corroboration::disagrees && !c.variants.empty();
  const RunReport reported = run_report(loaded.doc);
  const auto by_name = variants_by_name(reported);
  for (const VariantCheck& v : c.variants) {
    if (v.problem.empty()) continue;
    const auto found = by_name.find(v.name);
    if (found != by_name.end() && !found->second->correct) unverified.push_back(v.name);
    else only_wrong_variants = false;
  }
  if (c.state == Corroboration::disagrees && !shared_gpu && !only_wrong_variants) {
    a.reason = reason::unverified_time;
    a.message = "unverified time: " + c.message;
    return a;
  }
  // A trace that is missing or unreadable where the tracer works (a pristine program was just
  // traced here) is the program's doing: the file was removed, renamed or written over.
  if (c.state == Corroboration::unavailable && opt.corroborate == Corroborate::required &&
      !tracing.library.empty() && !opt.tracer_probe.empty() && tracer_loads_here(opt)) {
    a.reason = reason::unverified_time;
    a.message = "unverified time: the checker's trace of this run is missing or unreadable (" +
                c.message + "), though its tracer works here (a program of the course's was traced "
                "just now): was the trace file in the work folder removed, renamed or written over?";
    return a;
  }
  a.ok = true;
  a.doc = std::move(loaded.doc);
  a.findings = findings_of_watch(seen);
  if (c.state == Corroboration::disagrees) {
    a.findings.unverified_variants = unverified;
    a.findings.disturbance.push_back(
        std::string(shared_gpu ? "its times disagreed with the checker's tracer on a shared GPU: "
                               : "the times of variants with wrong results disagreed with the "
                                 "checker's tracer (they count for nothing): ") + c.message);
  }
  // Grading takes no time on the program's word alone: not corroborated, not judged.
  if (c.state == Corroboration::unavailable && opt.corroborate == Corroborate::required) {
    a.findings.environment_ok = false;
    a.findings.disturbance.push_back("its times could not be corroborated: " + c.message);
    a.untraceable = true;
  }
  return a;
}

// Correct only if correct in every run: each run judged with that, keeping the failing checks.
JudgedRun with_correctness_of_all(JudgedRun run, const std::vector<JudgedRun>& runs) {
  std::vector<std::unordered_map<std::string_view, const ReportedVariant*>> indexes;
  for (const auto& other : runs) indexes.push_back(variants_by_name(other.report));
  for (ReportedVariant& v : run.report.variants)
    for (const auto& index : indexes) {
      const auto o = index.find(v.name);
      if (o != index.end() && !o->second->correct && v.correct) {
        v.correct = false;
        v.checks = o->second->checks;
      }
    }
  return run;
}

// How good a reading is for its rule: higher is better, whichever way the bar points.
double goodness(const RuleOutcome& o) {
  if (!o.reading) return -std::numeric_limits<double>::infinity();
  return o.min ? o.reading->value : -o.reading->value;
}

// The runs are never mixed: every rule is judged on each run's own readings, measured in that
// run, and the rule's outcome is the median run's (of an even number, the worse of the middle
// two), so one lucky run cannot make a pass. A run the checker saw disturbed (another process on
// the GPU, a thermal slowdown) counts for correctness only.
std::vector<RuleOutcome> evaluate_all(const LessonConfig& lesson, const std::vector<JudgedRun>& runs,
                                      bool& split) {
  split = false;
  std::vector<JudgedRun> judged;
  for (const auto& r : runs)
    if (r.findings.environment_ok) judged.push_back(with_correctness_of_all(r, runs));
  if (judged.empty()) judged.push_back(with_correctness_of_all(runs.back(), runs));
  std::vector<RuleOutcome> out;
  for (const auto& rule : lesson.rules) {
    std::vector<RuleOutcome> each;
    for (const auto& run : judged) each.push_back(evaluate_rule(rule, run));
    for (const auto& o : each) split = split || o.verdict != each.front().verdict;
    std::stable_sort(each.begin(), each.end(), [](const RuleOutcome& a, const RuleOutcome& b) {
      if (!a.reading || !b.reading) return severity(a.verdict) > severity(b.verdict);
      return goodness(a) < goodness(b);
    });
    RuleOutcome chosen = each[(each.size() - 1) / 2];
    if (each.size() > 1)
      chosen.message += " (the median of " + std::to_string(each.size()) + " runs)";
    out.push_back(chosen);
  }
  return out;
}

// Ambiguous and environment readings get another run, and so does a failure within 10% of its
// bar (a true pass measured once on an unlucky run is not lost to it), and two runs that
// disagree get a third, so that the median run decides.
bool needs_rerun(const std::vector<RuleOutcome>& outcomes, bool split) {
  if (split) return true;
  for (const auto& o : outcomes) {
    if (o.verdict == Verdict::ambiguous || o.verdict == Verdict::environment) return true;
    if (o.verdict == Verdict::fail && o.reading && o.kind != "correct" && o.kind != "counter") {
      const double v = o.reading->value;
      if ((o.min && v >= 0.9 * *o.min) || (o.max && v <= 1.1 * *o.max)) return true;
    }
  }
  return false;
}

std::string short_location(const std::string& path, const std::string& line) {
  const fs::path p(path);
  const std::string parent = p.parent_path().filename().string();
  return (parent.empty() ? "" : parent + "/") + p.filename().string() + ":" + line;
}

void run_sanitizers(const LessonConfig& lesson, const fs::path& program, const JudgeOptions& opt,
                    const fs::path& work, double timeout, LessonOutcome& out) {
  RuleOutcome line;
  line.id = "sanitizer";
  line.kind = "sanitizer";
  line.verdict = Verdict::pass;
  std::vector<std::string> notes;
  for (const std::string tool : {"memcheck", "racecheck"}) {
    const fs::path log = work / (tool + ".log");
    const fs::path output = work / (tool + "-output.txt");
    ProcessOptions p;
    p.argv = opt.sanitizer_cmd;
    const auto sanitizer = p.argv.empty() ? std::nullopt : find_cuda_tool(p.argv[0]);
    if (!sanitizer) {
      line.verdict = worse(line.verdict, Verdict::environment);
      notes.push_back("compute-sanitizer is not on PATH, so nothing was checked");
      break;
    }
    p.argv[0] = sanitizer->string();
    // racecheck prints every hazard (cuBLAS's, not judged, could fill a short limit before the
    // exercise's own); the log is read up to 4 MiB, and a longer one fails safe (exit 86).
    for (const auto& a : {std::string("--tool"), tool, std::string("--error-exitcode"),
                          std::string("86"), std::string("--print-limit"),
                          std::string(tool == "racecheck" ? "100000" : "20"),
                          std::string("--log-file"), log.string(), program.string()})
      p.argv.push_back(a);
    for (const auto& arg : lesson.args) p.argv.push_back(arg);
    const fs::path json_path = work / (tool + ".json");
    const std::string nonce = random_hex(16);
    for (const auto& a : {std::string("--json"), json_path.string(), std::string("--seed"),
                          std::to_string(random_seed()), std::string("--nonce"), nonce,
                          std::string("--quick")})
      p.argv.push_back(a);
    if (filtered(lesson, opt)) p.argv.push_back("--restrict-syscalls");
    p.workdir = work;
    p.timeout_s = timeout;
    p.stdout_path = p.stderr_path = output;
    const ProcessResult r = run_process(p);

    std::string why;
    const std::string text = read_file_limited(log, 4u << 20, why).value_or("");
    auto found = parse_sanitizer_log(tool, text);
    // racecheck does not model Hopper's asynchronous copies and reports hazards inside cuBLAS's
    // own TMA/wgmma kernels (nvjet_*). Code built here carries line information (-lineinfo), so
    // a race with no source line is in a precompiled library: shown, not held against the work.
    std::size_t in_libraries = 0;
    if (tool == "racecheck") {
      const auto library = std::stable_partition(found.begin(), found.end(),
                                                 [](const auto& f) { return !f.location.empty(); });
      for (auto f = library; f != found.end(); ++f) in_libraries += static_cast<std::size_t>(f->count);
      if (library != found.end())
        notes.push_back("racecheck reported " + std::to_string(in_libraries) +
                        " hazard(s) in precompiled library code, not judged (first: " + library->what + ")");
      found.erase(library, found.end());
    }
    out.findings.insert(out.findings.end(), found.begin(), found.end());
    if (r.timed_out) {
      line.verdict = worse(line.verdict, Verdict::error);
      notes.push_back(tool + " " + describe(r, timeout));
    } else if (!r.started) {
      line.verdict = worse(line.verdict, Verdict::environment);
      notes.push_back("could not start compute-sanitizer: " + r.start_error);
    } else if (r.exit_code == 77) {
      line.verdict = worse(line.verdict, Verdict::environment);
      notes.push_back(tool + ": no usable GPU");
    } else if ((r.exit_code == 86 && in_libraries == 0) || !found.empty()) {
      line.verdict = worse(line.verdict, Verdict::fail);
      std::size_t n = 0;
      for (const auto& f : found) n += static_cast<std::size_t>(f.count);
      notes.push_back(tool + " found " + std::to_string(std::max<std::size_t>(n, 1)) +
                      " error(s)" + (found.empty() ? "" : ", first: " + found.front().what +
                      (found.front().location.empty() ? "" : " at " + found.front().location)));
    } else if (r.signal != 0) {
      line.verdict = worse(line.verdict, Verdict::error);
      notes.push_back(tool + ": the program " + describe(r, timeout) + filter_note(r, lesson, opt));
    } else if (const LoadedResult result = load_result(json_path, nonce, lesson.name); !result.ok) {
      // A run that stopped before its end checked only what it ran: an exercise that ends the
      // process at a size only these runs use would have the racy kernel never seen.
      line.verdict = worse(line.verdict, Verdict::error);
      notes.push_back(tool + ": the program " + describe(r, timeout) + " without its result (" +
                      result.error + "), so the run under " + tool + " did not reach its end");
    }
  }
  if (line.verdict == Verdict::pass)
    notes.insert(notes.begin(), "memcheck and racecheck found no errors in the lesson's code");
  for (const auto& n : notes) line.message += (line.message.empty() ? "" : "; ") + n;
  out.sanitizer = line;
}

// Copies the student's record where the pristine program can read it: "" or why it cannot be
// replayed (missing, larger than a harness writes, not copied).
std::string stage_record(const fs::path& record, const fs::path& copy) {
  std::error_code ec;
  const std::uintmax_t bytes = fs::file_size(record, ec);
  if (ec) return "its record is missing (" + ec.message() + ")";
  if (bytes > kMaxRecordBytes)
    return "its record holds " + std::to_string(bytes >> 20) + " MiB, more than a harness writes "
           "(at most " + std::to_string(kMaxRecordBytes >> 20) + ")";
  fs::copy_file(record, copy, fs::copy_options::overwrite_existing, ec);
  // Readable by the pristine program, whatever user it runs as.
  if (!ec) fs::permissions(copy, fs::perms::owner_read | fs::perms::owner_write |
                                     fs::perms::group_read | fs::perms::others_read, ec);
  return ec ? "its record could not be copied for the course's program (" + ec.message() + ")" : "";
}

// Where a lesson's runs keep what the pristine program needs to check them out of process.
struct OutOfProcess {
  fs::path records;   // the checker's own folder for the student's records ("" for none)
  fs::path pristine;  // the pristine program's work folder
};

// The call ncu read must have been right, like any timed call: in the program's own result
// file, and, where the lesson is replayed, checked again by the course's program from the
// record. Marks `run` failed (the student's doing) or unchecked (the course's) when not.
void check_profiled_call(const LessonConfig& lesson, const std::string& variant, const JudgeOptions& opt,
                         const OutOfProcess& oop, const fs::path& record, double timeout, CounterRun& run) {
  auto fail = [&run](CounterRun::Status status, const std::string& why) {
    run.status = status;
    run.message = why;
  };
  const LoadedResult own = load_result(run.result, run.nonce, lesson.name);
  if (!own.ok) return fail(CounterRun::Status::failed, "the run under ncu: " + own.error);
  const RunReport reported = run_report(own.doc);
  const ReportedVariant* v = reported.find(variant);
  if (!v || !v->correct)
    return fail(CounterRun::Status::failed, "the call ncu read gave wrong results (the program "
                                            "under ncu said so), so its counters do not count");
  if (oop.records.empty()) return;  // judged in the program's own process, like its timed runs
  const fs::path copy = oop.pristine / ("record-ncu-" + variant + ".txt");
  if (const std::string bad = stage_record(record, copy); !bad.empty())
    return fail(CounterRun::Status::failed, "unverified result of the call ncu read: " + bad);
  const Attempt p = run_once(lesson, opt.pristine, opt, Tracing{}, oop.pristine, 0, timeout,
                             "pristine-ncu-" + variant + "-",
                             {"--profile", "--variant", variant, "--replay", copy.string()}, run.seed);
  if (!p.ok)
    return fail(CounterRun::Status::unchecked,
                "the course's program could not check the call ncu read (" + p.reason + ": " +
                    p.message + ")");
  json checked = {{"variants", json::array({{{"name", variant}, {"checks", json::array()}}})}};
  if (const std::string wrong = use_replayed_checks(checked, p.doc); !wrong.empty())
    return fail(CounterRun::Status::failed, "unverified result of the call ncu read: " + wrong);
  const RunReport replayed = run_report(checked);
  const ReportedVariant& mine = replayed.variants.front();
  if (!mine.correct)
    return fail(CounterRun::Status::failed, "the call ncu read gave wrong results (checked by the "
                                            "course's program from its record: " +
                                                (mine.checks.empty() ? "" : mine.checks.front().message) +
                                                "), so its counters do not count");
}

// Counter rules: one ncu run per judged variant (only if it is correct: wrong code's counters
// do not count) and the check of the call it read, then those rules judged again with the
// readings among the run's findings.
void judge_counters(const LessonConfig& lesson, const fs::path& program, const JudgeOptions& opt,
                    const fs::path& work, const OutOfProcess& oop, double timeout,
                    JudgedRun judged, std::vector<RuleOutcome>& outcomes) {
  std::map<std::string, std::vector<std::string>> measures;  // variant -> measures
  for (const auto& rule : lesson.rules)
    if (rule.kind == RuleKind::counter) measures[rule.variant].push_back(rule.counter);
  if (measures.empty()) return;
  // The checker's own look at the GPU (never the result file's), for the metrics it has.
  const int cc_major = opt.counters ? probe_gpu().cc_major : 0;
  for (const auto& [variant, names] : measures) {
    const ReportedVariant* v = judged.report.find(variant);
    if (!opt.counters || !v || !v->correct) continue;
    std::vector<std::string> metrics;
    for (const auto& name : names)
      for (const auto& m : find_counter_measure(name)->requested(cc_major))
        if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
    CounterOptions co;
    co.ncu_cmd = opt.ncu_cmd;
    co.timeout_s = 2 * timeout;
    co.program_args = lesson.args;  // unfiltered: ncu's code in the program opens files then
    co.quick = opt.quick;
    if (!oop.records.empty()) co.record = oop.records / ("record-ncu-" + variant + ".txt");
    CounterRun run = run_under_ncu(program, variant, metrics, co, work);
    if (run.status == CounterRun::Status::measured)
      check_profiled_call(lesson, variant, opt, oop, co.record, timeout, run);
    // What the problem needs, as the harness declared it for this variant (lab::Work).
    judged.findings.counters[variant] = counter_readings(run, names, v->bytes, v->flops);
  }
  for (std::size_t i = 0; i < lesson.rules.size(); ++i)
    if (lesson.rules[i].kind == RuleKind::counter) outcomes[i] = evaluate_rule(lesson.rules[i], judged);
}

}  // namespace

std::vector<std::string> speedup_baselines(const LessonConfig& lesson) {
  std::vector<std::string> overs;
  for (const auto& rule : lesson.rules)
    if (rule.kind == RuleKind::speedup && !rule.over.empty() &&
        std::find(overs.begin(), overs.end(), rule.over) == overs.end())
      overs.push_back(rule.over);
  return overs;
}

void use_pristine_baselines(json& doc, Findings& found, const json& pristine_doc, const Findings* pristine,
                            const std::string& why, const std::vector<std::string>& overs) {
  if (!doc.contains("variants") || !doc["variants"].is_array()) return;
  for (const std::string& name : overs) {
    // Where the student's program left the baseline out (--skip-variant), it is added.
    json& variants = doc["variants"];
    auto it = std::find_if(variants.begin(), variants.end(),
                           [&](const json& x) { return x.value("name", std::string()) == name; });
    if (it == variants.end()) variants.push_back({{"name", name}, {"role", "baseline"}});
    json& v = it == variants.end() ? variants.back() : *it;
    const json* theirs = pristine ? find_variant(pristine_doc, name) : nullptr;
    const bool timed = theirs && theirs->contains("time_ms");
    if (timed && theirs->value("correct", true)) {
      v = *theirs;
      found.pristine[name] = {true, std::nullopt};
    } else {
      // No time, or a wrong result of the course's own code: the course's fault, never the
      // student's (a speedup over it is then `environment`, not a fail).
      v.erase("time_ms");
      found.pristine[name] = {false, !pristine ? why
                                     : timed   ? "the course's starter gave wrong results for it"
                                               : "the pristine run did not time it"};
    }
  }
  if (pristine && !pristine->environment_ok) {
    std::string seen;
    for (const std::string& d : pristine->disturbance) seen += (seen.empty() ? "" : "; ") + d;
    found.environment_ok = false;
    found.disturbance.push_back("while the baselines were timed in the pristine run: " + seen);
  }
}

std::string use_replayed_checks(json& doc, const json& pristine_doc, Replayed* replayed) {
  const json replay = pristine_doc.value("replay", json());
  if (!replay.is_object())
    return "the course's program did not check the exercise's results (no \"replay\" in its result)";
  const std::string error = replay.value("error", std::string());
  if (!error.empty()) return "the student's program's record cannot be read: " + error;
  const json missing = replay.value("missing", json::array());
  if (!missing.empty()) {
    std::string names;
    for (const json& m : missing)
      if (m.is_string()) names += (names.empty() ? "" : "; ") + m.get<std::string>();
    return "the student's program recorded no values for what the course's program checks (" +
           names + "): its results cannot be checked out of process";
  }
  if (!doc.contains("variants") || !doc["variants"].is_array()) return "";
  int checked = 0;
  for (const json& theirs : pristine_doc.value("variants", json::array())) {
    if (theirs.value("role", std::string()) != "exercise") continue;
    const std::string name = theirs.value("name", std::string());
    auto own = std::find_if(doc["variants"].begin(), doc["variants"].end(),
                            [&](const json& x) { return x.value("name", std::string()) == name; });
    if (own == doc["variants"].end()) continue;  // not in the result: its rules fail without it
    if (!own->contains("checks") || !(*own)["checks"].is_array()) (*own)["checks"] = json::array();
    json& own_checks = (*own)["checks"];
    // A case can be checked more than once (several warm-up calls): the k-th replay of a case
    // answers for the k-th check of it in the student's run. Indexed once: a wrong exercise that
    // is fast has thousands of checked calls, and a scan per check took minutes.
    std::map<std::string, std::vector<bool>> judged_right;  // case -> ok of each of its checks
    for (const json& mine : own_checks)
      if (mine.is_object())
        judged_right[mine.value("case", std::string())].push_back(mine.value("ok", false));
    std::map<std::string, std::size_t> seen;
    json added = json::array();
    const json none = json::array();
    const json& replayed = theirs.contains("checks") ? theirs["checks"] : none;
    for (const json& c : replayed) {
      if (!c.is_object()) continue;
      ++checked;
      const std::string case_name = c.value("case", std::string());
      const std::size_t occurrence = seen[case_name]++;
      if (c.value("ok", false)) continue;
      const std::string message = c.value("message", std::string());
      const auto right = judged_right.find(case_name);
      if (right != judged_right.end() && occurrence < right->second.size() &&
          right->second[occurrence])
        return name + " on \"" + case_name + "\": its own process judged it right, but the values "
               "it recorded, checked by the course's program, are wrong (" + message + ")";
      (*own)["correct"] = false;
      added.push_back({{"case", "checked out of process: " + case_name}, {"ok", false}, {"message", message}});
    }
    for (json& a : added) own_checks.push_back(std::move(a));
  }
  if (replayed) *replayed = {checked, replay.value("entries", 0)};
  return "";
}

std::string results_checked_line(const json& runs) {
  if (!runs.is_array() || runs.empty()) return "";
  long long least = -1;
  for (const json& run : runs) {
    if (run.value("state", std::string()) != "replayed")
      return "results judged in the program's own process: " + run.value("why", std::string());
    const long long n = run.value("checks", 0LL);
    least = least < 0 ? n : std::min(least, n);
  }
  return "results checked out of process by the course's program: " + std::to_string(least) +
         " comparison" + (least == 1 ? "" : "s") + " from the run's record" +
         (runs.size() > 1 ? " (the fewest of " + std::to_string(runs.size()) + " runs)" : "");
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b) {  // ESC [ ... letter: a terminal control sequence
      if (i + 1 < n && text[i + 1] == '[') {
        i += 2;
        while (i < n && !std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
      }
      continue;
    }
    if (c < 0x80) {
      if (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f)) out += static_cast<char>(c);
      else if (c != '\r') out += '?';
      continue;
    }
    // Keep well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF); else '?'.
    const int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    bool ok = len > 0 && i + static_cast<std::size_t>(len) <= n;
    unsigned cp = len == 2 ? (c & 0x1fu) : len == 3 ? (c & 0x0fu) : (c & 0x07u);
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char cc = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      ok = (cc & 0xc0) == 0x80;
      cp = (cp << 6) | (cc & 0x3fu);
    }
    if (ok) {
      const unsigned least = len == 2 ? 0x80u : len == 3 ? 0x800u : 0x10000u;
      ok = cp >= least && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (!ok) {
      out += '?';
      continue;
    }
    // Well-formed, but one '?' all the same: the C1 controls (U+009B is a terminal's CSI, like
    // ESC [), and U+FFFE and U+FFFF, no characters at all (and not allowed in XML).
    if ((cp >= 0x80 && cp <= 0x9f) || cp == 0xfffe || cp == 0xffff) {
      out += '?';
      i += static_cast<std::size_t>(len) - 1;
      continue;
    }
    out.append(text, i, static_cast<std::size_t>(len));
    i += static_cast<std::size_t>(len) - 1;
  }
  return out;
}

std::vector<std::string> bounded_lines(const std::string& text, std::size_t max_line) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (end - at > max_line) lines.push_back(text.substr(at, max_line) + " [...]");
    else lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool space_char(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// The first "in <path>.<source extension>:<line>" in `s`, as compute-sanitizer writes it after a
// finding: `at` is where its "in" starts. A plain scan (once over each token), where a regex
// recursed once per character and overflowed the stack on a long line.
bool find_source_location(const std::string& s, std::size_t& at, std::string& path, std::string& line) {
  static const char* const extensions[] = {"cuh", "cu", "cpp", "cc", "hpp", "h"};
  for (std::size_t in = s.find("in "); in != std::string::npos; in = s.find("in ", in + 1)) {
    if (in > 0 && word_char(s[in - 1])) continue;
    const std::size_t first = in + 3;
    std::size_t token_end = first;
    while (token_end < s.size() && !space_char(s[token_end])) ++token_end;
    // The last place in the token where ".ext:digits" follows at least one character.
    for (std::size_t dot = token_end; dot-- > first + 1;) {
      if (s[dot] != '.') continue;
      for (const char* ext : extensions) {
        const std::size_t n = std::char_traits<char>::length(ext);
        const std::size_t colon = dot + 1 + n;
        if (colon + 1 >= token_end || s.compare(dot + 1, n, ext) != 0 || s[colon] != ':' ||
            !std::isdigit(static_cast<unsigned char>(s[colon + 1])))
          continue;
        std::size_t digits_end = colon + 1;
        while (digits_end < token_end && std::isdigit(static_cast<unsigned char>(s[digits_end]))) ++digits_end;
        at = in;
        path = s.substr(first, colon - first);
        line = s.substr(colon + 1, digits_end - colon - 1);
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::vector<SanitizerFinding> parse_sanitizer_log(const std::string& tool, const std::string& log) {
  static const char* const not_findings[] = {"COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY",
                                             "LEAK SUMMARY", "Target application returned",
                                             "Saved host backtrace"};
  const std::string mark = "========= ";
  std::vector<SanitizerFinding> out;
  // Identical findings are folded (a race reported by many threads is one bug), through an
  // index: a log of many findings takes linear time. A finding's location may follow on its
  // next lines, so it is folded when the next headline or the end closes it.
  std::map<std::pair<std::string, std::string>, std::size_t> index;  // (what, location) -> out
  std::optional<SanitizerFinding> open;
  auto close = [&]() {
    if (!open) return;
    const auto [it, added] = index.try_emplace({open->what, open->location}, out.size());
    if (added) out.push_back(std::move(*open));
    else ++out[it->second].count;
    open.reset();
  };
  for (const std::string& line : bounded_lines(log)) {
    if (line.rfind(mark, 0) != 0) continue;
    const std::string body = line.substr(mark.size());
    if (body.empty()) continue;
    std::size_t at = 0;
    std::string path, number;
    if (body[0] != ' ') {
      close();
      // Headlines; the tool's banner and summaries are not findings.
      if (std::any_of(std::begin(not_findings), std::end(not_findings),
                      [&](const char* skip) { return body.rfind(skip, 0) == 0; }))
        continue;
      open.emplace();
      open->tool = tool;
      open->what = body.rfind("Error: ", 0) == 0 ? body.substr(7) : body;
      // A racecheck headline carries its own location.
      if (find_source_location(open->what, at, path, number)) {
        open->location = short_location(path, number);
        open->what.erase(at);
        while (!open->what.empty() && open->what.back() == ' ') open->what.pop_back();
      }
    } else if (open && open->location.empty() && find_source_location(body, at, path, number)) {
      open->location = short_location(path, number);
    }
  }
  close();
  // Findings in the lesson's code (with a source line) first: they are the ones kept.
  std::stable_partition(out.begin(), out.end(), [](const auto& f) { return !f.location.empty(); });
  if (out.size() > 10) out.resize(10);
  return out;
}

LessonOutcome lesson_outcome(const LessonConfig& lesson, const std::string& build, Verdict verdict,
                             const std::string& why, const std::string& message) {
  LessonOutcome out;
  out.lesson = lesson.name;
  out.title = lesson.title;
  out.build = build;
  out.reason = why;
  out.message = message;
  out.rules = error_outcomes(lesson, verdict, message);
  finalize(out, lesson);
  out.verdict = verdict;
  return out;
}

void finalize(LessonOutcome& out, const LessonConfig& lesson) {
  Verdict v = Verdict::pass;
  double score = 0, max_score = 0;
  for (const auto& r : out.rules) {
    v = worse(v, r.verdict);
    score += r.points;
    max_score += r.max_points;  // a skipped rule counts 0 here
  }
  if (out.sanitizer) {
    v = worse(v, out.sanitizer->verdict);
    if (out.sanitizer->verdict == Verdict::fail && out.reason.empty()) out.reason = reason::sanitizer;
  }
  out.verdict = v;
  out.score = score;
  out.max_score = out.rules.empty() ? lesson.max_points() : max_score;
}

LessonOutcome judge_program(const LessonConfig& lesson, const fs::path& program, const JudgeOptions& opt) {
  if (std::error_code ec; !fs::exists(program, ec))
    return lesson_outcome(lesson, opt.build, Verdict::error, reason::missing,
                          "no program at " + program.string() + ": build it first");
  if (opt.inspect) {
    // Before anything of the exercise runs: what it defines and calls, from its object file.
    std::vector<SealFinding> findings;
    try {
      findings = inspect_program(program, lesson.allowed_calls, lesson.forbidden_calls);
    } catch (const ConfigError& e) {
      return lesson_outcome(lesson, opt.build, Verdict::error, reason::missing, e.what());
    }
    if (!findings.empty())
      return lesson_outcome(lesson, opt.build, Verdict::error, reason::forbidden,
                            describe_findings(findings));
  }
  const double timeout = opt.timeout_s > 0 ? opt.timeout_s : lesson.timeout_s;
  TempDir work("lab-check-" + lesson.name);
  const auto t0 = std::chrono::steady_clock::now();

  LessonOutcome out;
  out.lesson = lesson.name;
  out.title = lesson.title;
  out.build = opt.build;
  std::vector<JudgedRun> runs;
  json device = json::object();  // the last run's, as the program reported it, for the record
  const int max_runs = opt.quick ? 1 : std::max(1, opt.max_runs);
  double program_s = 0;
  const std::vector<std::string> overs = speedup_baselines(lesson);
  // With a pristine program the student's program leaves the baselines out (they would be timed
  // for nothing) and the pristine one times only them.
  std::vector<std::string> variant_args, skip_args;
  for (const auto& name : overs) {
    variant_args.insert(variant_args.end(), {"--variant", name});
    skip_args.insert(skip_args.end(), {"--skip-variant", name});
  }
  // The pristine runs get a work folder of their own: nothing the student's program left in its
  // folder (a file where the pristine run's result or trace will go) can reach them. The
  // student's result and record go to a folder of the checker's own, which its programs cannot
  // enter: a program writes them through the descriptors it is handed, closed at its end.
  const bool replay = !opt.pristine.empty() && lesson.replay;
  std::optional<TempDir> pristine_work;
  TempDir handed("lab-check-" + lesson.name + "-handed");
  if (!opt.pristine.empty() && (!overs.empty() || replay))
    pristine_work.emplace("lab-check-" + lesson.name + "-pristine");
  for (int i = 0; i < max_runs; ++i) {
    const fs::path record = handed.path() / ("record-" + std::to_string(i) + ".txt");
    Attempt a = run_once(lesson, program, opt, stage_tracer(opt, work.path()), work.path(), i, timeout, "",
                         pristine_work ? skip_args : std::vector<std::string>{}, {}, handed.path(), replay);
    program_s += a.program_s;
    if (!opt.keep.empty()) keep_run(opt.keep, lesson.name + "-" + opt.build, handed.path(), work.path(), i);
    if (a.ok && pristine_work) {
      // Right after the student's run, in a process of course code only, on the same inputs:
      // the baselines timed, and the exercise's results checked from its record.
      // No roofs: the rules read the student's run's (measured before any exercise code ran).
      std::vector<std::string> args = variant_args;
      args.push_back("--no-ceilings");
      std::string bad_record;
      if (replay) {
        const fs::path copy = pristine_work->path() / ("record-" + std::to_string(i) + ".txt");
        bad_record = stage_record(record, copy);
        args.insert(args.end(), {"--replay", copy.string()});
      }
      const Attempt p = bad_record.empty()
                            ? run_once(lesson, opt.pristine, opt, stage_tracer(opt, pristine_work->path()),
                                       pristine_work->path(), i, timeout, "pristine-", args, a.seed)
                            : Attempt{};
      program_s += p.program_s;
      out.pristine_s += p.program_s;
      const std::string why = (p.reason.empty() ? "" : "(" + p.reason + ") ") + p.message;
      if (!overs.empty()) use_pristine_baselines(a.doc, a.findings, p.doc, p.ok ? &p.findings : nullptr, why, overs);
      if (replay) {
        Replayed replayed;
        const std::string wrong = bad_record.empty() && p.ok ? use_replayed_checks(a.doc, p.doc, &replayed)
                                                             : bad_record;
        a.ok = wrong.empty() && p.ok;
        if (a.ok) a.replayed = replayed;
        if (!wrong.empty()) {
          a.verdict = Verdict::error;
          a.reason = reason::unverified_result;
          a.message = "unverified result: " + wrong;
        } else if (!a.ok) {  // the course's program failed: not the student's doing, no re-run
          a.verdict = Verdict::environment;
          a.reason = reason::replay;
          a.message = "the exercise's results could not be checked out of process: the course's "
                      "program failed " + why;
        }
      }
    }
    out.runs = i + 1;
    out.output = a.output;
    if (!a.corroboration.is_null()) out.corroboration.push_back(a.corroboration);
    if (a.ok)
      out.results_checked.push_back(
          a.replayed
              ? a.replayed->to_json()
              : json{{"state", "in-process"},
                     {"why", !lesson.replay ? "the lesson's checks are facts of its own process"
                                            : "no pristine program (--baselines in-process)"}});
    if (!a.ok) {
      const std::string when = i == 0 ? "" : " (on re-run " + std::to_string(i + 1) + ")";
      LessonOutcome failed = lesson_outcome(lesson, opt.build, a.verdict, a.reason, a.message + when);
      failed.output = a.output;
      failed.runs = out.runs;
      failed.pristine_s = out.pristine_s;
      failed.corroboration = std::move(out.corroboration);
      failed.results_checked = std::move(out.results_checked);
      out = std::move(failed);
      break;
    }
    device = a.doc.value("device", json::object());
    runs.push_back({run_report(a.doc), std::move(a.findings)});
    bool split = false;
    out.rules = evaluate_all(lesson, runs, split);
    // A tracer that cannot run here will not run on a re-run either.
    if (!needs_rerun(out.rules, split) || a.untraceable) break;
  }
  const auto counters_t0 = std::chrono::steady_clock::now();
  if (!runs.empty() && out.reason.empty())
    judge_counters(lesson, program, opt, work.path(),
                   {replay ? handed.path() : fs::path(), pristine_work ? pristine_work->path() : fs::path()},
                   timeout, combine_runs(runs), out.rules);
  out.counters_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - counters_t0).count();
  if (!runs.empty()) {
    out.device = std::move(device);
    for (const std::string& d : runs.back().findings.disturbance) out.diagnostics.push_back(printable(d));
  }
  if (opt.sanitize) {
    const double sanitize_timeout = opt.timeout_s > 0 ? opt.timeout_s : 4 * lesson.timeout_s;
    run_sanitizers(lesson, program, opt, work.path(), sanitize_timeout, out);
  }
  finalize(out, lesson);
  out.program_s = program_s;
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (out.reason.empty() && out.verdict == Verdict::ambiguous)
    out.message = "some readings stayed too close to their threshold after " +
                  std::to_string(out.runs) + " runs; they were given the benefit of the doubt";
  return out;
}

}  // namespace lab
