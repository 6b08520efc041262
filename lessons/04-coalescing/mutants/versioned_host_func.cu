// Mutant: a forbidden call under another name. The reference gemv, plus, in its first call,
// cudaLaunchHostFunc (host code on a driver thread, outside every timed window) reached through
// a declaration of its own that .symver binds to the runtime's versioned symbol, so that the
// object file names cudaLaunchHostFunc@libcudart.so.13, not cudaLaunchHostFunc.
// Expected: verdict "error", reason "forbidden" (the call is judged by its name before the '@').
#include <cstdio>

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

void on_driver_thread(void*) { std::puts("host code outside the timed window"); }

bool launched = false;

}  // namespace

extern "C" cudaError_t lab_mutant_host_func(cudaStream_t, cudaHostFn_t, void*);
asm(".symver lab_mutant_host_func, cudaLaunchHostFunc@libcudart.so.13");

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  if (!launched) launched = lab_mutant_host_func(stream, on_driver_thread, nullptr) == cudaSuccess;
  gemv_kernel<<<(rows + 7) / 8, 256, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
