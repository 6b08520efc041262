// Lesson 07 harness: streams and overlap. Students read this file; they do not edit it.
//
// One job, three stages: copy n floats to the GPU, run an elementwise kernel on them, copy the
// result back. The kernel's length is calibrated at start-up so that it takes about as long as
// the host-to-device copy on this GPU: the three stages are balanced on any machine, which is the
// case where overlapping them pays the most (and the case the checker's threshold is set for).
//
// Variants:
//   copy_in, compute, copy_out   each stage alone over the whole array (the pipeline's stages)
//   serial                       the three stages one after the other on one stream
//   exercise                     your pipelined() (exercise.cu), chunks on several streams
// The metric overlap_efficiency = (sum of the three stage medians - exercise median) /
// (sum - longest stage median): 0 when nothing overlaps, 1 when everything hides behind the
// longest stage. Its stages are timed again before each of the exercise's timed calls, so that
// they and the pipeline are measured over the same stretch of time.
//
// Validation: at a size that is not a multiple of the chunk count (twice, fresh inputs), then at
// the timing size before and after timing. Every run starts from poisoned (NaN) buffers; the
// input reaches the host buffer through work on the harness's stream right before the call; the
// exercise must match the serial output bit for bit and leave no stream busy once `main` is done.
// The exercise's timed calls get a changed input and a partly poisoned output each, and some of
// them are checked too (TimedPipelines).
#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr std::size_t kOddN = 5'000'011;  // validation size: 5,000,011 = 16 * 312,500 + 11
constexpr double kHoldUs = 2000;          // spin on main before the input arrives (fork check)

// ---------------------------------------------------------------------------------------------
// The kernel: `steps` dependent multiply-adds per element. Elementwise and deterministic, so a
// chunk computes exactly the bits the whole array would; its time grows linearly with `steps`.

__global__ void churn_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n,
                             int steps) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float v = in[i];
    for (int s = 0; s < steps; ++s) v = fmaf(v, 0.999f, 0.001f);
    out[i] = v;
  }
}

float churn_on_host(float v, int steps) {
  for (int s = 0; s < steps; ++s) v = std::fma(v, 0.999f, 0.001f);  // same rounding as fmaf
  return v;
}

void launch_churn(const float* in, float* out, std::size_t count, int steps, cudaStream_t s) {
  if (count == 0) return;
  const int blocks = lab::grid_for(count, 256, 8);  // at most 8 x 256 threads per SM
  churn_kernel<<<blocks, 256, 0, s>>>(in, out, count, steps);
  LAB_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// The job: buffers, the stages, and validated runs.

class Job {
 public:
  Job(std::size_t capacity, int steps)
      : steps_(steps), h_in_(capacity), h_out_(capacity), d_in_(capacity),
        d_out_(capacity), d_src_(capacity) {}

  int steps() const { return steps_; }
  void set_steps(int steps) { steps_ = steps; }

  // The three stages over [0, n). A range past n is refused and remembered (first one only).
  l07::Stages stages(std::size_t n) {
    auto in_range = [this, n](const char* stage, std::size_t offset, std::size_t count) {
      if (offset <= n && count <= n - offset) return true;
      if (violation_.empty())
        violation_ = std::string(stage) + "(offset " + std::to_string(offset) + ", count " +
                     std::to_string(count) + ") reaches past n = " + std::to_string(n) +
                     ": refused, nothing enqueued. Is the last chunk n - offset elements long?";
      return false;
    };
    l07::Stages st;
    st.n = n;
    st.copy_in = [this, in_range](std::size_t offset, std::size_t count, cudaStream_t s) {
      if (!in_range("copy_in", offset, count) || count == 0) return;
      LAB_CHECK(cudaMemcpyAsync(d_in_.data() + offset, h_in_.data() + offset,
                                count * sizeof(float), cudaMemcpyHostToDevice, s));
    };
    st.compute = [this, in_range](std::size_t offset, std::size_t count, cudaStream_t s) {
      if (!in_range("compute", offset, count)) return;
      launch_churn(d_in_.data() + offset, d_out_.data() + offset, count, steps_, s);
    };
    st.copy_out = [this, in_range](std::size_t offset, std::size_t count, cudaStream_t s) {
      if (!in_range("copy_out", offset, count) || count == 0) return;
      LAB_CHECK(cudaMemcpyAsync(h_out_.data() + offset, d_out_.data() + offset,
                                count * sizeof(float), cudaMemcpyDeviceToHost, s));
    };
    return st;
  }

  // The serial schedule: the whole array, three steps, one stream.
  static void serial(const l07::Stages& st, cudaStream_t s) {
    st.copy_in(0, st.n, s);
    st.compute(0, st.n, s);
    st.copy_out(0, st.n, s);
  }

  // Fresh input for a validated run, kept on the device until a run copies it to the host.
  void new_input(std::size_t n, std::uint64_t seed, cudaStream_t s) {
    lab::fill_random(d_src_.data(), n, seed, s);
    LAB_CHECK(cudaStreamSynchronize(s));
  }

  // Everything a validated run of `schedule` shows: its output, whether a chunk stream was still
  // busy when `main` had finished, and the first refused range.
  struct Outcome {
    std::vector<float> output;
    std::string busy;
    std::string violation;
  };

  template <class Schedule>
  Outcome validated_run(std::size_t n, cudaStream_t main, const std::vector<cudaStream_t>& streams,
                        Schedule&& schedule) {
    // Poison both sides, then wait: nothing of this can overlap with the run.
    std::memset(h_in_.data(), 0xff, n * sizeof(float));
    std::memset(h_out_.data(), 0xff, n * sizeof(float));
    lab::poison(d_in_.data(), n * sizeof(float), main);
    lab::poison(d_out_.data(), n * sizeof(float), main);
    LAB_CHECK(cudaStreamSynchronize(main));
    violation_.clear();

    // The input arrives through `main`, late: a schedule that does not wait for main copies NaN.
    lab::spin(kHoldUs, main);
    LAB_CHECK(cudaMemcpyAsync(h_in_.data(), d_src_.data(), n * sizeof(float),
                              cudaMemcpyDeviceToHost, main));
    const l07::Stages st = stages(n);
    schedule(st, main);
    LAB_CHECK(cudaGetLastError());
    LAB_CHECK(cudaStreamSynchronize(main));  // the contract: main finished = output ready

    Outcome out;
    for (std::size_t i = 0; i < streams.size() && out.busy.empty(); ++i) {
      const cudaError_t q = cudaStreamQuery(streams[i]);
      if (q == cudaErrorNotReady)
        out.busy = "stream " + std::to_string(i) + " still had work when main had finished: " +
                   "main must wait for every stream you used (record an event on it, then "
                   "cudaStreamWaitEvent(main, event))";
      else
        LAB_CHECK(q);
    }
    out.output.assign(h_out_.data(), h_out_.data() + n);
    LAB_CHECK(cudaDeviceSynchronize());  // drain whatever else it started
    out.violation = violation_;
    return out;
  }

  // Host reference at a sample of indices (every stride-th and the last 64), from the input the
  // run actually copied.
  lab::Comparison sample_check(const std::vector<float>& got, std::size_t n) const {
    std::vector<float> g, e;
    const std::size_t stride = std::max<std::size_t>(1, n / 4096);
    auto take = [&](std::size_t i) {
      g.push_back(got[i]);
      e.push_back(churn_on_host(h_in_[i], steps_));
    };
    for (std::size_t i = 0; i < n; i += stride) take(i);
    for (std::size_t i = n > 64 ? n - 64 : 0; i < n; ++i) take(i);
    return lab::allclose(g, e, lab::Tolerance{0.0, 0.0});
  }

  float* d_in() const { return d_in_.data(); }
  float* d_out() const { return d_out_.data(); }
  float* h_in() const { return h_in_.data(); }
  float* h_out() const { return h_out_.data(); }

 private:
  int steps_;
  lab::PinnedBuffer<float> h_in_, h_out_;
  lab::DeviceBuffer<float> d_in_, d_out_, d_src_;
  std::string violation_;
};

// One validated case: the serial reference (checked against the host at a sample of indices),
// then the exercise (checked bit for bit against the serial output). Returns the serial output.
std::vector<float> validate_case(lab::Lesson& l, Job& job, std::size_t n, std::uint64_t seed,
                                 int chunks, const std::vector<cudaStream_t>& streams,
                                 const std::string& when) {
  const std::string name = std::to_string(n) + " floats, " + when;
  const cudaStream_t main = l.stream();
  job.new_input(n, seed, main);

  Job::Outcome ref = job.validated_run(n, main, streams, Job::serial);
  if (l.selected("serial")) l.check("serial", name, job.sample_check(ref.output, n));

  if (l.selected("exercise")) {
    try {
      Job::Outcome ex = job.validated_run(
          n, main, streams, [&](const l07::Stages& st, cudaStream_t s) {
            l07::pipelined(st, chunks, streams, s);
          });
      l.check("exercise", name + ", ranges", ex.violation.empty(), ex.violation);
      l.check("exercise", name + ", main waits for every stream", ex.busy.empty(), ex.busy);
      const std::string same = name + ", same bits as serial";
      l.check("exercise", same,
              l.compare("exercise", same, ex.output, ref.output, lab::Tolerance{0.0, 0.0}));
    } catch (const std::exception& e) {
      l.check("exercise", name, false, e.what());
      throw;  // a CUDA error may have broken the context: the harness stops and reports
    }
  }
  return ref.output;
}

// ---------------------------------------------------------------------------------------------
// The exercise's timed calls, checked like validated ones (lab/timed_calls.hpp). Outside the
// timed window, before every timed call, prepare():
//  * writes new values at kChanged random positions of the host input, drawn from the call's
//    seed (which the harness draws from a generator the exercise cannot see), after giving the
//    previous call's positions their old values back: a chunk that skips copy_in, compute or
//    copy_out is wrong there, and nothing but the whole input says where they are;
//  * writes NaN at those positions and at kPoisoned more random positions of the host output;
//  * and, first, times the three stages over the whole array on the harness's stream (the
//    overlap rule's reference, lab::BetweenCalls), which overwrite the output before the NaNs.
// A few hundred host writes per call, where refilling the buffers would cost 2 x 256 MiB of
// memset. After calls the harness picks at random once they have finished, verify() checks that
// every stream is idle (the join) and that call's output, bit for bit, at all those positions
// and at kRandom more picked only then, against the kernel replayed on the host from the input
// regenerated from the seeds (never read back). The kernel's many steps make each element cost
// microseconds on the host: the changed positions (this call's and the last's) always, the rest
// within about 1e6 host multiply-adds: about 450 elements, a few ms, at the calibrated ~2500
// steps.
class TimedPipelines : public lab::TimedCalls {
 public:
  static constexpr std::size_t kChanged = 64, kPoisoned = 256, kRandom = 64;

  // `input_seed`: the seed of the input the last validated run copied to the host input.
  // `stages`: the harness's own stages over the whole array (not the ones the exercise is given).
  TimedPipelines(lab::Lesson& l, Job& job, const l07::Stages& stages, std::uint64_t input_seed)
      : l_(l), job_(job), n_(stages.n), seed_(input_seed),
        stages_({[stages](cudaStream_t s) { stages.copy_in(0, stages.n, s); },
                 [stages](cudaStream_t s) { stages.compute(0, stages.n, s); },
                 [stages](cudaStream_t s) { stages.copy_out(0, stages.n, s); }}) {}

  // Stage i (0 copy_in, 1 compute, 2 copy_out) as timed before each timed call (ms).
  lab::Stats stage(std::size_t i) const { return stages_.part(i); }

 private:
  float base(std::size_t i) const { return lab::random_input(seed_, i); }

  void prepare(cudaStream_t s, std::uint64_t call_seed) override {
    LAB_CHECK(cudaDeviceSynchronize());  // nothing of the last call may still touch the buffers
    stages_.time(s);
    std::mt19937_64 rng(call_seed);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    float* in = job_.h_in();
    float* out = job_.h_out();
    for (const std::size_t i : changed_) in[i] = base(i);
    previous_ = changed_;
    changed_.clear();
    values_.clear();
    for (std::size_t k = 0; k < kChanged; ++k) changed_.push_back(rng() % n_);
    std::sort(changed_.begin(), changed_.end());
    changed_.erase(std::unique(changed_.begin(), changed_.end()), changed_.end());
    for (const std::size_t i : changed_) {
      values_.push_back(value(rng));
      in[i] = values_.back();
    }
    poisoned_ = changed_;
    for (std::size_t k = 0; k < kPoisoned; ++k) poisoned_.push_back(rng() % n_);
    for (const std::size_t i : poisoned_) out[i] = std::numeric_limits<float>::quiet_NaN();
  }

  // The input prepare() left at i.
  float input_at(std::size_t i) const {
    const auto it = std::lower_bound(changed_.begin(), changed_.end(), i);
    return it != changed_.end() && *it == i ? values_[it - changed_.begin()] : base(i);
  }

  void verify(cudaStream_t, const std::string& case_name) override {
    // No "main waits for every stream" check here: in a timed call lab::benchmark itself makes
    // the stop event wait for every stream (lab::SideStream); validated_run checks the join.
    const std::string name = std::to_string(n_) + " floats, " + case_name;
    std::vector<std::size_t> at = changed_;
    at.insert(at.end(), previous_.begin(), previous_.end());
    const std::size_t more = std::max<std::size_t>(32, 1'000'000 / std::max(job_.steps(), 1));
    for (std::size_t k = changed_.size(); k < poisoned_.size() && k < changed_.size() + more; ++k)
      at.push_back(poisoned_[k]);  // poisoned_ starts with changed_
    for (std::size_t k = 0; k < std::min(kRandom, more / 4 + 1); ++k) at.push_back(pick() % n_);
    std::vector<float> got, want;
    for (const std::size_t i : at) {
      got.push_back(job_.h_out()[i]);
      want.push_back(churn_on_host(input_at(i), job_.steps()));
    }
    const std::string elements = name + " (" + std::to_string(at.size()) + " elements)";
    const lab::Comparison c = l_.compare("exercise", elements, got, want, lab::Tolerance{0.0, 0.0});
    l_.check("exercise", elements, c);
  }

  lab::Lesson& l_;
  Job& job_;
  std::size_t n_;
  std::uint64_t seed_;
  std::vector<std::size_t> changed_, previous_, poisoned_;  // changed_ ascending, ...
  std::vector<float> values_;                               // ... to these values
  lab::BetweenCalls stages_;
};

// Kernel steps so that the kernel over `n` elements takes about `target_ms`: two timings, a line.
int calibrate_steps(std::size_t n, double target_ms, const Job& job, cudaStream_t s) {
  const lab::BenchmarkOptions o = lab::short_run(0.5);
  auto kernel_ms = [&](int steps) {
    return lab::benchmark([&](cudaStream_t st) { launch_churn(job.d_in(), job.d_out(), n, steps, st); },
                          s, o).gpu_ms.median;
  };
  const int s1 = 64, s2 = 1024;
  const double t1 = kernel_ms(s1), t2 = kernel_ms(s2);
  const double per_step = (t2 - t1) / (s2 - s1);
  if (!(per_step > 0)) return s2;
  const double steps = s2 + (target_ms - t2) / per_step;
  return static_cast<int>(std::clamp(std::lround(steps), 1L, 1L << 20));
}

// What the variants run on: the three stages over the timing size, the kernel's steps, and the
// exercise's chunk count and streams.
struct Pipeline {
  l07::Stages stages;
  int steps;
  int chunks;
  std::vector<cudaStream_t> streams;
  double bytes() const { return double(stages.n) * sizeof(float); }
  double flops() const { return 2.0 * stages.n * steps; }
};

void add_variants(lab::Variants<Pipeline>& variants) {
  // A 1% median is plenty: the rules' thresholds are far more than 1% away.
  const lab::BenchmarkOptions o = lab::median_within(0.01);
  variants.add({"copy_in", lab::Role::Reference, "stage 1 alone: the whole array host -> device",
                [](Pipeline& p, cudaStream_t s) { p.stages.copy_in(0, p.stages.n, s); },
                [](const Pipeline& p) {
                  return lab::Work{p.bytes(), 0, /*host_link=*/true};
                },
                0, lab::Pacing::Device, o});
  variants.add({"compute", lab::Role::Reference,
                "stage 2 alone: the kernel over the whole array (calibrated to ~copy_in)",
                [](Pipeline& p, cudaStream_t s) { p.stages.compute(0, p.stages.n, s); },
                [](const Pipeline& p) {
                  return lab::Work{2 * p.bytes(), p.flops()};
                },
                0, lab::Pacing::Device, o});
  variants.add({"copy_out", lab::Role::Reference, "stage 3 alone: the whole array device -> host",
                [](Pipeline& p, cudaStream_t s) { p.stages.copy_out(0, p.stages.n, s); },
                [](const Pipeline& p) {
                  return lab::Work{p.bytes(), 0, /*host_link=*/true};
                },
                0, lab::Pacing::Device, o});
  auto round_trip = [](const Pipeline& p) {
    return lab::Work{2 * p.bytes(), p.flops(), /*host_link=*/true};
  };
  variants.add({"serial", lab::Role::Baseline, "the three stages in turn, whole array, one stream",
                [](Pipeline& p, cudaStream_t s) { Job::serial(p.stages, s); }, round_trip, 0,
                lab::Pacing::Device, o});
  variants.add(
      {"exercise", lab::Role::Exercise, "your pipelined() (exercise.cu)",
       [](Pipeline& p, cudaStream_t s) { l07::pipelined(p.stages, p.chunks, p.streams, s); },
       round_trip, 0, lab::Pacing::Device, o});
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("07-streams", "Streams and overlap: hiding transfers behind compute");
  lab::Variants<Pipeline> variants(lesson);
  add_variants(variants);
  long long mib = 0;
  lesson.option("--mib", &mib, "MiB in each direction", 256, 16);
  long long chunks = 16;
  lesson.option("--chunks", &chunks, "pieces the exercise cuts the array into");
  long long stream_count = 16;
  lesson.option("--streams", &stream_count, "streams handed to the exercise");
  long long fixed_steps = 0;
  lesson.option("--steps", &fixed_steps,
                "kernel multiply-adds per element (0: calibrate so the kernel takes as long as "
                "copy_in on this GPU)");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    if (chunks < 1 || chunks > 4096) throw std::invalid_argument("--chunks must be in 1..4096");
    if (stream_count < 1 || stream_count > 256)
      throw std::invalid_argument("--streams must be in 1..256");
    const std::size_t n = static_cast<std::size_t>(mib) << 18;  // floats: 2^20 B / 4 B
    const cudaStream_t s = l.stream();
    // The exercise's streams: non-blocking, so nothing orders them implicitly (not even the legacy
    // default stream); lab::benchmark orders them with each sample (lab::SideStream).
    std::vector<lab::SideStream> stream_set(static_cast<std::size_t>(stream_count));
    const std::vector<cudaStream_t> streams(stream_set.begin(), stream_set.end());
    Job job(std::max(n, kOddN), 1);
    const int k = static_cast<int>(chunks);
    const double bytes = double(n) * sizeof(float);

    // Calibration: the H2D time of the whole array, then the kernel's steps to match it.
    {
      const double h2d_ms =
          lab::benchmark(
              [&](cudaStream_t st) {
                LAB_CHECK(cudaMemcpyAsync(job.d_in(), job.h_in(), n * sizeof(float),
                                          cudaMemcpyHostToDevice, st));
              },
              s, lab::short_run(0.5))
              .gpu_ms.median;
      // The exercise's results depend on it: a --replay run takes the recorded one.
      job.set_steps(static_cast<int>(std::min<std::uint64_t>(
          l.run_parameter("steps", fixed_steps > 0 ? static_cast<std::uint64_t>(fixed_steps)
                                                   : calibrate_steps(n, h2d_ms, job, s)),
          1 << 20)));
      l.note(lab::text("Kernel: %d dependent multiply-adds per element (", job.steps()) +
             (fixed_steps > 0 ? "fixed by --steps" : "calibrated on this GPU to match copy_in") +
             lab::text("); copy_in of %lld MiB took %.3f ms during calibration.", mib, h2d_ms));
    }
    l.size(std::to_string(mib) + " MiB (" + std::to_string(n) + " floats) up, kernel, " +
           std::to_string(mib) + " MiB down; " + std::to_string(k) + " chunks, " +
           std::to_string(streams.size()) + " streams");
    l.size("validated at " + std::to_string(kOddN) + " floats (twice) and at the timing size "
           "(before and after timing)");

    std::uint64_t run = 0;
    auto seed = [&] { return l.seed() + 1000 * (run++) + 1; };
    validate_case(l, job, kOddN, seed(), k, streams, "first call");
    validate_case(l, job, kOddN, seed(), k, streams, "second call");
    const std::uint64_t input_seed = seed();
    const std::vector<float> expected =
        validate_case(l, job, n, input_seed, k, streams, "before timing");

    // The stages alone, then the serial and the pipelined schedule. h_in still holds the input
    // of the last case, so the stage chain can be checked against `expected` before the
    // exercise's timed calls change it.
    Pipeline pipe{job.stages(n), job.steps(), k, streams};
    for (const char* v : {"copy_in", "compute", "copy_out", "serial"})
      variants.measure(variants[v], pipe);

    // The stage variants: one chain copy_in -> compute -> copy_out on the same input must give
    // the validated output.
    {
      std::memset(job.h_out(), 0xff, bytes);
      Job::serial(pipe.stages, s);
      LAB_CHECK(cudaStreamSynchronize(s));
      const lab::Comparison c =
          lab::allclose(job.h_out(), expected.data(), n, lab::Tolerance{0.0, 0.0});
      for (const char* v : {"copy_in", "compute", "copy_out"})
        if (l.selected(v)) l.check(v, "chain of the three stages, after timing", c);
    }
    TimedPipelines timed(l, job, job.stages(n), input_seed);
    variants.measure(variants["exercise"], pipe,
                     l.profiling() ? lab::TimedCallChecks{} : timed.checks());
    LAB_CHECK(cudaDeviceSynchronize());

    validate_case(l, job, n, seed(), k, streams, "after timing");

    const lab::Measurement* in_m = variants.measurement("copy_in");
    const lab::Measurement* k_m = variants.measurement("compute");
    const lab::Measurement* out_m = variants.measurement("copy_out");
    const lab::Measurement* serial_m = variants.measurement("serial");
    const lab::Measurement* ex_m = variants.measurement("exercise");
    if (l.profiling()) return;
    if (in_m && k_m && out_m) {  // the stage variants (the table's), and the serial schedule
      const double sum = in_m->gpu_ms.median + k_m->gpu_ms.median + out_m->gpu_ms.median;
      l.note(lab::text("Stages (the variants' medians): copy_in %.3f ms, compute %.3f ms, copy_out "
                       "%.3f ms; sum %.3f ms.",
                       in_m->gpu_ms.median, k_m->gpu_ms.median, out_m->gpu_ms.median, sum));
      if (serial_m)
        l.note(lab::text("Serial: %.3f ms, %.3f of the stage sum.", serial_m->gpu_ms.median,
                         serial_m->gpu_ms.median / sum));
    }
    const lab::Stats between[3] = {timed.stage(0), timed.stage(1), timed.stage(2)};
    if (!ex_m || between[0].n == 0) return;
    // The rule's stages are those timed between the exercise's calls (TimedPipelines): over the
    // same stretch of time, so a link that slows for a while slows both. The interval: every
    // median at the end of its 95% interval that lowers (or raises) the efficiency: stages at
    // their lower ends, the pipeline at its upper end (and the reverse).
    auto efficiency = [&](double a, double b, double c, double t) {
      const double su = a + b + c, lo = std::max({a, b, c});
      return (su - t) / (su - lo);
    };
    const lab::Stats& t = ex_m->gpu_ms;
    const double stage[3] = {between[0].median, between[1].median, between[2].median};
    const double sum = stage[0] + stage[1] + stage[2];
    const double longest = std::max({stage[0], stage[1], stage[2]});
    const double model = longest + (sum - longest) / k;
    const double value = efficiency(stage[0], stage[1], stage[2], t.median);
    l.metric("overlap_efficiency", value,
             efficiency(between[0].median_low, between[1].median_low, between[2].median_low,
                        t.median_high),
             efficiency(between[0].median_high, between[1].median_high, between[2].median_high,
                        t.median_low));
    l.note(lab::text("Stages between your timed calls (medians of %zu): copy_in %.3f ms, compute "
                     "%.3f ms, copy_out %.3f ms; sum %.3f ms, longest %.3f ms: the overlap rule's "
                     "stages.",
                     between[0].n, stage[0], stage[1], stage[2], sum, longest));
    l.note(lab::text("Pipeline model with k = %d chunks: longest + (sum - longest) / k = %.3f ms "
                     "(balanced stages: S (1 + 2/k)); at best overlap_efficiency = 1 - 1/k = %.3f.",
                     k, model, 1.0 - 1.0 / k));
    l.note(lab::text("Your pipeline: %.3f ms = %.2f x the model's %.3f ms; overlap_efficiency %.3f. "
                     "Host time of one pipelined() call: %.0f us.",
                     t.median, t.median / model, model, value, ex_m->enqueue_us));
  });
}
