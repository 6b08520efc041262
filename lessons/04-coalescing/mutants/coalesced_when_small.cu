// Mutant: coalesced only where the profiler used to look. At 2048 x 2048 and below (the --quick
// size, at which ncu read one call until 2026-11-28, and every validation size) each row gets a
// warp; at the graded size the starter's thread per row runs. Before, ncu saw the warp-per-row
// kernel and the `coalesced` rule passed on a gemv that is never coalesced where it is timed.
// Now ncu reads a call at the graded size, made like a timed one: the rule must fail (and so
// does `bandwidth`).
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 128;
constexpr int kWarpsPerBlock = 8;

__global__ void gemv_thread_per_row(int rows, int cols, float alpha, const float* __restrict__ A,
                                    const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += a[c] * x[c];
  y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

__global__ void gemv_warp_per_row(int rows, int cols, float alpha, const float* __restrict__ A,
                                  const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  if (static_cast<long long>(rows) * cols <= 2048LL * 2048) {
    gemv_warp_per_row<<<(rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kWarpsPerBlock * 32, 0,
                        stream>>>(rows, cols, alpha, A, x, beta, y);
  } else {
    gemv_thread_per_row<<<(rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(rows, cols, alpha,
                                                                                  A, x, beta, y);
  }
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
