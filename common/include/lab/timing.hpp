/// @file timing.hpp
/// @brief Timers (host clock, CUDA events on one stream) and lab::benchmark, the measurement
/// procedure every lesson and the checker use.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "lab/memory.hpp"
#include "lab/result.hpp"  // Mode, Measurement
#include "lab/stats.hpp"

namespace lab {

/// @brief Wall-clock timer on the host (std::chrono::steady_clock). Around an asynchronous
/// launch it measures the launch call, not the kernel: synchronize first if you want the kernel.
class HostTimer {
 public:
  /// @brief Starts the timer.
  HostTimer() : start_(std::chrono::steady_clock::now()) {}
  /// @brief Restarts the timer.
  void start() { start_ = std::chrono::steady_clock::now(); }
  /// @return milliseconds since construction or the last start()
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

/// @brief Times a region of work on one stream with a pair of events. It never synchronizes the
/// device: reading the time waits for the stop event only, so work on other streams is neither
/// waited for nor counted.
class EventTimer {
 public:
  /// @param stream the stream whose work is timed
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {}
  /// @brief Records the start event on the stream.
  void start() { start_.record(stream_); }
  /// @brief Records the stop event on the stream.
  void stop() { stop_.record(stream_); }
  /// @return milliseconds between start() and stop() on the GPU (waits for the stop event)
  float elapsed_ms() const { return lab::elapsed_ms(start_, stop_); }

 private:
  cudaStream_t stream_;
  Event start_;
  Event stop_;
};

/// @brief Options of lab::benchmark. The defaults are the course's method; change them only with
/// a reason you can state.
struct BenchmarkOptions {
  Mode mode = Mode::Cold;      ///< see Mode
  StoppingRule stop;           ///< when the median is pinned down
  double timeout_s = 10.0;     ///< give up (converged = false) after this much wall time, warm-up
                               ///< included; never more than time_budget_left_s()
  std::size_t max_samples = 100000;  ///< ... or after this many samples
  double warmup_ms = 25.0;     ///< warm-up: at least this long ...
  int warmup_runs = 2;         ///< ... and at least this many runs of the full sample procedure
  double lead_in_us = 20.0;    ///< device-side spin before each sample so the launch latency is
                               ///< not inside the event pair; grows if enqueueing is slow; 0 = none
  double min_batch_ms = 1.0;   ///< Hot and Graph: launches per sample so a sample lasts this long
  int max_batch = 1000;        ///< ... but at most this many
  double working_set_bytes = 0;  ///< bytes one launch touches, if known: Hot and Graph modes warn
                                 ///< when they fit in L2 (then DRAM bandwidth can be exceeded)
  int variant_index = -1;  ///< the variant's place in the result file (lab::Lesson::measure sets
                           ///< it): tags the samples for the checker's tracer (lab/trace_tag.hpp)
  /// Called before every sample, warm-up included, before the L2 flush and so outside the timed
  /// window, with the sample's index (-1 in warm-up): a harness re-poisons the outputs and changes
  /// the inputs here, so that no timed call can reuse an earlier call's answer.
  std::function<void(cudaStream_t, int sample)> before_sample;
  /// Called after each sample has finished (the stream is synchronized), outside the timed window,
  /// with the sample's index (-1 in warm-up): a harness checks that very call's outputs here, on a
  /// sample it chooses only now, after the call could no longer know.
  std::function<void(cudaStream_t, int sample)> after_sample;
  /// For profilers (--profile): when >= 0, that sample's launch, and nothing else of the sample,
  /// runs between cudaProfilerStart and cudaProfilerStop, and the measurement ends after it
  /// (`ncu --profile-from-start off` sees one call made exactly like a timed one).
  int profiled_sample = -1;
};

/// @brief Sets a time budget for all of this process's measurements: from now on no
/// lab::benchmark samples past @p seconds from now (each one still takes its warm-up and one
/// sample, and says "budget" in Measurement::stop_reason). The harness sets it from --budget-s.
/// @param seconds the budget; <= 0 removes it
void set_time_budget(double seconds);

/// @return seconds left of the budget set by set_time_budget (0 when spent; infinity when none)
double time_budget_left_s();

/// @brief Measures @p launch, which must only enqueue work on the stream it is given (no
/// synchronization, no allocation). Warm-up, then samples until the stopping rule, the timeout,
/// the sample cap or the process's time budget (see docs/measurement.md).
/// A sample: before_sample, in Cold mode the L2 flush (a read of twice the L2 size, which leaves
/// no dirty lines to be written back later), wait, lead-in spin kernel on every SM (it records
/// each SM's clock and the global timer), start event, launch, stop event, clock-probe kernel
/// (the SM clock over the whole interval, timed work included), read the time, after_sample.
/// Without a lead-in, a mark kernel is launched before the wait and another after the stop event
/// instead, so that the checker's tracer can time every sample (lab/trace_tag.hpp); the lead-in,
/// the probe and the marks all lie outside the event pair.
/// Work the timed call puts on another stream is timed too: every live lab::SideStream and the
/// per-thread default stream wait for the start event before the call, and the stop event waits
/// for each of them after it (the legacy default stream is ordered by the timed stream being
/// blocking).
/// Samples taken below 75% of the default SM clock are dropped before the stopping rule sees
/// them; the rule judges the median's order-statistic interval (lab::converged).
/// @param launch enqueues the work once on the given stream
/// @param options see BenchmarkOptions
/// @param stream the stream to use (a lab::Stream, blocking; a non-blocking one is refused)
/// @return the measurement; GPU time per launch in milliseconds
Measurement benchmark(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                      const BenchmarkOptions& options = {});

/// @brief A kernel that runs for @p microseconds on one thread (spins on %globaltimer). Used for
/// lead-ins, tests of the timer, and by lessons as a kernel of known duration.
/// @param microseconds how long to spin
/// @param stream where to launch it
/// @param clock_probe optional device pointer to 2 long longs: receives the SM clock ticks and
///        the nanoseconds that passed (their ratio is the SM clock)
void spin(double microseconds, cudaStream_t stream, long long* clock_probe = nullptr);

}  // namespace lab
