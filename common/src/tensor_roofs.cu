// The tensor-core roofs of this GPU (lab/tensor_roofs.hpp): cuBLAS's TF32 and BF16 products,
// measured as lab::ceilings() measures the FP32 roof.
#include <cuda_bf16.h>

#include <cstdint>

#include "lab/cublas.hpp"
#include "lab/data.hpp"
#include "lab/memory.hpp"
#include "lab/tensor_roofs.hpp"
#include "lab/timing.hpp"
#include "roof_options.hpp"

namespace lab {

namespace {

__global__ void round_to_bf16(const float* __restrict__ in, __nv_bfloat16* __restrict__ out,
                              std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16(in[i]);  // round to nearest even
}

}  // namespace

std::string measure_tensor_roofs(Ceilings& ceilings, int n) {
  const DeviceInfo& device = device_info();
  if (device.cc_major < 8)
    return "compute capability " + std::to_string(device.cc_major) + "." +
           std::to_string(device.cc_minor) + ": TF32 and BF16 tensor cores need 8.0 or newer";
  Stream stream;
  CublasHandle cublas;  // before anything is timed: it loads the library's kernels

  // Back to back, as Lesson::measure_tensor_roof times the lessons' tensor roofs.
  const BenchmarkOptions hot = roof_options(Mode::Hot, 0.5);

  // Random data in [-1, 1): zeros would draw less power and run faster than real inputs.
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  DeviceBuffer<float> a(nn), b(nn), c(nn);
  constexpr std::uint64_t kSeed = 0x7e50;
  fill_random(a.data(), nn, kSeed, stream);
  fill_random(b.data(), nn, kSeed + 1, stream);
  const float one = 1.0f, zero = 0.0f;
  const double flops = 2.0 * static_cast<double>(nn) * n;

  // TF32: FP32 data, each input rounded to TF32 inside the tensor cores (column-major, as cuBLAS
  // reads it; the product of square random matrices costs the same either way).
  LAB_CUBLAS_CHECK(cublasSetMathMode(cublas.get(), CUBLAS_TF32_TENSOR_OP_MATH));
  const Measurement tf32 = benchmark(
      [&](cudaStream_t s) {
        LAB_CUBLAS_CHECK(cublasSgemm(cublas.on(s), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                                     a.data(), n, b.data(), n, &zero, c.data(), n));
      },
      stream, hot);
  ceilings.tf32_tensor_gflops = flops / (tf32.gpu_ms.median * 1e6);
  LAB_CUBLAS_CHECK(cublasSetMathMode(cublas.get(), CUBLAS_DEFAULT_MATH));

  // BF16: the same data rounded once to BF16, products accumulated in FP32.
  DeviceBuffer<__nv_bfloat16> a16(nn), b16(nn);
  const int blocks = grid_for(static_cast<long long>(nn), 256, 8);
  round_to_bf16<<<blocks, 256, 0, stream>>>(a.data(), a16.data(), nn);
  round_to_bf16<<<blocks, 256, 0, stream>>>(b.data(), b16.data(), nn);
  LAB_CHECK_LAUNCH();
  const Measurement bf16 = benchmark(
      [&](cudaStream_t s) {
        LAB_CUBLAS_CHECK(cublasGemmEx(cublas.on(s), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                                      a16.data(), CUDA_R_16BF, n, b16.data(), CUDA_R_16BF, n,
                                      &zero, c.data(), CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT));
      },
      stream, hot);
  ceilings.bf16_tensor_gflops = flops / (bf16.gpu_ms.median * 1e6);
  stream.synchronize();
  return "";
}

}  // namespace lab
