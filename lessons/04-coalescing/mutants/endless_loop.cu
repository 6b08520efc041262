// Mutant: an endless loop. A grid-stride loop over rows whose stride was typed with blockIdx.x
// instead of gridDim.x: block 0 steps by 0 and recomputes its first rows forever (it stores
// every time, so the compiler cannot drop the loop). The first launch never finishes.
// Expected: verdict "error", reason "timeout" (the checker kills the process group).
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;

__global__ void gemv_kernel(int rows, int cols, float alpha, const float* __restrict__ A,
                            const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int step = blockIdx.x * kWarpsPerBlock;  // BUG: should be gridDim.x * kWarpsPerBlock
  for (int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32; row < rows; row += step) {
    const float* a = A + static_cast<std::size_t>(row) * cols;
    float sum = 0.0f;
    for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
    for (int offset = 16; offset > 0; offset /= 2)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
  }
}

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  const int blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  gemv_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
