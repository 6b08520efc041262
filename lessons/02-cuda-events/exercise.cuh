// Lesson 02: the interface between the harness (main.cu) and your file (exercise.cu).
//
// The harness owns a vector-add pipeline, c = a + b on N floats, in three phases:
//
//   copy_in    a and b, pinned host memory -> device     two cudaMemcpyAsync
//   kernel     c[i] = a[i] + b[i]                         one launch
//   copy_out   c, device -> pinned host memory            one cudaMemcpyAsync
//
// Each phase is a callable that only ENQUEUES its work on the stream you pass it and returns at
// once: the work happens later, on the GPU, in stream order.
//
// You write two things (exercise.cu):
//
//   RegionTimer   a scoped timer: it measures the GPU work enqueued on ONE stream between its
//                 construction and its destruction, and its destructor writes the milliseconds
//                 to the float it was given:
//
//                   float ms = 0;
//                   {
//                     l02::RegionTimer timer(stream, &ms);
//                     pipeline.kernel(stream);
//                   }                                   // ms holds the kernel's time here
//
//   time_phases   runs the three phases once each, in order, on the stream it is given, each
//                 inside its own RegionTimer, and returns the three times.
//
// How the checker judges it (check.toml; numbers are medians over 9 calls of time_phases):
//
//   correct              every call runs each phase once, in order, on `stream`: the harness
//                        fills a, b and c with NaN before each call and checks c after it
//   accurate             with nothing else on the GPU, each phase within 25% of the harness's
//                        own events around the same phase, run right after each of your calls
//   accurate-while-busy  the same while an unrelated kernel runs on ANOTHER stream
//   does-not-wait        time_phases returns while that unrelated kernel is still running: your
//                        timer waits for your stream's work, never for the whole device
//   accurate-when-queued the same as accurate with 50 ms of work already queued on YOUR stream
//                        when time_phases is called: a region starts where the GPU reaches it
//   starts-without-waiting
//                        with that work queued, time_phases enqueues copy_in before it has
//                        finished: a timer must not wait when it starts (a synchronize in the
//                        constructor gives right times, but stalls the host at every region)
//
// The unrelated work runs on an ordinary stream made with cudaStreamCreate (a "blocking" stream,
// like the one you are given). Both are ordered with the legacy default stream 0.
#pragma once

// What exercise code may use, and what not (the checker refuses the latter before anything runs,
// naming the call, in `lab-check run` as in grading): the CUDA runtime for the work itself
// (kernels, copies, events, graphs, streams made with cudaStreamCreate* or lab::SideStream,
// which every timed sample waits for), CUB and Thrust, and the C and C++ libraries' containers,
// algorithms, maths and clocks. Not: files, threads, processes, the environment or leaving the
// program (no exercise needs them); device-wide settings (cudaDeviceReset, cudaDeviceSetLimit,
// cache and memory-pool settings); host callbacks (cudaLaunchHostFunc, host graph nodes: do the
// host's part in the function itself); cudaProfilerStart/Stop (run the program with --profile);
// the driver API (cu*: use the runtime's cuda* calls).

#include <cuda_runtime.h>

#include <functional>
#include <memory>

namespace l02 {

/// @brief One phase of the pipeline: enqueues its work on the given stream and returns at once.
using Phase = std::function<void(cudaStream_t stream)>;

/// @brief The harness's vector-add pipeline, c = a + b, in three phases. The memory is the
/// harness's (pinned on the host, allocated once); do not free or reallocate anything.
struct Pipeline {
  Phase copy_in;   ///< a and b, host to device (two cudaMemcpyAsync)
  Phase kernel;    ///< c[i] = a[i] + b[i] (one launch)
  Phase copy_out;  ///< c, device to host (one cudaMemcpyAsync)
};

/// @brief What time_phases reports: the GPU time of each phase, in milliseconds.
struct PhaseTimes {
  float copy_in_ms = 0;   ///< time of Pipeline::copy_in
  float kernel_ms = 0;    ///< time of Pipeline::kernel
  float copy_out_ms = 0;  ///< time of Pipeline::copy_out
};

/// @brief Times the GPU work enqueued on one stream during its lifetime (you write it).
class RegionTimer {
 public:
  /// @brief Starts timing the work enqueued on @p stream from now on.
  /// @param stream the stream whose work is timed
  /// @param result_ms where the destructor writes the elapsed milliseconds
  RegionTimer(cudaStream_t stream, float* result_ms);

  /// @brief Stops timing, waits until the time can be read, writes it to *result_ms.
  /// Declared noexcept(false) on purpose: a failed CUDA call here (LAB_CHECK) then reaches the
  /// harness as an error message instead of terminating the program.
  ~RegionTimer() noexcept(false);

  RegionTimer(const RegionTimer&) = delete;
  RegionTimer& operator=(const RegionTimer&) = delete;

 private:
  struct State;                   ///< defined in exercise.cu: whatever your timer needs to keep
  std::unique_ptr<State> state_;  ///< created by the constructor
};

/// @brief Runs copy_in, kernel and copy_out once each, in this order, on @p stream, each timed by
/// its own RegionTimer.
/// @param pipeline the harness's three phases
/// @param stream the stream to run and time them on
/// @return the time of each phase in milliseconds
PhaseTimes time_phases(const Pipeline& pipeline, cudaStream_t stream);

}  // namespace l02
