// Mutant: code at exit without a global object. The reference gemv, plus, on its first call, an
// exit handler registered with std::atexit: it runs after main has returned, when the harness
// has written its result and its record and checks nothing more (here it only prints; any code
// could run there).
// Expected: verdict "error", reason "forbidden" (a call of atexit outside nvcc's registration):
// the checker reads the object file first and never runs it.
#include <cstdio>
#include <cstdlib>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

__global__ void gemv_kernel(int rows, int cols, float alpha, const float* __restrict__ A,
                            const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int row = blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

void after_main() { std::puts("exercise    correct (said at exit)"); }

bool registered = false;

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  if (!registered) registered = std::atexit(after_main) == 0;
  gemv_kernel<<<(rows + 7) / 8, 256, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
