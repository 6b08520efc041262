// Test data on the device: seeded random fills and poison (lab/data.hpp).
#include <algorithm>

#include "lab/check.hpp"
#include "lab/data.hpp"

namespace lab {

namespace {

__global__ void fill_random_kernel(float* out, std::size_t n, std::uint64_t seed, float lo,
                                   float hi) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __fadd_rn(lo, __fmul_rn(hi - lo, uniform01(seed, i)));  // no FMA: match the host
}

}  // namespace

void poison(void* ptr, std::size_t bytes, cudaStream_t stream) {
  LAB_CHECK(cudaMemsetAsync(ptr, 0xff, bytes, stream));
}

void fill_random(float* ptr, std::size_t n, std::uint64_t seed, cudaStream_t stream, float lo,
                 float hi) {
  if (n == 0) return;
  const int blocks = static_cast<int>(std::min<std::size_t>((n + 255) / 256, 8192));
  fill_random_kernel<<<blocks, 256, 0, stream>>>(ptr, n, seed, lo, hi);
  LAB_CHECK_LAUNCH();
}

}  // namespace lab
