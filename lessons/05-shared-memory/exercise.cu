// Lesson 05, the exercise: two functions that use shared memory well.
//
// This is the one file you edit. Both functions are correct, and both are too slow:
//   * transpose goes through a 32 x 32 shared-memory tile, but reads the tile down a column:
//     the 32 lanes of a warp hit the same shared-memory bank, and the read is replayed 32 times.
//   * sgemm is coalesced, but every thread fetches its row of A and column of B from L1/L2 on its
//     own: 2 loads for every 2 FLOPs, nothing shared between the threads of a block.
//
// Goal (what the checker measures, in the same run):
//   * both correct on every size the harness checks, including sizes that are not multiples of
//     any tile (1000x777, 33x4097, 4097x33; 1000x777x515, 129x67x1031, 300x644x260, 1x1x1) and
//     beta == 0, where C holds NaN on entry;
//   * transpose: [at least 0.85x the copy ceiling](check.toml#transpose_bandwidth)
//     (transpose_tiled, the bank-conflicted version that this starter is, reaches about 0.6 on
//     an H100);
//   * sgemm: [at least 0.14x the speed](check.toml#sgemm_speed) of cuBLAS (cublasSgemm, float32)
//     at 4096 x 4096 x 4096.
//
// Build and run (from the repository root):
//   cmake --workflow --preset lab                           # builds everything, checks the lessons
//   build/release/lessons/05-shared-memory/starter --quick  # small sizes, seconds
//   build/release/lessons/05-shared-memory/starter --variant transpose_tiled --variant
//   exercise_transpose
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kTile = 32;      // a block transposes one kTile x kTile tile ...
constexpr int kBlockRows = 8;  // ... with kTile x kBlockRows threads, kTile / kBlockRows rows each

// TODO (transpose): the tile is written along its rows, tile[ty + j][tx], and read down its
// columns, tile[tx][ty + j]. Shared memory has 32 banks of 4 bytes; word w is in bank w % 32. A
// column of a [32][32] float array is 32 words 32 apart: all in one bank, so the 32 lanes of a warp
// are served one after another. Change the layout of the tile so that a column falls in 32
// different banks (one extra float per row is enough; an XOR swizzle of the column index works
// too) and keep everything else. The two global-memory sides are already coalesced.
__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                                 int cols) {
  __shared__ float tile[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kTile + tx;   // column of in
  const int r0 = blockIdx.y * kTile + ty;  // first row of in handled by this thread
#pragma unroll
  for (int j = 0; j < kTile; j += kBlockRows)
    if (r0 + j < rows && c < cols)
      tile[ty + j][tx] = in[static_cast<std::size_t>(r0 + j) * cols + c];
  __syncthreads();  // the whole tile is in shared memory before anyone reads it
  const int oc = blockIdx.y * kTile + tx;   // column of out = row of in
  const int or0 = blockIdx.x * kTile + ty;  // row of out = column of in
#pragma unroll
  for (int j = 0; j < kTile; j += kBlockRows)
    if (or0 + j < cols && oc < rows)
      out[static_cast<std::size_t>(or0 + j) * rows + oc] = tile[tx][ty + j];
}

// TODO (sgemm): one thread per element of C, and each thread reads a whole row of A and a whole
// column of B by itself. Neighbouring threads read the same data again and again (from L1 or L2,
// which is why this is not hopeless), but the loads, not the FMAs, set the pace.
//
// Hints, in the order that helps most:
//  1. Tiles in shared memory. A 32 x 32 block computes a 32 x 32 tile of C. Walk along K in
//     steps of 32: each thread loads one element of the A tile (rows of C's tile, k0 .. k0 + 31)
//     and one of the B tile into two __shared__ float[32][32] arrays, __syncthreads(), then every
//     thread does 32 FMAs reading both tiles from shared memory, then __syncthreads() again before
//     the next step overwrites them. Each element loaded from global memory is now used 32 times.
//     Load zeros for elements past M, N or K: then the FMA loop needs no bounds checks.
//  2. Why both barriers: the first one makes the tile complete before anyone reads it; the second
//     one stops a fast thread from overwriting the tile while a slow one still reads it. Remove
//     either, and the result is wrong sometimes (compute-sanitizer --tool racecheck shows where).
//  3. Beyond the bar: each thread computes several outputs (e.g. 8 x 8) from values it keeps
//     in registers, so one shared-memory load feeds several FMAs (register tiling; the lesson's
//     README and the slides show how).
// Keep the beta == 0 case: C must not be read then (it holds NaN).
__global__ void sgemm_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                             const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int row = blockIdx.y * 32 + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + static_cast<std::size_t>(row) * K;  // 64-bit: M * K may exceed 2^31
  float sum = 0.0f;
  for (int k = 0; k < K; ++k) sum += a[k] * B[static_cast<std::size_t>(k) * N + col];
  float* c = C + static_cast<std::size_t>(row) * N + col;
  *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
}

}  // namespace

namespace exercise {

void transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  const dim3 block(kTile, kBlockRows);
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);  // round up
  transpose_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream) {
  const dim3 block(32, 32);
  const dim3 grid((N + 31) / 32, (M + 31) / 32);  // round up: every element of C has a thread
  sgemm_kernel<<<grid, block, 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
