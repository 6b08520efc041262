/// @file exercise.cuh
/// @brief Lesson 04: what exercise.cu must define, and what the harness (main.cu) calls.
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

namespace exercise {

/// @brief Matrix-vector product y = alpha * A x + beta * y, in float32.
///
/// A is row-major: element (r, c) is A[r * cols + c], so a row is `cols` contiguous floats and
/// consecutive rows are `cols` floats apart. x has `cols` elements, y has `rows`.
/// As in BLAS, when beta == 0 y is write-only: it may hold anything on entry (the harness puts
/// NaN there), and the result must not depend on it.
///
/// rows and cols are any sizes >= 1: the harness checks 1000x777, 33x4097, 4097x33 and 1x1
/// besides the timing size. Use 64-bit arithmetic for r * cols.
///
/// It must only enqueue work on @p stream: no synchronization, no allocation, no copies to the
/// host (the harness times it with events on that stream).
///
/// @param rows rows of A and elements of y
/// @param cols columns of A and elements of x
/// @param alpha scale of A x
/// @param A device pointer to rows * cols floats (row-major)
/// @param x device pointer to cols floats
/// @param beta scale of the old y (0: y is not read)
/// @param y device pointer to rows floats, updated in place
/// @param stream the stream to launch on
void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream);

}  // namespace exercise
