// Mutant: a cached result. It remembers the arguments of its last call and, when they are the
// same, launches nothing: "y already holds the answer". It passes the first check of each size,
// times impossibly fast, and fails the check after timing, where the harness refills A and x in
// the same buffers and poisons y.
// Expected: rule "correct" fails.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;

__global__ void gemv_kernel(int rows, int cols, float alpha, const float* __restrict__ A,
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

struct Call {
  int rows = -1, cols = -1;
  const float* A = nullptr;
  const float* x = nullptr;
  float* y = nullptr;
};

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  static Call last;  // BUG: the same pointers do not mean the same contents
  if (last.rows == rows && last.cols == cols && last.A == A && last.x == x && last.y == y) return;
  last = Call{rows, cols, A, x, y};
  const int blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  gemv_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
