/// @file exercise.cuh
/// @brief Lesson 13: what exercise.cu must define, and what the harness (main.cu) calls.
///
/// One function, in exercise.cu: C = A B^T on Hopper's tensor cores, BF16 inputs, FP32
/// accumulation and output. This is a linear layer's product, y = x W^T: B is given as Bt, N x K,
/// the way a layer stores its weights. Every matrix is row-major: element (r, c) of a matrix with
/// `cols` columns is at index r * cols + c. Both A and Bt have K contiguous ("K-major"), the
/// layout wgmma reads both operands in without a transpose.
///
/// It must only enqueue work on @p stream: no synchronization, no allocation, no copies to the
/// host (the harness times it with events on that stream).
///
/// The lesson is built for sm_90a only (wgmma and setmaxnreg exist nowhere else); on any other
/// GPU the program says so in one sentence and runs nothing.
#pragma once

// What exercise code may use, and what not (the checker refuses the latter before anything runs,
// naming the call, in `lab-check run` as in grading): the CUDA runtime for the work itself
// (kernels, cudaFuncSetAttribute, events, streams made with cudaStreamCreate* or
// lab::SideStream), inline PTX, CUB and Thrust, the C and C++ libraries' containers, algorithms,
// maths and clocks, and lab::tensor_map_2d_bf16 (lab/tensor_map.hpp) for the TMA's tensor maps.
// Not: the driver API (cu*, cudaGetDriverEntryPoint*: the one driver function this lesson needs,
// cuTensorMapEncodeTiled, is reached through lab::tensor_map_2d_bf16), files, threads,
// processes, the environment, device-wide settings, host callbacks, cudaProfilerStart/Stop.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace exercise {

/// @brief C = A B^T, with A and Bt in BF16 and every product accumulated in FP32:
/// C[i][j] = sum_k A[i][k] Bt[j][k].
///
/// A is M x K, Bt is N x K, C is M x N, all row-major with no padding between rows (the leading
/// dimensions are K, K and N). C is write-only: it holds NaN on entry, and every element of it
/// must be written. The products of two BF16 numbers are exact in FP32; the sums must be FP32
/// too (an FP16 accumulator loses the accuracy the harness checks).
///
/// Contract: K is a multiple of 8, so every row of A and Bt is a multiple of 16 bytes long (what
/// a TMA tensor map needs of its row stride); M and N are any sizes >= 1; A, Bt and C come from
/// cudaMalloc (256-byte aligned). The harness checks 1000x777x520, 129x67x1032, 264x392x520 and
/// 8x8x8 (M x N x K) besides the timing size (4096 x 4096 x 4096, or 1024 with --quick): M and N
/// not multiples of any tile, K not a multiple of 64. Nothing may be written outside
/// C[0 .. M * N - 1], and A and Bt are read-only.
///
/// @param M rows of A and C
/// @param N rows of Bt, columns of C
/// @param K columns of A and of Bt (a multiple of 8)
/// @param A device pointer to M * K BF16 values (row-major)
/// @param Bt device pointer to N * K BF16 values (row-major): B transposed
/// @param C device pointer to M * N floats (row-major), written
/// @param stream the stream to launch on
void gemm_bf16(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* Bt, float* C,
               cudaStream_t stream);

}  // namespace exercise
