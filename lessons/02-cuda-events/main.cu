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
#include <cuda_profiler_api.h>
#include <nvtx3/nvtx3.hpp>

#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr std::size_t kOddN = 1'000'003;  // validation size: not a multiple of the block size
constexpr int kBlock = 256;

// The queued round: work on your own stream before each call (a one-thread spin). Long enough
// that no host can miss it (time_phases reaches its first phase microseconds after it is
// called; a grading machine may stall a process for milliseconds, not for 50), short so that the
// round (9 calls, each also running the pipeline twice) costs about a second.
constexpr double kQueuedMs = 50;

std::string time_text(double ms) {
  if (ms >= 1.0) return lab::text("%.2f ms", ms);
  return lab::text("%.1f us", ms * 1e3);
}

__global__ void vector_add(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// ---------------------------------------------------------------------------------------------
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
    const std::size_t step = n <= (2u << 20) ? 1 : n / 65536;
    for (std::size_t i = 0; i < n; i += step) positions_.push_back(i);
    for (std::size_t i = n > 4096 ? n - 4096 : 0; i < n; ++i)
      if (i % step != 0) positions_.push_back(i);
    for (std::size_t i : positions_) expected_.push_back(ha_[i] + hb_[i]);
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
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (std::size_t i : positions_) hc_[i] = nan;
  }

  // After a run (and a wait): the checked elements of c on the host against a + b.
  lab::Comparison check() const {
    std::vector<float> got;
    got.reserve(positions_.size());
    for (std::size_t i : positions_) got.push_back(hc_[i]);
    return lab::allclose(got, expected_, {1e-6, 0.0});  // one float add: exact, up to rounding
  }

  std::string checked() const {
    return positions_.size() == n_ ? "every element"
                                   : std::to_string(positions_.size()) + " elements incl. the tail";
  }

 private:
  std::size_t n_;
  lab::DeviceBuffer<float> a_, b_, c_;
  lab::PinnedBuffer<float> ha_, hb_, hc_;
  std::vector<std::size_t> positions_;
  std::vector<float> expected_;
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

// ---------------------------------------------------------------------------------------------
// Comparing your numbers with the library's.

double median_of(std::vector<double> v) { return lab::summarize(std::move(v)).median; }

// How far off a round's times of one phase are: the median over the calls of each call's
// |error|, with the median's 95% order-statistic interval (lab::summarize): for 9 calls the 2nd
// and 8th smallest (96%), so one call that the link slowed by chance does not make the reading
// ambiguous. Each call's own error counts, not the median of the signed errors: a constant near
// the typical time would pass that, though each call's kernel phase has a length of its own.
lab::Reading median_error(const std::vector<double>& e) {
  std::vector<double> size;
  for (const double x : e) size.push_back(std::fabs(x));
  const lab::Stats s = lab::summarize(size);
  return lab::absolute_error(s.median, s.median_low, s.median_high);
}

// The kernel phase of each call of yours begins with a wait on the GPU (lab::spin) of a length
// drawn from entropy just before the call, log-uniform from 0.2 to 20 ms: only a measurement can
// know a phase's time, so no number your code holds beforehand passes for one (a constant is
// within 25% of one call's kernel phase about one time in seven, of five calls in nine about one
// time in two hundred, in each of the three rounds).
constexpr double kMinDelayMs = 0.2, kMaxDelayMs = 20;

const char* const kPhaseNames[3] = {"copy_in", "kernel", "copy_out"};

double phase_ms(const l02::PhaseTimes& t, int phase) {
  return phase == 0 ? t.copy_in_ms : phase == 1 ? t.kernel_ms : t.copy_out_ms;
}

// One call of your time_phases: what it reported, how long it took on the host clock, whether
// the other stream's kernel was still running when it returned, whether the work queued on your
// stream had finished when it enqueued copy_in, and the harness's own times of the same phases
// right after it.
struct Call {
  l02::PhaseTimes times;
  l02::PhaseTimes reference;
  double host_ms = 0;
  bool other_still_busy = false;
  bool waited_at_start = false;
};

// The answer of cudaStreamQuery or cudaEventQuery: finished, or not yet ("not ready" is an
// answer, not an error).
bool finished(cudaError_t query) {
  if (query == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  LAB_CHECK(query);
  return true;
}

// The pipeline once more, each phase timed by the harness (lab::BetweenCalls: between events of
// its own, behind a short spin so that no launch latency falls inside a phase, and waited for).
// Run right after each of your calls, on the same data and stream, with the other stream as busy
// as it was: your times are compared with these, call by call, so a drift of the copies' speed
// over the program (the pinned link read 45 instead of 55 GB/s for a whole round once on the
// H100) moves both alike.
l02::PhaseTimes reference_phases(const l02::Pipeline& p, cudaStream_t s) {
  lab::BetweenCalls phases({[&p](cudaStream_t st) { p.copy_in(st); },
                            [&p](cudaStream_t st) { p.kernel(st); },
                            [&p](cudaStream_t st) { p.copy_out(st); }});
  const std::vector<double> ms = phases.time(s);
  l02::PhaseTimes t;
  t.copy_in_ms = static_cast<float>(ms[0]);
  t.kernel_ms = static_cast<float>(ms[1]);
  t.copy_out_ms = static_cast<float>(ms[2]);
  return t;
}

struct Round {
  std::vector<Call> calls;
  // The median over the calls of your time of one phase (or of the reference's).
  double median_ms(int phase, l02::PhaseTimes Call::*which = &Call::times) const {
    std::vector<double> v;
    for (const Call& c : calls) v.push_back(phase_ms(c.*which, phase));
    return median_of(v);
  }
  // yours / reference - 1 for one phase, call by call (a time that is not a finite positive
  // number counts as 0: an error of -100%).
  std::vector<double> errors(int phase) const {
    std::vector<double> e;
    for (const Call& c : calls) {
      const double yours = phase_ms(c.times, phase), ref = phase_ms(c.reference, phase);
      e.push_back((std::isfinite(yours) && yours > 0 ? yours : 0) / ref - 1);
    }
    return e;
  }
  double median_host_ms() const {
    std::vector<double> v;
    for (const Call& c : calls) v.push_back(c.host_ms);
    return median_of(v);
  }
  // In how many calls `flag` was set.
  int count(bool Call::*flag) const {
    int k = 0;
    for (const Call& c : calls) k += c.*flag;
    return k;
  }
};

class Student {
 public:
  Student(lab::Lesson& l, cudaStream_t other) : l_(l), other_(other) {
    LAB_CHECK(cudaEventCreateWithFlags(&queued_, cudaEventDisableTiming));  // asked, never timed
  }
  ~Student() { cudaEventDestroy(queued_); }
  Student(const Student&) = delete;
  Student& operator=(const Student&) = delete;

  // Poisons, optionally starts the unrelated kernel on the other stream or queues queued_ms of
  // work on your stream, calls your time_phases, notes whether the other stream is still busy,
  // validates c, and, with_reference, times the same phases with the harness's events (not in
  // the profiled call: the capture would hold them).
  Call call(const VectorAdd& d, const std::string& case_name, double busy_ms,
            bool with_reference = false, double queued_ms = 0) {
    const cudaStream_t s = l_.stream();
    d.poison(s);
    if (busy_ms > 0) lab::spin(busy_ms * 1e3, other_);
    Call c;
    const double delay_ms = lab::fresh_log_uniform(kMinDelayMs, kMaxDelayMs);
    try {
      l02::Pipeline pipeline = d.pipeline(delay_ms);
      asked_ = false;
      if (queued_ms > 0) {
        // Your stream is busy when your first timer starts. copy_in first asks whether that work
        // has finished: if it has, something in time_phases before its first phase waited for
        // the stream (or the device). An error of yours not checked so far is kept aside, so
        // that clearing "not ready" does not hide it.
        lab::spin(queued_ms * 1e3, s);
        LAB_CHECK(cudaEventRecord(queued_, s));
        pipeline.copy_in = [this, copy_in = pipeline.copy_in](cudaStream_t st) {
          if (!asked_) {
            asked_ = true;
            earlier_error_ = cudaGetLastError();
            queued_done_ = finished(cudaEventQuery(queued_));
          }
          copy_in(st);
        };
      }
      lab::HostTimer wall;
      {
        // Exactly your call, for nsys (nvtx_sum): its host time is how long your timer waited.
        nvtx3::scoped_range range{busy_ms > 0     ? "time_phases, other stream busy"
                                  : queued_ms > 0 ? "time_phases, work queued on its stream"
                                                  : "time_phases"};
        c.times = l02::time_phases(pipeline, s);
      }
      c.host_ms = wall.elapsed_ms();
      cudaError_t unchecked = cudaGetLastError();  // an error in your code nobody checked
      if (asked_) {
        if (unchecked == cudaSuccess) unchecked = earlier_error_;
        c.waited_at_start = queued_done_;
      }
      if (busy_ms > 0) c.other_still_busy = !finished(cudaStreamQuery(other_));
      lab::check(unchecked, "an earlier CUDA call in time_phases (its error was not checked)",
                 __FILE__, __LINE__);
      LAB_CHECK(cudaStreamSynchronize(s));
    } catch (const std::exception& e) {
      l_.check("exercise", case_name, false,
               std::string("time_phases stopped with an error: ") + e.what());
      throw;  // the context may be broken: the harness stops here and reports
    }
    const lab::Comparison cmp = d.check();
    l_.check("exercise", case_name + ", " + d.checked(), cmp.ok,
             "c is wrong after time_phases (did it run copy_in, kernel and copy_out once each, "
             "in this order, on the stream it was given?): " +
                 cmp.summary());
    if (with_reference) c.reference = reference_phases(d.pipeline(delay_ms), s);
    LAB_CHECK(cudaDeviceSynchronize());  // the other stream's kernel, before the next call
    return c;
  }

 private:
  lab::Lesson& l_;
  cudaStream_t other_;
  cudaEvent_t queued_ = nullptr;  // recorded right after the queued work on your stream
  // What copy_in's first call in the queued round saw (set inside your time_phases).
  bool asked_ = false, queued_done_ = false;
  cudaError_t earlier_error_ = cudaSuccess;
};

// ---------------------------------------------------------------------------------------------
// The demonstrations printed under the table.

// Empty event pairs, back to back: the floor of an event measurement and its resolution.
void event_floor(lab::Lesson& l, cudaStream_t s) {
  lab::Event start, stop;
  std::vector<double> ns;
  for (int i = 0; i < 501; ++i) {
    start.record(s);
    stop.record(s);
    ns.push_back(1e6 * lab::elapsed_ms(start, stop));
  }
  const lab::Stats t = lab::summarize(ns);
  std::sort(ns.begin(), ns.end());
  double step = 0;
  int distinct = 1;
  for (std::size_t i = 1; i < ns.size(); ++i) {
    const double gap = ns[i] - ns[i - 1];
    if (gap > 0.5) {  // float rounding of the milliseconds is far below 0.5 ns
      ++distinct;
      step = step == 0 ? gap : std::min(step, gap);
    }
  }
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
}

// Your RegionTimer around nothing: its own floor.
void student_floor(lab::Lesson& l, cudaStream_t s) {
  std::vector<double> us;
  for (int i = 0; i < 51; ++i) {
    float ms = 0;
    { l02::RegionTimer timer(s, &ms); }
    us.push_back(ms * 1e3);
  }
  const double median = median_of(us);
  l.note(lab::text("  your RegionTimer around an empty region: median %.3f us of 51", median));
  l.metric("your_empty_region_us", median, median, median, "us");
}

// The kernel phase three ways: the library, events around the launch on an idle stream, a host
// clock with a stream synchronize. Then, with the other stream busy, a host clock with a device
// synchronize next to events in the same run.
void events_vs_host(lab::Lesson& l, const l02::Pipeline& p, cudaStream_t s, cudaStream_t other,
                    const lab::Measurement* kernel, double busy_ms) {
  std::vector<double> events, host;
  for (int i = 0; i < 21; ++i) {
    lab::EventTimer timer(s);
    timer.start();
    p.kernel(s);
    timer.stop();
    events.push_back(timer.elapsed_ms());
  }
  for (int i = 0; i < 21; ++i) {
    lab::HostTimer host_timer;
    p.kernel(s);
    LAB_CHECK(cudaStreamSynchronize(s));
    host.push_back(host_timer.elapsed_ms());
  }
  const double ev = median_of(events), ho = median_of(host);
  l.note("");
  l.note("The kernel phase, timed three ways (medians of 21):");
  if (kernel)
    l.note(lab::text("  library (a 20 us lead-in keeps the stream busy)   %s",
                     time_text(kernel->gpu_ms.median).c_str()));
  l.note(
      lab::text("  events around the launch, idle stream             %s", time_text(ev).c_str()));
  l.note(lab::text(
      "  host clock + cudaStreamSynchronize                %s  (%+.1f us: launch call and "
      "the wake-up after the sync)",
      time_text(ho).c_str(), (ho - ev) * 1e3));
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
                busy_ms, time_text(device_sync).c_str(), time_text(same_run).c_str()));
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
  const double cpu = median_of(cpu_ms);

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
                [](const Phases& p) {
                  return lab::Work{2 * p.bytes(), 0, /*host_link=*/true};
                },
                0, lab::Pacing::Device, o});
  variants.add({"kernel", lab::Role::Reference, "the library's measurement of the kernel c = a + b",
                [](Phases& p, cudaStream_t s) { p.pipeline.kernel(s); },
                [](const Phases& p) {
                  return lab::Work{3 * p.bytes(), double(p.n)};
                },
                0, lab::Pacing::Device, o});
  variants.add({"copy_out", lab::Role::Reference,
                "the library's measurement of copy-out: c, device -> pinned host",
                [](Phases& p, cudaStream_t s) { p.pipeline.copy_out(s); },
                [](const Phases& p) {
                  return lab::Work{p.bytes(), 0, /*host_link=*/true};
                },
                0, lab::Pacing::Device, o});
  // Judged on what it reports: the harness calls it (Student), it does not time it.
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
    for (const char* v : kPhaseNames) l.check(v, lab::text("%zu floats", kOddN), odd_ok);

    // 2. The library measures each phase.
    Phases phases{big.pipeline(), n};
    const l02::Pipeline& p = phases.pipeline;
    std::optional<lab::Measurement> library[3];
    for (int i = 0; i < 3; ++i) {
      const auto& v = variants[kPhaseNames[i]];
      if (l.selected(v.name))
        if (const lab::Measurement* m = variants.measure(v, phases)) library[i] = *m;
    }
    const lab::Comparison after = run_pipeline(big, stream);
    for (const char* v : kPhaseNames) l.check(v, "after timing, " + big.checked(), after);

    // How long the other stream stays busy: well past the whole pipeline, so a timer that does
    // not wait returns long before it ends.
    lab::EventTimer estimate(stream);
    estimate.start();
    p.copy_in(stream);
    p.kernel(stream);
    p.copy_out(stream);
    estimate.stop();
    const double busy_ms =
        std::max(l.quick() ? 20.0 : 100.0, 4.0 * (estimate.elapsed_ms() + kMaxDelayMs) + 20.0);

    // 3. Yours.
    Student student(l, other);
    if (l.selected("exercise")) {
      student.call(odd, lab::text("%zu floats", kOddN), 0);
      if (l.profiling()) {
        // One call with the other stream busy, for nsys. The capture also holds the harness's
        // wait for the other stream after the call, so the spin kernel ends inside it.
        LAB_CHECK(cudaProfilerStart());
        student.call(big, "profiled call, other stream busy", busy_ms);
        LAB_CHECK(cudaProfilerStop());
        return;
      }
      Round alone, busy, queued;
      {
        nvtx3::scoped_range range{"exercise: alone"};
        for (long long k = 0; k < calls; ++k)
          alone.calls.push_back(
              student.call(big, lab::text("alone, call %lld", k + 1), 0, /*with_reference=*/true));
      }
      {
        nvtx3::scoped_range range{"exercise: other stream busy"};
        for (long long k = 0; k < calls; ++k)
          busy.calls.push_back(
              student.call(big, lab::text("other stream busy, call %lld", k + 1), busy_ms,
                           /*with_reference=*/true));
      }
      {
        // Last, so the earlier rounds' calls stay where they were (waits_sometimes counts them).
        nvtx3::scoped_range range{"exercise: work queued on its stream"};
        for (long long k = 0; k < calls; ++k)
          queued.calls.push_back(student.call(big, lab::text("work queued, call %lld", k + 1), 0,
                                              /*with_reference=*/true, kQueuedMs));
      }

      // Your medians next to the reference's (the harness's events right after each call), and
      // the error the rules judge: per call, then the median over the round.
      const Round* rounds[3] = {&alone, &busy, &queued};
      const char* const metrics[3] = {"phase_error", "busy_phase_error", "queued_phase_error"};
      std::string line[3] = {"  alone:     ", "  busy:      ", "  queued:    "};
      for (int r = 0; r < 3; ++r) {
        lab::Reading worst;
        for (int i = 0; i < 3; ++i) {
          const std::vector<double> e = rounds[r]->errors(i);
          worst = lab::worst(worst, median_error(e));
          line[r] += lab::text("%s %s / %s (%+.1f%%)  ", kPhaseNames[i],
                               time_text(rounds[r]->median_ms(i)).c_str(),
                               time_text(rounds[r]->median_ms(i, &Call::reference)).c_str(),
                               100 * median_of(e));
        }
        lab::metric(l, metrics[r], worst);
      }
      l.note(lab::text("Your time_phases, median of %lld calls per round / the harness's events "
                       "around the same phases right after each call (median of the per-call "
                       "errors; each call's kernel phase began with a wait of its own, 0.2-%.0f "
                       "ms):",
                       calls, kMaxDelayMs));
      l.note(line[0]);
      l.note(line[1] + lab::text("(another stream ran a %.0f ms kernel)", busy_ms));
      l.note(line[2] +
             lab::text("(%.0f ms of work queued on your stream before each call)", kQueuedMs));
      const int still_busy = busy.count(&Call::other_still_busy);
      const double waited = 1.0 - double(still_busy) / double(calls);
      l.metric("waited_for_other_stream", waited, waited, waited);
      l.note(lab::text(
          "  with the other stream busy, time_phases took %s on the host clock (alone: %s); "
          "the other stream's kernel was still running when it returned in %d of %lld "
          "calls%s",
          time_text(busy.median_host_ms()).c_str(), time_text(alone.median_host_ms()).c_str(),
          still_busy, calls,
          still_busy == calls ? " (good: you did not wait for it)"
                              : " (your timer waited for work that is not yours)"));
      const int waited_first = queued.count(&Call::waited_at_start);
      const double at_start = double(waited_first) / double(calls);
      l.metric("waited_at_start", at_start, at_start, at_start);
      l.note(lab::text(
          "  with work queued on your stream, it had already finished when time_phases enqueued "
          "copy_in in %d of %lld calls%s",
          waited_first, calls,
          waited_first == 0 ? " (good: your timer starts without waiting)"
                            : " (something before the first phase waited for the stream: a "
                              "synchronize in your timer's constructor?)"));
    }
    if (l.profiling() || !demos) return;

    // 4. Demonstrations.
    event_floor(l, stream);
    if (l.selected("exercise")) student_floor(l, stream);
    events_vs_host(l, p, stream, other, library[1] ? &*library[1] : nullptr, busy_ms);
    cpu_vs_gpu(l, big, stream, library[1] ? &*library[1] : nullptr);
    breakdown(l, big, create_ms, pin_ms, library[0] ? &*library[0] : nullptr,
              library[1] ? &*library[1] : nullptr, library[2] ? &*library[2] : nullptr);
  });
}
