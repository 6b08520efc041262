/// @file exercise.cuh
/// @brief Lesson 12: what exercise.cu must define, and what the harness (main.cu) calls.
///
/// One function, in exercise.cu: a matrix product on the tensor cores, BF16 inputs, FP32
/// accumulation and output. Every matrix is row-major: element (r, c) of a matrix with `cols`
/// columns is at index r * cols + c. Use 64-bit arithmetic for r * cols.
///
/// It must only enqueue work on @p stream: no synchronization, no allocation, no copies to the
/// host (the harness times it with events on that stream).
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

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace exercise {

/// @brief C = A B, with A and B in BF16 and every product accumulated in FP32.
///
/// A is M x K, B is K x N, C is M x N, all row-major with no padding between rows (the leading
/// dimensions are K, N and N). C is write-only: it holds NaN on entry, and every element of it
/// must be written. The products of two BF16 numbers are exact in FP32; the sums must be FP32
/// too (an FP16 accumulator loses the accuracy the harness checks).
///
/// M, N, K are any sizes >= 1: the harness checks 1000x777x515, 129x67x1031, 264x392x520 and
/// 1x1x1 besides the timing size (4096 x 4096 x 4096, or 1024 with --quick). K and N need not be
/// multiples of 8, so rows of A and B need not be 16-byte aligned. Nothing may be written outside
/// C[0 .. M * N - 1], and A and B are read-only.
///
/// @param M rows of A and C
/// @param N columns of B and C
/// @param K columns of A, rows of B
/// @param A device pointer to M * K BF16 values (row-major)
/// @param B device pointer to K * N BF16 values (row-major)
/// @param C device pointer to M * N floats (row-major), written
/// @param stream the stream to launch on
void gemm_bf16(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C,
               cudaStream_t stream);

}  // namespace exercise
