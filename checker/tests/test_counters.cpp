// Counter rules: reading ncu's CSV, the measures, the fallbacks, and judging with a stand-in ncu.
#include <doctest/doctest.h>

#include <algorithm>

#include "counters.hpp"
#include "helpers.hpp"
#include "judge.hpp"

using namespace lab;
using namespace lab::test;

namespace {

const std::string kFake = LAB_TEST_FAKE_LESSON;

// The shape ncu 2025.3 writes with --csv --page raw --print-units base --log-file (columns
// trimmed): its own lines, a header, a units row, one row per kernel, thousands separators.
// Numbers are from a strided-load kernel and a 32-way-conflicted transpose on an H100.
const char* kLog =
    "==WARNING== Note: Running with unmodified GPU clocks.\n"
    "==PROF== Connected to process 521 (/x/probe)\n"
    "==PROF== Disconnected from process 521\n"
    "\"ID\",\"Process ID\",\"Kernel Name\",\"Grid Size\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum\","
    "\"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum\","
    "\"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum\","
    "\"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum\","
    "\"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum\","
    "\"smsp__sass_data_bytes_mem_global_op_ld.sum\","
    "\"smsp__sass_data_bytes_mem_global_op_st.sum\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"sector\",\"sector\",\"byte\",\"byte\"\n"
    "\"0\",\"521\",\"load_strided(const float *, float *, int)\",\"(65536, 1, 1)\",\"0\",\"0\",\"0\","
    "\"0\",\"16,777,216\",\"2,097,152\",\"67,108,864\",\"67,108,864\"\n"
    "\"1\",\"521\",\"void transpose<0>(const float *, float *, int)\",\"(128, 128, 1)\","
    "\"16,385,394\",\"36,909\",\"16,909,682\",\"561,197\",\"2,097,152\",\"2,097,152\","
    "\"67,108,864\",\"67,108,864\"\n";

double value_of(const std::string& measure, const std::map<std::string, double>& sums) {
  std::string why;
  auto v = measure_value(*find_counter_measure(measure), sums, why);
  REQUIRE_MESSAGE(v.has_value(), why);
  return *v;
}

Rule counter_rule(const std::string& measure, std::optional<double> min, std::optional<double> max) {
  Rule r = make_rule("mechanism", RuleKind::counter, min, max, 2);
  r.counter = measure;
  r.hint = "Only {value}.";
  return r;
}

JudgedRun with_counters(const std::map<std::string, CounterReading>& readings) {
  JudgedRun run{run_report(sample_result()), {}};
  run.findings.counters["exercise"] = readings;
  return run;
}

CounterReading measured(double value, std::optional<double> work_per_needed = std::nullopt) {
  CounterReading r;
  r.status = CounterRun::Status::measured;
  r.value = value;
  r.work_per_needed = work_per_needed;
  return r;
}

CounterReading not_measured(CounterRun::Status status, const std::string& why) {
  CounterReading r;
  r.status = status;
  r.message = why;
  return r;
}

// A stand-in ncu: finds --log-file, writes `content` there, runs the program (the rest of its
// command line, which inherits the record's descriptor), then exits with `code`.
fs::path fake_ncu(const fs::path& dir, const std::string& content, int code = 0) {
  const fs::path data = dir / "ncu-output.txt";
  write_text(data, content);
  const fs::path tool = dir / "fake-ncu";
  write_text(tool, "#!/bin/sh\nwhile [ \"$1\" != \"--log-file\" ]; do shift; done\ncp '" +
                       data.string() + "' \"$2\"\nshift 2\n\"$@\"\nexit " + std::to_string(code) + "\n");
  fs::permissions(tool, fs::perms::owner_all);
  return tool;
}

}  // namespace

TEST_SUITE("counters") {

TEST_CASE("ncu's CSV: kernels summed, its own lines and the units row skipped") {
  const NcuTable t = parse_ncu_csv(kLog);
  CHECK(t.kernels == 2);
  CHECK(t.sums.at("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") == 16777216.0 + 2097152.0);
  CHECK(t.sums.at("smsp__sass_data_bytes_mem_global_op_ld.sum") == 2 * 67108864.0);
  CHECK(t.sums.count("Grid Size") == 0);  // not a metric
  CHECK(parse_ncu_csv("==PROF== nothing profiled\n").kernels == 0);
}

TEST_CASE("the measures: coalescing of loads and stores, bank conflicts, tensor instructions") {
  // Strided loads alone: 4 bytes used of each 32-byte sector.
  std::map<std::string, double> strided = {
      {"smsp__sass_data_bytes_mem_global_op_ld.sum", 67108864},
      {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 16777216}};
  CHECK(value_of("global_load_efficiency", strided) == doctest::Approx(0.125));
  const NcuTable both = parse_ncu_csv(kLog);
  CHECK(value_of("global_load_efficiency", both.sums) == doctest::Approx(2.0 / 9.0));
  CHECK(value_of("global_store_efficiency", both.sums) == doctest::Approx(1.0));
  // The transpose's 32-way conflicts: about 31 extra wavefronts per needed one.
  CHECK(value_of("shared_bank_conflicts", both.sums) == doctest::Approx(16422303.0 / 1048576.0).epsilon(1e-6));
  CHECK(value_of("shared_bank_conflicts", both.sums) > 15);
  // No shared-memory traffic at all: nothing to conflict.
  std::map<std::string, double> no_shared = {
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 0},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 0},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 0},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0}};
  CHECK(value_of("shared_bank_conflicts", no_shared) == 0.0);

  std::string why;
  CHECK_FALSE(measure_value(*find_counter_measure("global_store_efficiency"), strided, why));
  CHECK(contains(why, "did not report smsp__sass_data_bytes_mem_global_op_st.sum"));
  std::map<std::string, double> no_loads = {{"smsp__sass_data_bytes_mem_global_op_ld.sum", 0},
                                            {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0}};
  CHECK_FALSE(measure_value(*find_counter_measure("global_load_efficiency"), no_loads, why));
  CHECK(why == "the kernels made no global loads");
  CHECK(find_counter_measure("sectors_per_request") == nullptr);

  // Tensor-core instructions among all: 32 HMMA in 128 instructions.
  std::map<std::string, double> tensor = {{"sm__inst_executed_pipe_tensor_op_hmma.sum", 32},
                                          {"smsp__inst_executed.sum", 128}};
  CHECK(value_of("tensor_instruction_share", tensor) == doctest::Approx(0.25));
  tensor["smsp__inst_executed.sum"] = 0;
  CHECK_FALSE(measure_value(*find_counter_measure("tensor_instruction_share"), tensor, why));
  CHECK(why == "the kernels executed no instructions");

  // Lesson 13: tensor-core-active cycles per sub-partition cycle elapsed, and the work they can
  // have done (1024 BF16 flops a tensor core's active cycle) against the needed flops.
  std::map<std::string, double> gmma = {{"sm__pipe_tensor_cycles_active.sum", 600},
                                        {"smsp__cycles_elapsed.sum", 1000}};
  CHECK(value_of("tensor_pipe_busy", gmma) == doctest::Approx(0.6));
  CHECK(*work_done(*find_counter_measure("tensor_pipe_busy"), gmma) == 600.0 * 1024);
  gmma.erase("sm__pipe_tensor_cycles_active.sum");
  CHECK_FALSE(measure_value(*find_counter_measure("tensor_pipe_busy"), gmma, why));
  CHECK(contains(why, "did not report sm__pipe_tensor_cycles_active.sum"));
}

TEST_CASE("cp.async copies count with the loads and the shared-memory accesses they are") {
  // A kernel whose plain loads are coalesced and whose cp.async copies take one float from each
  // of 32 rows: before, the copies were not counted and it read 1.0.
  const std::string async_bytes = "smsp__sass_data_bytes_mem_global_op_ldgsts.sum";
  const std::string async_sectors = "smsp__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts.sum";
  std::map<std::string, double> mixed = {{"smsp__sass_data_bytes_mem_global_op_ld.sum", 1 << 20},
                                         {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1 << 15},
                                         {async_bytes, 1 << 20},
                                         {async_sectors, 1 << 18}};
  CHECK(value_of("global_load_efficiency", mixed) == doctest::Approx(2.0 / 9.0));
  // All copies, no plain load: judged on the copies (before: "made no global loads").
  std::map<std::string, double> copies_only = {{"smsp__sass_data_bytes_mem_global_op_ld.sum", 0},
                                               {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 0},
                                               {async_bytes, 1 << 20},
                                               {async_sectors, 1 << 15}};
  CHECK(value_of("global_load_efficiency", copies_only) == doctest::Approx(1.0));
  // Where the GPU has no cp.async (before Ampere) they are not asked for, and count 0.
  const CounterMeasure& loads = *find_counter_measure("global_load_efficiency");
  auto asks = [&](int cc, const std::string& metric) {
    const auto r = loads.requested(cc);
    return std::find(r.begin(), r.end(), metric) != r.end();
  };
  CHECK_FALSE(asks(7, async_bytes));
  CHECK(asks(8, async_bytes));
  CHECK(asks(9, async_sectors));
  CHECK(asks(0, async_bytes));  // not known: a current GPU
  CHECK(asks(7, "smsp__sass_data_bytes_mem_global_op_ld.sum"));
  mixed.erase(async_bytes);
  mixed.erase(async_sectors);
  CHECK(value_of("global_load_efficiency", mixed) == doctest::Approx(1.0));
  // The shared side of the copies: 4-way conflicted stores add their extra wavefronts.
  std::map<std::string, double> shared = {
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 1000},
      {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", 0},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 0},
      {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 0},
      {"smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum", 4000},
      {"smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum", 3000}};
  CHECK(value_of("shared_bank_conflicts", shared) == doctest::Approx(3000.0 / 2000.0));
}

TEST_CASE("what an ncu log means: counters, no permission, nothing profiled, a failed program") {
  CHECK(interpret_ncu_log(kLog, true, "").status == CounterRun::Status::measured);
  const CounterRun perm = interpret_ncu_log(
      "==PROF== Connected to process 7\n==ERROR== ERR_NVGPUCTRPERM - The user does not have "
      "permission to access NVIDIA GPU Performance Counters on the target device 0.\n",
      true, "");
  CHECK(perm.status == CounterRun::Status::unavailable);
  CHECK(contains(perm.message, "https://developer.nvidia.com/ERR_NVGPUCTRPERM"));
  const CounterRun unsupported =
      interpret_ncu_log("==ERROR== Profiling is not supported on this device\n", false, "exited with code 1");
  CHECK(unsupported.status == CounterRun::Status::unavailable);
  const CounterRun none = interpret_ncu_log("==PROF== Disconnected\n", true, "exited with code 0");
  CHECK(none.status == CounterRun::Status::failed);
  CHECK(contains(none.message, "saw no kernel"));
  const CounterRun crashed = interpret_ncu_log("==ERROR== The application returned an error code (3).\n",
                                               false, "exited with code 3");
  CHECK(crashed.status == CounterRun::Status::failed);
  CHECK(contains(crashed.message, "the program failed under ncu (exited with code 3): The application returned"));
  // A kernel's name is no refusal (found by a red-team pass: a kernel named ERR_NVGPUCTRPERM_...
  // had every counter rule skipped), in the table or in an error line of ncu's about it.
  std::string named = kLog;
  named.replace(named.find("load_strided"), 12, "ERR_NVGPUCTRPERM_strided");
  CHECK(interpret_ncu_log(named, true, "").status == CounterRun::Status::measured);
  const CounterRun failed_kernel = interpret_ncu_log(
      "==ERROR== Failed to profile \"ERR_NVGPUCTRPERM_row_scores\" in process 7\n", false, "exited with code 1");
  CHECK(failed_kernel.status == CounterRun::Status::failed);
}

TEST_CASE("a counter rule: pass, fail with its hint, skipped out of the total, wrong code fails") {
  const Rule coalesced = counter_rule("global_load_efficiency", 0.8, std::nullopt);
  RuleOutcome good = evaluate_rule(coalesced, with_counters({{"global_load_efficiency", measured(1.0)}}));
  CHECK(good.verdict == Verdict::pass);
  CHECK(good.points == 2);
  CHECK(good.message == "global_load_efficiency of \"exercise\" = 1 (needs at least 0.8)");

  RuleOutcome bad = evaluate_rule(coalesced, with_counters({{"global_load_efficiency", measured(0.125)}}));
  CHECK(bad.verdict == Verdict::fail);
  CHECK(bad.hint == "Only 0.125.");

  // Counters are counts: an untrustworthy timing environment does not change them.
  JudgedRun throttled = with_counters({{"global_load_efficiency", measured(0.125)}});
  throttled.findings.environment_ok = false;
  CHECK(evaluate_rule(coalesced, throttled).verdict == Verdict::fail);

  RuleOutcome skipped = evaluate_rule(
      coalesced, with_counters({{"global_load_efficiency", not_measured(CounterRun::Status::unavailable,
                                                                "ncu may not read (ERR_NVGPUCTRPERM)")}}));
  CHECK(skipped.verdict == Verdict::skipped);
  CHECK(skipped.points == 0);
  CHECK(skipped.max_points == 0);
  CHECK(contains(skipped.message, "ERR_NVGPUCTRPERM"));
  CHECK(evaluate_rule(coalesced, sample_result()).verdict == Verdict::skipped);  // not read at all

  CHECK(evaluate_rule(coalesced, with_counters({{"global_load_efficiency", not_measured(CounterRun::Status::failed, "ncu saw no kernel")}}))
            .verdict == Verdict::fail);

  JudgedRun wrong = with_counters({{"global_load_efficiency", measured(1.0)}});
  wrong.report.variants[1].correct = false;
  RuleOutcome w = evaluate_rule(coalesced, wrong);
  CHECK(w.verdict == Verdict::fail);
  CHECK(contains(w.message, "so its counters do not count"));

  const Rule conflicts = counter_rule("shared_bank_conflicts", std::nullopt, 1.0);
  CHECK(evaluate_rule(conflicts, with_counters({{"shared_bank_conflicts", measured(31.0)}})).verdict == Verdict::fail);
  CHECK(evaluate_rule(conflicts, with_counters({{"shared_bank_conflicts", measured(0.03)}})).verdict == Verdict::pass);
}

TEST_CASE("a counter reading is judged only where the kernels did about the work the problem needs") {
  // Padding: coalesced loads that feed nothing, beside uncoalesced ones, lift 0.125 towards 0.8,
  // dead mma_sync lift the tensor share: either way the kernels do many times the needed work.
  std::map<std::string, double> padded = {{"smsp__sass_data_bytes_mem_global_op_ld.sum", 28.0 * (1 << 20)},
                                          {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 35.0 * (1 << 15)}};
  CHECK(value_of("global_load_efficiency", padded) == doctest::Approx(0.8));
  CHECK(*work_done(*find_counter_measure("global_load_efficiency"), padded) == 28.0 * (1 << 20));
  std::map<std::string, double> tensor = {{"sm__inst_executed_pipe_tensor_op_hmma.sum", 512},
                                          {"smsp__inst_executed.sum", 4096}};
  CHECK(*work_done(*find_counter_measure("tensor_instruction_share"), tensor) == 512.0 * 4096);
  const NcuTable both = parse_ncu_csv(kLog);  // shared: (wavefronts - conflicts) x 128 bytes
  CHECK(*work_done(*find_counter_measure("shared_bank_conflicts"), both.sums) ==
        doctest::Approx(1048576.0 * 128));  // the 1048576 needed wavefronts of value_of's 15.66
  CHECK_FALSE(work_done(*find_counter_measure("global_load_efficiency"), {}));  // not reported

  CounterRun run;
  run.status = CounterRun::Status::measured;
  run.sums = padded;
  run.kernels = 2;
  const auto r = counter_readings(run, {"global_load_efficiency"}, 1 << 20, 0);
  CHECK(*r.at("global_load_efficiency").work_per_needed == doctest::Approx(28.0));
  // A result that declares no bytes for the variant: no guard to weigh the reading by, so it is
  // not judged (a rule on it fails, saying why).
  const CounterReading undeclared = counter_readings(run, {"global_load_efficiency"}, 0, 0).at("global_load_efficiency");
  CHECK_FALSE(undeclared.work_per_needed);
  CHECK(undeclared.status == CounterRun::Status::failed);
  CHECK(undeclared.message == "the result declares no bytes for this variant, so the work behind the reading "
                              "cannot be weighed");
  CHECK(evaluate_rule(counter_rule("global_load_efficiency", 0.8, std::nullopt),
                      with_counters({{"global_load_efficiency", undeclared}})).verdict == Verdict::fail);

  const Rule coalesced = counter_rule("global_load_efficiency", 0.8, std::nullopt);
  RuleOutcome o = evaluate_rule(coalesced, with_counters({{"global_load_efficiency", r.at("global_load_efficiency")}}));
  CHECK(o.verdict == Verdict::fail);
  CHECK(o.message == "global_load_efficiency of \"exercise\" is not judged: its kernels did 28.0x the bytes of "
                     "global loads the problem needs (at most 4.0x counts), and work that feeds nothing moves "
                     "this reading. Drop what your kernels compute or load only to be thrown away.");
  // A design that reads some data twice (each warp re-reads the vector) is judged as usual.
  CHECK(evaluate_rule(coalesced, with_counters({{"global_load_efficiency", measured(1.0, 2.0)}}))
            .verdict == Verdict::pass);
  Rule generous = coalesced;
  generous.max_work = 30;
  CHECK(evaluate_rule(generous, with_counters({{"global_load_efficiency", r.at("global_load_efficiency")}})).verdict ==
        Verdict::pass);
}

TEST_CASE("check.toml: a counter rule must name a known measure") {
  TempDir dir;
  const fs::path file = dir.path() / "90-fake" / "check.toml";
  write_text(file, "lesson = \"90-fake\"\n[[rule]]\nid = \"c\"\nkind = \"counter\"\nvariant = \"exercise\"\n"
                   "counter = \"sectors_per_request\"\nmax = 4\n");
  try {
    load_lesson(file);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(contains(e.what(), "check.toml:2: rule \"c\" is a counter rule and needs \"counter\", one of: "
                             "global_load_efficiency, global_store_efficiency, shared_bank_conflicts, "
                             "tensor_instruction_share"));
  }
  write_text(file, "lesson = \"90-fake\"\n[[rule]]\nid = \"c\"\nkind = \"counter\"\nvariant = \"exercise\"\n"
                   "counter = \"global_load_efficiency\"\nmin = 0.8\npoints = 1\n");
  const LessonConfig l = load_lesson(file);
  CHECK(l.rules[0].counter == "global_load_efficiency");
  CHECK_FALSE(l.rules[0].max_work);
  write_text(file, "lesson = \"90-fake\"\n[[rule]]\nid = \"c\"\nkind = \"counter\"\nvariant = \"exercise\"\n"
                   "counter = \"global_load_efficiency\"\nmin = 0.8\nmax_work = 6\npoints = 1\n");
  CHECK(load_lesson(file).rules[0].max_work == 6.0);
  write_text(file, "lesson = \"90-fake\"\n[[rule]]\nid = \"c\"\nkind = \"correct\"\nvariant = \"exercise\"\n"
                   "max_work = 6\npoints = 1\n");
  try {
    load_lesson(file);
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(contains(e.what(), "rule \"c\" has \"max_work\" but is not a counter rule"));
  }
}

TEST_CASE("judging with a stand-in ncu: readings, the permission fallback, and --no-counters") {
  TempDir dir;
  std::vector<Rule> rules = standard_rules();
  rules.push_back(counter_rule("global_load_efficiency", 0.8, std::nullopt));
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.quick = true;

  opt.ncu_cmd = {fake_ncu(dir.path(), kLog).string()};  // 2/9 of each sector used
  LessonOutcome low = judge_program(fake_lesson({"--mode", "result"}, rules), kFake, opt);
  REQUIRE(low.rules.size() == 4);
  CHECK(low.rules[3].verdict == Verdict::fail);
  CHECK(low.score == 10);
  CHECK(low.max_score == 12);
  CHECK(low.verdict == Verdict::fail);

  TempDir denied_dir;
  opt.ncu_cmd = {fake_ncu(denied_dir.path(), "==ERROR== ERR_NVGPUCTRPERM - no permission\n", 1).string()};
  LessonOutcome denied = judge_program(fake_lesson({"--mode", "result"}, rules), kFake, opt);
  CHECK(denied.rules[3].verdict == Verdict::skipped);
  CHECK(denied.score == 10);
  CHECK(denied.max_score == 10);  // graded on the other rules
  CHECK(denied.verdict == Verdict::pass);

  opt.ncu_cmd = {"no-such-ncu-here"};
  LessonOutcome missing = judge_program(fake_lesson({"--mode", "result"}, rules), kFake, opt);
  CHECK(missing.rules[3].verdict == Verdict::skipped);
  CHECK(contains(missing.rules[3].message, "not on PATH"));

  opt.counters = false;
  LessonOutcome off = judge_program(fake_lesson({"--mode", "result"}, rules), kFake, opt);
  CHECK(off.rules[3].verdict == Verdict::skipped);
  CHECK(contains(off.rules[3].message, "--no-counters"));
}

TEST_CASE("the call ncu reads is checked like a timed call: in its run, and again out of process") {
  TempDir dir;
  std::vector<Rule> rules = standard_rules();
  rules.push_back(counter_rule("global_load_efficiency", 0.2, std::nullopt));  // 2/9 passes
  JudgeOptions opt;
  opt.inspect = false;  // a stand-in program: no object files to inspect
  opt.ncu_cmd = {fake_ncu(dir.path(), kLog).string()};
  auto counter = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--mode", "result"});
    return judge_program(fake_lesson(args, rules), kFake, opt).rules[3];
  };
  CHECK(counter({}).verdict == Verdict::pass);

  // Right in every timed run, wrong in the call ncu read: its counters do not count.
  const RuleOutcome wrong = counter({"--when-profiled", "wrong"});
  CHECK(wrong.verdict == Verdict::fail);
  CHECK(contains(wrong.message, "the call ncu read gave wrong results (the program under ncu said so)"));

  // Its own process says right, its record of that call does not: the course's program decides.
  opt.pristine = kFake;
  CHECK(counter({}).verdict == Verdict::pass);
  const RuleOutcome forged = counter({"--when-profiled", "forged"});
  CHECK(forged.verdict == Verdict::fail);
  CHECK(contains(forged.message, "the call ncu read gave wrong results (checked by the course's "
                                 "program from its record: 1 of 3 elements differ"));

  // The course's program fails to check that call: not the student's doing, and no skip either
  // (a skip would take the rule out of the total): environment, no points.
  const fs::path failing = dir.path() / "pristine-fails-when-profiled";
  write_text(failing, "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --profile ] && exit 3; done\nexec \"" +
                          kFake + "\" \"$@\"\n");
  fs::permissions(failing, fs::perms::owner_all);
  opt.pristine = failing;
  const RuleOutcome unchecked = counter({});
  CHECK(unchecked.verdict == Verdict::environment);
  CHECK(unchecked.max_points == 2);
  CHECK(unchecked.points == 0);
  CHECK(contains(unchecked.message, "the course's program could not check the call ncu read"));
}

}  // TEST_SUITE
