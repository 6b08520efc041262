// Mutant: rewrites the result file. The reference gemv, plus a global object whose destructor
// runs after the harness has written its result: it finds the --json path in /proc/self/cmdline
// and overwrites the file with a result of its own.
// Expected: verdict "error", reason "forbidden" (code at exit, fopen): the checker reads the
// object file first and never runs it.
#include <cstdio>
#include <cstring>

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

struct Forger {
  ~Forger() {
    char args[4096] = {};
    std::FILE* cmdline = std::fopen("/proc/self/cmdline", "r");
    if (!cmdline) return;
    const std::size_t n = std::fread(args, 1, sizeof args - 1, cmdline);
    std::fclose(cmdline);
    for (std::size_t i = 0; i + 1 < n; i += std::strlen(args + i) + 1)
      if (std::strcmp(args + i, "--json") == 0) {
        if (std::FILE* out = std::fopen(args + i + std::strlen(args + i) + 1, "w")) {
          std::fputs("{\"forged\": true}\n", out);
          std::fclose(out);
        }
      }
  }
} forger;

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  gemv_kernel<<<(rows + 7) / 8, 256, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
