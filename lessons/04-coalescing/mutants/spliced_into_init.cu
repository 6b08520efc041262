// Mutant: code before main and at exit without a constructor or an exit handler. The reference
// gemv, plus two calls spliced by assembler directives into the .init and .fini sections, which
// the linker joins into the program's _init (run before main) and _fini (run at exit).
// Expected: verdict "error", reason "forbidden" (code outside .text: no compiler puts it there):
// the checker reads the object file first and never runs it.
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

}  // namespace

// Named by the assembler below (a label of its own, not a symbol the seal would list).
__attribute__((used)) static void before_main() asm("lab_mutant_before_main");
__attribute__((used)) static void before_main() { std::puts("before main"); }
__attribute__((used)) static void at_exit() asm("lab_mutant_at_exit");
__attribute__((used)) static void at_exit() { std::puts("at exit"); }
asm(".pushsection .init,\"ax\"\n call lab_mutant_before_main\n.popsection\n"
    ".pushsection .fini,\"ax\"\n call lab_mutant_at_exit\n.popsection\n");

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  gemv_kernel<<<(rows + 7) / 8, 256, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
