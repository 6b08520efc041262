// lab::benchmark: the measurement procedure of the course (see docs/measurement.md for why each
// step is there, with the numbers measured on the H100).
#include <cuda_profiler_api.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nvtx3/nvtx3.hpp>
#include <sstream>

#include "lab/data.hpp"
#include "lab/device.hpp"
#include "lab/timing.hpp"

namespace lab {
namespace {

__device__ long long global_ns() {
  long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread spins for `ns` nanoseconds. If `probe` is given it receives the SM clock ticks and
// nanoseconds that passed: the SM clock right before the measured launch (nvbench's method).
__global__ void spin_kernel(long long ns, long long* probe) {
  const long long t0 = global_ns();
  const long long c0 = clock64();
  long long t = t0;
  while (t - t0 < ns) t = global_ns();
  if (probe) {
    probe[0] = clock64() - c0;
    probe[1] = t - t0;
  }
}

// The L2 flush buffer: twice the L2 size, allocated once per process.
const DeviceBuffer<char>& flush_buffer() {
  static const DeviceBuffer<char> buffer(2 * device_info().l2_bytes);
  return buffer;
}

std::string percent(double x) {
  std::ostringstream out;
  out.precision(2);
  out << std::fixed << 100.0 * x << "%";
  return out.str();
}

}  // namespace

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::Cold: return "cold";
    case Mode::Hot: return "hot";
    case Mode::Graph: return "graph";
  }
  return "?";
}

void spin(double microseconds, cudaStream_t stream, long long* clock_probe) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<long long>(microseconds * 1e3), clock_probe);
  LAB_CHECK_LAUNCH();
}

Measurement benchmark(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                      const BenchmarkOptions& options) {
  const DeviceInfo& device = device_info();
  Measurement result;
  result.mode = options.mode;

  constexpr int kProbeSlots = 8192;
  DeviceBuffer<long long> probes(2 * kProbeSlots);
  Event start, stop;
  double lead_in_us = options.lead_in_us;
  int batch = 1;
  cudaGraphExec_t graph_exec = nullptr;
  // Frees the graph however we leave (a student's launch may throw).
  auto graph_guard = std::unique_ptr<cudaGraphExec_t, void (*)(cudaGraphExec_t*)>(
      &graph_exec, [](cudaGraphExec_t* g) {
        if (*g) cudaGraphExecDestroy(*g);
      });

  // One sample: returns GPU ms for the whole sample and host us spent enqueueing.
  auto sample = [&](int slot, bool batched, double& gpu_ms, double& enqueue_us) {
    if (options.before_sample) options.before_sample(stream, slot);
    if (options.mode == Mode::Cold) {
      const auto& flush = flush_buffer();
      LAB_CHECK(cudaMemsetAsync(flush.data(), slot & 0xff, flush.bytes(), stream));
    }
    LAB_CHECK(cudaStreamSynchronize(stream));
    if (lead_in_us > 0)
      spin(lead_in_us, stream, slot >= 0 && slot < kProbeSlots ? probes.data() + 2 * slot : nullptr);
    start.record(stream);
    HostTimer host;
    if (batched && graph_exec) {
      LAB_CHECK(cudaGraphLaunch(graph_exec, stream));
    } else {
      for (int i = 0; i < (batched ? batch : 1); ++i) launch(stream);
    }
    enqueue_us = host.elapsed_ms() * 1e3;
    LAB_CHECK(cudaGetLastError());  // a bad launch configuration is reported here, by name
    stop.record(stream);
    gpu_ms = elapsed_ms(start, stop);
    if (options.after_sample) options.after_sample(stream, slot);
  };

  // Warm-up: the full procedure, untimed, until both minimums are met. Covers lazy module
  // loading (a kernel's first launch is 10-30x slower), clock ramp-up and the lead-in's own load.
  {
    nvtx3::scoped_range range{"warmup"};
    HostTimer wall;
    std::vector<double> single_ms;
    double max_enqueue_us = 0;
    for (int i = 0; i < options.warmup_runs || wall.elapsed_ms() < options.warmup_ms; ++i) {
      double ms, us;
      sample(-1, false, ms, us);
      single_ms.push_back(ms);
      if (i > 0) max_enqueue_us = std::max(max_enqueue_us, us);  // the first includes loading
      if (wall.elapsed_ms() > 1e3 * options.timeout_s) break;
    }
    // A slow enqueue (many launches, host work) would start the clock before the GPU is busy.
    if (lead_in_us > 0 && max_enqueue_us > lead_in_us / 2) {
      lead_in_us = std::min(2 * max_enqueue_us, 1000.0);
      result.diagnostics.push_back("slow enqueue (" + std::to_string(int(max_enqueue_us)) +
                                   " us): lead-in raised to " + std::to_string(int(lead_in_us)) +
                                   " us");
    }
    if (options.mode != Mode::Cold) {
      const double single = summarize(single_ms).median;
      batch = static_cast<int>(std::ceil(options.min_batch_ms / std::max(single, 1e-4)));
      batch = std::clamp(batch, 1, options.max_batch);
      if (options.mode == Mode::Graph) {
        cudaGraph_t graph;
        LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < batch; ++i) launch(stream);
        LAB_CHECK(cudaStreamEndCapture(stream, &graph));
        LAB_CHECK(cudaGraphInstantiate(&graph_exec, graph, 0));
        LAB_CHECK(cudaGraphDestroy(graph));
      }
      double ms, us;
      sample(-1, true, ms, us);  // warm the batched path too
    }
  }
  result.batch = batch;

  // Samples until the median is pinned down or the time is up.
  nvtx3::scoped_range range{"measure"};
  std::vector<double> samples_ms, enqueue_us;
  HostTimer wall;
  double total_ms = 0;
  while (true) {
    double ms, us;
    sample(static_cast<int>(samples_ms.size()), options.mode != Mode::Cold, ms, us);
    samples_ms.push_back(ms / batch);
    enqueue_us.push_back(us / batch);
    total_ms += ms;
    const std::size_t n = samples_ms.size();
    if (n >= options.stop.min_samples && n % 5 == 0) {
      // The minimum time counts GPU time actually spent: whole batches, not per-launch times.
      if (converged(options.stop, summarize(samples_ms), total_ms)) {
        result.converged = true;
        break;
      }
    }
    if (wall.elapsed_ms() > 1e3 * options.timeout_s) break;
  }

  // The clock probe of each sample: drop samples taken with the SM clock below 75% of its default.
  std::vector<double> kept;
  if (lead_in_us > 0 && device.sm_clock_mhz > 0) {
    std::vector<long long> host(probes.size());
    LAB_CHECK(cudaMemcpy(host.data(), probes.data(), probes.bytes(), cudaMemcpyDeviceToHost));
    std::vector<double> clocks;
    for (std::size_t i = 0; i < samples_ms.size(); ++i) {
      double mhz = 0;
      if (i < kProbeSlots && host[2 * i + 1] > 0)
        mhz = 1e3 * static_cast<double>(host[2 * i]) / static_cast<double>(host[2 * i + 1]);
      if (mhz > 0) clocks.push_back(mhz);
      if (mhz > 0 && mhz < 0.75 * device.sm_clock_mhz)
        ++result.discarded_throttled;
      else
        kept.push_back(samples_ms[i]);
    }
    result.sm_clock_mhz = summarize(clocks).median;
  } else {
    kept = samples_ms;
  }
  if (kept.empty()) kept = samples_ms;  // every sample throttled: report them, flagged below
  result.gpu_ms = summarize(kept);
  result.enqueue_us = summarize(enqueue_us).median;

  const Stats& t = result.gpu_ms;
  if (!result.converged)
    result.diagnostics.push_back("not converged: after " + std::to_string(t.n) +
                                 " samples the median is known to +-" +
                                 percent(t.median_halfwidth() / t.median) + " (target " +
                                 percent(options.stop.target_precision) + ")");
  if (result.discarded_throttled > 0)
    result.diagnostics.push_back(std::to_string(result.discarded_throttled) +
                                 " samples dropped: SM clock below 75% of its default");
  if (result.sm_clock_mhz > 0 && result.sm_clock_mhz < 0.9 * device.sm_clock_mhz)
    result.diagnostics.push_back("throttled: SM clock " + std::to_string(int(result.sm_clock_mhz)) +
                                 " MHz, default " + std::to_string(device.sm_clock_mhz) + " MHz");
  if (options.mode != Mode::Cold && options.working_set_bytes > 0 &&
      options.working_set_bytes < 2.0 * device.l2_bytes)
    result.diagnostics.push_back(std::string(to_string(options.mode)) +
                                 " mode with a working set that fits in L2: it may exceed the "
                                 "DRAM bandwidth");
  if (result.enqueue_us > 50 && result.enqueue_us > 0.5 * t.median * 1e3)
    result.diagnostics.push_back("the launch call takes " + std::to_string(int(result.enqueue_us)) +
                                 " us of host time for " + std::to_string(int(t.median * 1e3)) +
                                 " us of GPU time: does it synchronize, allocate or copy "
                                 "pageable memory?");
  return result;
}

void profile_once(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                  const std::string& name) {
  launch(stream);  // warm-up: module loading stays out of the profile
  LAB_CHECK(cudaStreamSynchronize(stream));
  nvtx3::scoped_range range{name};
  LAB_CHECK(cudaProfilerStart());
  launch(stream);
  LAB_CHECK(cudaGetLastError());
  LAB_CHECK(cudaStreamSynchronize(stream));
  LAB_CHECK(cudaProfilerStop());
}

namespace {

__global__ void fill_random_kernel(float* out, std::size_t n, std::uint64_t seed, float lo,
                                   float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __fadd_rn(lo, __fmul_rn(hi - lo, uniform01(seed, i)));  // no FMA: match the host
}

}  // namespace

void poison(void* ptr, std::size_t bytes, cudaStream_t stream) {
  LAB_CHECK(cudaMemsetAsync(ptr, 0xff, bytes, stream));
}

void fill_random(float* ptr, std::size_t n, std::uint64_t seed, cudaStream_t stream, float lo,
                 float hi) {
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<std::size_t>((n + 255) / 256, 8192));
  fill_random_kernel<<<blocks, 256, 0, stream>>>(ptr, n, seed, lo, hi);
  LAB_CHECK_LAUNCH();
}

}  // namespace lab
