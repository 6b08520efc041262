// Lesson 02 harness: CUDA events. Students read this file; they do not edit it.
//
// A vector add, c = a + b on N floats (384-639 MiB per array, picked by the seed; --mib sets
// it), as three phases on one stream: copy-in (a and b, pinned host -> device), the kernel,
// copy-out (c, device -> pinned host).
//
//   1. The library measures each phase (variants copy_in, kernel, copy_out: cold, median).
//   2. Your time_phases (exercise.cu) times the same phases with your RegionTimer, 9 calls with
//      nothing else on the GPU, then 9 calls while an unrelated one-thread kernel (lab::spin,
//      100+ ms) runs on ANOTHER stream, then 9 calls with 50 ms of work already queued on YOUR
//      stream. Right after each of your calls the harness runs the phases once more between
//      events of its own; the rules compare your times with those, call by call, and ask whether
//      your call returned while the other stream was still busy, and whether it waited for the
//      queued work before it enqueued its first phase.
//   3. Notes under the table: the event timer's floor and resolution, events vs a host clock,
//      CPU time vs GPU time of one call, and the pipeline end to end next to a CPU vector add.
#include "exercise.cuh"
#include "lab/lesson.cuh"
#include "lab/timer_rounds.hpp"

namespace {

constexpr std::size_t kOddN = 1'000'003;  // validation size: not a multiple of the block size
constexpr int kBlock = 256;

// The queued round: work on your own stream before each call (a one-thread spin). Long enough
// that no host can miss it (time_phases reaches its first phase microseconds after it is
// called; a grading machine may stall a process for milliseconds, not for 50), short so that the
// round (9 calls, each also running the pipeline twice) costs about a second.
constexpr double kQueuedMs = 50;

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// One vector-add problem: a, b, c on the host (pinned, allocated once) and on the device.
class VectorAdd {
 public:
  // Allocates everything (timing the allocations on the host clock if asked), fills a and b with
  // fresh random numbers, and picks the elements that validation looks at.
  VectorAdd(std::size_t n, std::uint64_t seed, cudaStream_t stream, double* create_ms = nullptr,
            double* pin_ms = nullptr)
      : n_(n) {
    lab::HostTimer timer;
    a_ = lab::DeviceBuffer<float>(n);
    b_ = lab::DeviceBuffer<float>(n);
    c_ = lab::DeviceBuffer<float>(n);
    if (create_ms) *create_ms = timer.elapsed_ms();
    timer.start();
    ha_ = lab::PinnedBuffer<float>(n);
    hb_ = lab::PinnedBuffer<float>(n);
    hc_ = lab::PinnedBuffer<float>(n);
    if (pin_ms) *pin_ms = timer.elapsed_ms();

    lab::fill_random(a_.data(), n, seed, stream);
    lab::fill_random(b_.data(), n, seed ^ 0x5DEECE66Dull, stream);
    LAB_CHECK(cudaMemcpyAsync(ha_.data(), a_.data(), a_.bytes(), cudaMemcpyDeviceToHost, stream));
    LAB_CHECK(cudaMemcpyAsync(hb_.data(), b_.data(), b_.bytes(), cudaMemcpyDeviceToHost, stream));
    LAB_CHECK(cudaStreamSynchronize(stream));

    // Every element up to 2M; beyond, ~64K spread over the array plus the last 4096 (the tail,
    // where a grid that is too small or too large goes wrong).
    sample_ = lab::HostSample(n, 2u << 20, 65536, 4096,
                              [this](std::size_t i) { return ha_[i] + hb_[i]; });
  }

  std::size_t n() const { return n_; }
  const float* host_a() const { return ha_.data(); }
  const float* host_b() const { return hb_.data(); }
  float* device_a() const { return a_.data(); }
  float* device_b() const { return b_.data(); }
  float* device_c() const { return c_.data(); }

  // The three phases, exactly as the library and your time_phases get them; the kernel phase
  // begins with a wait of delay_ms on the GPU when it is not 0 (your calls: a fresh draw each).
  l02::Pipeline pipeline(double delay_ms = 0) const {
    const std::size_t n = n_, bytes = n_ * sizeof(float);
    float *a = a_.data(), *b = b_.data(), *c = c_.data(), *hc = hc_.data();
    const float *ha = ha_.data(), *hb = hb_.data();
    const unsigned blocks = static_cast<unsigned>((n + kBlock - 1) / kBlock);
    l02::Pipeline p;
    p.copy_in = [=](cudaStream_t s) {
      LAB_CHECK(cudaMemcpyAsync(a, ha, bytes, cudaMemcpyHostToDevice, s));
      LAB_CHECK(cudaMemcpyAsync(b, hb, bytes, cudaMemcpyHostToDevice, s));
    };
    p.kernel = [=](cudaStream_t s) {
      if (delay_ms > 0) lab::spin(delay_ms * 1e3, s);
      vector_add<<<blocks, kBlock, 0, s>>>(a, b, c, n);
      LAB_CHECK_LAUNCH();
    };
    p.copy_out = [=](cudaStream_t s) {
      LAB_CHECK(cudaMemcpyAsync(hc, c, bytes, cudaMemcpyDeviceToHost, s));
    };
    return p;
  }

  // Before a validated run: NaN in a, b, c on the device and in the checked elements of c on the
  // host, so a phase that did not run leaves NaN behind. Waits for `stream`.
  void poison(cudaStream_t stream) const {
    lab::poison(a_.data(), a_.bytes(), stream);
    lab::poison(b_.data(), b_.bytes(), stream);
    lab::poison(c_.data(), c_.bytes(), stream);
    LAB_CHECK(cudaStreamSynchronize(stream));
    sample_.poison(hc_.data());
  }

  // After a run (and a wait): the checked elements of c on the host against a + b.
  lab::Comparison check() const {
    return sample_.compare(hc_.data(), {1e-6, 0.0});  // one float add: exact, up to rounding
  }
  std::string checked() const { return sample_.described(); }

 private:
  std::size_t n_;
  lab::DeviceBuffer<float> a_, b_, c_;
  lab::PinnedBuffer<float> ha_, hb_, hc_;
  lab::HostSample sample_;
};

// The harness's own run of the pipeline, validated (the library's variants are checked with it).
lab::Comparison run_pipeline(const VectorAdd& d, cudaStream_t s) {
  d.poison(s);
  const l02::Pipeline p = d.pipeline();
  p.copy_in(s);
  p.kernel(s);
  p.copy_out(s);
  LAB_CHECK(cudaStreamSynchronize(s));
  return d.check();
}

// Your time_phases, called by the library's timer rounds (lab/timer_rounds.hpp). The reference is
// the same phases timed right after each call, so a drift of the copies' speed over the program
// (the pinned link read 45 instead of 55 GB/s for a whole round once on the H100) moves both alike.

// The kernel phase of each call of yours begins with a wait on the GPU (lab::spin) of a length
// drawn from entropy just before the call, log-uniform from 0.2 to 20 ms: only a measurement can
// know a phase's time, so no number your code holds beforehand passes for one (a constant is
// within 25% of one call's kernel phase about one time in seven, of five calls in nine about one
// time in two hundred, in each of the three rounds).
constexpr double kMinDelayMs = 0.2, kMaxDelayMs = 20;

const std::vector<std::string> kPhaseNames = {"copy_in", "kernel", "copy_out"};

// Your time_phases as the rounds call it: the three phases in, a time per phase out.
std::vector<double> your_times(std::vector<lab::TimerRounds::Part> p, cudaStream_t s) {
  const auto t = l02::time_phases({std::move(p[0]), std::move(p[1]), std::move(p[2])}, s);
  return {t.copy_in_ms, t.kernel_ms, t.copy_out_ms};
}

// One call's work: a, b, c poisoned, the kernel phase behind a wait drawn now, c checked after.
lab::TimerRounds::Work next_call(lab::Lesson& l, const VectorAdd& d) {
  d.poison(l.stream());
  const l02::Pipeline p = d.pipeline(lab::fresh_log_uniform(kMinDelayMs, kMaxDelayMs));
  return {{p.copy_in, p.kernel, p.copy_out}, [&l, &d](const std::string& case_name) {
            const lab::Comparison cmp = d.check();
            l.check("exercise", case_name + ", " + d.checked(), cmp.ok,
                    "c is wrong after time_phases (did it run copy_in, kernel and copy_out once "
                    "each, in this order, on the stream it was given?): " + cmp.summary());
          }};
}

// The demonstrations printed under the table.

// Empty event pairs, back to back: the floor of an event measurement and its resolution; and,
// when yours is selected, your RegionTimer's own floor.
void event_floor(lab::Lesson& l, cudaStream_t s, bool yours) {
  std::vector<double> ns = lab::event_samples(501, [](cudaStream_t) {}, s);
  for (double& x : ns) x *= 1e6;
  const lab::Stats t = lab::summarize(ns);
  // Readings within 0.5 ns are one: float rounding of the milliseconds is far below that.
  const auto [distinct, step] = lab::reading_steps(ns, 0.5);
  l.note("");
  l.note("The event timer itself (501 empty event pairs, back to back on the stream):");
  l.note(lab::text("  floor: median %.3f us (quartiles %.3f-%.3f, min %.3f, max %.3f)",
                   t.median * 1e-3, t.q1 * 1e-3, t.q3 * 1e-3, t.min * 1e-3, t.max * 1e-3));
  if (distinct > 1)
    l.note(lab::text("  resolution: %d distinct readings, the smallest step between them %.1f ns",
                     distinct, step));
  else
    l.note("  resolution: every reading was the same, so no step between readings was seen");
  l.metric("event_floor_us", t.median * 1e-3, t.q1 * 1e-3, t.q3 * 1e-3, "us");
  if (distinct > 1) l.metric("event_step_ns", step, step, step, "ns");
  if (!yours) return;

  std::vector<double> us;  // your RegionTimer around nothing: its own floor
  for (int i = 0; i < 51; ++i) {
    float ms = 0;
    { l02::RegionTimer timer(s, &ms); }
    us.push_back(ms * 1e3);
  }
  const double median = lab::summarize(us).median;
  l.note(lab::text("  your RegionTimer around an empty region: median %.3f us of 51", median));
  l.metric("your_empty_region_us", median, median, median, "us");
}

// The kernel phase three ways: the library, events around the launch on an idle stream, a host
// clock with a stream synchronize. Then, with the other stream busy, a host clock with a device
// synchronize next to events in the same run.
void events_vs_host(lab::Lesson& l, const l02::Pipeline& p, cudaStream_t s, cudaStream_t other,
                    const lab::Measurement* kernel, double busy_ms) {
  const double ev = lab::summarize(lab::event_samples(21, p.kernel, s)).median;
  const double ho = lab::summarize(lab::host_clock_samples(21, p.kernel, s)).median;
  l.note("");
  l.note("The kernel phase, timed three ways (medians of 21):");
  if (kernel)
    l.note(lab::text("  library (a 20 us lead-in keeps the stream busy)   %s",
                     lab::time_text(kernel->gpu_ms.median).c_str()));
  l.note(lab::text("  events around the launch, idle stream             %s",
                   lab::time_text(ev).c_str()));
  l.note(lab::text(
      "  host clock + cudaStreamSynchronize                %s  (%+.1f us: launch call and "
      "the wake-up after the sync)",
      lab::time_text(ho).c_str(), (ho - ev) * 1e3));
  l.metric("host_overhead_us", (ho - ev) * 1e3, (ho - ev) * 1e3, (ho - ev) * 1e3, "us");

  lab::spin(busy_ms * 1e3, other);
  lab::EventTimer timer(s);
  timer.start();
  lab::HostTimer host_timer;
  p.kernel(s);
  timer.stop();
  LAB_CHECK(cudaDeviceSynchronize());
  const double device_sync = host_timer.elapsed_ms();
  const double same_run = timer.elapsed_ms();
  l.note(
      lab::text("  the same kernel while another stream runs a %.0f ms kernel: host clock + "
                "cudaDeviceSynchronize %s, events on the stream %s",
                busy_ms, lab::time_text(device_sync).c_str(), lab::time_text(same_run).c_str()));
}

// CPU time vs GPU time of one call, as cupyx.profiler.benchmark reports them: CPU = host time of
// the call (the launch), GPU = events around it on an idle stream.
void cpu_vs_gpu(lab::Lesson& l, const VectorAdd& d, cudaStream_t s, const lab::Measurement* big) {
  constexpr std::size_t kTiny = 1024;
  float *a = d.device_a(), *b = d.device_b(), *c = d.device_c();
  auto tiny = [=](cudaStream_t st) {
    vector_add<<<unsigned((kTiny + kBlock - 1) / kBlock), kBlock, 0, st>>>(a, b, c, kTiny);
    LAB_CHECK_LAUNCH();
  };
  lab::BenchmarkOptions idle = lab::measure_until(20, 0.1, 0.02, 1.0);
  idle.lead_in_us = 0;  // no lead-in: like cupyx, the events also hold the launch latency
  idle.warmup_ms = 5;
  const lab::Measurement one = lab::benchmark(tiny, s, idle);
  lab::BenchmarkOptions hot = idle;  // back to back: how many calls per second the pair sustains
  hot.mode = lab::Mode::Hot;
  hot.lead_in_us = 20;
  const lab::Measurement back_to_back = lab::benchmark(tiny, s, hot);
  const double cpu = one.enqueue_us, gpu = one.gpu_ms.median * 1e3;
  const double b2b = back_to_back.gpu_ms.median * 1e3;

  l.note("");
  l.note("CPU time and GPU time of one call (the two numbers cupyx.profiler.benchmark prints):");
  l.note(lab::text(
      "  tiny add, %zu floats   CPU %7.1f us   GPU %7.1f us (events, idle stream)   back to "
      "back: %.1f us per call",
      kTiny, cpu, gpu, b2b));
  l.note(b2b < 1.5 * cpu
             ? "    launch-bound: back to back a call costs about what the CPU needs to issue it; "
               "the GPU waits for the CPU. Batch, fuse or use graphs (lessons 06, 09)."
             : "    back to back the GPU, not the CPU, sets the pace even for this call.");
  l.metric("tiny_cpu_us", cpu, cpu, cpu, "us");
  l.metric("tiny_gpu_us", gpu, one.gpu_ms.q1 * 1e3, one.gpu_ms.q3 * 1e3, "us");
  l.metric("tiny_back_to_back_us", b2b, b2b, b2b, "us");
  if (big) {
    const double bcpu = big->enqueue_us, bgpu = big->gpu_ms.median * 1e3;
    l.note(lab::text("  big add, %zu floats  CPU %7.1f us   GPU %7.1f us", d.n(), bcpu, bgpu));
    l.note(
        lab::text("    GPU-bound: the GPU works %.0fx longer than the CPU needs to issue the call; "
                  "the CPU is free %.1f%% of the time.",
                  bgpu / bcpu, 100 * (1 - bcpu / bgpu)));
    l.metric("big_cpu_us", bcpu, bcpu, bcpu, "us");
  }
}

// The pipeline end to end, phase by phase, next to a CPU doing the same add.
void breakdown(lab::Lesson& l, const VectorAdd& d, double create_ms, double pin_ms,
               const lab::Measurement* in, const lab::Measurement* k, const lab::Measurement* out) {
  if (!in || !k || !out) return;
  const std::size_t n = d.n();
  const double mib = n * sizeof(float) / double(1 << 20);
  const double bytes = n * sizeof(float);
  const lab::Ceilings& c = l.ceilings();
  const double copy_in = in->gpu_ms.median, kernel = k->gpu_ms.median,
               copy_out = out->gpu_ms.median;

  // The CPU reference: one core, the loop a compiler vectorizes. Median of 3, host clock.
  std::vector<float> cpu_c(n);
  const float *ha = d.host_a(), *hb = d.host_b();
  std::vector<double> cpu_ms;
  for (int rep = 0; rep < 3; ++rep) {
    lab::HostTimer timer;
    for (std::size_t i = 0; i < n; ++i) cpu_c[i] = ha[i] + hb[i];
    asm volatile("" : : "r"(cpu_c.data()) : "memory");  // the result escapes: the loop must run
    cpu_ms.push_back(timer.elapsed_ms());
  }
  const double cpu = lab::summarize(cpu_ms).median;

  const double gpu = create_ms + copy_in + kernel + copy_out;
  l.note("");
  l.note(lab::text(
      "The vector-add pipeline end to end (%.0f MiB per array; GPU phases: library medians; "
      "create and pin: host clock, once):",
      mib));
  l.note(lab::text("  create    cudaMalloc a, b, c                 %9.2f ms", create_ms));
  l.note(lab::text(
      "  copy-in   a, b host -> device (%5.0f MiB)   %9.2f ms  %7.1f GB/s = %3.0f%% of the pinned "
      "H2D ceiling",
      2 * mib, copy_in, 2 * bytes / (copy_in * 1e6),
      100 * 2 * bytes / (copy_in * 1e6) / c.h2d_pinned_gbs));
  l.note(lab::text(
      "  kernel    c = a + b                          %9.3f ms  %7.1f GB/s = %3.0f%% of the copy "
      "ceiling",
      kernel, 3 * bytes / (kernel * 1e6), 100 * 3 * bytes / (kernel * 1e6) / c.copy_gbs));
  l.note(lab::text(
      "  copy-out  c device -> host (%5.0f MiB)      %9.2f ms  %7.1f GB/s = %3.0f%% of the pinned "
      "D2H ceiling",
      mib, copy_out, bytes / (copy_out * 1e6), 100 * bytes / (copy_out * 1e6) / c.d2h_pinned_gbs));
  l.note(lab::text(
      "  GPU end to end                               %9.2f ms  (the kernel is %.1f%% of it)", gpu,
      100 * kernel / gpu));
  l.note(lab::text("  CPU c = a + b, one core (median of 3)        %9.2f ms", cpu));
  l.note(
      lab::text("  => end to end the %s is %.1fx faster; counting the pinning of a, b, c too "
                "(cudaMallocHost, %.0f ms) the GPU takes %.1f ms, and the %s wins",
                cpu < gpu ? "CPU" : "GPU", cpu < gpu ? gpu / cpu : cpu / gpu, pin_ms, gpu + pin_ms,
                cpu < gpu + pin_ms ? "CPU" : "GPU"));
  l.metric("kernel_fraction_of_copy", 3 * bytes / (kernel * 1e6) / c.copy_gbs,
           3 * bytes / (k->gpu_ms.q3 * 1e6) / c.copy_gbs,
           3 * bytes / (k->gpu_ms.q1 * 1e6) / c.copy_gbs);
  l.metric("gpu_end_to_end_ms", gpu, gpu, gpu, "ms");
  l.metric("cpu_add_ms", cpu, lab::summarize(cpu_ms).min, lab::summarize(cpu_ms).max, "ms");
  l.metric("create_ms", create_ms, create_ms, create_ms, "ms");
  l.metric("pin_ms", pin_ms, pin_ms, pin_ms, "ms");
}

// What the library's variants time: the three phases of the big problem, and its size.
struct Phases {
  l02::Pipeline pipeline;
  std::size_t n;
  double bytes() const { return n * sizeof(float); }
};

void add_variants(lab::Variants<Phases>& variants) {
  // A 1% median is plenty for a 25% rule (and transfers over PCIe are a little noisier than
  // kernels).
  const lab::BenchmarkOptions o = lab::median_within(0.01);
  variants.add({"copy_in", lab::Role::Reference,
                "the library's measurement of copy-in: a and b, pinned host -> device",
                [](Phases& p, cudaStream_t s) { p.pipeline.copy_in(s); },
                [](const Phases& p) { return lab::Work{2 * p.bytes(), 0, /*host_link=*/true}; },
                0, lab::Pacing::Device, o});
  variants.add({"kernel", lab::Role::Reference, "the library's measurement of the kernel c = a + b",
                [](Phases& p, cudaStream_t s) { p.pipeline.kernel(s); },
                [](const Phases& p) { return lab::Work{3 * p.bytes(), double(p.n)}; },
                0, lab::Pacing::Device, o});
  variants.add({"copy_out", lab::Role::Reference,
                "the library's measurement of copy-out: c, device -> pinned host",
                [](Phases& p, cudaStream_t s) { p.pipeline.copy_out(s); },
                [](const Phases& p) { return lab::Work{p.bytes(), 0, /*host_link=*/true}; },
                0, lab::Pacing::Device, o});
  // Judged on what it reports: the harness calls it (lab::TimerRounds), it does not time it.
  variants.add({"exercise", lab::Role::Exercise,
                "your RegionTimer and time_phases (exercise.cu): c must be right after each call"});
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("02-cuda-events",
                     "CUDA events: timing a region on a stream without stopping the world");
  lab::Variants<Phases> variants(lesson);
  add_variants(variants);
  long long mib = 0;
  lesson.option("--mib", &mib,
                "MiB per array (0: between 384 and 639 picked by the seed, or 16 with --quick)");
  long long calls = 0;
  lesson.option("--calls", &calls, "calls of your time_phases per round", 9, 2);
  long long demos = 1;
  lesson.option("--demos", &demos, "1: also the demonstrations under the table; 0: not");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    // The size follows the seed (the checker picks a fresh one each run), so phase times
    // remembered from an earlier run cannot pass for measured ones.
    if (mib <= 0) mib = l.quick() ? 16 : 384 + static_cast<long long>(l.seed() % 256);
    const std::size_t n = static_cast<std::size_t>(mib) << 18;  // floats: 2^20 B / 4 B
    const cudaStream_t stream = l.stream();
    // The unrelated work's stream: an ordinary (blocking) stream, like the lesson's own.
    lab::Stream other;

    double create_ms = 0, pin_ms = 0;
    const VectorAdd big(n, l.seed(), stream, &create_ms, &pin_ms);
    const VectorAdd odd(kOddN, l.seed() + 1, stream);
    l.size(lab::text(
        "c = a + b on %zu floats: %lld MiB per array; copy-in %lld MiB, copy-out %lld MiB, "
        "pinned host memory",
        n, mib, 2 * mib, mib));
    l.size(lab::text("validated at %zu floats (every element) and at the timing size (%s)", kOddN,
                     big.checked().c_str()));

    // 1. The harness's pipeline is right at the odd size.
    const lab::Comparison odd_ok = run_pipeline(odd, stream);
    for (const std::string& v : kPhaseNames) l.check(v, lab::text("%zu floats", kOddN), odd_ok);

    // 2. The library measures each phase.
    Phases phases{big.pipeline(), n};
    const l02::Pipeline& p = phases.pipeline;
    for (const std::string& v : kPhaseNames) variants.measure(variants[v], phases);
    const lab::Comparison after = run_pipeline(big, stream);
    for (const std::string& v : kPhaseNames) l.check(v, "after timing, " + big.checked(), after);

    // How long the other stream stays busy: well past the whole pipeline, so a timer that does
    // not wait returns long before it ends.
    const double busy_ms = lab::outlasting_ms({p.copy_in, p.kernel, p.copy_out}, stream,
                                              kMaxDelayMs, l.quick() ? 20.0 : 100.0);

    // 3. Yours: three rounds (see the top of this file), each call on new work (next_call).
    lab::TimerRounds yours(l, "exercise", "time_phases", stream, other, your_times);
    if (l.selected("exercise")) {
      yours.call(next_call(l, odd), lab::text("%zu floats", kOddN));
      const auto on_big = [&] { return next_call(l, big); };
      // One call with the other stream busy, for nsys. The capture also holds the harness's wait
      // for the other stream after the call, so the spin kernel ends inside it.
      if (l.profiling())
        return yours.profiled_call(on_big, "profiled call, other stream busy",
                                   lab::TimerSetup::other_stream_busy(busy_ms));
      const lab::TimerRound alone =
          yours.round("exercise: alone", "alone", calls, lab::TimerSetup::alone(), on_big);
      const lab::TimerRound busy =
          yours.round("exercise: other stream busy", "other stream busy", calls,
                      lab::TimerSetup::other_stream_busy(busy_ms), on_big);
      // Last, so the earlier rounds' calls stay where they were (waits_sometimes counts them).
      const lab::TimerRound queued =
          yours.round("exercise: work queued on its stream", "work queued", calls,
                      lab::TimerSetup::work_queued(kQueuedMs), on_big);

      // Your medians next to the reference's (the harness's events right after each call), and
      // the error the rules judge: per call, then the median over the round.
      lab::metric(l, "phase_error", alone.worst_error());
      lab::metric(l, "busy_phase_error", busy.worst_error());
      lab::metric(l, "queued_phase_error", queued.worst_error());
      l.note(lab::text("Your time_phases, median of %lld calls per round / the harness's events "
                       "around the same phases right after each call (median of the per-call "
                       "errors; each call's kernel phase began with a wait of its own, 0.2-%.0f "
                       "ms):",
                       calls, kMaxDelayMs));
      l.note("  alone:     " + alone.medians(kPhaseNames));
      l.note("  busy:      " + busy.medians(kPhaseNames) +
             lab::text("(another stream ran a %.0f ms kernel)", busy_ms));
      l.note("  queued:    " + queued.medians(kPhaseNames) +
             lab::text("(%.0f ms of work queued on your stream before each call)", kQueuedMs));
      yours.record_other_stream(busy, alone);
      yours.record_queued(queued, kPhaseNames[0]);
    }
    if (l.profiling() || !demos) return;

    // 4. Demonstrations.
    event_floor(l, stream, l.selected("exercise"));
    const lab::Measurement* kernel = variants.measurement("kernel");
    events_vs_host(l, p, stream, other, kernel, busy_ms);
    cpu_vs_gpu(l, big, stream, kernel);
    breakdown(l, big, create_ms, pin_ms, variants.measurement("copy_in"), kernel,
              variants.measurement("copy_out"));
  });
}
