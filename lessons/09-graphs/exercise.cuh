/// @file exercise.cuh
/// @brief Lesson 09: what exercise.cu must define, and how the harness (main.cu) uses it.
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
// This lesson also refuses reading a captured node's parameters (cudaGraphKernelNodeGetParams and
// its kin): replay what you captured, don't rebuild it from the nodes.

#include <cuda_runtime.h>

#include <functional>
#include <memory>

namespace exercise {

/// @brief Enqueues step @p i of the chain (one small kernel) on @p stream. The harness provides
/// it, and it is opaque: capture it and replay what it enqueued, but do not read the captured
/// node's parameters (the checker refuses cudaGraphKernelNodeGetParams and its kin here). It
/// only enqueues: no synchronization, no allocation, no copy, so it can be called while the
/// stream is being captured into a CUDA graph. The kernel it launches reads its inputs
/// through device pointers that never change for the lifetime of a Chain; the harness changes
/// the values behind them between calls, so a graph captured once stays valid.
using Step = std::function<void(int i, cudaStream_t stream)>;

/// @brief A chain of `steps` dependent kernels, step(0), step(1), ..., step(steps - 1), in that
/// order, each one reading what the previous one wrote.
///
/// The harness makes one Chain per problem and calls:
///   1. setup(step, steps, stream) once, outside every timed region;
///   2. run(stream) many times: each call is timed with CUDA events on @p stream, from before
///      the call to after it, with nothing in front of it on the GPU (no lead-in), so the time
///      the host takes to enqueue the work is part of what is measured;
///   3. the destructor, at the end.
/// Between calls of run() the harness may write new inputs and poison the output: every call
/// must compute the whole chain again, from the inputs as they are at that moment.
class Chain {
 public:
  Chain();
  /// @brief Releases whatever setup() made (graphs, events, streams ...).
  ~Chain();
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  /// @brief Untimed preparation. A graph is built once and replayed many times, so building it
  /// here, outside the timed region, is what a real program does (and what this lesson measures:
  /// the cost of a replay). @p step stays valid, and may be called, until the destructor runs.
  /// @param step enqueues one step of the chain on a stream
  /// @param steps number of steps (>= 1)
  /// @param stream the stream run() will be given (the same one every call)
  void setup(const Step& step, int steps, cudaStream_t stream);

  /// @brief Enqueues the whole chain on @p stream, in order. Timed. It must only enqueue work on
  /// @p stream: no cudaStreamSynchronize, no cudaDeviceSynchronize, no allocation.
  /// @param stream the stream to enqueue on (the one setup() was given)
  void run(cudaStream_t stream);

 private:
  struct State;                   ///< defined by exercise.cu: whatever run() needs
  std::unique_ptr<State> state_;  ///< made by the constructor, released by the destructor
};

}  // namespace exercise
