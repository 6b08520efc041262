// Lesson 04, the exercise: make y = alpha * A x + beta * y read A coalesced.
//
// This is the one file you edit. It is correct, and slow: one thread per row of a row-major A,
// so at every step the 32 threads of a warp read 32 addresses `cols` floats apart, and each of
// them costs the memory system a whole 32-byte sector for 4 useful bytes.
//
// Goal (what the checker measures, in the same run):
//   * correct on every size the harness checks (1000x777, 33x4097, 4097x33, 1x1 and the timing
//     size), including beta == 0 where y holds NaN on entry;
//   * [at least 0.7x the copy ceiling](check.toml#bandwidth), counting the bytes a gemv must move
//     (A, x, y once each).
//
// Build and run (from the repository root):
//   cmake --workflow --preset lab                         # builds everything, checks the lessons
//   build/release/lessons/04-coalescing/starter           # your version against the others
//   build/release/lessons/04-coalescing/starter --quick   # small sizes, seconds
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 128;

// TODO: this is the slow mapping: thread `row` walks along row `row`. Neighbouring threads are a
// whole row (cols * 4 bytes) apart at every step.
//
// Hints, in the order that helps most:
//  1. Give each row a whole warp (32 threads). Lane l reads columns l, l + 32, l + 64, ...: at each
//     step the warp reads 32 neighbouring floats, 128 bytes, 4 sectors, every byte used.
//  2. Each lane then holds a partial sum. Add the 32 partial sums with __shfl_down_sync or
//     __shfl_xor_sync (offsets 16, 8, 4, 2, 1), and let one lane write y[row].
//  3. With blockDim.x = 256 a block handles 8 rows: row = blockIdx.x * 8 + threadIdx.x / 32.
//     Launch enough blocks for every row (round up), and let a warp whose row is past the end
//     return before the shuffles (the whole warp returns together, so no lane waits for it).
//  4. Optional, for the last 10-20%: when cols % 4 == 0 (and A, x are 16-byte aligned), read A
//     and x as float4: fewer, wider loads. Keep a scalar path for the other sizes.
// Keep the beta == 0 case: y must not be read then (it holds NaN).
__global__ void gemv_kernel(int rows, int cols, float alpha, const float* __restrict__ A,
                            const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;  // 64-bit: rows * cols may be > 2^31
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += a[c] * x[c];
  y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  // TODO: with a warp per row, the grid needs enough threads for 32 per row.
  const int blocks = (rows + kThreads - 1) / kThreads;
  gemv_kernel<<<blocks, kThreads, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
