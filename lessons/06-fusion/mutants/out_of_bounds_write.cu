// Mutant: an out-of-bounds write. The atomic way (hint 3a), with out itself as the accumulator:
// zero out, add every block's sum into out[b] with atomicAdd, then a root kernel over out. The root
// kernel has no bounds check, so its last block writes sqrt(garbage / n) into the floats after
// out[batches - 1], up to the next multiple of 256: the harness's guard zone there catches it.
// Expected: rule "correct" fails.
#include <algorithm>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    squared_diff_sum_kernel(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ out, long long n, int blocks_per_slice) {
  __shared__ float warp_sums[kThreads / 32];
  const int slice = blockIdx.x / blocks_per_slice;
  const int part = blockIdx.x % blocks_per_slice;
  const float* a = A + static_cast<long long>(slice) * n;
  const float* b = B + static_cast<long long>(slice) * n;
  float v = 0.0f;
  for (long long i = static_cast<long long>(part) * kThreads + threadIdx.x; i < n;
       i += static_cast<long long>(blocks_per_slice) * kThreads) {
    const float d = a[i] - b[i];
    v += d * d;
  }
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (threadIdx.x == 0) atomicAdd(out + slice, v);
  }
}

__global__ void root_kernel(float* out, double n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = static_cast<float>(sqrt(out[i] / n));  // BUG: no `if (i < batches)`
}

}  // namespace

namespace exercise {

std::size_t workspace_bytes(int, int, int) { return 0; }

void batched_rmse(const float* A, const float* B, float* out, int rows, int cols, int batches,
                  void*, cudaStream_t stream) {
  const long long n = static_cast<long long>(rows) * cols;
  const int per_slice = static_cast<int>(std::clamp<long long>(1024 / batches, 1, (n + 1023) / 1024));
  LAB_CHECK(cudaMemsetAsync(out, 0, static_cast<std::size_t>(batches) * sizeof(float), stream));
  squared_diff_sum_kernel<<<per_slice * batches, kThreads, 0, stream>>>(A, B, out, n, per_slice);
  LAB_CHECK_LAUNCH();
  root_kernel<<<(batches + kThreads - 1) / kThreads, kThreads, 0, stream>>>(out, static_cast<double>(n));
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
