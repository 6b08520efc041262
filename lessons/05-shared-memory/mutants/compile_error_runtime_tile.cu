// Mutant: a compile error. The tile's padding is chosen at run time, but the size of a __shared__
// array must be a constant the compiler knows (for a size chosen at launch, use
// extern __shared__ and the third launch parameter).
// Expected: verdict "error", reason "compile".
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kTile = 32;
constexpr int kBlockRows = 8;

__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                                 int cols, int pad) {
  __shared__ float tile[kTile][kTile + pad];  // BUG: not a constant expression
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kTile + tx;
  const int r0 = blockIdx.y * kTile + ty;
  for (int j = 0; j < kTile; j += kBlockRows)
    if (r0 + j < rows && c < cols)
      tile[ty + j][tx] = in[static_cast<std::size_t>(r0 + j) * cols + c];
  __syncthreads();
  const int oc = blockIdx.y * kTile + tx;
  const int or0 = blockIdx.x * kTile + ty;
  for (int j = 0; j < kTile; j += kBlockRows)
    if (or0 + j < cols && oc < rows)
      out[static_cast<std::size_t>(or0 + j) * rows + oc] = tile[tx][ty + j];
}

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
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  transpose_kernel<<<grid, dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols, 1);
  LAB_CHECK_LAUNCH();
}

void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream) {
  const dim3 grid((N + 31) / 32, (M + 31) / 32);
  sgemm_kernel<<<grid, dim3(32, 32), 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
