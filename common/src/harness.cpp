// The lesson harness: options, GPU check, ceilings, the lesson body, the table, the result file.
#include "lab/harness.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <nvtx3/nvtx3.hpp>
#include <random>
#include <sys/prctl.h>
#include <unistd.h>
#include <utility>

#include "lab/check.hpp"
#include "lab/record.hpp"
#include "lab/syscall_filter.hpp"
#include "roof_options.hpp"
#include "write_all.hpp"

namespace lab {
namespace {

// LAB_TIMELINE=1 in the environment: each phase of the run on stderr, in seconds since the
// program was loaded (CUDA's start, the ceilings, each measurement, the lesson's own checks in
// between), to see where a program's time goes; nothing else changes.
const auto loaded_at = std::chrono::steady_clock::now();
bool timeline_on() {
  static const bool on = std::getenv("LAB_TIMELINE") != nullptr;
  return on;
}
void timeline(const std::string& what) {
  if (!timeline_on()) return;
  const std::chrono::duration<double> t = std::chrono::steady_clock::now() - loaded_at;
  std::fprintf(stderr, "[timeline] %8.3f s  %s\n", t.count(), what.c_str());
}

}  // namespace

struct Lesson::State {
  std::string title;
  Result result;
  CLI::App app;
  std::string json_path;
  std::FILE* json_file = nullptr;  // json_path + ".tmp", open from the start (see run)
  int result_fd = -1;              // --result-fd: the result goes there, then it is closed
  bool restrict_syscalls = false;  // --restrict-syscalls
  std::vector<std::string> only;  // --variant
  std::vector<std::string> skipped;  // --skip-variant
  bool list = false;
  bool profile = false;
  bool no_ceilings = false;  // --no-ceilings
  double budget_s = 0;  // --budget-s: the whole run's time limit (0: none)
  std::string mode = to_string(Mode::Cold);  // --mode, read into result.mode
  std::unique_ptr<Stream> stream;
  std::vector<std::string> notes;
  struct Sized {  // an option whose 0 means a default that depends on --quick
    long long* value;
    long long normal, quick;
  };
  std::vector<Sized> sized;
  struct Bounded {  // an option and the values it accepts (Lesson::option's accepted)
    std::string flag;
    long long* value;
    Accepted accepted;
  };
  std::vector<Bounded> bounded;
  // Results judged out of process (lab/record.hpp): the student's program writes the record to
  // --record-fd; the course's program reads it with --replay.
  int record_fd = -1;
  std::string replay_path;
  Record replay;                    // what --replay read
  std::vector<bool> checks_used, calls_used, parameters_used;
  // (variant, case) -> its entries in replay.checks, in order: a wrong exercise that is fast has
  // thousands of checked calls, too many to scan the record for each.
  std::map<std::pair<std::string, std::string>, std::vector<std::size_t>> recorded_checks;
  std::map<std::pair<std::string, std::string>, int> compared;  // (variant, case): times so far
  std::map<std::string, int> measured;                            // exercise: measure() so far
  bool checking_timed_call = false;  // a timed call's check is running: record a smaller sample
  std::size_t timed_values_recorded = 0;  // ... and how many such values the record holds

  VariantResult& variant(const std::string& name) {
    for (VariantResult& v : result.variants)
      if (v.name == name) return v;
    throw std::logic_error("variant '" + name + "' was not declared (lab::Lesson::declare)");
  }
  bool replaying() const { return !replay_path.empty(); }
  bool recording() const { return record_fd >= 0; }
  // Each entry goes out whole as soon as it is made, before any more exercise code runs.
  void write_record(const std::string& text) {
    if (!write_all(record_fd, text))
      throw std::runtime_error(std::string("cannot write the record: ") + std::strerror(errno));
  }
  void missing(const std::string& what) {
    if (result.replay->missing.size() < 20) result.replay->missing.push_back(what);
  }
};

namespace {

// A draw no state in this process predicts: what the harness picks after a call (which call is
// verified, which elements are looked at) must not be readable in memory before the call.
std::uint64_t fresh_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

double fresh_log_uniform(double low, double high) {
  const double u = static_cast<double>(fresh_seed() >> 11) * 0x1p-53;  // uniform in [0, 1)
  return low * std::pow(high / low, u);
}

void close_process_memory() { ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }  // cannot fail with 0

Lesson::Lesson(std::string id, std::string title) : state_(std::make_unique<State>()) {
  close_process_memory();
  State& s = *state_;
  s.title = std::move(title);
  s.result.lesson = std::move(id);
  s.result.seed = std::random_device{}();
  s.app.description(s.result.lesson + ": " + s.title +
                    "\nValidates every variant on fresh random inputs, measures it, prints a table.");
  s.app.add_option("--json", s.json_path, "Write the result file (JSON) to this path");
  s.app.add_option("--seed", s.result.seed, "Seed of the random inputs (default: a fresh one)");
  s.app.add_option("--nonce", s.result.nonce, "Text copied into the result file (the checker's)");
  s.app.add_flag("--quick", s.result.quick, "Small sizes and short timing (tests, quick looks)");
  s.app.add_flag("--profile", s.profile,
                 "For nsys/ncu: each selected variant makes a few calls as if timed, and one of "
                 "them, picked at random, runs inside cudaProfilerStart/Stop; no timing, no table "
                 "(--json writes the checks)");
  s.app.add_option("--variant", s.only,
                   "Run only these variants (repeatable, or comma-separated; see --list)")
      ->delimiter(',');
  s.app.add_option("--skip-variant", s.skipped,
                   "Leave these variants out (repeatable, or comma-separated): lab-check grade "
                   "times the speedup rules' baselines in a run of the course's own program "
                   "instead, and a lesson's check.toml args may leave out what no rule reads")
      ->delimiter(',');
  std::vector<std::string> modes;
  for (Mode m : kModes) modes.push_back(to_string(m));
  s.app.add_option("--mode", s.mode, "Measurement mode: cold (default; L2 flushed), hot "
                                     "(back-to-back, L2 warm) or graph (replayed CUDA graph)")
      ->check(CLI::IsMember(modes));
  s.app.add_flag("--list", s.list, "List the variants and exit");
  s.app.add_option("--result-fd", s.result_fd,
                   "Write the result file (JSON) to this open file descriptor and close it, with "
                   "the record's, before the program can run anything else (the checker passes "
                   "it: code that runs at exit finds nothing of the run to change)");
  s.app.add_option("--record-fd", s.record_fd,
                   "Write the exercise's record (values sampled for an out-of-process check) to "
                   "this open file descriptor (the checker passes it)");
  s.app.add_option("--replay", s.replay_path,
                   "Check the exercise's results from the values in this record, not from its own "
                   "calls (the course's program, run by the checker); selects every exercise (or "
                   "those --variant names) and, of the rest, only what --variant names");
  s.app.add_option("--budget-s", s.budget_s,
                   "Seconds the whole run may take (the checker passes it): measurements share "
                   "80% of it and stop, marked not converged, when their share is spent")
      ->check(CLI::PositiveNumber);
  s.app.add_flag("--no-ceilings", s.no_ceilings,
                 "Measure no roofs (copy, host link, FP32, tensor): the checker's runs of the "
                 "course's own program, which time baselines or check a record, need none");
  s.app.add_flag("--restrict-syscalls", s.restrict_syscalls,
                 "From the first exercise call on, allow no new files, threads, processes or "
                 "executable memory (lab/syscall_filter.hpp; the checker passes it)");
#ifdef LAB_DEVICE_DEBUG_BUILD
  s.result.debug_build = true;
#endif
}

Lesson::~Lesson() = default;

void Lesson::declare(const std::string& name, Role role, const std::string& description) {
  VariantResult v;
  v.name = name;
  v.role = role;
  v.description = description;
  state_->result.variants.push_back(v);
}

namespace {
std::string size_text(long long n) {  // 2^28 reads better than 268435456
  const bool power = n >= (1LL << 20) && (n & (n - 1)) == 0;
  return power ? "2^" + std::to_string(__builtin_ctzll(n)) : std::to_string(n);
}
}  // namespace

void Lesson::option(const std::string& flag, long long* value, const std::string& help,
                    Accepted accepted) {
  state_->app.add_option(flag, *value, help)->capture_default_str();
  state_->bounded.push_back({flag, value, accepted});
}

void Lesson::option(const std::string& flag, long long* value, const std::string& what,
                    long long normal, long long quick, Accepted accepted) {
  state_->app.add_option(flag, *value,
                         what + " (0: " + size_text(normal) + ", or " + size_text(quick) +
                             " with --quick)")
      ->capture_default_str();
  state_->sized.push_back({value, normal, quick});
  state_->bounded.push_back({flag, value, accepted});
}

bool Lesson::quick() const { return state_->result.quick; }
std::uint64_t Lesson::seed() const { return state_->result.seed; }
cudaStream_t Lesson::stream() const { return state_->stream->get(); }
const Ceilings& Lesson::ceilings() const {
  static const Ceilings none;  // --no-ceilings: every roof 0, so that no note divides by one
  if (state_->result.ceilings) return *state_->result.ceilings;
  return state_->no_ceilings ? none : lab::ceilings();
}
bool Lesson::profiling() const { return state_->profile; }
const Result& Lesson::result() const { return state_->result; }
void Lesson::size(const std::string& text) { state_->result.sizes.push_back(text); }
void Lesson::note(const std::string& text) { state_->notes.push_back(text); }

bool Lesson::selected(const std::string& variant) const {
  state_->variant(variant);  // a misspelt name is an error, not "not selected"
  const auto& only = state_->only;
  const auto& skipped = state_->skipped;
  if (std::find(skipped.begin(), skipped.end(), variant) != skipped.end()) return false;
  const bool named = std::find(only.begin(), only.end(), variant) != only.end();
  // A --replay run checks every exercise, unless --variant names some (the checker's replay of
  // a profiled call), and of the rest only what --variant names.
  if (state_->replaying() && state_->variant(variant).role == Role::Exercise) {
    const bool some_exercise_named = std::any_of(only.begin(), only.end(), [this](const std::string& n) {
      return state_->variant(n).role == Role::Exercise;
    });
    return named || !some_exercise_named;
  }
  return named || (only.empty() && !state_->replaying());
}

template <class T>
Comparison Lesson::compare_values(const std::string& variant, const std::string& case_name,
                                  const T* got, const T* expected, std::size_t n, Tolerance tol) {
  State& s = *state_;
  if (s.variant(variant).role != Role::Exercise || (!s.recording() && !s.replaying()))
    return allclose(got, expected, n, tol);
  const int occurrence = s.compared[{variant, case_name}]++;
  if (s.recording()) {
    const Comparison c = allclose(got, expected, n, tol);
    const std::size_t most = !s.checking_timed_call ? kRecordSample
                             : s.timed_values_recorded < kRecordTimedValues ? kRecordTimedSample
                                                                            : kRecordTimedSampleLate;
    RecordedCheck r{variant, case_name, n, sample_indices(n, fresh_seed(), most), {}};
    if (s.checking_timed_call) s.timed_values_recorded += r.index.size();
    for (std::size_t i : r.index) r.got.push_back(static_cast<double>(got[i]));
    s.write_record(record_text(r));
    return c;
  }
  // Replay: the recorded values against this process's reference, at the recorded elements.
  const auto entries = s.recorded_checks.find({variant, case_name});
  if (entries != s.recorded_checks.end() &&
      static_cast<std::size_t>(occurrence) < entries->second.size()) {
    const std::size_t e = entries->second[occurrence];
    const RecordedCheck& r = s.replay.checks[e];
    s.checks_used[e] = true;
    std::vector<double> want;
    for (std::size_t i : r.index) want.push_back(i < n ? static_cast<double>(expected[i]) : NAN);
    Comparison c = allclose(r.got.data(), want.data(), want.size(), tol);
    for (Mismatch& m : c.first) m.index = r.index[m.index];
    if (r.count != n) {
      c.ok = false;
      c.note = "the student's program compared " + std::to_string(r.count) +
               " values here, the course's program " + std::to_string(n);
    }
    c.replayed = true;
    return c;
  }
  s.missing(variant + ": " + case_name);
  Comparison c;
  c.ok = false;
  c.note = "the student's program recorded no values for this check";
  c.replayed = true;
  return c;
}

Comparison Lesson::compare(const std::string& variant, const std::string& case_name,
                           const float* got, const float* expected, std::size_t n, Tolerance tol) {
  return compare_values(variant, case_name, got, expected, n, tol);
}

Comparison Lesson::compare(const std::string& variant, const std::string& case_name,
                           const double* got, const double* expected, std::size_t n, Tolerance tol) {
  return compare_values(variant, case_name, got, expected, n, tol);
}

std::uint64_t Lesson::run_parameter(const std::string& name, std::uint64_t value) {
  State& s = *state_;
  if (s.recording()) s.write_record(record_text(RecordedParameter{name, value}));
  if (!s.replaying()) return value;
  for (std::size_t e = 0; e < s.replay.parameters.size(); ++e)
    if (s.replay.parameters[e].name == name) {
      s.parameters_used[e] = true;
      return s.replay.parameters[e].value;
    }
  s.missing("the harness's " + name);
  return value;
}

void Lesson::check(const std::string& variant, const std::string& case_name,
                   const Comparison& c) {
  // A --replay run keeps only the comparisons of the recorded values: its own exercise (the
  // starter) is not what is judged.
  if (state_->replaying() && state_->variant(variant).role == Role::Exercise && !c.replayed) return;
  state_->variant(variant).checks.push_back(
      {case_name, c.ok, c.max_abs_error, c.max_rel_error, c.rel_l2_error, c.mismatches,
       c.ok ? "" : c.summary()});
}

void Lesson::check(const std::string& variant, const std::string& case_name, bool ok,
                   const std::string& message) {
  if (state_->replaying() && state_->variant(variant).role == Role::Exercise) return;
  CheckResult c;
  c.name = case_name;
  c.ok = ok;
  c.mismatches = ok ? 0 : 1;
  c.message = ok ? "" : message;
  state_->variant(variant).checks.push_back(c);
}

const Measurement* Lesson::measure(const std::string& variant, Work work,
                                   const std::function<void(cudaStream_t)>& launch,
                                   BenchmarkOptions options, const TimedCallChecks& checks) {
  VariantResult& v = state_->variant(variant);
  if (!selected(variant)) return nullptr;
  v.bytes = work.bytes;
  v.flops = work.flops;
  v.host_link = work.host_link;
  if (state_->replaying() && v.role == Role::Exercise) {
    replay_timed_calls(variant, checks);
    return nullptr;
  }
  // --profile: the profiler sees one timed call, made like any other (same size, new inputs, L2
  // flushed, lead-in) and checked, so that an exercise cannot tell it from the graded ones.
  const bool profile = state_->profile;
  if (profile) {
    options.mode = Mode::Cold;  // one call per sample
    options.profiled_sample = static_cast<int>(fresh_seed() % 8);
  } else if (state_->result.mode != Mode::Cold) {
    options.mode = state_->result.mode;
  }
  if (quick()) {  // tests: a rough number is enough
    options.timeout_s = std::min(options.timeout_s, 1.0);
    options.stop.min_samples = std::min<std::size_t>(options.stop.min_samples, 10);
    options.stop.min_total_ms = std::min(options.stop.min_total_ms, 5.0);
    options.stop.target_precision = std::max(options.stop.target_precision, 0.02);
  }
  if (options.working_set_bytes == 0) options.working_set_bytes = work.bytes;
  options.variant_index = static_cast<int>(&v - state_->result.variants.data());  // the tracer's tag
  // --budget-s: an equal share of what is left for this variant and each one not measured yet.
  double share_s = 0;
  if (state_->budget_s > 0) {
    std::size_t waiting = 1;
    for (const VariantResult& o : state_->result.variants)
      if (&o != &v && !o.measurement && selected(o.name)) ++waiting;
    share_s = time_budget_left_s() / static_cast<double>(waiting);
    if (share_s >= options.timeout_s) share_s = 0;  // the budget does not bind
    else options.timeout_s = share_s;
  }
  // Other variants are timed on an idle GPU: whatever an earlier call left running (a kernel on
  // a stream of its own) finishes first, so it cannot slow them.
  LAB_CHECK(cudaDeviceSynchronize());
  // Timed calls of the exercise: new inputs before each, and a check of every one of them once
  // it has finished, on elements picked by draws no state in this process predicts (fresh_seed):
  // a call skipped, or answered from an earlier one, fails the check of that very call. Under
  // the checker every prepared call goes into the record (a lesson's prepare() may build on the
  // one before), then each verified one with its picks' seed, so that a --replay run checks the
  // same calls on the same elements.
  // Checks stop at a call that fails (the variant is wrong then: more failures would only swell
  // the result and the record, and a fast wrong exercise makes thousands of calls), and there
  // are at most kMaxCheckedCalls of them, which keeps the record of a right one bounded too.
  const int ordinal = v.role == Role::Exercise ? state_->measured[variant]++ : 0;
  const bool record = state_->recording() && v.role == Role::Exercise;
  std::uint64_t call_seed = 0;
  int warm_ups = 0;
  bool failed = false;
  if (checks.verify) options.max_samples = std::min(options.max_samples, kMaxCheckedCalls);
  auto verify = [&](cudaStream_t s, const std::string& case_name) {
    if (failed) return;
    const std::uint64_t pick_seed = fresh_seed();
    if (record)
      state_->write_record(record_text(RecordedCall{variant, ordinal, case_name, call_seed, pick_seed}));
    const std::size_t before = v.checks.size();
    state_->checking_timed_call = true;
    checks.verify(s, case_name, pick_seed);
    state_->checking_timed_call = false;
    failed = std::any_of(v.checks.begin() + static_cast<std::ptrdiff_t>(before), v.checks.end(),
                         [](const CheckResult& c) { return !c.ok; });
  };
  if (checks.prepare)
    options.before_sample = [&](cudaStream_t s, int) {
      call_seed = fresh_seed();
      if (record) state_->write_record(record_text(RecordedCall{variant, ordinal, "", call_seed, 0}));
      checks.prepare(s, call_seed);
    };
  if (checks.verify)
    options.after_sample = [&](cudaStream_t s, int sample) {
      const std::string name = sample < 0 ? "(warm-up " + std::to_string(++warm_ups) + ")"
                                          : std::to_string(sample);
      if (profile && sample == options.profiled_sample) return verify(s, "the profiled call " + name);
      verify(s, "timed call " + name);
    };
  nvtx3::scoped_range range{variant};
  if (timeline_on()) timeline("measure " + variant);
  Measurement m = benchmark(launch, stream(), options);
  LAB_CHECK(cudaDeviceSynchronize());
  if (timeline_on())
    timeline("measured " + variant + " (" + std::to_string(m.samples_ms.size()) + " samples)");
  if (profile) return nullptr;  // a profiled run's times are the profiler's, not a measurement
  if (share_s > 0 && m.stop_reason == "timeout") {
    m.stop_reason = "budget";
    m.diagnostics.push_back("its share of the run's time budget (--budget-s " +
                            std::to_string(int(state_->budget_s)) + ") was " +
                            std::to_string(int(share_s * 1e3)) +
                            " ms: this machine is too slow to measure it in the time allowed");
  }
  const double copy = state_->result.ceilings ? state_->result.ceilings->copy_gbs : 0.0;
  const Rates rates = rates_of(work.bytes, work.flops, work.host_link, m.gpu_ms.median, copy, 0);
  if (rates.fraction_of_copy && *rates.fraction_of_copy > 1.05)
    m.diagnostics.push_back("faster than the copy ceiling (" + std::to_string(int(rates.gbs)) +
                            " GB/s > " + std::to_string(int(copy)) +
                            "): are the bytes counted right, or does the data stay in L2?");
  v.measurement = m;
  return &*v.measurement;
}

void Lesson::replay_timed_calls(const std::string& variant, const TimedCallChecks& checks) {
  State& s = *state_;
  const int ordinal = s.measured[variant]++;
  // The calls in the order they were made: a prepared call (no case), or a verified one.
  bool any = false;
  for (std::size_t e = 0; e < s.replay.calls.size(); ++e) {
    const RecordedCall& c = s.replay.calls[e];
    if (c.variant != variant || c.measure != ordinal) continue;
    s.calls_used[e] = true;
    if (c.case_name.empty()) {
      if (checks.prepare) checks.prepare(stream(), c.call_seed);
    } else if (checks.verify) {
      any = true;
      LAB_CHECK(cudaStreamSynchronize(stream()));
      checks.verify(stream(), c.case_name, c.pick_seed);
    }
  }
  // The student's program verifies at least one call of every measurement.
  if (!any && checks.verify) {
    s.missing(variant + ": its verified timed calls (measurement " + std::to_string(ordinal + 1) + ")");
    Comparison none;
    none.ok = false;
    none.note = "the student's program recorded none of them";
    none.replayed = true;
    check(variant, "its timed calls", none);
  }
}

void Lesson::measure_tensor_roof(TensorInput input, const std::function<void(cudaStream_t)>& gemm,
                                 double flops) {
  if (state_->profile || !state_->result.ceilings) return;
  // Back to back, like the FP32 roof (lab::ceilings).
  const Measurement m = benchmark(gemm, stream(), roof_options(Mode::Hot, 0.5));
  Ceilings& c = *state_->result.ceilings;
  (input == TensorInput::bf16 ? c.bf16_tensor_gflops : c.tf32_tensor_gflops) =
      flops / (m.gpu_ms.median * 1e6);
}

void Lesson::metric(const std::string& name, double value, double low, double high,
                    const std::string& unit) {
  state_->result.metrics[name] = Metric{value, low, high, unit};
}

void Lesson::read_replay() {
  State& s = *state_;
  s.result.replay = ReplaySummary{};
  try {
    std::ifstream in(s.replay_path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + s.replay_path);
    s.replay = parse_record(std::string(std::istreambuf_iterator<char>(in), {}));
  } catch (const std::exception& e) {
    s.result.replay->error = e.what();  // every check then finds no values: all missing
  }
  s.checks_used.assign(s.replay.checks.size(), false);
  for (std::size_t e = 0; e < s.replay.checks.size(); ++e)
    s.recorded_checks[{s.replay.checks[e].variant, s.replay.checks[e].case_name}].push_back(e);
  s.calls_used.assign(s.replay.calls.size(), false);
  s.parameters_used.assign(s.replay.parameters.size(), false);
}

void Lesson::summarize_replay() {
  State& s = *state_;
  ReplaySummary& r = *s.result.replay;
  // Every entry of the record the replay used, and the first few it did not.
  auto count = [&r](const auto& entries, const std::vector<bool>& used, auto describe) {
    r.entries += entries.size();
    for (std::size_t e = 0; e < entries.size(); ++e) {
      if (used[e]) ++r.used;
      else if (r.unused.size() < 5) r.unused.push_back(describe(entries[e]));
    }
  };
  count(s.replay.parameters, s.parameters_used,
        [](const RecordedParameter& p) { return "the harness's " + p.name; });
  count(s.replay.checks, s.checks_used,
        [](const RecordedCheck& c) { return c.variant + ": " + c.case_name; });
  count(s.replay.calls, s.calls_used,
        [](const RecordedCall& c) { return c.variant + ": " + c.case_name; });
}

namespace {

std::string program_kind(const char* argv0) {
  std::string name = argv0 ? argv0 : "";
  const auto slash = name.find_last_of('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string time_text(double ms) {
  if (ms >= 1.0) return fixed(ms, 3) + " ms";
  return fixed(ms * 1e3, 2) + " us";
}

// Run-wide trust: anything that makes the timings unfit for grading.
void assess_environment(Result& r) {
  if (r.debug_build) r.diagnostics.push_back("built with device debug info (-G): timings mean nothing");
  const int others = other_gpu_processes();
  if (others > 0)
    r.diagnostics.push_back(std::to_string(others) + " other process(es) are using this GPU");
  if (r.ceilings && r.device &&
      r.ceilings->copy_gbs < 0.7 * r.device->peak_bandwidth_gbs())
    r.diagnostics.push_back("the copy ceiling is below 70% of the theoretical bandwidth: the GPU "
                            "is shared, throttled or misconfigured");
  bool ok = r.diagnostics.empty();
  for (const VariantResult& v : r.variants) {
    if (!v.measurement) continue;
    const Measurement& m = *v.measurement;
    if (!m.converged || static_cast<std::size_t>(m.discarded_throttled) > m.gpu_ms.n / 10 ||
        (m.sm_clock_mhz > 0 && r.device && m.sm_clock_mhz < 0.9 * r.device->sm_clock_mhz))
      ok = false;
  }
  r.environment_ok = ok;
}

void print_table(const Result& r, const std::string& title, const std::vector<std::string>& notes) {
  std::printf("\n%s  %s\n", r.lesson.c_str(), title.c_str());
  if (r.device && r.ceilings)
    std::printf("%s | copy ceiling %.0f GB/s (%.0f%% of %.0f theoretical) | FP32 FMA %.1f "
                "TFLOP/s | launch %.2f us | seed %llu | %s%s\n",
                r.device->name.c_str(), r.ceilings->copy_gbs,
                100 * r.ceilings->copy_gbs / r.device->peak_bandwidth_gbs(),
                r.device->peak_bandwidth_gbs(), r.ceilings->fp32_gflops * 1e-3, r.ceilings->launch_us,
                static_cast<unsigned long long>(r.seed), r.build.c_str(), r.quick ? " (quick)" : "");
  if (r.ceilings && r.ceilings->bf16_tensor_gflops > 0)
    std::printf("tensor roof (BF16 in, FP32 accumulate) %.1f TFLOP/s\n",
                r.ceilings->bf16_tensor_gflops * 1e-3);
  if (r.ceilings && r.ceilings->tf32_tensor_gflops > 0)
    std::printf("tensor roof (TF32 from FP32 inputs) %.1f TFLOP/s\n",
                r.ceilings->tf32_tensor_gflops * 1e-3);
  for (const std::string& s : r.sizes) std::printf("size: %s\n", s.c_str());
  std::printf("\n%-22s %-9s %-7s %12s %8s %9s %7s %9s %8s\n", "variant", "role", "correct",
              "median", "spread", "GB/s", "%copy", "GFLOP/s", "speedup");
  const VariantResult* base = nullptr;
  for (const VariantResult& v : r.variants)
    if (v.role == Role::Baseline && v.measurement && !base) base = &v;
  for (const VariantResult& v : r.variants) {
    std::string median = "-", spread = "-", gbs = "-", pct = "-", gflops = "-", speed = "-";
    if (v.measurement) {
      const Stats& t = v.measurement->gpu_ms;
      const Rates rates = r.rates(v);
      median = time_text(t.median);
      spread = "+-" + fixed(50 * t.relative_iqr(), 1) + "%";  // half the IQR, relative
      if (v.bytes > 0) gbs = fixed(rates.gbs, 0);
      if (v.bytes > 0 && rates.fraction_of_copy) pct = fixed(100 * *rates.fraction_of_copy, 0) + "%";
      if (v.flops > 0) gflops = fixed(rates.gflops, 0);
      if (base) speed = fixed(base->measurement->gpu_ms.median / t.median, 2) + "x";
      if (v.measurement->mode != Mode::Cold) median += std::string(" ") + to_string(v.measurement->mode);
    }
    std::printf("%-22s %-9s %-7s %12s %8s %9s %7s %9s %8s\n", v.name.c_str(), to_string(v.role),
                v.checks.empty() ? "-" : (v.correct() ? "yes" : "NO"), median.c_str(),
                spread.c_str(), gbs.c_str(), pct.c_str(), gflops.c_str(), speed.c_str());
  }
  std::printf("\n");
  for (const VariantResult& v : r.variants) {
    std::printf("  %-20s %s\n", v.name.c_str(), v.description.c_str());
    // Every picked timed call is checked: a wrong exercise can fail dozens. The first few say it.
    std::size_t wrong = 0;
    for (const CheckResult& c : v.checks)
      if (!c.ok && ++wrong <= 5) std::printf("    wrong on %s: %s\n", c.name.c_str(), c.message.c_str());
    if (wrong > 5) std::printf("    ... and %zu more wrong checks (all in the result file)\n", wrong - 5);
    if (v.measurement)
      for (const std::string& d : v.measurement->diagnostics)
        std::printf("    note: %s\n", d.c_str());
  }
  for (const auto& [name, m] : r.metrics)
    std::printf("metric %s = %.3f%s (range %.3f to %.3f)\n", name.c_str(), m.value,
                m.unit.c_str(), m.low, m.high);
  for (const std::string& n : notes) std::printf("%s\n", n.c_str());
  for (const std::string& d : r.diagnostics) std::printf("warning: %s\n", d.c_str());
  if (!r.environment_ok)
    std::printf("warning: these timings are not trustworthy (see the notes above)\n");
  std::printf("times: median per launch, spread = half the interquartile range; %s mode%s\n",
              to_string(r.mode), r.mode == Mode::Cold ? " (L2 flushed before each sample)" : "");
}

}  // namespace

int Lesson::run(int argc, char** argv, const std::function<void(Lesson&)>& body) {
  State& s = *state_;
  Result& r = s.result;
  r.build = program_kind(argc > 0 ? argv[0] : nullptr);
  try {
    s.app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = s.app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  r.mode = *mode_named(s.mode);  // --mode accepts only the modes' names
  for (const State::Sized& o : s.sized)
    if (*o.value <= 0) *o.value = r.quick ? o.quick : o.normal;
  for (const State::Bounded& o : s.bounded) {
    const Accepted& a = o.accepted;
    if (*o.value >= a.least && *o.value <= a.most) continue;
    const bool floor = a.least != std::numeric_limits<long long>::min();
    const bool ceiling = a.most != std::numeric_limits<long long>::max();
    std::cerr << "error: " << o.flag << ": "
              << (floor && ceiling ? "from " + size_text(a.least) + " to " + size_text(a.most)
                  : floor          ? "at least " + size_text(a.least)
                                   : "at most " + size_text(a.most))
              << "\n";
    return kExitUsage;
  }
  // Measurements may use 80% of the budget; the rest is for the context, the ceilings, the
  // validations and the result file.
  if (s.budget_s > 0) set_time_budget(0.8 * s.budget_s);
  for (const auto* names : {&s.only, &s.skipped})
    for (const std::string& name : *names)
      if (!r.find(name)) {
        std::cerr << "error: no variant named '" << name << "' (see --list)\n";
        return kExitUsage;
      }
  if (s.list) {
    for (const VariantResult& v : r.variants)
      std::printf("%-22s %-9s %s\n", v.name.c_str(), to_string(v.role), v.description.c_str());
    return kExitOk;
  }

  for (const auto& [flag, fd] : {std::pair{"--record-fd", s.record_fd}, std::pair{"--result-fd", s.result_fd}})
    if (fd >= 0 && ::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {  // not for children
      std::cerr << r.lesson << ": " << flag << " " << fd << " is not an open file\n";
      return kExitUsage;
    }
  // The result file is opened now, as PATH.tmp, and renamed into place when written: a folder
  // it cannot be written to fails here, not after the whole measurement, and with the system
  // calls restricted no file could be opened at the end.
  if (!s.json_path.empty()) {
    std::error_code ec;
    const bool folder = std::filesystem::is_directory(s.json_path, ec);
    s.json_file = folder ? nullptr : open_for_atomic_write(s.json_path);
    if (!s.json_file) {
      const int error = errno;
      const std::string why = folder ? "it is a folder"
                              : error == ENOENT ? "its folder does not exist" : std::strerror(error);
      std::cerr << r.lesson << ": cannot write the result file " << s.json_path << ": " << why << "\n";
      return kExitUsage;
    }
  }
  // The run's files leave the process's reach here: the descriptors the checker handed are
  // closed, and their files lie where this process cannot open them (docs/grading-security.md).
  auto write = [&] {
    const std::string text = to_json_text(r);
    if (s.result_fd >= 0) {
      // Whatever exercise code wrote through this descriptor while it ran (it can find an
      // open one) is gone.
      const int fd = std::exchange(s.result_fd, -1);
      const bool whole = write_whole_file(fd, text);
      const int error = errno;
      ::close(fd);
      if (!whole) throw std::runtime_error(std::string("cannot write the result: ") + std::strerror(error));
    }
    if (s.record_fd >= 0) ::close(std::exchange(s.record_fd, -1));
    if (s.json_file) commit_atomic_write(std::exchange(s.json_file, nullptr), s.json_path, text);
  };
  const std::string no_gpu = gpu_unavailable_reason();
  if (!no_gpu.empty()) {
    std::cerr << r.lesson << ": " << no_gpu << "\n";
    r.diagnostics.push_back(no_gpu);
    r.environment_ok = false;
    write();
    return kExitNoGpu;
  }
  if (s.replaying()) read_replay();

  int code = kExitOk;
  try {
    timeline("run");
    r.device = device_info();
    s.stream = std::make_unique<Stream>();
    timeline("CUDA started");
    if (!s.profile && !s.no_ceilings) {
      r.ceilings = lab::ceilings();
      timeline("ceilings measured");
    }
    if (s.restrict_syscalls) {
      other_gpu_processes();  // loads and opens NVML now, for the question asked at the end
      std::string why;
      if (!restrict_system_calls(why))
        throw std::runtime_error("the system calls could not be restricted (--restrict-syscalls): " + why);
    }
    body(*this);
    timeline("lesson done");
    r.complete = true;
  } catch (const std::exception& e) {
    // A CUDA error inside a kernel (illegal address...) poisons the context: stop here, keep
    // what was measured, and say what happened.
    std::cerr << r.lesson << ": stopped by an error: " << e.what() << "\n";
    r.diagnostics.push_back(std::string("stopped by an error: ") + e.what());
    code = kExitCudaError;
  }
  if (s.replaying()) summarize_replay();
  if (!s.profile) {  // under a profiler the times mean nothing: no table, no verdict on them
    assess_environment(r);
    print_table(r, s.title, s.notes);
  }
  for (const VariantResult& v : r.variants) {
    if (!selected(v.name) || v.correct()) continue;
    if (s.profile) {
      // A profiled run is not a graded run: only the exercise's profiled call is checked, and a
      // profiler takes a non-zero exit for its own failure. Say what was wrong; exit 0.
      const auto bad = std::find_if(v.checks.begin(), v.checks.end(), [](const CheckResult& c) { return !c.ok; });
      if (bad != v.checks.end())
        std::cerr << r.lesson << ": under --profile, \"" << v.name << "\" gave wrong results ("
                  << bad->name << ": " << bad->message << "); its counters describe wrong code\n";
      continue;
    }
    if (code == kExitOk) code = kExitIncorrect;
  }
  try {
    write();
  } catch (const std::exception& e) {
    std::cerr << r.lesson << ": " << e.what() << "\n";
    return kExitCudaError;
  }
  timeline("result written");
  return code;
}

}  // namespace lab
