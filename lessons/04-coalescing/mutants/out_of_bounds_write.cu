// Mutant: an out-of-bounds write. The reads are clamped to the last row "to stay in bounds", but
// the store is not guarded, so the spare warps of the last block write y[rows], y[rows + 1], ...
// Every y[0..rows-1] is right. Inside the allocation this never crashes; the harness finds it
// through the guard zone it keeps after y (compute-sanitizer would not: the bytes are allocated).
// Expected: rule "correct" fails.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;

__global__ void gemv_kernel(int rows, int cols, float alpha, const float* __restrict__ A,
                            const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int read_row = row < rows ? row : rows - 1;  // clamped for reading...
  const float* a = A + static_cast<std::size_t>(read_row) * cols;
  float sum = 0.0f;
  for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const float old = (beta == 0.0f || row >= rows) ? 0.0f : beta * y[row];
  if (lane == 0) y[row] = alpha * sum + old;  // BUG: ...but not for writing
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
