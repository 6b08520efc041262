/// @file cublas_roof.cuh
/// @brief lab::measure_cublas_roof: a lesson's tensor-core roof (Lesson::measure_tensor_roof),
/// timed on cuBLAS's own product, for the lessons whose exercise may use the tensor cores (05's
/// SGEMM through TF32, 12's BF16 GEMM). Include it from a .cu file of a lesson that links cuBLAS.
#pragma once

#include <cstddef>

#include "lab/bf16.cuh"
#include "lab/cublas.hpp"
#include "lab/data.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"

namespace lab {

/// @brief Measures this GPU's tensor roof for @p input before any exercise code runs: cuBLAS's
/// product of two n x n matrices of random data in [-1, 1) (zeros would draw less power and run
/// faster), timed back to back by Lesson::measure_tensor_roof. The best a library reaches: no
/// kernel of the lesson can beat it by much, so it bounds a plausible FLOP rate.
///  - TensorInput::tf32: cublasSgemm on FP32 data with the handle in CUBLAS_TF32_TENSOR_OP_MATH
///    (its math mode is set back afterwards). No FP32 product gets more from the tensor cores
///    (3xTF32 does three TF32 products for each one).
///  - TensorInput::bf16: cublasGemmEx on BF16 copies of the data (lab::round_to_bf16), FP32
///    accumulation (CUBLAS_COMPUTE_32F), as lesson 12's row-major product calls it.
/// The data's seeds are the run's seed times 64, plus 61 and 62. Call it only when the lesson
/// does not run with --profile (Lesson::profiling).
/// @param l the lesson
/// @param cublas the lesson's handle
/// @param input which roof
/// @param n the matrices' order
inline void measure_cublas_roof(Lesson& l, const CublasHandle& cublas, TensorInput input, int n) {
  const cudaStream_t s = l.stream();
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  const double flops = 2.0 * static_cast<double>(nn) * n;
  const float one = 1.0f, zero = 0.0f;
  if (input == TensorInput::tf32) {
    DeviceBuffer<float> A(nn), B(nn), C(nn);
    fill_random(A.data(), nn, l.seed() * 64 + 61, s);
    fill_random(B.data(), nn, l.seed() * 64 + 62, s);
    cublasMath_t mode;
    LAB_CUBLAS_CHECK(cublasGetMathMode(cublas.get(), &mode));
    LAB_CUBLAS_CHECK(cublasSetMathMode(cublas.get(), CUBLAS_TF32_TENSOR_OP_MATH));
    l.measure_tensor_roof(
        input,
        [&](cudaStream_t st) {
          LAB_CUBLAS_CHECK(cublasSgemm(cublas.on(st), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                                       A.data(), n, B.data(), n, &zero, C.data(), n));
        },
        flops);
    LAB_CUBLAS_CHECK(cublasSetMathMode(cublas.get(), mode));
    return;
  }
  DeviceBuffer<float> C(nn);  // scratch for the FP32 data, then the product
  DeviceBuffer<__nv_bfloat16> A(nn), B(nn);
  fill_random(C.data(), nn, l.seed() * 64 + 61, s);
  round_to_bf16(C.data(), A.data(), nn, s);
  fill_random(C.data(), nn, l.seed() * 64 + 62, s);
  round_to_bf16(C.data(), B.data(), nn, s);
  l.measure_tensor_roof(
      input,
      [&](cudaStream_t st) {  // row-major C = A B is column-major C^T = B^T A^T
        LAB_CUBLAS_CHECK(cublasGemmEx(cublas.on(st), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                                      B.data(), CUDA_R_16BF, n, A.data(), CUDA_R_16BF, n, &zero,
                                      C.data(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
      },
      flops);
}

}  // namespace lab
