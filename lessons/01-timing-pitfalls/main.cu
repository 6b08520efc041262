// Lesson 01 — timing pitfalls. The harness: it times a kernel of adjustable length with the
// library (the right way), asks your time_one_execution_ms (exercise.cu) for the same kernels,
// and shows each classic mistake's number next to the right one.
#include "exercise.cuh"
#include "lab/lesson.cuh"
#include "lab/timer_rounds.hpp"

namespace {

// The workload: each element goes through `steps` dependent multiply-adds. Its run time grows
// linearly with `steps`, so one kernel covers 0.05 ms to 25 ms. Tag makes distinct copies of the
// kernel, so one can be launched for the very first time in the first-call demonstration.
template <int Tag>
__global__ void iterate(const float* x, float* y, int n, int steps) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int s = 0; s < steps; ++s) v = fmaf(v, 0.999f, 0.001f);
  y[i] = v;
}

float iterate_on_host(float v, int steps) {
  for (int s = 0; s < steps; ++s) v = std::fma(v, 0.999f, 0.001f);  // same rounding as fmaf
  return v;
}

__global__ void copy_kernel(const float* in, float* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void empty_kernel() {}

std::string us(double ms) { return lab::text("%9.1f us", ms * 1e3); }

// The pitfall's relative error against the right number, e.g. "-99%".
std::string off_by(double got_ms, double right_ms) {
  return lab::text("%+.0f%%", 100.0 * (got_ms / right_ms - 1.0));
}

// What the library's variants time: the workload kernel, `steps` multiply-adds per element.
struct Workload {
  float* x;
  float* y;
  int n, blocks, steps;
};

// The three kernels' lengths: each drawn afresh in its own band, log-uniform, in an order
// shuffled per run, from entropy drawn only when the kernel is about to be handed to your timer.
// A timer that returns numbers without measuring cannot know them: a constant lands within 10%
// of one band's draw about one time in ten (log(1.1 / 0.9) / log(10)), of all three about one in
// a thousand. The bands are a factor of 10 (5 for the longest) apart, short to long.
struct Band {
  const char* name;
  double low_ms, high_ms;
};
constexpr Band kBands[3] = {{"kernel_short", 0.05, 0.5}, {"kernel_medium", 0.5, 5.0},
                            {"kernel_long", 5.0, 25.0}};

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("01-timing-pitfalls",
                     "Timing pitfalls: why the first number you measure is wrong");
  std::vector<std::string> kernels;
  lab::Variants<Workload> variants(lesson);
  for (const Band& band : kBands) {
    kernels.push_back(band.name);
    variants.add(
        {kernels.back(), lab::Role::Reference,
         lab::text("the library's measurement of a kernel of %g to %g ms (drawn each run)",
                   band.low_ms, band.high_ms),
         [](Workload& w, cudaStream_t s) {
           iterate<1><<<w.blocks, 256, 0, s>>>(w.x, w.y, w.n, w.steps);
         },
         [](const Workload& w) {
           return lab::Work{8.0 * w.n, 2.0 * w.n * w.steps};
         }});
  }
  // Judged on what it reports: the harness hands it the work, it does not time it itself.
  variants.add({"exercise", lab::Role::Exercise,
                "your time_one_execution_ms (exercise.cu): its work must run and be right"});
  long long elements = 1 << 22;
  lesson.option("--elements", &elements, "elements processed by the timed kernel");
  long long fixed_steps_per_ms = 0;
  lesson.option("--steps-per-ms", &fixed_steps_per_ms,
                "kernel steps per millisecond (0: calibrate on this GPU; fix it to compare runs, "
                "e.g. under a profiler)");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    const int n = static_cast<int>(elements);
    const cudaStream_t stream = l.stream();
    lab::DeviceBuffer<float> x(n), y(n);
    lab::fill_random(x.data(), n, l.seed(), stream);
    const int blocks = (n + 255) / 256;
    l.size(std::to_string(n) + " elements, 4 bytes in and out each; run time set by the "
           "number of multiply-add steps");

    // Calibrate: steps per millisecond on this GPU (a throwaway copy of the kernel).
    const lab::Measurement calibration = lab::benchmark(
        [&](cudaStream_t s) { iterate<0><<<blocks, 256, 0, s>>>(x.data(), y.data(), n, 2000); },
        stream);
    const double steps_per_ms = fixed_steps_per_ms > 0 ? static_cast<double>(fixed_steps_per_ms)
                                                       : 2000 / calibration.gpu_ms.median;
    l.metric("steps_per_ms", steps_per_ms, steps_per_ms, steps_per_ms);

    // Validates a sample of y against the host (the whole array would take the CPU too long).
    auto output_right = [&](int steps) {
      const std::vector<float> got = y.download(stream);
      std::vector<float> host_x(n);
      lab::fill_random_host(host_x.data(), n, l.seed());
      std::vector<float> sample_got, sample_expected;
      for (int i = 0; i < n; i += std::max(1, n / 997)) {
        sample_got.push_back(got[i]);
        sample_expected.push_back(iterate_on_host(host_x[i], steps));
      }
      sample_got.push_back(got[n - 1]);  // the tail, where the grid overshoots
      sample_expected.push_back(iterate_on_host(host_x[n - 1], steps));
      return lab::allclose(sample_got, sample_expected, {1e-6, 1e-6});
    };

    // Your timer is called as lesson 02's is (lab/timer_rounds.hpp): exactly the call in an NVTX
    // range, a CUDA error it left unchecked stops the run, then its work's output is checked.
    lab::TimerRounds yours(l, "exercise", "time_one_execution_ms", stream, nullptr,
                           [](std::vector<lab::TimerRounds::Part> p, cudaStream_t s) {
                             return std::vector<double>{time_one_execution_ms(p[0], s)};
                           });
    lab::Reading worst;  // the largest relative error of your timer over the three kernels
    std::vector<std::size_t> order = {0, 1, 2};
    std::shuffle(order.begin(), order.end(), std::mt19937_64(std::random_device{}()));
    int medium_steps = 0;
    for (const std::size_t k : order) {
      const double target_ms = lab::fresh_log_uniform(kBands[k].low_ms, kBands[k].high_ms);
      const int steps = std::max(1, static_cast<int>(std::lround(steps_per_ms * target_ms)));
      if (k == 1) medium_steps = steps;
      auto work = [&, steps](cudaStream_t s) {
        iterate<1><<<blocks, 256, 0, s>>>(x.data(), y.data(), n, steps);
      };
      const std::string case_name = kernels[k] + " (" + std::to_string(steps) + " steps)";

      // Yours first: at the first size it meets the kernel's first call, like a real program.
      lab::poison(y.data(), y.bytes(), stream);
      LAB_CHECK(cudaStreamSynchronize(stream));
      auto check = [&](const std::string& name) {
        LAB_CHECK(cudaDeviceSynchronize());
        const lab::Comparison c = output_right(steps);
        l.check("exercise", name, c.ok,
                "the work's output is wrong or missing (did your timer run the work it was "
                "given, on the stream it was given?): " + c.summary());
      };
      const double reported =
          l.selected("exercise") ? yours.call({{work}, check}, case_name).reported[0] : 0;

      lab::poison(y.data(), y.bytes(), stream);
      Workload w{x.data(), y.data(), n, blocks, steps};
      const lab::Measurement* m = variants.measure(variants[kernels[k]], w);
      l.check(kernels[k], case_name, output_right(steps));
      if (!m || !l.selected("exercise")) continue;

      // How far is your number from the library's? Low/high use the median's 95% interval: a
      // number inside it is as good as the median.
      const lab::Stats& t = m->gpu_ms;
      worst = lab::worst(worst, lab::relative_error(reported, t));
      l.note(lab::text("%-14s yours %s   library %s (median of %zu)   off by %s",
                       kernels[k].c_str(), us(reported).c_str(), us(t.median).c_str(), t.n,
                       off_by(reported, t.median).c_str()));
    }
    if (l.selected("exercise")) lab::metric(l, "timing_error", worst);

    // ---- The pitfalls, each next to the right number (the medium kernel). ---------------------
    if (l.profiling() || !l.selected(kernels[1])) return;
    const int steps = medium_steps;
    const double right = l.result().find(kernels[1])->measurement->gpu_ms.median;
    auto launch = [&](auto kernel) { kernel<<<blocks, 256, 0, stream>>>(x.data(), y.data(), n, steps); };
    l.note("");
    l.note("The pitfalls, timing the medium kernel (right answer " + us(right) + "):");

    // 1. The first call ever of a kernel: lazy module loading is inside it.
    LAB_CHECK(cudaStreamSynchronize(stream));
    lab::HostTimer host;
    launch(iterate<2>);
    LAB_CHECK(cudaStreamSynchronize(stream));
    const double first_call = host.elapsed_ms();
    l.note("  first call, host clock + sync  " + us(first_call) + "  " + off_by(first_call, right) +
           "  (loads the kernel's code: CUDA_MODULE_LOADING=LAZY is the default)");
    l.metric("pitfall_first_call_ms", first_call, first_call, first_call, "ms");

    // 2. A host clock around the launch alone: the launch returns before the GPU starts.
    host.start();
    launch(iterate<2>);
    const double no_sync = host.elapsed_ms();
    LAB_CHECK(cudaStreamSynchronize(stream));
    l.note("  host clock, no sync            " + us(no_sync) + "  " + off_by(no_sync, right) +
           "  (measures the launch call only)");
    l.metric("pitfall_no_sync_ms", no_sync, no_sync, no_sync, "ms");

    // 3. Host clock with sync, warmed up: right order of magnitude, plus launch and sync costs.
    auto medium = [&](cudaStream_t) { launch(iterate<2>); };
    const lab::Stats s = lab::summarize(lab::host_clock_samples(21, medium, stream));
    l.note("  host clock + sync, warm        " + us(s.median) + "  " + off_by(s.median, right) +
           "  (adds the launch and the synchronize)");

    // 4. One sample is noise: the spread of single event-timed samples.
    const lab::Stats e = lab::summarize(lab::event_samples(21, medium, stream));
    l.note("  events, single samples         " + us(e.min) + " to " + us(e.max) +
           " (median" + us(e.median) + ", mean" + us(e.mean) + ")");

    // 5. Tiny kernels: an empty kernel costs microseconds, all of it overhead.
    empty_kernel<<<1, 1, 0, stream>>>();
    const std::vector<double> empties =
        lab::event_samples(21, [](cudaStream_t st) { empty_kernel<<<1, 1, 0, st>>>(); }, stream);
    l.note("  an empty kernel, by events     " + us(lab::summarize(empties).median) +
           "  (launch overhead: batch small kernels, lessons 06 and 09)");
    l.metric("pitfall_empty_kernel_us", 1e3 * lab::summarize(empties).median,
             1e3 * lab::summarize(empties).q1, 1e3 * lab::summarize(empties).q3, "us");

    // 6. Data that fits in L2: a 16 MiB copy timed back to back (hot) beats the DRAM.
    const std::size_t copy_n = (16u << 20) / sizeof(float);
    lab::DeviceBuffer<float> cin(copy_n), cout(copy_n);
    lab::fill_random(cin.data(), copy_n, l.seed(), stream);
    auto copy = [&](cudaStream_t st) {
      copy_kernel<<<lab::device_info().sms * 4, 256, 0, st>>>(cin.data(), cout.data(), copy_n);
    };
    lab::BenchmarkOptions hot;
    hot.mode = lab::Mode::Hot;
    const double bytes = 2.0 * copy_n * sizeof(float);
    const double cold_gbs = bytes / (lab::benchmark(copy, stream).gpu_ms.median * 1e6);
    const double hot_gbs = bytes / (lab::benchmark(copy, stream, hot).gpu_ms.median * 1e6);
    l.note(lab::text(
        "  16 MiB copy: cold %.0f GB/s, hot %.0f GB/s; the copy ceiling (1 GiB) is %.0f "
        "GB/s, theoretical %.0f: hot numbers measure the L2",
        cold_gbs, hot_gbs, l.ceilings().copy_gbs, lab::device_info().peak_bandwidth_gbs()));
    l.metric("pitfall_l2_hot_over_copy", hot_gbs / l.ceilings().copy_gbs,
             hot_gbs / l.ceilings().copy_gbs, hot_gbs / l.ceilings().copy_gbs);
  });
}
