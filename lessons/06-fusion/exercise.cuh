/// @file exercise.cuh
/// @brief Lesson 06: what exercise.cu must define, and what the harness (main.cu) calls.
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

/// @brief Bytes of device scratch memory batched_rmse() needs for this shape. The harness calls it
/// once per shape, outside the timed region, allocates that many bytes (cudaMalloc: 256-byte
/// aligned) and passes them to every batched_rmse() call of that shape. Return 0 for none.
/// @param rows rows of one slice
/// @param cols columns of one slice
/// @param batches number of slices
/// @return bytes of workspace
std::size_t workspace_bytes(int rows, int cols, int batches);

/// @brief One root-mean-square error per batch:
///   out[b] = sqrt( (1 / (rows * cols)) * sum over r, c of (A[b][r][c] - B[b][r][c])^2 )
///
/// Layout, batch-major: slice b is one contiguous block of n = rows * cols floats, row-major
/// inside, so element (b, r, c) is A[b * n + r * cols + c] (the same for B). A and B hold
/// batches * n floats each; out holds `batches` floats. A slice is a contiguous range, so for the
/// sum the rows and columns do not matter: only n does.
///
/// Sizes are any rows, cols, batches >= 1: the harness checks 1000x777x13, 33x31x5, 3x5x7, 1x1x1
/// and the timing size (1024x1024x32 by default). n is not always a multiple of 4, so slice b
/// does not always start on a 16-byte boundary. Use 64-bit arithmetic for b * n.
///
/// The workspace's contents are undefined on entry (the harness fills it with 0xFF bytes before
/// validated runs): zero what needs zeroing, on @p stream. Nothing may be written past
/// out[batches - 1].
///
/// It must only enqueue work on @p stream: no synchronization, no allocation, no copies to the
/// host (the harness times it with events on that stream). Every call must compute: the harness
/// changes the inputs between calls without telling you.
///
/// @param A device pointer, batches * rows * cols floats
/// @param B device pointer, same shape as A
/// @param out device pointer, batches floats: the RMSE of each slice
/// @param rows rows of one slice
/// @param cols columns of one slice
/// @param batches number of slices
/// @param workspace device pointer to workspace_bytes(rows, cols, batches) bytes (may be null if
///        that is 0)
/// @param stream the stream to launch on
void batched_rmse(const float* A, const float* B, float* out, int rows, int cols, int batches,
                  void* workspace, cudaStream_t stream);

}  // namespace exercise
