// Mutant: the transpose's grid is rounded down. cols / kTile blocks across cover only whole tiles,
// so when cols is not a multiple of 32 the last cols % 32 columns of in (the last rows of out) are
// never written and keep the NaN the harness put there. Correct on 8192 x 8192, wrong on 1000x777,
// and on 1x1 the grid is empty: the launch fails and the CUDA error stops the program.
// Expected: verdict "error", reason "exit" (a CUDA error is an error).
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kTile = 32;
constexpr int kBlockRows = 8;

// The padded transpose (correct, conflict-free).
__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                                 int cols) {
  __shared__ float tile[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kTile + tx;
  const int r0 = blockIdx.y * kTile + ty;
#pragma unroll
  for (int j = 0; j < kTile; j += kBlockRows)
    if (r0 + j < rows && c < cols)
      tile[ty + j][tx] = in[static_cast<std::size_t>(r0 + j) * cols + c];
  __syncthreads();
  const int oc = blockIdx.y * kTile + tx;
  const int or0 = blockIdx.x * kTile + ty;
#pragma unroll
  for (int j = 0; j < kTile; j += kBlockRows)
    if (or0 + j < cols && oc < rows)
      out[static_cast<std::size_t>(or0 + j) * rows + oc] = tile[tx][ty + j];
}

constexpr int kT = 32;  // SGEMM: a 32 x 32 block computes a 32 x 32 tile of C

__global__ void sgemm_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                             const float* __restrict__ B, float beta, float* __restrict__ C) {
  __shared__ float As[kT][kT];
  __shared__ float Bs[kT][kT];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * kT + ty;
  const int col = blockIdx.x * kT + tx;
  float sum = 0.0f;
  for (int k0 = 0; k0 < K; k0 += kT) {
    As[ty][tx] = (row < M && k0 + tx < K) ? A[static_cast<std::size_t>(row) * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[static_cast<std::size_t>(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kT; ++k) sum += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) {
    float* c = C + static_cast<std::size_t>(row) * N + col;
    *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
  }
}

}  // namespace

namespace exercise {

void transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  const dim3 grid(cols / kTile /* BUG: rounds down */, (rows + kTile - 1) / kTile);
  transpose_kernel<<<grid, dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream) {
  const dim3 grid((N + kT - 1) / kT, (M + kT - 1) / kT);
  sgemm_kernel<<<grid, dim3(kT, kT), 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
