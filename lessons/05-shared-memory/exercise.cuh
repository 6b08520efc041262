/// @file exercise.cuh
/// @brief Lesson 05: what exercise.cu must define, and what the harness (main.cu) calls.
///
/// Two functions, both in exercise.cu. Every matrix is row-major: element (r, c) of a matrix with
/// `cols` columns is at index r * cols + c, so a row is contiguous and consecutive rows are `cols`
/// floats apart. Use 64-bit arithmetic for r * cols (8192 * 8192 fits in int, larger sizes do not).
///
/// Both must only enqueue work on @p stream: no synchronization, no allocation, no copies to the
/// host (the harness times them with events on that stream).
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

/// @brief out = in^T: out[c * rows + r] = in[r * cols + c].
///
/// @p in is rows x cols, @p out is cols x rows, both row-major, float32. The two never overlap.
/// rows and cols are any sizes >= 1: the harness checks 1000x777, 33x4097, 4097x33 and 1x1 besides
/// the timing size (8192 x 8192). Nothing may be written outside out[0 .. rows * cols - 1].
///
/// @param in device pointer to rows * cols floats
/// @param out device pointer to cols * rows floats
/// @param rows rows of @p in (columns of @p out)
/// @param cols columns of @p in (rows of @p out)
/// @param stream the stream to launch on
void transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream);

/// @brief C = alpha * A B + beta * C, in float32 (SGEMM).
///
/// A is M x K, B is K x N, C is M x N, all row-major with no padding between rows (the leading
/// dimensions are K, N and N). As in BLAS, when beta == 0 C is write-only: it may hold anything
/// on entry (the harness puts NaN there), and the result must not depend on it.
///
/// M, N, K are any sizes >= 1: the harness checks 1000x777x515, 129x67x1031 (beta 0),
/// 300x644x260 and 1x1x1 besides the timing size (4096 x 4096 x 4096, or 1024 with --quick).
/// Nothing may be written outside C[0 .. M * N - 1].
///
/// @param M rows of A and C
/// @param N columns of B and C
/// @param K columns of A, rows of B
/// @param alpha scale of A B
/// @param A device pointer to M * K floats (row-major)
/// @param B device pointer to K * N floats (row-major)
/// @param beta scale of the old C (0: C is not read)
/// @param C device pointer to M * N floats (row-major), updated in place
/// @param stream the stream to launch on
void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream);

}  // namespace exercise
