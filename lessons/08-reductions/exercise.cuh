/// @file exercise.cuh
/// @brief Lesson 08: what exercise.cu must define, and what the harness (main.cu) calls.
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

namespace exercise {

/// @brief Bytes of device scratch memory sum() needs for @p n elements. The harness calls it once
/// per size, outside the timed region, allocates that many bytes (cudaMalloc: 256-byte aligned)
/// and passes them to every sum() call of that size. Return 0 for none.
/// @param n number of floats to add
/// @return bytes of workspace
std::size_t sum_workspace_bytes(std::size_t n);

/// @brief *result = x[0] + x[1] + ... + x[n - 1], in float.
///
/// Sizes are any n >= 1: the harness checks 1, 3, 1000003, 2^24 + 7 (65543 instead of the last
/// with --quick) and the timing size (2^28 by default), before and after timing. n is not always
/// a multiple of 4, of 32 or of your block size. x comes from cudaMalloc (256-byte aligned).
///
/// Accuracy: any order of addition is fine. On integer-valued inputs the result must be exact
/// (every partial sum is then a small integer, which float holds exactly); on inputs in [0, 1) it
/// must be within the bound the README derives, about 8 sqrt(n) 2^-24 times the sum.
///
/// The workspace's contents are undefined on entry (the harness fills it with 0xFF bytes before
/// validated runs): zero what needs zeroing, on @p stream. Nothing may be written past the end
/// of the workspace or past result[0]: the harness checks guard zones after both.
///
/// It must only enqueue work on @p stream: no synchronization, no allocation, no copies to the
/// host. *result must be complete when the enqueued work is (the harness reads it after a
/// stream synchronize). Every call must compute: the harness changes the inputs between calls.
///
/// @param x device pointer, n floats
/// @param n number of floats, >= 1
/// @param result device pointer to one float
/// @param workspace device pointer to sum_workspace_bytes(n) bytes (null if that is 0)
/// @param stream the stream to launch on
void sum(const float* x, std::size_t n, float* result, void* workspace, cudaStream_t stream);

}  // namespace exercise
