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
// Validation (lab::Protocol): at a size that is not a multiple of the chunk count (twice, fresh
// inputs), then at the timing size before and after timing. Every run starts from poisoned (NaN)
// buffers; the input reaches the host buffer through work on the harness's stream right before
// the call; the output must match the kernel replayed from the input, bit for bit, and no stream
// may be busy once `main` is done. The exercise's timed calls get a changed input and a partly
// poisoned output each, and each is checked too (checks()).
#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr std::size_t kOddN = 5'000'011;  // validation size: 5,000,011 = 16 * 312,500 + 11
constexpr double kHoldUs = 2000;          // spin on main before the input arrives (fork check)

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

// The job: buffers and the stages.

class Job {
 public:
  Job(std::size_t capacity, int steps)
      : steps_(steps), h_in_(capacity), h_out_(capacity), d_in_(capacity),
        d_out_(capacity), d_src_(capacity), d_ref_(capacity) {}

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

  // The first range refused since the last clear_violation() ("" if none).
  const std::string& violation() const { return violation_; }
  void clear_violation() { violation_.clear(); }

  float* d_in() const { return d_in_.data(); }
  float* d_out() const { return d_out_.data(); }
  float* d_src() const { return d_src_.data(); }  // the harness's: an input on its way to h_in
  float* d_ref() const { return d_ref_.data(); }  // the harness's: the reference's output
  float* h_in() const { return h_in_.data(); }
  float* h_out() const { return h_out_.data(); }

 private:
  int steps_;
  lab::PinnedBuffer<float> h_in_, h_out_;
  lab::DeviceBuffer<float> d_in_, d_out_, d_src_, d_ref_;
  std::string violation_;
};

// What the variants run on: the three stages over [0, n), and the exercise's chunk count and
// streams. The job's buffers are shared by every size.
struct Pipeline {
  Job& job;
  l07::Stages stages;
  int chunks;
  const std::vector<cudaStream_t>& streams;
  // What h_in holds, and the h_out places a timed call was given NaN at (see checks()).
  lab::SparseRoundTrip<> trip{64, 256, /*poison_changed=*/true};
  Pipeline(Job& j, std::size_t n, int k, const std::vector<cudaStream_t>& s)
      : job(j), stages(j.stages(n)), chunks(k), streams(s) {}
  std::size_t n() const { return stages.n; }
  double bytes() const { return double(n()) * sizeof(float); }
  double flops() const { return 2.0 * n() * job.steps(); }
};

// How inputs are made, outputs reset and results checked (lab/protocol.cuh; what must hold: the
// comment at the top). A validated call's input reaches h_in after a 2 ms hold on `main`
// (late_inputs): a schedule that does not wait for main copies NaN. It must refuse no range; its
// reference is the kernel replayed on the device from the input regenerated from its seed, and
// that replay is checked against the host's at every 1/4096th element and the last 64.
//
// Before every timed call, outside the timed window: the three stages timed over the whole array
// on the harness's stream (the overlap rule's reference, lab::BetweenCalls), then 64 changed
// places of h_in and NaN at them and at 256 more of h_out (lab::SparseRoundTrip): a chunk that
// skips a stage is wrong there. After the call, its output is compared bit for bit with the
// kernel replayed on the host (microseconds an element at ~2500 steps): at the changed places
// (this call's and the last's) always, the rest within about 1e6 host multiply-adds, about 450
// elements. No join check there: lab::benchmark's stop event waits for every stream. After
// timing, h_in must hold what the last call was given.
constexpr std::size_t kRandom = 64;

// The reference after a validated call: every element, from the device (see above).
std::vector<float> device_reference(const Pipeline& p, std::uint64_t seed, cudaStream_t s) {
  lab::fill_random(p.job.d_src(), p.n(), seed, s);
  launch_churn(p.job.d_src(), p.job.d_ref(), p.n(), p.job.steps(), s);
  auto on_host = [&](std::size_t i) {
    return churn_on_host(lab::random_input(seed, i), p.job.steps());
  };
  return lab::confirmed_download(p.job.d_ref(), p.n(), s, 4096, 64, on_host);
}

lab::Checks<Pipeline> checks(lab::BetweenCalls& stage_times) {
  lab::Checks<Pipeline> c;
  c.fill = [](Pipeline& p, std::uint64_t seed, cudaStream_t s) {
    lab::fill_random(p.job.d_src(), p.n(), seed, s);
    LAB_CHECK(cudaMemcpyAsync(p.job.h_in(), p.job.d_src(), p.bytes(), cudaMemcpyDeviceToHost, s));
    LAB_CHECK(cudaStreamSynchronize(s));
    p.trip.filled(p.n(), lab::RandomInput{seed});
  };
  c.reset = [](Pipeline& p, cudaStream_t s) {
    std::memset(p.job.h_out(), 0xff, p.bytes());
    lab::poison(p.job.d_in(), p.bytes(), s);
    lab::poison(p.job.d_out(), p.bytes(), s);
    p.job.clear_violation();
  };
  c.late_inputs = [](Pipeline& p, cudaStream_t s) {  // nothing runs: the protocol has waited
    std::memset(p.job.h_in(), 0xff, p.bytes());
    lab::spin(kHoldUs, s);
    LAB_CHECK(cudaMemcpyAsync(p.job.h_in(), p.job.d_src(), p.bytes(), cudaMemcpyDeviceToHost, s));
  };
  c.handed_streams = [](const Pipeline& p) { return p.streams; };
  c.between_calls = [&stage_times](Pipeline&, cudaStream_t s) {
    LAB_CHECK(cudaDeviceSynchronize());  // nothing of the last call may still touch the buffers
    stage_times.time(s);
  };
  c.change = [](Pipeline& p, std::uint64_t seed, cudaStream_t) {
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    p.trip.change(seed, [&value](std::mt19937_64& g) { return value(g); }, p.job.h_in(),
                  p.job.h_out());
  };
  c.check = [kept = lab::KeptReference<std::vector<float>>()](lab::Look& look, Pipeline& p) mutable {
    LAB_CHECK(cudaStreamSynchronize(look.stream()));  // the contract: main finished = output ready
    const std::size_t more = std::max<std::size_t>(32, 1'000'000 / std::max(p.job.steps(), 1));
    const std::vector<std::size_t> at = p.trip.places(look, more, std::min(kRandom, more / 4 + 1));
    const std::vector<float>& want = kept.get(look.seed(), at, [&] {
      if (at.empty()) return device_reference(p, look.seed(), look.stream());
      auto on_host = [&](std::size_t i) { return churn_on_host(p.trip(i), p.job.steps()); };
      return lab::values_at(at, p.n(), on_host);
    });
    look.compare_host(p.job.h_out(), at, want, lab::Tolerance{0.0, 0.0});
    LAB_CHECK(cudaDeviceSynchronize());  // drain whatever else it started
    if (look.everything()) look.check_part("ranges", p.job.violation());
  };
  c.inputs_changed = [](const Pipeline& p, std::uint64_t, cudaStream_t) {
    return std::vector<std::string>{p.trip.changed_host("h_in", p.job.h_in())};
  };
  return c;
}

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

// The stages alone (their own list: each is timed, none is a whole call), then the schedules.
void add_variants(lab::Variants<Pipeline>& stage_variants, lab::Variants<Pipeline>& variants) {
  // A 1% median is plenty: the rules' thresholds are far more than 1% away.
  const lab::BenchmarkOptions o = lab::median_within(0.01);
  stage_variants.add({"copy_in", lab::Role::Reference, "stage 1 alone: the whole array host -> device",
                      [](Pipeline& p, cudaStream_t s) { p.stages.copy_in(0, p.n(), s); },
                      [](const Pipeline& p) {
                        return lab::Work{p.bytes(), 0, /*host_link=*/true};
                      },
                      0, lab::Pacing::Device, o});
  stage_variants.add({"compute", lab::Role::Reference,
                      "stage 2 alone: the kernel over the whole array (calibrated to ~copy_in)",
                      [](Pipeline& p, cudaStream_t s) { p.stages.compute(0, p.n(), s); },
                      [](const Pipeline& p) {
                        return lab::Work{2 * p.bytes(), p.flops()};
                      },
                      0, lab::Pacing::Device, o});
  stage_variants.add({"copy_out", lab::Role::Reference, "stage 3 alone: the whole array device -> host",
                      [](Pipeline& p, cudaStream_t s) { p.stages.copy_out(0, p.n(), s); },
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
  lab::Variants<Pipeline> stage_variants(lesson), variants(lesson);
  add_variants(stage_variants, variants);
  long long mib = 0;
  lesson.option("--mib", &mib, "MiB in each direction", 256, 16);
  long long chunks = 16;
  lesson.option("--chunks", &chunks, "pieces the exercise cuts the array into", {1, 4096});
  long long stream_count = 16;
  lesson.option("--streams", &stream_count, "streams handed to the exercise", {1, 256});
  long long fixed_steps = 0;
  lesson.option("--steps", &fixed_steps,
                "kernel multiply-adds per element (0: calibrate so the kernel takes as long as "
                "copy_in on this GPU)");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    const std::size_t n = static_cast<std::size_t>(mib) << 18;  // floats: 2^20 B / 4 B
    const cudaStream_t s = l.stream();
    // The exercise's streams: non-blocking, so nothing orders them implicitly (not even the legacy
    // default stream); lab::benchmark orders them with each sample (lab::SideStream).
    std::vector<lab::SideStream> stream_set(static_cast<std::size_t>(stream_count));
    const std::vector<cudaStream_t> streams(stream_set.begin(), stream_set.end());
    Job job(std::max(n, kOddN), 1);
    const int k = static_cast<int>(chunks);

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

    // The stages over the whole array, timed before each of the exercise's timed calls.
    const l07::Stages own = job.stages(n);
    lab::BetweenCalls stage_times({[own](cudaStream_t st) { own.copy_in(0, own.n, st); },
                                   [own](cudaStream_t st) { own.compute(0, own.n, st); },
                                   [own](cudaStream_t st) { own.copy_out(0, own.n, st); }});
    const lab::Checks<Pipeline> c = checks(stage_times);
    lab::Protocol<Pipeline> protocol(l, variants, c);
    {  // an odd size, twice (fresh inputs): a result kept from an earlier call fails the second
      Pipeline odd(job, kOddN, k, streams);
      for (const char* when : {"first call", "second call"})
        protocol.validate(odd, std::to_string(kOddN) + " floats, " + when);
    }
    Pipeline pipe(job, n, k, streams);
    protocol.validate(pipe, std::to_string(n) + " floats, before timing");

    // The stages alone, on the input just validated; then one chain copy_in -> compute ->
    // copy_out on it must give the validated output; then the serial and pipelined schedules.
    stage_variants.measure_all(pipe);
    if (!l.profiling()) {
      c.reset(pipe, s);
      Job::serial(pipe.stages, s);
      protocol.check_as_is(pipe, stage_variants, "chain of the three stages, after timing");
    }
    protocol.measure(pipe);
    protocol.validate(pipe, std::to_string(n) + " floats, after timing");

    const lab::Measurement* in_m = stage_variants.measurement("copy_in");
    const lab::Measurement* k_m = stage_variants.measurement("compute");
    const lab::Measurement* out_m = stage_variants.measurement("copy_out");
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
    const lab::Stats between[3] = {stage_times.part(0), stage_times.part(1), stage_times.part(2)};
    if (!ex_m || between[0].n == 0) return;
    // The rule's stages are those timed between the exercise's calls (stage_times): over the
    // same stretch of time, so a link that slows for a while slows both. The interval: the
    // lowest and highest efficiency with each of the four medians at either end of its 95%
    // interval (which end lowers it depends on the others: above 1, longer stages lower it).
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
    double low = value, high = value;
    for (int ends = 0; ends < 16; ++ends) {  // bit i: median i at the upper end of its interval
      auto end = [&](const lab::Stats& m, int i) { return ends >> i & 1 ? m.median_high : m.median_low; };
      const double e = efficiency(end(between[0], 0), end(between[1], 1), end(between[2], 2), end(t, 3));
      low = std::min(low, e);
      high = std::max(high, e);
    }
    l.metric("overlap_efficiency", value, low, high);
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
