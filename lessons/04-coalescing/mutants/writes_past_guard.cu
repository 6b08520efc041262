// Mutant: a stray store far past the end. Every y[0 .. rows - 1] is right, but the warp of row 0
// also writes y[rows + 256], an index computed as if y had a padding of 256 floats. That is
// just past the 256 floats after y that the harness used to check; the guard zone is now a whole
// 2 MiB page after y, checked to its last element, so the write lands in it.
// Expected: rule "correct" fails (the guard zone: "wrote past the end of y").
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kPadding = 256;  // BUG: y has no padding

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(int rows, int cols, float alpha, const float* __restrict__ A,
                const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
#pragma unroll 4
  for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullMask, sum, offset);
  if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
  if (row == 0 && lane == 0) y[rows + kPadding] = sum;  // "the padding after y"
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
