// Corroboration: the tracer's file read back, every reported median held against it, and the
// judge's verdicts when the two disagree, when there is no trace, and when it is turned off.
#include <doctest/doctest.h>
#include <dlfcn.h>

#include "corroborate.hpp"
#include "helpers.hpp"
#include "judge.hpp"
#include "lab/trace_tag.hpp"
#include "process.hpp"

using namespace lab;
using namespace lab::test;

namespace {

// Writes what checker/tracer writes: tagged launches as they happen, and each sample's span
// (the tracer's events) once it is closed.
struct TraceWriter {
  std::ostringstream records;
  unsigned correlation = 10;

  unsigned kernel(int measurement, int variant, int sample, int batch, int edge) {
    records << "T " << ++correlation << " " << measurement << " " << variant << " " << sample << " "
            << batch << " " << edge << "\n";
    return correlation;
  }
  // One sample: its opening kernel, `span_ms` on the GPU between the two, its closing kernel.
  void sample(int measurement, int variant, int index, double span_ms, int batch = 1,
              bool lead_in = true) {
    const unsigned open = kernel(measurement, variant, index, batch, lead_in ? kTraceLeadIn : kTraceOpenMark);
    const unsigned close =
        kernel(measurement, variant, index, batch, lead_in ? kTraceClockProbe : kTraceCloseMark);
    span(open, close, span_ms);
  }
  // The tracer's span between two edges it was handed.
  void span(unsigned open, unsigned close, double ms) {
    records << "S " << open << " " << close << " " << static_cast<long long>(ms * 1e6) << "\n";
  }
  // `n` samples spread evenly (+-1%) around `median_ms` per launch, plus `gap_ms` per sample.
  void samples(int measurement, int variant, int n, double median_ms, double gap_ms = 0.002,
               int batch = 1, bool lead_in = true) {
    sample(measurement, variant, -1, batch * median_ms * 3, batch, lead_in);  // a slow warm-up
    for (int i = 0; i < n; ++i) {
      const double spread = n > 1 ? 0.01 * (2.0 * i / (n - 1) - 1) : 0;
      sample(measurement, variant, i, batch * median_ms * (1 + spread) + gap_ms, batch, lead_in);
    }
  }
  std::string text(bool end = true) const {
    return "lab-trace 2\n" + records.str() + (end ? "E 0\n" : "");
  }
  // A run's beginning: the ceilings (no variant), then the baseline, 4 ms; the exercise next.
  static TraceWriter base(double baseline_ms = 4.0) {
    TraceWriter w;
    w.samples(0, -1, 10, 0.5);
    w.samples(1, 0, 30, baseline_ms);
    return w;
  }
  static TraceWriter lesson(double baseline_ms = 4.0, double exercise_ms = 1.0) {
    TraceWriter w = base(baseline_ms);
    w.samples(2, 1, 30, exercise_ms);
    return w;
  }
};

Trace parsed(const std::string& text) {
  std::istringstream in(text);
  return parse_trace(in);
}

CorroborationResult check(const json& result, const std::string& trace) {
  return corroborate(result, parsed(trace));
}

TraceEdgeFunction g_registered = nullptr;
int g_registered_abi = 0;

}  // namespace

// The lesson program's side of the tracer's handshake, as lab's timing.cu has it (exported by
// this test program's link options).
extern "C" __attribute__((visibility("default"), used)) int lab_trace_register(int abi,
                                                                             TraceEdgeFunction edge) {
  g_registered_abi = abi;
  if (abi != kTraceAbi) return 0;
  g_registered = edge;
  return 1;
}

TEST_SUITE("corroborate") {

TEST_CASE("a trace is read into samples: the tracer's span from the opening kernel's end to the closing one's start") {
  TraceWriter w;
  w.sample(3, 1, 0, 0.250);
  w.sample(3, 1, 1, 0.500, 4);
  w.sample(3, 1, -1, 1.0);  // warm-up: not a sample
  const Trace t = parsed(w.text());
  CHECK(t.loaded);
  CHECK(t.set_up);
  CHECK(t.ended);
  CHECK(t.unusable.empty());
  CHECK(t.conflicts.empty());
  CHECK(t.launches == 6);
  CHECK(t.spans == 3);
  REQUIRE(t.samples.size() == 2);
  CHECK(t.samples[0].measurement == 3);
  CHECK(t.samples[0].variant == 1);
  CHECK(t.samples[0].span_ms == doctest::Approx(0.250));
  CHECK(t.samples[1].batch == 4);
  CHECK(t.samples[1].span_ms == doctest::Approx(0.500));
  CHECK(t.samples[1].lead_in);

  // A span between two launches of one sample, whatever the order of the lines.
  CHECK(parsed("lab-trace 2\nT 1 0 0 0 1 0\nT 2 0 0 0 1 1\nS 1 2 1500\nE 0\n").samples.size() == 1);
}

TEST_CASE("a reported median that agrees with the trace is corroborated, with both numbers kept") {
  const CorroborationResult c = check(sample_result(1.0, 4.0), TraceWriter::lesson().text());
  CHECK(c.state == Corroboration::agrees);
  CHECK(c.message.empty());
  REQUIRE(c.variants.size() == 2);
  CHECK(c.variants[0].name == "naive");
  CHECK(c.variants[0].traced_ms == doctest::Approx(4.002));
  CHECK(c.variants[1].reported_ms == 1.0);
  CHECK(c.variants[1].traced_ms == doctest::Approx(1.002));
  CHECK(c.variants[1].traced_samples == 30);
  CHECK(c.variants[1].low_ms < 1.0);
  CHECK(c.variants[1].high_ms > 1.0);
  const json j = corroboration_json(c);
  CHECK(j["state"] == "agrees");
  CHECK(j["variants"][1]["difference"].get<double>() == doctest::Approx(1.0 / 1.002 - 1));
  CHECK(corroboration_line(json::array({j})) ==
        "times corroborated by the checker's tracer: 2 variants, at most 0.2% apart (\"exercise\")");
}

TEST_CASE("an exercise that reports itself faster than it ran is not corroborated") {
  const CorroborationResult c = check(sample_result(0.5, 4.0), TraceWriter::lesson(4.0, 1.0).text());
  CHECK(c.state == Corroboration::disagrees);
  CHECK(contains(c.message, "\"exercise\" reported a median of 500.00 us per launch"));
  CHECK(contains(c.message, "the checker's tracer measured 1.002 ms for the same 30 samples"));
  CHECK(c.variants[0].problem.empty());
  CHECK_FALSE(c.variants[1].problem.empty());
  CHECK(contains(corroboration_line(json::array({corroboration_json(c)})), "times NOT corroborated"));
}

TEST_CASE("a baseline that reports itself slower than it ran is not corroborated") {
  const CorroborationResult c = check(sample_result(1.0, 6.0), TraceWriter::lesson(4.0, 1.0).text());
  CHECK(c.state == Corroboration::disagrees);
  CHECK(contains(c.message, "\"naive\" reported a median of 6.000 ms"));
  CHECK(contains(c.message, "measured 4.002 ms"));
  CHECK(contains(c.message, "above the traced one"));
}

TEST_CASE("the tolerance: the gap at a sample's ends and a few percent, in each direction") {
  // A 10 us kernel whose lead-in and probe add 4 us: within the 5 us gap a lead-in allows ...
  TraceWriter w = TraceWriter::base();
  w.samples(2, 1, 30, 0.010, 0.004);
  CHECK(check(sample_result(0.010), w.text()).state == Corroboration::agrees);
  // ... 8 us is not.
  TraceWriter far = TraceWriter::base();
  far.samples(2, 1, 30, 0.010, 0.008);
  CHECK(check(sample_result(0.010), far.text()).state == Corroboration::disagrees);
  // A sample opened by a mark (no lead-in: the host's wait is in the gap) may differ by 20 us.
  TraceWriter marks = TraceWriter::base();
  marks.samples(2, 1, 30, 2.0, 0.020, 1, /*lead_in=*/false);
  CHECK(check(sample_result(2.0), marks.text()).state == Corroboration::agrees);
  // Relative: 1% either way passes, 3% faster or slower than traced does not.
  TraceWriter plain = TraceWriter::base();
  plain.samples(2, 1, 30, 1.0, 0.0);
  CHECK(check(sample_result(0.99), plain.text()).state == Corroboration::agrees);
  CHECK(check(sample_result(1.01), plain.text()).state == Corroboration::agrees);
  CHECK(check(sample_result(0.97 - 0.005), plain.text()).state == Corroboration::disagrees);
  CHECK(check(sample_result(1.03), plain.text()).state == Corroboration::disagrees);
}

TEST_CASE("batched samples (hot, graph) are compared per launch, and their gap is shared by the batch") {
  TraceWriter w = TraceWriter::base();
  w.samples(2, 1, 30, 0.010, 0.004, 100);  // 100 launches of 10 us, 4 us at the ends
  const CorroborationResult ok = check(sample_result(0.010), w.text());
  CHECK(ok.state == Corroboration::agrees);
  CHECK(ok.variants[1].traced_ms == doctest::Approx(0.01004));
  // Per launch the ends weigh 100x less, and so does what they allow.
  CHECK(check(sample_result(0.0095), w.text()).state == Corroboration::disagrees);
  CHECK(check(sample_result(0.0105), w.text()).state == Corroboration::disagrees);
}

TEST_CASE("a variant with missing samples, or none, is not corroborated") {
  TraceWriter w = TraceWriter::base();
  w.samples(2, 1, 20, 1.0);  // 20 of the 30 the exercise reports
  CorroborationResult c = check(sample_result(1.0), w.text());
  CHECK(c.state == Corroboration::disagrees);
  CHECK(contains(c.message, "\"exercise\" reports 30 timed samples, but the checker's tracer saw 20"));

  c = check(sample_result(1.0), TraceWriter::base().text());
  CHECK(c.state == Corroboration::disagrees);
  CHECK(contains(c.message, "\"exercise\" reports 30 timed samples, and the checker's tracer saw none"));
}

TEST_CASE("samples dropped as throttled: the kept median lies between the fastest and the slowest kept") {
  TraceWriter w = TraceWriter::base();
  w.samples(2, 1, 27, 1.0, 0.0);
  for (int i = 27; i < 30; ++i) w.sample(2, 1, i, 1.6);  // three throttled samples, much slower
  json r = sample_result(1.0);
  r["variants"][1]["time_ms"]["n"] = 27;
  r["variants"][1]["discarded_throttled"] = 3;
  CHECK(check(r, w.text()).state == Corroboration::agrees);
  // Without the drops declared, 30 traced samples for 27 reported do not add up.
  r["variants"][1].erase("discarded_throttled");
  CHECK(contains(check(r, w.text()).message, "reports 27 timed samples, but the checker's tracer saw 30"));
  // More than a tenth dropped is too many to pin the median.
  r["variants"][1]["time_ms"]["n"] = 20;
  r["variants"][1]["discarded_throttled"] = 10;
  CHECK(contains(check(r, w.text()).message, "dropped 10 of its 30 samples as throttled"));
}

TEST_CASE("the samples a variant reports are held against the traced ones, not only their median") {
  TraceWriter w = TraceWriter::base();
  w.samples(2, 1, 30, 1.0, 0.0);  // 0.99 to 1.01 ms
  json r = sample_result(1.0);
  json samples = json::array();
  for (int i = 0; i < 30; ++i) samples.push_back(1.0 + 0.01 * (2.0 * i / 29 - 1));
  r["variants"][1]["samples_ms"] = samples;
  CHECK(check(r, w.text()).state == Corroboration::agrees);
  // The median agrees, but the fastest sample is 10% faster than any the tracer saw.
  r["variants"][1]["samples_ms"][0] = 0.9;
  const CorroborationResult c = check(r, w.text());
  CHECK(c.state == Corroboration::disagrees);
  CHECK(contains(c.message, "\"exercise\"'s samples disagree with the checker's tracer: sample 1 of its 30, "
                            "fastest first, is 900.00 us per launch"));
  // A file that holds only an even spread of its samples: each within the traced range.
  r["variants"][1]["time_ms"]["n"] = 30;
  r["variants"][1]["samples_ms"] = {0.995, 1.005};
  CHECK(check(r, w.text()).state == Corroboration::agrees);
  r["variants"][1]["samples_ms"] = {0.995, 1.2};
  CHECK(contains(check(r, w.text()).message, "sample 2 of its 2, fastest first, is 1.200 ms"));
}

TEST_CASE("a traced span the host held up does not make honest samples disagree") {
  // Seen on an H200: the tracer ends a span when the host launches the next kernel, so a sample
  // whose host thread was held up reads longer in the trace than between the program's events.
  TraceWriter w = TraceWriter::base();
  w.sample(2, 1, -1, 3.0);  // the warm-up
  for (int i = 0; i < 29; ++i) w.sample(2, 1, i, 1.0 + 0.01 * (2.0 * i / 28 - 1));
  w.sample(2, 1, 29, 1.4);  // held up
  json r = sample_result(1.0);
  json samples = json::array();
  for (int i = 0; i < 30; ++i) samples.push_back(1.0 + 0.01 * (2.0 * i / 29 - 1));
  r["variants"][1]["samples_ms"] = samples;
  CHECK(check(r, w.text()).state == Corroboration::agrees);
  r["variants"][1]["samples_ms"][0] = 0.9;  // still: faster than any traced sample
  CHECK(check(r, w.text()).state == Corroboration::disagrees);
}

TEST_CASE("a variant measured twice is held to its last measurement") {
  TraceWriter w = TraceWriter::base();
  w.samples(2, 1, 30, 1.0);
  w.samples(4, 1, 30, 2.0);
  CHECK(check(sample_result(2.0), w.text()).state == Corroboration::agrees);
  CHECK(check(sample_result(1.0), w.text()).state == Corroboration::disagrees);
}

TEST_CASE("no trace, or a tracer that could not set up, leaves the times unavailable, not wrong") {
  CorroborationResult c = check(sample_result(), "");
  CHECK(c.state == Corroboration::unavailable);
  CHECK(contains(c.message, "the tracer wrote nothing"));
  c = check(sample_result(), "lab-trace 2\nF cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\n");
  CHECK(c.state == Corroboration::unavailable);
  CHECK(contains(c.message, "could not set up (cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS"));
  // Tagged launches without a single span (not even the ceilings', taken before any exercise code).
  c = check(sample_result(), "lab-trace 2\nT 5 0 -1 0 1 0\nT 7 0 -1 0 1 1\nE 0\n");
  CHECK(c.state == Corroboration::unavailable);
  CHECK(contains(c.message, "2 tagged launches, 0 spans, none a sample"));
  // A trace of another format (a tracer of another lab-check) is not read, and not held against
  // the program.
  c = check(sample_result(), "lab-trace 1\nT 5 4 0 -1 0 1 0\nE 0\n");
  CHECK(c.state == Corroboration::unavailable);
  CHECK(contains(c.message, "not one this checker reads"));
}

TEST_CASE("a run that measured no ceilings and timed nothing has nothing to corroborate") {
  // The checker's run of the course's program that only checks a record (--no-ceilings).
  json replay_only = sample_result();
  replay_only.erase("ceilings");
  for (auto& v : replay_only["variants"]) v.erase("time_ms");
  CorroborationResult c = check(replay_only, "lab-trace 2\nE 0\n");
  CHECK(c.state == Corroboration::agrees);
  CHECK(c.message == "nothing was timed");
  // With its ceilings (a program's own run, which measures them before any exercise code), an
  // empty trace still says the tracer did not work.
  json no_times = sample_result();
  for (auto& v : no_times["variants"]) v.erase("time_ms");
  CHECK(check(no_times, "lab-trace 2\nE 0\n").state == Corroboration::unavailable);
  // A run that reports a time with no ceilings is held to its samples as ever.
  json timed = sample_result();
  timed.erase("ceilings");
  CHECK(check(timed, "lab-trace 2\nE 0\n").state == Corroboration::unavailable);
}

TEST_CASE("a damaged or truncated trace is not corroboration") {
  const std::string good = TraceWriter::lesson().text();
  CorroborationResult c = check(sample_result(), TraceWriter::lesson().text(/*end=*/false));
  CHECK(c.state == Corroboration::disagrees);
  CHECK(contains(c.message, "the trace ends early"));
  c = check(sample_result(), good + "S 1 2 3\n");
  CHECK(contains(c.message, "goes on after its end line"));
  const std::vector<std::string> damaged = {"S 12 seven 1\n", "T 1 2 3\n", "S 1 2 -30\n", "X 1\n",
                                           "K 1 2 3 4\n", "E 0 1\n", std::string("S 1 2 3\0garbage\n", 16)};
  for (const std::string& bad : damaged) {
    const std::string text = "lab-trace 2\n" + bad + "E 0\n";
    c = check(sample_result(), text);
    CHECK(c.state == Corroboration::disagrees);
    CHECK(contains(c.message, "the trace is damaged at line 2"));
  }
  c = check(sample_result(), std::string("lab-trace 2") + "\xff\xfe\n");
  CHECK(c.state == Corroboration::unavailable);  // no header: the tracer never wrote it
}

TEST_CASE("kernels the library did not launch: a sample opened twice, a span across two samples") {
  TraceWriter w = TraceWriter::lesson();
  w.sample(2, 1, 5, 0.1);  // the exercise's sample 5 again
  CorroborationResult c = check(sample_result(), w.text());
  CHECK(c.state == Corroboration::disagrees);
  CHECK(contains(c.message, "sample 5 of measurement 2 was opened twice"));

  // Spans the library never makes, each from the exercise's sample 40 opened by a lead-in: to
  // another sample's close, to a second opening kernel, and the same pair spanned twice.
  const struct {
    int close_sample;
    TraceEdge close_edge;
    int spans;
    const char* says;
  } wrong[] = {
      {41, kTraceClockProbe, 1, "sample 40 of measurement 2 was opened and closed with different tags"},
      {40, kTraceLeadIn, 1, "was opened or closed by a kernel of the wrong kind"},
      {40, kTraceClockProbe, 2, "has a kernel that opens or closes two spans"}};
  for (const auto& bad : wrong) {
    TraceWriter t = TraceWriter::lesson();
    const unsigned open = t.kernel(2, 1, 40, 1, kTraceLeadIn);
    const unsigned close = t.kernel(2, 1, bad.close_sample, 1, bad.close_edge);
    for (int i = 0; i < bad.spans; ++i) t.span(open, close, 1.0);
    CHECK(contains(check(sample_result(), t.text()).message, bad.says));
  }

  c = check(sample_result(), "lab-trace 2\nT 5 0 -1 0 1 0\nT 5 0 -1 0 1 1\nE 0\n");
  CHECK(contains(c.message, "two launches have the correlation id 5"));
  c = check(sample_result(), TraceWriter::lesson().text(false) + "S 9999 10000 5\nE 0\n");
  CHECK(contains(c.message, "a span names a launch the trace does not have"));
}

TEST_CASE("the tracer loads from a copy, puts its header on disk at once, and meets the program's library") {
  if (built_tracer().empty()) {
    MESSAGE("lab-check was built without its tracer");
    return;
  }
  // As the driver does in cuInit: load the library (from the copy a program's work folder gets)
  // and call InitializeInjection. It finds this test's lab_trace_register (exported like a lesson
  // program's) and hands over its entry point; without a driver loaded it then says so in its file.
  TempDir dir;
  const fs::path copy = dir.path() / "lab-tracer.so", trace = dir.path() / "trace.txt";
  fs::copy_file(built_tracer(), copy);
  void* library = ::dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE_MESSAGE(library, ::dlerror());
  void* entry = ::dlsym(library, "InitializeInjection");
  REQUIRE(entry != nullptr);
  CHECK_FALSE(::dlsym(library, "on_edge"));  // nothing else is exported
  auto initialize = reinterpret_cast<int (*)()>(entry);
  g_registered = nullptr;
  g_registered_abi = 0;
  ::setenv("LAB_TRACE_FILE", trace.c_str(), 1);
  CHECK(initialize() == 1);
  ::unsetenv("LAB_TRACE_FILE");
  CHECK(g_registered_abi == kTraceAbi);
  CHECK(static_cast<bool>(g_registered));
  const Trace t = read_trace(trace);
  CHECK(t.loaded);
  if (::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) == nullptr) {
    CHECK_FALSE(t.set_up);
    CHECK(contains(t.unusable, "the tracer could not set up (the CUDA driver's event functions"));
    const TraceTag tag{0, 0, 0, 1, kTraceLeadIn};
    if (g_registered) g_registered(&tag, nullptr);  // after a failed set-up: does nothing
    CHECK(read_text(trace) == "lab-trace 2\nF the CUDA driver's event functions were not found in libcuda.so.1\n");
  }
}

TEST_CASE("a program's environment gets the checker's additions, replacing its own of the same name") {
  TempDir dir;
  ::setenv("LAB_TEST_REPLACED", "old", 1);
  ProcessOptions p;
  p.argv = {"/usr/bin/env"};
  p.env = {"LAB_TEST_ADDED=1", "LAB_TEST_REPLACED=new"};
  p.stdout_path = dir.path() / "env.txt";
  p.kind = ProcessKind::tool;
  REQUIRE(run_process(p).exited_ok());
  const std::string env = read_text(p.stdout_path);
  ::unsetenv("LAB_TEST_REPLACED");
  CHECK(contains(env, "\nLAB_TEST_ADDED=1\n"));
  CHECK(contains(env, "LAB_TEST_REPLACED=new\n"));
  CHECK_FALSE(contains(env, "LAB_TEST_REPLACED=old"));
}

}  // TEST_SUITE

TEST_SUITE("corroborate") {

// The judge, with the fake lesson playing the tracer (it writes the trace the checker asks for).
namespace {

LessonOutcome judge_traced(std::vector<std::string> extra, Corroborate mode = Corroborate::required,
                           const fs::path& tracer = LAB_TEST_FAKE_LESSON, const fs::path& probe = {}) {
  std::vector<std::string> args{"--mode", "result"};
  args.insert(args.end(), extra.begin(), extra.end());
  JudgeOptions opt;
  opt.inspect = false;
  opt.build = "test";
  opt.corroborate = mode;
  opt.tracer = tracer;  // any file: only the CUDA driver would load it, and there is none here
  opt.tracer_probe = probe;
  return judge_program(fake_lesson(args, standard_rules()), LAB_TEST_FAKE_LESSON, opt);
}

}  // namespace

TEST_CASE("judge: corroborated times are judged, and the record keeps the tracer's numbers") {
  const LessonOutcome o = judge_traced({"--exercise-ms", "1.0"});
  CHECK(o.verdict == Verdict::pass);
  REQUIRE(o.corroboration.size() == 1);
  CHECK(o.corroboration[0]["state"] == "agrees");
  CHECK(o.corroboration[0]["variants"][1]["name"] == "exercise");
  CHECK(o.corroboration[0]["variants"][1]["traced_ms"].get<double>() == doctest::Approx(1.002));
}

TEST_CASE("judge: a time the tracer does not corroborate is an error naming the variant") {
  const LessonOutcome o = judge_traced({"--exercise-ms", "1.0", "--trace-exercise-ms", "3.0"});
  CHECK(o.verdict == Verdict::error);
  CHECK(o.reason == reason::unverified_time);
  CHECK(contains(o.message, "\"exercise\" reported a median of 1.000 ms"));
  CHECK(contains(o.message, "measured 3.002 ms"));
  CHECK(o.score == 0);
  CHECK(o.corroboration[0]["state"] == "disagrees");
  // So is a trace cut short after the tracer was set up.
  const LessonOutcome early = judge_traced({"--trace", "early"});
  CHECK(early.reason == reason::unverified_time);
  CHECK(judge_traced({"--trace", "garbage"}).reason == reason::unverified_time);
}

TEST_CASE("judge: a wrong variant's contradicted time is judged as wrong, and none of its time counts") {
  // Found on the H100: lesson 07's no_join mutant (wrong results, and its unjoined work delays
  // the tracer's closing kernel) read "unverified time" where the student needs "wrong results".
  const LessonOutcome o = judge_traced({"--wrong", "--exercise-ms", "1.0", "--trace-exercise-ms", "3.0"});
  CHECK(o.verdict == Verdict::fail);
  CHECK(o.corroboration[0]["state"] == "disagrees");
  REQUIRE(o.rules.size() == 3);
  CHECK(o.rules[0].verdict == Verdict::fail);  // correct: wrong results
  for (std::size_t i = 1; i < o.rules.size(); ++i) {
    CHECK(o.rules[i].verdict == Verdict::fail);
    CHECK(contains(o.rules[i].message, "disagreed with the checker's tracer"));
  }
  CHECK(o.score == 0);
  // The checker's note on it is the record's diagnostic, word for word.
  CHECK(o.diagnostics == std::vector<std::string>{
                             "the times of variants with wrong results disagreed with the checker's tracer "
                             "(they count for nothing): \"exercise\" reported a median of 1.000 ms per "
                             "launch, but the checker's tracer measured 3.002 ms for the same 30 samples (a "
                             "reported time may be at most 65.04 us below the traced one)"});
  // A right variant's contradicted time stays an error, whatever else is wrong.
  const LessonOutcome forged = judge_traced({"--exercise-ms", "1.0", "--baseline-ms", "4.0",
                                             "--trace-baseline-ms", "2.0", "--wrong"});
  CHECK(forged.reason == reason::unverified_time);
}

TEST_CASE("judge: every run loads the checker's tracer, whatever an earlier run left in its place") {
  // Found by a red-team pass: the tracer was copied into the work folder once per lesson, and a
  // program that may write files could rename a library of its own over it for the re-runs.
  TempDir dir;
  const std::string counter = (dir.path() / "count").string();
  const LessonOutcome o = judge_traced({"--mode", "sequence", "--baseline-ms", "2.8", "--exercise-ms",
                                        "1.0", "--counter", counter, "--swap-tracer"});
  CHECK(o.runs == 3);  // 2.8x is within 10% of the 3x bar: re-run twice
  REQUIRE(o.rules.size() == 3);
  CHECK(o.rules[0].verdict == Verdict::pass);  // no run found the file an earlier one left
}

TEST_CASE("judge: a trace gone where the tracer works is the program's doing (an error, not environment)") {
  // Lesson 11's exercise may open, rename and remove files: it could remove the trace file from
  // its work folder, and a run with no trace would read `environment`. A program of the course's,
  // traced, tells that from a tracer that does not work here.
  TempDir dir("lab-probe");
  auto probe = [&](const std::string& name, const std::string& writes) {
    const fs::path p = dir.path() / name;
    write_text(p, "#!/bin/sh\n" + writes + "\n");
    fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
    return p;
  };
  const fs::path works = probe("traced", "echo 'lab-trace 2' > \"$LAB_TRACE_FILE\"");
  const LessonOutcome removed = judge_traced({"--trace", "none"}, Corroborate::required, LAB_TEST_FAKE_LESSON, works);
  CHECK(removed.verdict == Verdict::error);
  CHECK(removed.reason == reason::unverified_time);
  CHECK(contains(removed.message, "though its tracer works here"));
  CHECK(contains(removed.message, "removed, renamed or written over"));
  CHECK(removed.score == 0);
  // A probe the tracer does not reach either: the tracer does not work here, as before.
  const fs::path untraced = probe("untraced", "true");
  CHECK(judge_traced({"--trace", "none"}, Corroborate::required, LAB_TEST_FAKE_LESSON, untraced).verdict ==
        Verdict::environment);
  // And a whole trace needs no probe at all.
  CHECK(judge_traced({}, Corroborate::required, LAB_TEST_FAKE_LESSON, works).verdict == Verdict::pass);
}

TEST_CASE("judge: without a trace, grading judges no time (environment, once) and `run` says why") {
  const LessonOutcome graded = judge_traced({"--trace", "none"});
  CHECK(graded.verdict == Verdict::environment);
  CHECK(graded.runs == 1);  // a tracer that cannot run here will not on a re-run
  for (const auto& r : graded.rules) {
    CHECK(r.verdict == (r.id == "correct" ? Verdict::pass : Verdict::environment));
    if (r.id != "correct") CHECK(contains(r.message, "its times could not be corroborated: the tracer wrote nothing"));
  }
  REQUIRE(graded.diagnostics.size() == 1);
  CHECK(graded.diagnostics[0].rfind("its times could not be corroborated: the tracer wrote nothing", 0) == 0);
  const LessonOutcome ran = judge_traced({"--trace", "none"}, Corroborate::if_available);
  CHECK(ran.verdict == Verdict::pass);
  CHECK(ran.corroboration[0]["state"] == "unavailable");
  CHECK(contains(corroboration_line(ran.corroboration), "times not corroborated: the tracer wrote nothing"));

  const LessonOutcome unbuilt = judge_traced({}, Corroborate::required, "");
  CHECK(unbuilt.verdict == Verdict::environment);
  CHECK(contains(unbuilt.rules.back().message, "lab-check has no tracer"));
}

TEST_CASE("judge: --no-corroborate judges the times as reported and says so") {
  const LessonOutcome o = judge_traced({"--trace-exercise-ms", "3.0"}, Corroborate::off);
  CHECK(o.verdict == Verdict::pass);
  CHECK(o.corroboration[0]["state"] == "off");
  CHECK(corroboration_line(o.corroboration) == "times not corroborated (--no-corroborate)");
}

}  // TEST_SUITE
