// Lesson 07: the interface between the harness (main.cu) and your file (exercise.cu).
//
// The harness owns everything but the schedule: pinned host input and output, the device arrays,
// the kernel, and the streams. It hands you three stages that each work on a range of elements:
//
//   copy_in(offset, count, s)    host input[offset, offset+count)  -> device input   (H2D copy)
//   compute(offset, count, s)    device input -> device output, same range           (kernel)
//   copy_out(offset, count, s)   device output -> host output[offset, offset+count)  (D2H copy)
//
// Each call only enqueues its work on stream s; none of them waits. A range reaching past n is
// refused (nothing is enqueued) and reported as an error by the validation.
//
// What you write: pipelined(), the order in which those stages run, cut into `chunks` pieces, on
// the streams you are given. The harness times the whole call with two events on `main`:
//
//   start event on main | your pipelined(...) | stop event on main
//
// So the contract is about `main`:
//   1. FORK. Whatever was enqueued on `main` before your call must finish before any of your
//      stages starts. (The harness's validation writes the host input with work on `main` right
//      before calling you.) The chunk streams do not wait for `main` by themselves: they are
//      non-blocking streams, ordered with nothing unless you order them (cudaEventRecord on main,
//      cudaStreamWaitEvent on each stream).
//   2. JOIN. Every stage you enqueue must finish before any work enqueued on `main` after your
//      call. The harness waits for `main` only (cudaStreamSynchronize(main)), then reads the host
//      output and asks each chunk stream whether it is idle: a stream still busy means main did
//      not wait for it, and the run fails.
//   3. Inside a chunk, copy_in -> compute -> copy_out must run in that order (same stream, or
//      events between streams).
// (In a timed call lab::benchmark also holds your streams until the start event and makes the
// stop event wait for them, so no work escapes the clock either way. The validated runs do not:
// they are where a missing fork or join shows.)
//
// The harness checks every validated run like this:
//   - host input, host output and both device arrays are poisoned (NaN) first;
//   - the input for this run is copied into the host input by work on `main`, after a ~2 ms spin,
//     just before your call (a missing fork reads NaN);
//   - the output must be bitwise identical to the serial version's (the kernel is elementwise and
//     deterministic, so any correct schedule gives the same bits);
//   - it runs at a size that is not a multiple of `chunks` (the last chunk is shorter).
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

#include <cstddef>
#include <functional>
#include <vector>

namespace l07 {

/// @brief One stage over a range of elements: (offset, count, stream). It only enqueues.
using Stage = std::function<void(std::size_t offset, std::size_t count, cudaStream_t stream)>;

/// @brief The work, owned by the harness: three stages over elements [0, n).
struct Stages {
  std::size_t n = 0;  ///< number of elements (not a multiple of chunks in some validated runs)
  Stage copy_in;      ///< host input -> device input, for [offset, offset + count)
  Stage compute;      ///< device input -> device output (the kernel), for the same range
  Stage copy_out;     ///< device output -> host output, for the same range
};

/// @brief TIMED (the whole call, between events on @p main). Enqueue copy_in, compute and
/// copy_out for all n elements, cut into @p chunks pieces, on @p streams, so that transfers in
/// both directions and the kernel overlap. Enqueue only: no waiting on the host.
/// @param stages the three stages and n
/// @param chunks how many pieces to cut [0, n) into (the harness passes 16 by default)
/// @param streams non-blocking streams created by the harness for you (16 by default); use any
///        of them, do not destroy them
/// @param main the harness's stream: your work must start after what is already on it (fork)
///        and finish before what is enqueued on it after your call (join)
void pipelined(const Stages& stages, int chunks, const std::vector<cudaStream_t>& streams,
               cudaStream_t main);

}  // namespace l07
