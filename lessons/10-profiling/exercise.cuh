/// @file exercise.cuh
/// @brief Lesson 10: the application you profile and speed up (exercise.cu), as main.cu calls it.
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

/// @brief Bytes of device scratch memory anomaly_scores() needs for a rows x cols table. The
/// harness calls it once per size, outside the timed region, allocates that many bytes
/// (cudaMalloc: 256-byte aligned) and passes them to every call of that size. 0 means none.
/// @param rows number of rows (samples)
/// @param cols number of columns (features)
/// @return bytes of workspace
std::size_t workspace_bytes(int rows, int cols);

/// @brief The application: standardize every column of a table, then score every row.
///
///   mean[c]    = (1 / rows) * sum over r of x[r][c]
///   inv_std[c] = 1 / sqrt((1 / rows) * sum over r of (x[r][c] - mean[c])^2)
///   score[r]   = sum over c of ((x[r][c] - mean[c]) * inv_std[c])^2
///
/// A row with a large score is far from typical in many columns at once (a simple anomaly
/// detector). x is row-major: x[r][c] is x[r * cols + c]. Sizes are any rows >= 2, cols >= 1:
/// the harness checks several, none a multiple of 32 in both, and times 262147 x 256 (1 GiB of
/// floats would not fit a small GPU; this is 256 MiB).
///
/// Accuracy: mean and inv_std within a relative 1e-4 of a double-precision reference, scores
/// within 1e-4 relative (plus 1e-4 absolute). The workspace's contents are undefined on entry
/// (the harness fills it with 0xFF bytes): zero what needs zeroing, on @p stream.
///
/// It must only enqueue work on @p stream: no synchronization, no allocation, no copies to the
/// host. The outputs must be complete when the enqueued work is.
///
/// @param x device pointer, rows * cols floats, row-major
/// @param rows number of rows, >= 2
/// @param cols number of columns, >= 1
/// @param mean device pointer, cols floats (output)
/// @param inv_std device pointer, cols floats (output)
/// @param score device pointer, rows floats (output)
/// @param workspace device pointer to workspace_bytes(rows, cols) bytes (null if that is 0)
/// @param stream the stream to launch on
void anomaly_scores(const float* x, int rows, int cols, float* mean, float* inv_std, float* score,
                    void* workspace, cudaStream_t stream);

}  // namespace exercise
