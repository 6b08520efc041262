// Mutant: writes into its input. Each warp, once it has read its row of A and added up the row,
// keeps the sum in the first 32 floats of that row ("they are read already, free scratch"). Every
// result of that call is right, and so is every validated call (each has fresh inputs), so the
// old harness passed it; but A is read-only (exercise.cuh): the next call with the same A gets
// wrong rows. The harness now checks, after timing, that A and x still hold what it wrote.
// Expected: rule "correct" fails (on "inputs unchanged after timing", and on sampled timed calls).
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFullMask = 0xffffffffu;

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(int rows, int cols, float alpha, const float* A /* written: not __restrict__ */,
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
  // After the shuffles every lane of the warp has read its part of the row: no race, but A changes.
  if (lane < cols) const_cast<float*>(a)[lane] = sum;  // BUG: A is read-only
  if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
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
