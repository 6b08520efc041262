// Mutant: a process that outlives its lesson. The reference-style reduction, plus, on the first
// call, a double fork with setsid(): the grandchild leaves the process group, waits until the
// checker has moved on, and could then rewrite graded records.
// Expected: verdict "error", reason "forbidden" (fork, setsid): never run. Were it run, the PID
// namespace would kill the grandchild with the lesson (docs/grading-security.md).
#include <unistd.h>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 256;

__global__ void sum_kernel(const float* __restrict__ x, std::size_t n, float* result) {
  float s = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    s += x[i];
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  if (threadIdx.x % 32 == 0) atomicAdd(result, s);
}

bool started = false;

}  // namespace

namespace exercise {

std::size_t sum_workspace_bytes(std::size_t) { return 0; }

void sum(const float* x, std::size_t n, float* result, void*, cudaStream_t stream) {
  if (!started) {
    started = true;
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        sleep(30);
        _exit(0);
      }
      _exit(0);
    }
  }
  LAB_CHECK(cudaMemsetAsync(result, 0, sizeof(float), stream));
  sum_kernel<<<264, kThreads, 0, stream>>>(x, n, result);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
