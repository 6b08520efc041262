// Rule evaluation, check.toml parsing, overrides, expected.toml, combining re-runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "gpu_watch.hpp"
#include "helpers.hpp"
#include "judge.hpp"
#include "runs.hpp"
#include "selftest.hpp"

using namespace lab;
using namespace lab::test;

TEST_SUITE("rules") {

TEST_CASE("speedup: pass, fail and ambiguous from the interval of the ratio") {
  const Rule rule = make_rule("speedup", RuleKind::speedup, 3.0);
  auto pass = evaluate_rule(rule, sample_result(1.0, 4.0));
  CHECK(pass.verdict == Verdict::pass);
  CHECK(pass.points == 1);
  REQUIRE(pass.reading);
  CHECK(pass.reading->value == doctest::Approx(4.0));
  // Without samples, from the medians' intervals: over.low / variant.high .. over.high / variant.low.
  CHECK(pass.reading->low == doctest::Approx(4.0 * 0.99 / 1.01));
  CHECK(pass.reading->high == doctest::Approx(4.0 * 1.01 / 0.99));
  CHECK(contains(pass.message, "4.00x faster than \"naive\" (needs at least 3.00x)"));

  auto fail = evaluate_rule(rule, sample_result(2.0, 4.0));
  CHECK(fail.verdict == Verdict::fail);
  CHECK(fail.points == 0);

  auto close = evaluate_rule(rule, sample_result(1.0, 3.0));
  CHECK(close.verdict == Verdict::ambiguous);
  CHECK(close.points == 1);  // benefit of the doubt
  CHECK(contains(close.message, "too close to at least 3.00x to call"));

  // Slower than the variant it is compared with (a reference such as cuBLAS): said as a speed.
  const Rule fraction = make_rule("speed_vs_reference", RuleKind::speedup, 0.15);
  auto slower = evaluate_rule(fraction, sample_result(4.0, 1.0));
  CHECK(slower.verdict == Verdict::pass);
  CHECK(contains(slower.message, "0.25x the speed of \"naive\" (needs at least 0.15x)"));
}

TEST_CASE("no timed rule counts a contradicted time, nor a speedup over a wrong baseline") {
  json result = sample_result(1.0, 4.0);
  Findings contradicted;
  contradicted.unverified_variants = {"naive"};
  const Rule speed = make_rule("speedup", RuleKind::speedup, 3.0);
  auto r = evaluate_rule(speed, result, contradicted);
  CHECK(r.verdict == Verdict::fail);
  CHECK(contains(r.message, "the time of \"naive\" disagreed with the checker's tracer"));
  // A metric may come from any variant's time: one contradicted time fails every metric rule.
  CHECK(evaluate_rule(make_rule("overlap", RuleKind::metric, 0.5), result, contradicted).verdict == Verdict::fail);
  // A rule on variants whose times agreed is judged as usual.
  CHECK(evaluate_rule(make_rule("bandwidth", RuleKind::fraction_of_copy, 0.15), result, contradicted).verdict ==
        Verdict::pass);
  // Only the checker says so: the same list in the program's document is not read.
  result["unverified_variants"] = json::array({"naive"});
  CHECK(evaluate_rule(speed, result).verdict == Verdict::pass);

  json wrong_baseline = sample_result(1.0, 4.0);
  wrong_baseline["variants"][0]["correct"] = false;
  r = evaluate_rule(speed, wrong_baseline);
  CHECK(r.verdict == Verdict::fail);
  CHECK(contains(r.message, "the baseline \"naive\" gives wrong results"));
}

TEST_CASE("fraction_of_copy and fraction_of_peak use the same run's ceilings") {
  const json result = sample_result(1.0);  // 1000 GB/s against a 2800 GB/s copy
  CHECK(evaluate_rule(make_rule("bw", RuleKind::fraction_of_copy, 0.3), result).verdict == Verdict::pass);
  CHECK(evaluate_rule(make_rule("bw", RuleKind::fraction_of_copy, 0.36), result).verdict == Verdict::ambiguous);
  auto fail = evaluate_rule(make_rule("bw", RuleKind::fraction_of_copy, 0.5), result);
  CHECK(fail.verdict == Verdict::fail);
  CHECK(contains(fail.message, "35.7% of the copy bandwidth (needs at least 50.0%)"));
  // No fraction_of_peak field: gbs over the device's theoretical bandwidth.
  auto peak = evaluate_rule(make_rule("peak", RuleKind::fraction_of_peak, 0.25), result);
  CHECK(peak.verdict == Verdict::pass);
  CHECK(peak.reading->value == doctest::Approx(1000.0 / 3352.3));
}

TEST_CASE("fractions are computed from bytes and the median, never read from the file") {
  json result = sample_result(1.0);  // 1000 GB/s against a 2800 GB/s copy: 35.7%
  result["variants"][1]["fraction_of_copy"] = 0.99;  // what a forged file might claim
  result["variants"][1]["gbs"] = 2772.0;
  auto out = evaluate_rule(make_rule("bw", RuleKind::fraction_of_copy, 0.5), result);
  CHECK(out.verdict == Verdict::fail);
  CHECK(contains(out.message, "35.7% of the copy bandwidth"));
  // Bytes over the host link have no fraction of a device-memory ceiling.
  result["variants"][1]["host_link"] = true;
  out = evaluate_rule(make_rule("bw", RuleKind::fraction_of_copy, 0.5), result);
  CHECK(out.verdict == Verdict::error);
  CHECK(out.message == "\"exercise\" moves its bytes over the host link, which has no fraction of a "
                       "device-memory ceiling");
  result["variants"][1]["host_link"] = false;
  result["ceilings"].erase("copy_gbs");
  out = evaluate_rule(make_rule("bw", RuleKind::fraction_of_copy, 0.5), result);
  CHECK(out.verdict == Verdict::error);
  CHECK(out.message == "the result has no copy ceiling (ceilings.copy_gbs) to compare \"exercise\" with");
}

TEST_CASE("metric rules use low/high, with min and max") {
  const json result = sample_result();
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, 0.75), result).verdict == Verdict::pass);
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, 0.80), result).verdict == Verdict::ambiguous);
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, 0.90), result).verdict == Verdict::fail);
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, std::nullopt, 0.70), result).verdict == Verdict::fail);
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, std::nullopt, 0.85), result).verdict == Verdict::pass);
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, 0.7, 0.81), result).verdict == Verdict::ambiguous);
}

TEST_CASE("the benefit of the doubt is bounded: a median far off the bar fails, whatever the interval") {
  json result = sample_result();
  // A metric of 0.80 whose interval a program stretched to 0.40 .. 1.60.
  result["metrics"]["overlap_efficiency"] = {{"value", 0.80}, {"low", 0.40}, {"high", 1.60}};
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, 0.83), result).verdict == Verdict::ambiguous);
  auto far = evaluate_rule(make_rule("m", RuleKind::metric, 0.85), result);  // 5.9% short
  CHECK(far.verdict == Verdict::fail);
  CHECK(far.points == 0);
  CHECK(contains(far.message, "holds the bar, but the median misses it by more than 5%"));
  // The mirror image for a maximum.
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, std::nullopt, 0.77), result).verdict ==
        Verdict::ambiguous);
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, std::nullopt, 0.75), result).verdict ==
        Verdict::fail);
  // A median on the right side of the bar keeps its benefit, however wide the interval.
  CHECK(evaluate_rule(make_rule("m", RuleKind::metric, 0.5), result).verdict == Verdict::ambiguous);
}

TEST_CASE("a speedup whose exercise made a minority of its calls slower on purpose fails") {
  // The starter's speed (1.0x), and a bar of 1.5x. The exercise keeps its fast calls just ahead
  // of its slow ones (3x slower): its median is a fast call and its interval reaches the slow
  // ones. The ratio's interval stays within the medians' own ends, so it cannot reach the bar.
  json result = sample_result(1.0, 1.0);
  std::vector<double> base, ex;
  for (int i = 0; i < 400; ++i) base.push_back(1.0 + 0.001 * (i % 7));
  int fast = 0, slow = 0;
  for (int k = 1; k <= 400; ++k) {
    const bool is_slow = fast - slow >= static_cast<int>(std::ceil(std::sqrt(double(k))));
    (is_slow ? slow : fast) += 1;
    ex.push_back((is_slow ? 3.0 : 1.0) * (1.0 + 0.001 * (k % 5)));
  }
  result["variants"][0]["samples_ms"] = base;
  result["variants"][1]["samples_ms"] = ex;
  const auto out = evaluate_rule(make_rule("speedup", RuleKind::speedup, 1.5), result);
  REQUIRE(out.reading);
  CHECK(out.reading->value == doctest::Approx(1.0).epsilon(0.01));
  CHECK(out.reading->high < 1.1);  // not the 1.7 a symmetric interval on the log scale gave
  CHECK(out.verdict == Verdict::fail);
}

TEST_CASE("correctness: pass, and fail with the first failing check and the hint") {
  Rule rule = make_rule("correct", RuleKind::correct, std::nullopt);
  rule.hint = "Check the tail rows.";
  json result = sample_result();
  CHECK(evaluate_rule(rule, result).verdict == Verdict::pass);
  result["variants"][1]["correct"] = false;
  result["variants"][1]["checks"] = json::array({{{"case", "1000x777"}, {"ok", false}, {"message", "12 mismatches"}}});
  auto out = evaluate_rule(rule, result);
  CHECK(out.verdict == Verdict::fail);
  CHECK(out.message == "\"exercise\" gives wrong results (1000x777: 12 mismatches). Check the tail rows.");
  // A wrong variant earns no performance points, however fast.
  auto fast = evaluate_rule(make_rule("speedup", RuleKind::speedup, 3.0), result);
  CHECK(fast.verdict == Verdict::fail);
  CHECK(contains(fast.message, "wrong results, so its speed does not count"));
}

TEST_CASE("every program the checker starts sees one GPU, the one it watches") {
  // What pin_to_one_gpu leaves for a list, for no list, and for an empty one (no GPU on purpose).
  auto pinned = [](const char* visible) {
    if (visible) ::setenv("CUDA_VISIBLE_DEVICES", visible, 1); else ::unsetenv("CUDA_VISIBLE_DEVICES");
    ::unsetenv("CUDA_DEVICE_ORDER");
    pin_to_one_gpu();
    const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
    const char* order = std::getenv("CUDA_DEVICE_ORDER");
    return std::string(v ? v : "(unset)") + " " + (order ? order : "(unset)");
  };
  const char* before = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string saved = before ? before : "";
  CHECK(pinned("2,0,1") == "2 PCI_BUS_ID");
  CHECK(pinned("GPU-8a1b,GPU-77c0") == "GPU-8a1b PCI_BUS_ID");
  CHECK(pinned(nullptr) == "0 PCI_BUS_ID");
  CHECK(pinned("") == " (unset)");
  if (before) ::setenv("CUDA_VISIBLE_DEVICES", saved.c_str(), 1); else ::unsetenv("CUDA_VISIBLE_DEVICES");
  ::unsetenv("CUDA_DEVICE_ORDER");
}

TEST_CASE("environment: a -G build, as the library writes it (under device), judges no timed reading") {
  json result = sample_result(2.0);
  result["device"] = {{"name", "NVIDIA H200"}, {"debug_build", true}};
  const auto perf = evaluate_rule(make_rule("speedup", RuleKind::speedup, 1.5), result);
  CHECK(perf.verdict == Verdict::environment);
  CHECK(contains(perf.message, "a -G build"));
  result["device"]["debug_build"] = false;
  CHECK(evaluate_rule(make_rule("speedup", RuleKind::speedup, 1.5), result).verdict == Verdict::pass);
}

TEST_CASE("environment: a run the checker saw disturbed judges no timed reading") {
  json result = sample_result(2.0);
  Findings disturbed;  // the judge's own watch (findings_of_watch)
  disturbed.environment_ok = false;
  disturbed.disturbance = {"1 other process(es) used the GPU (PID 4242)"};
  auto perf = evaluate_rule(make_rule("speedup", RuleKind::speedup, 3.0), result, disturbed);
  CHECK(perf.verdict == Verdict::environment);
  CHECK(perf.points == 0);
  CHECK(contains(perf.message, "the checker saw this run disturbed (1 other process(es) used the GPU (PID 4242))"));
  // A pass is not a pass either: another process can slow a baseline and so make a speedup.
  CHECK(evaluate_rule(make_rule("speedup", RuleKind::speedup, 1.5), result, disturbed).verdict == Verdict::environment);
  // A wrong result is still the student's.
  result["variants"][1]["correct"] = false;
  CHECK(evaluate_rule(make_rule("correct", RuleKind::correct, std::nullopt), result, disturbed).verdict == Verdict::fail);
}

TEST_CASE("environment: what the program says about itself is set aside") {
  json result = sample_result(2.0);  // 2x where 3x is needed
  result["environment_ok"] = false;
  result["diagnostics"] = json::array({"GPU clock is throttled"});
  result["variants"][1]["converged"] = false;
  const json as_written = result;
  const Findings calm = findings_of_watch(GpuObservation{});
  CHECK(calm.environment_ok);
  CHECK(calm.disturbance.empty());
  CHECK(evaluate_rule(make_rule("speedup", RuleKind::speedup, 3.0), result, calm).verdict == Verdict::fail);
  GpuObservation busy;
  busy.watched = busy.gpu_present = true;
  busy.samples = 10;
  busy.other_processes = {4242};
  const Findings seen = findings_of_watch(busy);
  CHECK_FALSE(seen.environment_ok);
  CHECK(seen.disturbance == std::vector<std::string>{"1 other process(es) used the GPU (PID 4242)"});
  CHECK(evaluate_rule(make_rule("speedup", RuleKind::speedup, 3.0), result, seen).verdict == Verdict::environment);
  CHECK(result == as_written);  // the program's document holds its own word only
  GpuObservation hot;
  hot.watched = hot.gpu_present = true;
  hot.samples = 10;
  hot.throttled_samples = 1;  // one in ten: not enough to excuse anything
  CHECK(hot.disturbance().empty());
  hot.throttled_samples = 3;
  CHECK(contains(hot.disturbance(), "thermal or hardware slowdown in 3 of 10 samples"));
}

TEST_CASE("implausible: faster than a ceiling of the same run is an error, not a pass") {
  json result = sample_result(1.0);  // 1000 GB/s against a 2800 GB/s copy: plausible
  CHECK(implausible_rates(result).empty());
  result["variants"][1]["time_ms"]["median"] = 0.25;  // 4000 GB/s: 1.43x the copy ceiling
  CHECK(contains(implausible_rates(result), "implausible: \"exercise\" reached 4000 GB/s, 1.43x the copy ceiling"));
  result["variants"][1]["mode"] = "hot";  // L2-resident hot loops may beat DRAM: not judged so
  CHECK(implausible_rates(result).empty());
  result["variants"][1].erase("mode");  // a variant without its own mode has the run's
  result["config"] = {{"mode", "hot"}};
  CHECK(implausible_rates(result).empty());
  json link = sample_result(1.0);
  link["ceilings"]["h2d_pinned_gbs"] = 50.0;
  link["ceilings"]["d2h_pinned_gbs"] = 50.0;
  link["variants"][1]["host_link"] = true;  // 1000 GB/s over PCIe
  CHECK(contains(implausible_rates(link), "pinned host link"));
  link["variants"][1]["time_ms"]["median"] = 1e9 / (88e9 / 1e3);  // 88 GB/s: both ways at once
  CHECK(implausible_rates(link).empty());
  json flops = sample_result(1.0);
  flops["ceilings"]["fp32_gflops"] = 60000.0;
  flops["variants"][1]["flops"] = 1e11;  // 100 TFLOP/s
  CHECK(contains(implausible_rates(flops), "FP32 roof"));
  flops["ceilings"]["bf16_tensor_gflops"] = 600000.0;  // lesson 12: tensor cores do 100 TFLOP/s
  CHECK(implausible_rates(flops).empty());
  flops["variants"][1]["flops"] = 1e12;  // 1000 TFLOP/s: past the tensor roof too
  CHECK(contains(implausible_rates(flops), "1.67x the BF16 tensor roof"));
  // Lesson 05: an FP32 product on the tensor cores (3xTF32) may pass the FP32 roof, not the TF32.
  json sgemm = sample_result(1.0);
  sgemm["ceilings"]["fp32_gflops"] = 60000.0;
  sgemm["variants"][1]["flops"] = 1e11;  // 100 TFLOP/s
  sgemm["ceilings"]["tf32_tensor_gflops"] = 400000.0;
  CHECK(implausible_rates(sgemm).empty());
  sgemm["variants"][1]["flops"] = 5e11;  // 500 TFLOP/s
  CHECK(contains(implausible_rates(sgemm), "1.25x the TF32 tensor roof"));
}

TEST_CASE("error: a rule naming a variant the lesson does not report") {
  Rule rule = make_rule("speedup", RuleKind::speedup, 3.0);
  rule.over = "tiled";
  json result = sample_result();
  auto out = evaluate_rule(rule, result);
  CHECK(out.verdict == Verdict::error);
  CHECK(out.message == "check.toml names the variant \"tiled\", which the lesson does not report (it has: naive, exercise)");
  // ...but if the program stopped early, the missing variant is the program's failure.
  result["complete"] = false;
  auto early = evaluate_rule(rule, result);
  CHECK(early.verdict == Verdict::fail);
  CHECK(early.message == "the program stopped before it measured \"tiled\"");
}

TEST_CASE("hints: {value}, {min} and {max} in the rule's units") {
  Rule r = make_rule("speedup", RuleKind::speedup, 3.0);
  r.hint = "Only {value} faster, needs {min} (max {max}).";
  CHECK(fill_hint(r, 2.0) == "Only 2.00x faster, needs 3.00x (max -).");
  Rule f = make_rule("bw", RuleKind::fraction_of_copy, 0.7);
  f.hint = "Reached {value} of copy, needs {min}.";
  CHECK(fill_hint(f, 0.41) == "Reached 41.0% of copy, needs 70.0%.");
  auto out = evaluate_rule(f, sample_result(1.0));
  CHECK(out.hint == "Reached 35.7% of copy, needs 70.0%.");
  CHECK(contains(out.message, out.hint));
  CHECK(evaluate_rule(f, sample_result(0.1)).hint.empty());  // passing rules carry no hint
}

TEST_CASE("worse() orders verdicts") {
  CHECK(worse(Verdict::pass, Verdict::ambiguous) == Verdict::ambiguous);
  CHECK(worse(Verdict::environment, Verdict::ambiguous) == Verdict::environment);
  CHECK(worse(Verdict::fail, Verdict::environment) == Verdict::fail);
  CHECK(worse(Verdict::fail, Verdict::error) == Verdict::error);
}

namespace {
std::string toml_error(const std::string& body, const std::string& folder = "90-fake") {
  TempDir dir;
  const fs::path file = dir.path() / "lessons" / folder / "check.toml";
  write_text(file, body);
  try {
    load_lesson(file);
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    // Messages name the file; strip the temp folder so the tests read plainly.
    return msg.substr(msg.find("check.toml"));
  }
  return "no error";
}
const char* kHead = "lesson = \"90-fake\"\ntitle = \"Fake\"\n";
}  // namespace

TEST_CASE("check.toml: a valid file") {
  TempDir dir;
  const fs::path file = dir.path() / "lessons" / "90-fake" / "check.toml";
  write_text(file, std::string(kHead) + "timeout_s = 30\nargs = [\"--mode\", \"result\"]\n"
             "[[rule]]\nid = \"correct\"\nkind = \"correct\"\nvariant = \"exercise\"\npoints = 4\n"
             "[[rule]]\nid = \"speedup\"\nkind = \"speedup\"\nvariant = \"exercise\"\nover = \"naive\"\nmin = 3\npoints = 2.5\nhint = \"h\"\n");
  const LessonConfig l = load_lesson(file);
  CHECK(l.name == "90-fake");
  CHECK(l.timeout_s == 30);
  CHECK(l.args == std::vector<std::string>{"--mode", "result"});
  REQUIRE(l.rules.size() == 2);
  CHECK(l.rules[1].min == 3.0);
  CHECK(l.max_points() == 6.5);
  CHECK(l.syscall_filter);  // by default the program filters its system calls
  write_text(file, std::string(kHead) + "syscall_filter = false\n[[rule]]\nid = \"correct\"\nkind = \"correct\"\nvariant = \"exercise\"\n");
  CHECK_FALSE(load_lesson(file).syscall_filter);
  write_text(file, std::string(kHead) + "forbidden_calls = [\"cudaGraphKernelNodeGetParams\", \"cudaGraphNodeGetParams*\"]\n"
             "[[rule]]\nid = \"correct\"\nkind = \"correct\"\nvariant = \"exercise\"\n");
  CHECK(load_lesson(file).forbidden_calls.size() == 2);

  // A lesson built for one GPU generation (13: Hopper): its program's exit 77 on another one is
  // "not applicable here", judged on the checker's own view of the GPU, never on the program's.
  CHECK(load_lesson(file).compute_capability_major == 0);  // any GPU, by default
  write_text(file, std::string(kHead) + "compute_capability_major = 9\n[[rule]]\nid = \"correct\"\nkind = \"correct\"\nvariant = \"exercise\"\n");
  const LessonConfig hopper = load_lesson(file);
  CHECK(hopper.compute_capability_major == 9);
  GpuObservation ampere;
  ampere.watched = ampere.gpu_present = true;
  ampere.cc_major = 8;
  CHECK(gpu_of_another_generation(hopper, ampere));
  GpuObservation h200 = ampere;
  h200.cc_major = 9;
  CHECK_FALSE(gpu_of_another_generation(hopper, h200));   // exit 77 there: the program's doing
  GpuObservation unseen = ampere;
  unseen.cc_major = 0;                                     // NVML did not say: not believed
  CHECK_FALSE(gpu_of_another_generation(hopper, unseen));
  CHECK_FALSE(gpu_of_another_generation(LessonConfig{}, ampere));  // a lesson for any GPU
}

TEST_CASE("check.toml: args may not leave out a variant a rule reads") {
  // Every run passes the args, the pristine one too: a skipped baseline would be missing from
  // every grade.
  const std::string rules = "[[rule]]\nid = \"speedup\"\nkind = \"speedup\"\nvariant = \"exercise\"\n"
                            "over = \"naive\"\nmin = 3\npoints = 1\n";
  CHECK(toml_error(std::string(kHead) + "args = [\"--skip-variant\", \"views,naive\"]\n" + rules) ==
        "check.toml: args leave out \"naive\" (--skip-variant), which rule \"speedup\" reads");
  CHECK(toml_error(std::string(kHead) + "args = [\"--skip-variant=exercise\"]\n" + rules) ==
        "check.toml: args leave out \"exercise\" (--skip-variant), which rule \"speedup\" reads");
  CHECK(toml_error(std::string(kHead) + "args = [\"--skip-variant\", \"views\", \"--demos\", \"0\"]\n" +
                   rules) == "no error");
}

TEST_CASE("check.toml: mistakes give file:line and what to fix") {
  CHECK(toml_error(std::string(kHead) + "[[rule]]\nid = \"x\"\nkind = \"speedup\"\nvariant = \"e\"\nmni = 3\n") ==
        "check.toml:7: unknown key \"mni\" in a rule (keys: id, kind, variant, over, metric, counter, min, max, max_work, points, hint)");
  CHECK(toml_error(std::string(kHead) + "[[rule]]\nid = \"x\"\nkind = \"fastness\"\n") ==
        "check.toml:5: unknown rule kind \"fastness\" (kinds: correct, fraction_of_copy, fraction_of_peak, speedup, metric, counter)");
  CHECK(toml_error(std::string(kHead) + "[[rule]]\nid = \"x\"\nkind = \"speedup\"\nvariant = \"e\"\nmin = 2\n") ==
        "check.toml:3: rule \"x\" is a speedup and needs \"over\" (the variant it is compared with)");
  CHECK(toml_error(std::string(kHead) + "[[rule]]\nid = \"x\"\nkind = \"fraction_of_copy\"\nvariant = \"e\"\n") ==
        "check.toml:3: rule \"x\" needs a threshold: \"min\", \"max\" or both");
  CHECK(toml_error(std::string(kHead) + "[[rule]]\nid = \"x\"\nkind = \"correct\"\nvariant = \"e\"\nmin = \"fast\"\n") ==
        "check.toml:7: \"min\" must be a number");
  CHECK(toml_error(std::string(kHead) + "[[rule]]\nid = \"x\"\nkind = \"correct\"\nvariant = \"e\"\n"
                   "[[rule]]\nid = \"x\"\nkind = \"correct\"\nvariant = \"e\"\n") ==
        "check.toml:7: two rules share the id \"x\"");
  CHECK(toml_error("lesson = \"90-fake\"\n[[rule]\n").find("check.toml:2: not valid TOML") == 0);
  CHECK(toml_error("lesson = \"04-other\"\n[[rule]]\nid = \"x\"\nkind = \"correct\"\nvariant = \"e\"\n") ==
        "check.toml: lesson = \"04-other\" but the folder is \"90-fake\"");
  CHECK(toml_error(std::string(kHead)) == "check.toml: no [[rule]] tables");
  CHECK(toml_error(std::string(kHead) + "syscall_filter = \"off\"\n[[rule]]\nid = \"x\"\nkind = \"correct\"\nvariant = \"e\"\n") ==
        "check.toml:3: \"syscall_filter\" must be true or false");
}

TEST_CASE("lesson selection by full name or number") {
  LessonConfig a = fake_lesson({}, standard_rules());
  LessonConfig b = a;
  b.name = "91-other";
  const std::vector<LessonConfig> all{a, b};
  CHECK(select_lessons(all, {"91"}).at(0).name == "91-other");
  CHECK(select_lessons(all, {}).size() == 2);
  CHECK_THROWS_WITH_AS(select_lessons(all, {"07"}), "no lesson \"07\" (lessons: 90-fake, 91-other)", ConfigError);
}

TEST_CASE("a template (a folder whose name starts with _) is left out unless named") {
  auto all = std::vector{fake_lesson({}, standard_rules())};
  all.push_back(all.front());
  all.back().name = "_template";
  CHECK(select_lessons(all, {}).size() == 1);
  CHECK(select_lessons(all, {}).front().name == "90-fake");
  CHECK(select_lessons(all, {"_template"}).at(0).name == "_template");
}

TEST_CASE("overrides change thresholds, points and timeouts, and reject typos") {
  TempDir dir;
  std::vector<LessonConfig> lessons{fake_lesson({}, standard_rules())};
  const fs::path file = dir.path() / "overrides.toml";
  write_text(file, "[\"90-fake\"]\ntimeout_s = 300\n[\"90-fake\".speedup]\nmin = 2.5\npoints = 5\n");
  apply_overrides(lessons, file);
  CHECK(lessons[0].timeout_s == 300);
  CHECK(lessons[0].rules[1].min == 2.5);
  CHECK(lessons[0].rules[1].points == 5);
  CHECK(evaluate_rule(lessons[0].rules[1], sample_result(1.5, 4.0)).verdict == Verdict::pass);

  auto error_of = [&](const std::string& body) -> std::string {
    write_text(file, body);
    try {
      apply_overrides(lessons, file);
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      return msg.substr(msg.find("overrides.toml"));
    }
    return "no error";
  };
  CHECK(error_of("[\"99-none\".x]\nmin = 1\n") == "overrides.toml:1: no lesson \"99-none\"");
  CHECK(error_of("[\"90-fake\".speed]\nmin = 1\n") == "overrides.toml:1: lesson \"90-fake\" has no rule \"speed\" (rules: correct, speedup, bandwidth)");
  CHECK(error_of("[\"90-fake\".speedup]\nkind = \"metric\"\n") ==
        "overrides.toml:2: \"kind\" cannot be overridden (min, max, points, hint)");
  CHECK(error_of("[\"90-fake\".speedup]\nmin = 5\nmax = 4\n") ==
        "overrides.toml:1: rule \"speedup\" has min > max: nothing could pass");
}

TEST_CASE("combine_runs keeps each variant's best median and correctness in every run") {
  auto run = [](double exercise_ms, double baseline_ms) {
    return JudgedRun{run_report(sample_result(exercise_ms, baseline_ms)), {}};
  };
  const JudgedRun a = run(2.0, 4.0), c = run(1.5, 3.0);
  JudgedRun b = run(1.0, 5.0);
  b.findings.unverified_variants = {"naive"};
  const JudgedRun combined = combine_runs({a, b, c});
  CHECK(combined.report.find("exercise")->time->median == 1.0);
  CHECK(combined.report.find("naive")->time->median == 3.0);
  CHECK(combined.findings.environment_ok);
  // A time the tracer contradicted in one run stays contradicted.
  CHECK(combined.findings.unverified_variants == std::vector<std::string>{"naive"});
  b.report.variants[1].correct = false;
  b.report.variants[1].checks = {ReportedCheck{"1000x777", false, "12 mismatches", "12"}};
  const ReportedVariant wrong = *combine_runs({a, b, c}).report.find("exercise");
  CHECK_FALSE(wrong.correct);
  REQUIRE(wrong.checks.size() == 1);
  CHECK(wrong.checks[0].message == "12 mismatches");

  // Healthy runs win: a throttled run's (better) time is ignored while a healthy run exists.
  JudgedRun throttled = run(0.5, 4.0);
  throttled.findings.environment_ok = false;
  throttled.findings.unverified_variants = {"exercise"};
  const JudgedRun mixed = combine_runs({throttled, a});
  CHECK(mixed.report.find("exercise")->time->median == 2.0);
  CHECK(mixed.findings.environment_ok);
  CHECK(mixed.findings.unverified_variants.empty());  // from the run set aside
  CHECK_FALSE(combine_runs({throttled, throttled}).findings.environment_ok);
}

TEST_CASE("expected.toml: parsing and matching") {
  TempDir dir;
  const fs::path file = dir.path() / "expected.toml";
  write_text(file, "[compile_error]\nverdict = \"error\"\nreason = \"compile\"\n"
                   "[racy_tile]\nrule = \"correct\"\nverdict = \"fail\"\n"
                   "[endless_loop]\nverdict = \"error\"\nreason = \"timeout\"\ntimeout_s = 5\n"
                   "[oob]\nreason = \"sanitizer\"\n");
  auto all = load_expectations(file);
  REQUIRE(all.size() == 4);
  auto by_name = [&](const std::string& n) {
    return *std::find_if(all.begin(), all.end(), [&](const Expectation& x) { return x.mutant == n; });
  };
  const std::vector<Expectation> e{by_name("compile_error"), by_name("racy_tile"), by_name("endless_loop"), by_name("oob")};
  CHECK(e[2].timeout_s == 5);
  CHECK(e[3].needs_sanitizer());
  CHECK(e[3].verdict == Verdict::fail);

  LessonConfig lesson = fake_lesson({}, standard_rules());
  LessonOutcome compile = lesson_outcome(lesson, "mutant", Verdict::error, reason::compile, "did not compile");
  std::string why;
  CHECK(expectation_holds(e[0], compile, why));
  CHECK_FALSE(expectation_holds(e[2], compile, why));
  CHECK(why == "got error (compile): did not compile");

  LessonOutcome racy;
  for (const auto& r : lesson.rules) racy.rules.push_back(evaluate_rule(r, sample_result()));
  racy.rules[0].verdict = Verdict::fail;
  CHECK(expectation_holds(e[1], racy, why));

  // A counter rule expected to fail holds where ncu may not read the counters (skipped), and
  // only a counter rule.
  Expectation counter_fails{"coalesced_when_small", "correct", Verdict::fail, "", 0, ""};
  racy.rules[0].verdict = Verdict::skipped;
  CHECK_FALSE(expectation_holds(counter_fails, racy, why));
  racy.rules[0].kind = "counter";
  CHECK(expectation_holds(counter_fails, racy, why));

  write_text(file, "[x]\nverdict = \"failed\"\n");
  CHECK_THROWS_WITH_AS(load_expectations(file), doctest::Contains("unknown verdict \"failed\""), ConfigError);
  write_text(file, "[x]\nverdict = \"error\"\nreason = \"slow\"\n");
  CHECK_THROWS_WITH_AS(load_expectations(file), doctest::Contains("unknown reason \"slow\""), ConfigError);
}

}  // TEST_SUITE
