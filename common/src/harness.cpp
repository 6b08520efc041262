// The lesson harness: options, GPU check, ceilings, the lesson body, the table, the result file.
#include "lab/harness.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nvtx3/nvtx3.hpp>
#include <random>
#include <sys/prctl.h>

#include "lab/check.hpp"

namespace lab {

struct Lesson::State {
  std::string title;
  Result result;
  CLI::App app;
  std::string json_path;
  std::vector<std::string> only;  // --variant
  std::vector<std::string> skipped;  // --skip-variant
  bool list = false;
  bool profile = false;
  double budget_s = 0;  // --budget-s: the whole run's time limit (0: none)
  std::string mode = to_string(Mode::Cold);  // --mode, read into result.mode
  std::unique_ptr<Stream> stream;
  std::vector<std::string> notes;

  VariantResult& variant(const std::string& name) {
    for (VariantResult& v : result.variants)
      if (v.name == name) return v;
    throw std::logic_error("variant '" + name + "' was not declared (lab::Lesson::declare)");
  }
};

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
                 "Run each selected variant once inside cudaProfilerStart/Stop for nsys/ncu, "
                 "no timing");
  s.app.add_option("--variant", s.only, "Run only these variants (repeatable; see --list)");
  s.app.add_option("--skip-variant", s.skipped,
                   "Leave these variants out (repeatable): lab-check grade times the speedup "
                   "rules' baselines in a run of the course's own program instead");
  std::vector<std::string> modes;
  for (Mode m : kModes) modes.push_back(to_string(m));
  s.app.add_option("--mode", s.mode, "Measurement mode: cold (default; L2 flushed), hot "
                                     "(back-to-back, L2 warm) or graph (replayed CUDA graph)")
      ->check(CLI::IsMember(modes));
  s.app.add_flag("--list", s.list, "List the variants and exit");
  s.app.add_option("--budget-s", s.budget_s,
                   "Seconds the whole run may take (the checker passes it): measurements share "
                   "80% of it and stop, marked not converged, when their share is spent")
      ->check(CLI::PositiveNumber);
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

void Lesson::option(const std::string& flag, long long* value, const std::string& help) {
  state_->app.add_option(flag, *value, help)->capture_default_str();
}

bool Lesson::quick() const { return state_->result.quick; }
std::uint64_t Lesson::seed() const { return state_->result.seed; }
cudaStream_t Lesson::stream() const { return state_->stream->get(); }
const Ceilings& Lesson::ceilings() const {
  return state_->result.ceilings ? *state_->result.ceilings : lab::ceilings();
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
  return only.empty() || std::find(only.begin(), only.end(), variant) != only.end();
}

void Lesson::check(const std::string& variant, const std::string& case_name,
                   const Comparison& c) {
  state_->variant(variant).checks.push_back(
      {case_name, c.ok, c.max_abs_error, c.max_rel_error, c.rel_l2_error, c.mismatches,
       c.ok ? "" : c.summary()});
}

void Lesson::check(const std::string& variant, const std::string& case_name, bool ok,
                   const std::string& message) {
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
  if (state_->profile) {
    profile_once(launch, stream(), variant);
    return nullptr;
  }
  if (state_->result.mode != Mode::Cold) options.mode = state_->result.mode;
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
  // Timed calls of the exercise: new inputs before each, and a check of some of them, picked by
  // a generator the exercise cannot see, after the call has finished.
  std::mt19937_64 pick(std::random_device{}());
  int verified = 0;
  if (checks.prepare)
    options.before_sample = [&](cudaStream_t s, int) { checks.prepare(s, pick()); };
  if (checks.verify)
    options.after_sample = [&](cudaStream_t s, int sample) {
      if (pick() % 8 != 0) return;
      ++verified;
      checks.verify(s, "timed call " + (sample < 0 ? std::string("(warm-up)")
                                                     : std::to_string(sample)));
    };
  nvtx3::scoped_range range{variant};
  Measurement m = benchmark(launch, stream(), options);
  if (checks.verify && verified == 0) checks.verify(stream(), "the last timed call");
  LAB_CHECK(cudaDeviceSynchronize());
  if (share_s > 0 && m.stop_reason == "timeout") {
    m.stop_reason = "budget";
    m.diagnostics.push_back("its share of the run's time budget (--budget-s " +
                            std::to_string(int(state_->budget_s)) + ") was " +
                            std::to_string(int(share_s * 1e3)) +
                            " ms: this machine is too slow to measure it in the time allowed");
  }
  const double copy = lab::ceilings().copy_gbs;
  const Rates rates = rates_of(work.bytes, work.flops, work.host_link, m.gpu_ms.median, copy, 0);
  if (rates.fraction_of_copy && *rates.fraction_of_copy > 1.05)
    m.diagnostics.push_back("faster than the copy ceiling (" + std::to_string(int(rates.gbs)) +
                            " GB/s > " + std::to_string(int(copy)) +
                            "): are the bytes counted right, or does the data stay in L2?");
  v.measurement = m;
  return &*v.measurement;
}

void Lesson::measure_tensor_roof(const std::function<void(cudaStream_t)>& gemm, double flops) {
  if (state_->profile || !state_->result.ceilings) return;
  // As the FP32 roof (lab::ceilings): back to back, a short rule; a big product is steady.
  BenchmarkOptions hot;
  hot.mode = Mode::Hot;
  hot.stop.min_samples = 10;
  hot.stop.min_total_ms = 5;
  hot.stop.target_precision = 0.01;
  hot.timeout_s = 0.5;
  hot.warmup_runs = 1;
  hot.warmup_ms = 0;
  const Measurement m = benchmark(gemm, stream(), hot);
  state_->result.ceilings->bf16_tensor_gflops = flops / (m.gpu_ms.median * 1e6);
}

void Lesson::metric(const std::string& name, double value, double low, double high,
                    const std::string& unit) {
  state_->result.metrics[name] = Metric{value, low, high, unit};
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
    for (const CheckResult& c : v.checks)
      if (!c.ok) std::printf("    wrong on %s: %s\n", c.name.c_str(), c.message.c_str());
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

  // A result file that cannot be written would only fail after the whole measurement (or, with
  // no GPU, abort): try its folder now, the way it will be written (PATH.tmp, then a rename).
  if (!s.json_path.empty()) {
    const std::string probe = s.json_path + ".tmp";
    std::FILE* f = std::fopen(probe.c_str(), "wb");
    std::string why = f ? "" : errno == ENOENT ? "its folder does not exist" : std::strerror(errno);
    if (f) {
      std::fclose(f);
      std::remove(probe.c_str());
      std::error_code ec;
      if (std::filesystem::is_directory(s.json_path, ec)) why = "it is a folder";
    }
    if (!why.empty()) {
      std::cerr << r.lesson << ": cannot write the result file " << s.json_path << ": " << why << "\n";
      return kExitUsage;
    }
  }
  auto write = [&] {
    if (!s.json_path.empty()) write_file_atomically(s.json_path, to_json_text(r));
  };
  const std::string no_gpu = gpu_unavailable_reason();
  if (!no_gpu.empty()) {
    std::cerr << r.lesson << ": " << no_gpu << "\n";
    r.diagnostics.push_back(no_gpu);
    r.environment_ok = false;
    write();
    return kExitNoGpu;
  }

  int code = kExitOk;
  try {
    r.device = device_info();
    s.stream = std::make_unique<Stream>();
    if (!s.profile) r.ceilings = lab::ceilings();
    body(*this);
    r.complete = true;
  } catch (const std::exception& e) {
    // A CUDA error inside a kernel (illegal address...) poisons the context: stop here, keep
    // what was measured, and say what happened.
    std::cerr << r.lesson << ": stopped by an error: " << e.what() << "\n";
    r.diagnostics.push_back(std::string("stopped by an error: ") + e.what());
    code = kExitCudaError;
  }
  if (s.profile) return code;
  assess_environment(r);
  print_table(r, s.title, s.notes);
  for (const VariantResult& v : r.variants)
    if (selected(v.name) && !v.correct() && code == kExitOk) code = kExitIncorrect;
  try {
    write();
  } catch (const std::exception& e) {
    std::cerr << r.lesson << ": " << e.what() << "\n";
    return kExitCudaError;
  }
  return code;
}

}  // namespace lab
