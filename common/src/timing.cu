// lab::benchmark: the measurement procedure of the course (see docs/measurement.md for why each
// step is there, with the numbers measured on the H100).
#include <cuda_profiler_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <nvtx3/nvtx3.hpp>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "lab/data.hpp"
#include "lab/device.hpp"
#include "lab/graph.hpp"
#include "lab/timing.hpp"
#include "lab/trace_tag.hpp"
#include "side_streams.hpp"

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

__device__ unsigned sm_id() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Per-SM start of a sample's clock window: written by the lead-in, read by the probe. Indexed by
// %smid, which is below %nsmid (at most a few hundred on any current GPU).
constexpr unsigned kMaxSmIds = 1024;
struct SmStart {
  unsigned long long tag;  // which sample wrote it
  long long clock;         // clock64() when the lead-in started on this SM
  long long ns;            // %globaltimer then
};

}  // namespace

// The kernels that open and close a sample take its TraceTag first, from when the tracer read it
// at their launch (lab/trace_tag.hpp); they do nothing with it, and the tracer now gets the tag
// from trace_edge() below.

// The lead-in of a cold or batched sample: one thread per block, one block per SM, each spinning
// for `ns`, so the stream is busy while the host records the start event and enqueues the work.
// Each block also notes its SM's clock and the global time: the start of the clock window.
extern "C" __global__ void lab_lead_in_kernel(TraceTag, long long ns, SmStart* starts,
                                              unsigned long long tag) {
  const long long t0 = global_ns();
  const long long c0 = clock64();
  const unsigned sm = sm_id();
  if (sm < kMaxSmIds) starts[sm] = SmStart{tag, c0, t0};
  long long t = t0;
  while (t - t0 < ns) t = global_ns();
}

// Right after the stop event: each block pairs its SM's clock with the lead-in's reading on the
// same SM (clock64 is per SM, so only same-SM pairs mean anything) and keeps the highest rate in
// kHz. The highest, because an SM the timed kernel left idle may stop counting; throttling lowers
// the clock of every SM.
extern "C" __global__ void lab_clock_probe_kernel(TraceTag, const SmStart* starts,
                                                  unsigned long long tag, unsigned long long* khz) {
  const long long c1 = clock64();
  const long long t1 = global_ns();
  const unsigned sm = sm_id();
  if (sm >= kMaxSmIds) return;
  const SmStart s = starts[sm];
  if (s.tag != tag || t1 <= s.ns || c1 <= s.clock) return;
  const double rate = 1e6 * static_cast<double>(c1 - s.clock) / static_cast<double>(t1 - s.ns);
  atomicMax(khz, static_cast<unsigned long long>(rate));
}

// Opens and closes a sample that has no lead-in (and so no probe).
extern "C" __global__ void lab_trace_mark_kernel(TraceTag) {}

namespace {

int g_measurements = 0;  // lab::benchmark calls so far: TraceTag::measurement
TraceEdgeFunction g_trace_edge = nullptr;  // the checker's tracer, when it was loaded

// Hands an edge of a sample to the tracer: after the launch of the kernel that opens it, before
// the launch of the one that closes it.
void trace_edge(const TraceTag& tag, cudaStream_t stream) {
  if (g_trace_edge) g_trace_edge(&tag, static_cast<void*>(stream));
}

// The L2 flush: reads every 16 bytes of a buffer twice the L2 size. Reading (unlike a memset)
// leaves only clean lines, so the flush's own data is never written back during the timed kernel;
// dirty lines of the previous sample are written back here, outside the timed window. The loads
// feed a result that is stored only if it equals `key` (never, but the compiler cannot know), so
// they cannot be removed.
__global__ void flush_read_kernel(const uint4* data, std::size_t n, unsigned key, unsigned* sink) {
  unsigned acc = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 v = data[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == key) *sink = acc;
}

// The L2 flush buffer: twice the L2 size, zeroed once (that memset's dirty lines are written back
// during the warm-up), then only ever read.
struct FlushBuffer {
  DeviceBuffer<uint4> data;
  DeviceBuffer<unsigned> sink{1};
  explicit FlushBuffer(std::size_t bytes) : data((bytes + 15) / 16) {
    LAB_CHECK(cudaMemset(data.data(), 0, data.bytes()));
    LAB_CHECK(cudaDeviceSynchronize());
  }
};

const FlushBuffer& flush_buffer() {
  static const FlushBuffer buffer(2 * device_info().l2_bytes);
  return buffer;
}

void flush_l2(cudaStream_t stream) {
  const FlushBuffer& f = flush_buffer();
  const int blocks = 8 * device_info().sms;
  // The buffer holds zeros, so the XOR of its words is 0 and a key of 1 is never matched.
  flush_read_kernel<<<blocks, 512, 0, stream>>>(f.data.data(), f.data.size(), 1u, f.sink.data());
  LAB_CHECK_LAUNCH();
}

std::optional<std::chrono::steady_clock::time_point> g_deadline;  // set_time_budget

// The streams an exercise may put work on besides the timed one, and the sample now open: every
// stream the program made through the runtime API but the harness's own (tracked by the
// interposers of streams.cpp), lab::SideStream's among them. An exercise may also name this
// thread's per-thread default stream (cudaStreamPerThread, a constant no seal can see). The
// legacy default stream needs nothing: the timed stream is blocking, so stream 0 waits for it
// and it for stream 0.
struct SideStreams {
  std::vector<cudaStream_t> live;  // every tracked stream not yet destroyed
  cudaStream_t timed = nullptr;    // the open sample's timed stream (null: none open)
  cudaEvent_t start = nullptr;     // the open sample's start event
  cudaEvent_t done = nullptr;      // recorded on a side stream for the timed stream to wait on
};

// Never destroyed: a stream may be destroyed by code that runs at exit, after any static.
SideStreams& side_streams() {
  static SideStreams* s = new SideStreams;
  return *s;
}

// Nothing enqueued on `side` from now on starts before the open sample's start event.
void hold_until_start(cudaStream_t side) {
  LAB_CHECK(cudaStreamWaitEvent(side, side_streams().start, 0));
}

// The open sample's stop event waits for everything enqueued on `side` so far. One event serves
// every side stream: a wait takes the event's most recent record at the time of the call.
cudaError_t stop_waits_for(cudaStream_t side) {
  SideStreams& s = side_streams();
  const cudaError_t recorded = cudaEventRecord(s.done, side);
  return recorded != cudaSuccess ? recorded : cudaStreamWaitEvent(s.timed, s.done, 0);
}

// A sample from right after its start event was recorded to right before its stop event: side
// streams wait for the start when it opens; the stop waits for them when it closes. Forgotten
// also when the timed call throws.
class OpenSample {
 public:
  OpenSample(cudaStream_t timed, cudaEvent_t start) {
    SideStreams& s = side_streams();
    if (!s.done) LAB_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
    s.timed = timed;
    s.start = start;
    hold_until_start(cudaStreamPerThread);
    for (cudaStream_t side : s.live) hold_until_start(side);
  }
  void close() {
    LAB_CHECK(stop_waits_for(cudaStreamPerThread));
    for (cudaStream_t side : side_streams().live) LAB_CHECK(stop_waits_for(side));
  }
  ~OpenSample() {
    side_streams().timed = nullptr;
    side_streams().start = nullptr;
  }
  OpenSample(const OpenSample&) = delete;
  OpenSample& operator=(const OpenSample&) = delete;
};

std::string fixed(double x, int digits) {
  std::ostringstream out;
  out.precision(digits);
  out << std::fixed << x;
  return out.str();
}

std::string percent(double x) {
  std::ostringstream out;
  out.precision(2);
  out << std::fixed << 100.0 * x << "%";
  return out.str();
}

}  // namespace

// lab::SideStream is RAII around the runtime's calls: the interposers (streams.cpp) track its
// stream.
SideStream::SideStream() { LAB_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }

// No LAB_CHECK: a destructor must not throw.
SideStream::~SideStream() { cudaStreamDestroy(stream_); }

void track_stream(cudaStream_t stream) {
  side_streams().live.push_back(stream);
  if (side_streams().timed) hold_until_start(stream);  // made inside a timed call
}

// Destroyed inside a timed call, a side stream's work is still queued (cudaStreamDestroy does
// not wait): the stop event must wait for it first.
void untrack_stream(cudaStream_t stream) {
  std::vector<cudaStream_t>& live = side_streams().live;
  const auto it = std::find(live.begin(), live.end(), stream);
  if (it == live.end()) return;
  if (side_streams().timed) stop_waits_for(stream);
  live.erase(it);
}

void set_time_budget(double seconds) {
  if (seconds > 0)
    g_deadline = std::chrono::steady_clock::now() +
                 std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                     std::chrono::duration<double>(seconds));
  else
    g_deadline.reset();
}

double time_budget_left_s() {
  if (!g_deadline) return std::numeric_limits<double>::infinity();
  const double left =
      std::chrono::duration<double>(*g_deadline - std::chrono::steady_clock::now()).count();
  return std::max(left, 0.0);
}

void spin(double microseconds, cudaStream_t stream, long long* clock_probe) {
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<long long>(microseconds * 1e3), clock_probe);
  LAB_CHECK_LAUNCH();
}

Measurement benchmark(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                      const BenchmarkOptions& options) {
  const DeviceInfo& device = device_info();
  unsigned flags = 0;
  LAB_CHECK(cudaStreamGetFlags(stream, &flags));
  if (flags & cudaStreamNonBlocking)  // work on stream 0 would not be ordered with the samples
    throw std::invalid_argument("lab::benchmark times a blocking stream (a lab::Stream), not a "
                                "non-blocking one");
  Measurement result;
  result.mode = options.mode;
  // One wall clock for warm-up and samples: the measurement's limit is its whole duration.
  HostTimer wall;
  const double budget_s = time_budget_left_s();
  const double limit_s = std::min(options.timeout_s, budget_s);
  const bool budget_binds = budget_s < options.timeout_s;

  // The clock window of sample i ends in ring[i % kRing] (kHz, 0 = no reading); warm-up samples
  // use the extra slot kRing. The ring is read back at least every kRing / 2 samples.
  constexpr std::size_t kRing = 4096;
  DeviceBuffer<unsigned long long> ring(kRing + 1);
  DeviceBuffer<SmStart> starts(kMaxSmIds);
  LAB_CHECK(cudaMemsetAsync(ring.data(), 0, ring.bytes(), stream));
  LAB_CHECK(cudaMemsetAsync(starts.data(), 0, starts.bytes(), stream));
  unsigned long long tag = 0;
  const int measurement = g_measurements++;
  Event start, stop;
  double lead_in_us = options.lead_in_us;
  int batch = 1;
  Graph graph;  // graph mode: the batch, captured once after the warm-up

  // One sample: returns GPU ms for the whole sample and host us spent enqueueing.
  auto sample = [&](int slot, bool batched, double& gpu_ms, double& enqueue_us) {
    if (options.before_sample) options.before_sample(stream, slot);
    if (options.mode == Mode::Cold) flush_l2(stream);
    unsigned long long* khz = ring.data() + (slot >= 0 ? slot % kRing : kRing);
    auto trace = [&](TraceEdge edge) {
      return TraceTag{measurement, options.variant_index, slot, batched ? batch : 1, edge};
    };
    if (lead_in_us > 0) LAB_CHECK(cudaMemsetAsync(khz, 0, sizeof *khz, stream));
    // Without a lead-in, a mark opens the sample for the tracer; before the wait, so the start
    // event is still recorded on an idle stream.
    if (lead_in_us <= 0) {
      lab_trace_mark_kernel<<<1, 1, 0, stream>>>(trace(kTraceOpenMark));
      LAB_CHECK_LAUNCH();
      trace_edge(trace(kTraceOpenMark), stream);
    }
    LAB_CHECK(cudaStreamSynchronize(stream));
    ++tag;
    if (lead_in_us > 0) {
      lab_lead_in_kernel<<<device.sms, 1, 0, stream>>>(
          trace(kTraceLeadIn), static_cast<long long>(lead_in_us * 1e3), starts.data(), tag);
      LAB_CHECK_LAUNCH();
      trace_edge(trace(kTraceLeadIn), stream);
    }
    start.record(stream);
    HostTimer host;
    const bool profiled = slot >= 0 && slot == options.profiled_sample;
    if (profiled) LAB_CHECK(cudaProfilerStart());
    {
      OpenSample open(stream, start.get());
      if (batched && graph) {
        graph.launch(stream);
      } else {
        for (int i = 0; i < (batched ? batch : 1); ++i) launch(stream);
      }
      open.close();
    }
    enqueue_us = host.elapsed_ms() * 1e3;
    LAB_CHECK(cudaGetLastError());  // a bad launch configuration is reported here, by name
    if (profiled) LAB_CHECK(cudaProfilerStop());
    stop.record(stream);
    // After the stop event, so it adds nothing to the timed window, yet its window holds it.
    if (lead_in_us > 0) {
      trace_edge(trace(kTraceClockProbe), stream);
      lab_clock_probe_kernel<<<device.sms, 1, 0, stream>>>(trace(kTraceClockProbe), starts.data(),
                                                           tag, khz);
      LAB_CHECK_LAUNCH();
    } else {
      trace_edge(trace(kTraceCloseMark), stream);
      lab_trace_mark_kernel<<<1, 1, 0, stream>>>(trace(kTraceCloseMark));
      LAB_CHECK_LAUNCH();
    }
    gpu_ms = elapsed_ms(start, stop);
    if (options.after_sample) options.after_sample(stream, slot);
  };

  // Warm-up: the full procedure, untimed, until both minimums are met. Covers lazy module
  // loading (a kernel's first launch is 10-30x slower), clock ramp-up and the lead-in's own load.
  {
    nvtx3::scoped_range range{"warmup"};
    std::vector<double> single_ms;
    double max_enqueue_us = 0;
    HostTimer warm;
    for (int i = 0; i < options.warmup_runs || warm.elapsed_ms() < options.warmup_ms; ++i) {
      double ms, us;
      sample(-1, false, ms, us);
      single_ms.push_back(ms);
      if (i > 0) max_enqueue_us = std::max(max_enqueue_us, us);  // the first includes loading
      if (wall.elapsed_ms() > 1e3 * limit_s) break;
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
      if (options.mode == Mode::Graph)
        graph.capture([&](cudaStream_t s) {
          for (int i = 0; i < batch; ++i) launch(s);
        }, stream);
      double ms, us;
      sample(-1, true, ms, us);  // warm the batched path too
    }
  }
  result.batch = batch;

  // Samples until the median is pinned down or a limit is reached. Each sample's clock is judged
  // before the stopping rule sees it: a throttled sample never counts towards convergence.
  nvtx3::scoped_range range{"measure"};
  const bool probing = lead_in_us > 0 && device.sm_clock_mhz > 0;
  StoppingRule rule = options.stop;
  rule.resolution_ms /= batch;  // a per-launch sample is a batch's time over the batch
  std::vector<double> samples_ms, batch_ms, enqueue_us, clocks;
  std::vector<unsigned long long> ring_host(kRing);
  std::size_t judged = 0, next_check = std::max<std::size_t>(options.stop.min_samples, 1);
  double kept_total_ms = 0;
  auto judge_clocks = [&] {
    if (judged == samples_ms.size()) return;
    if (probing) {
      LAB_CHECK(cudaMemcpyAsync(ring_host.data(), ring.data(), kRing * sizeof(ring_host[0]),
                                cudaMemcpyDeviceToHost, stream));
      LAB_CHECK(cudaStreamSynchronize(stream));
    }
    for (; judged < samples_ms.size(); ++judged) {
      const double mhz = probing ? 1e-3 * static_cast<double>(ring_host[judged % kRing]) : 0.0;
      if (mhz > 0) clocks.push_back(mhz);
      if (mhz > 0 && mhz < 0.75 * device.sm_clock_mhz) {
        ++result.discarded_throttled;
      } else {
        result.samples_ms.push_back(samples_ms[judged]);
        kept_total_ms += batch_ms[judged];  // the minimum time counts whole batches
      }
    }
  };
  while (true) {
    double ms, us;
    sample(static_cast<int>(samples_ms.size()), options.mode != Mode::Cold, ms, us);
    samples_ms.push_back(ms / batch);
    batch_ms.push_back(ms);
    enqueue_us.push_back(us / batch);
    const std::size_t n = samples_ms.size();
    if (n - judged >= kRing / 2) judge_clocks();
    if (n >= next_check) {
      // Every sample at first (a slow kernel's samples are precious), then every 5% of n: the
      // sorting stays cheap when a tiny kernel takes 10^5 samples.
      next_check = n + std::max<std::size_t>(1, n / 20);
      judge_clocks();
      if (converged(rule, summarize(result.samples_ms), kept_total_ms)) {
        result.converged = true;
        result.stop_reason = "converged";
        break;
      }
    }
    if (options.profiled_sample >= 0 && n > static_cast<std::size_t>(options.profiled_sample)) {
      result.stop_reason = "profiled";
      break;
    }
    if (n >= options.max_samples) {
      result.stop_reason = "samples";
      break;
    }
    if (wall.elapsed_ms() > 1e3 * limit_s) {
      result.stop_reason = budget_binds ? "budget" : "timeout";
      break;
    }
  }
  judge_clocks();
  result.sm_clock_mhz = summarize(clocks).median;
  if (result.samples_ms.empty()) result.samples_ms = samples_ms;  // all throttled: flagged below
  result.gpu_ms = summarize(result.samples_ms);
  result.enqueue_us = summarize(enqueue_us).median;

  const Stats& t = result.gpu_ms;
  if (!result.converged && result.stop_reason != "profiled") {
    const std::string why =
        result.stop_reason == "budget"    ? "the process's time budget ran out"
        : result.stop_reason == "samples" ? "the cap of " + std::to_string(options.max_samples) +
                                                " samples was reached"
                                          : "its " + fixed(options.timeout_s, 1) + " s timeout was reached";
    result.diagnostics.push_back(
        "not converged (" + why + "): after " + std::to_string(t.n) + " samples in " +
        fixed(wall.elapsed_ms() * 1e-3, 1) + " s the median is known to +-" +
        percent(median_uncertainty(t, rule.resolution_ms) / t.median) + " (target " +
        percent(options.stop.target_precision) + ")");
  }
  if (result.discarded_throttled > 0)
    result.diagnostics.push_back(std::to_string(result.discarded_throttled) +
                                 " samples dropped: SM clock below 75% of its default");
  if (result.sm_clock_mhz > 0 && result.sm_clock_mhz < 0.9 * device.sm_clock_mhz)
    result.diagnostics.push_back("throttled: SM clock " + std::to_string(int(result.sm_clock_mhz)) +
                                 " MHz over the timed work, default " +
                                 std::to_string(device.sm_clock_mhz) + " MHz");
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

}  // namespace lab

// The tracer's handshake (lab/trace_tag.hpp). Exported from every lesson program; `used` keeps it
// even though nothing in the program calls it.
extern "C" __attribute__((visibility("default"), used)) int lab_trace_register(
    int abi, lab::TraceEdgeFunction edge) {
  if (abi != lab::kTraceAbi) return 0;
  lab::g_trace_edge = edge;
  return 1;
}
