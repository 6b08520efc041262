// Mutant: an endless loop. A transpose that walks the tile rows with a grid-stride loop, whose
// stride was typed with blockIdx.y instead of gridDim.y: the blocks with blockIdx.y == 0 step by 0
// and transpose their first tile forever (they store to out every time, so the compiler cannot
// drop the loop). The first launch never finishes.
// Expected: verdict "error", reason "timeout" (the checker kills the process group).
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kTile = 32;
constexpr int kBlockRows = 8;
constexpr int kMaxRowBlocks = 64;  // at most 64 blocks down; each walks its share of tile rows

__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                                 int cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kTile + tx;
  for (int by = blockIdx.y; by * kTile < rows; by += blockIdx.y) {  // BUG: should be gridDim.y
    const int r0 = by * kTile + ty;
#pragma unroll
    for (int j = 0; j < kTile; j += kBlockRows)
      if (r0 + j < rows && c < cols)
        tile[ty + j][tx] = in[static_cast<std::size_t>(r0 + j) * cols + c];
    __syncthreads();
    const int oc = by * kTile + tx;
    const int or0 = blockIdx.x * kTile + ty;
#pragma unroll
    for (int j = 0; j < kTile; j += kBlockRows)
      if (or0 + j < cols && oc < rows)
        out[static_cast<std::size_t>(or0 + j) * rows + oc] = tile[tx][ty + j];
    __syncthreads();  // the tile is reused by the next iteration
  }
}

// The starter's SGEMM (correct, no shared memory).
__global__ void sgemm_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                             const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int row = blockIdx.y * 32 + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + static_cast<std::size_t>(row) * K;
  float sum = 0.0f;
  for (int k = 0; k < K; ++k) sum += a[k] * B[static_cast<std::size_t>(k) * N + col];
  float* c = C + static_cast<std::size_t>(row) * N + col;
  *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
}

}  // namespace

namespace exercise {

void transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  const int row_blocks = (rows + kTile - 1) / kTile;
  const dim3 grid((cols + kTile - 1) / kTile,
                  row_blocks < kMaxRowBlocks ? row_blocks : kMaxRowBlocks);
  transpose_kernel<<<grid, dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream) {
  const dim3 grid((N + 31) / 32, (M + 31) / 32);
  sgemm_kernel<<<grid, dim3(32, 32), 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
