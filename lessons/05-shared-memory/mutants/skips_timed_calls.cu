// Mutant: the SGEMM skips the timed calls. It recognises a repeated call by its arguments (same
// sizes, scalars and pointers as the call before) and by a fingerprint of eight elements of B,
// taken on the device; when both match, its kernel returns at once: "C already holds the answer".
// Every validated call computes (other sizes, or A and B refilled after timing), so the old
// harness passed it, timed at a few microseconds. Then every timed call got a new A (B stayed) and
// a poisoned C, and a random sample of the timed calls was checked: C was NaN there. Since
// 2026-11-28 B is new in every timed call too, so the fingerprint never repeats and the kernel
// does the work in every call: the attack never fires, and what is timed is earned.
// Expected: rule "correct_sgemm" passes (were B kept again, the skipped calls would fail it).
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kTile = 32;
constexpr int kBlockRows = 8;
constexpr int kProbes = 8;

__device__ unsigned g_fingerprint[kProbes];  // the bits of B at kProbes places, last call
__device__ int g_skip;                         // this call repeats the last one

// One thread: compares B at kProbes places spread over it with the last call's, and remembers.
__global__ void fingerprint(const float* __restrict__ B, std::size_t n, bool same_arguments) {
  bool same = same_arguments;
  for (int k = 0; k < kProbes; ++k) {
    const unsigned bits = __float_as_uint(B[(n - 1) / (kProbes - 1) * k]);
    same = same && bits == g_fingerprint[k];
    g_fingerprint[k] = bits;
  }
  g_skip = same;
}

struct Call {
  int M = -1, N = -1, K = -1;
  float alpha = 0.0f, beta = 0.0f;
  const float* A = nullptr;
  const float* B = nullptr;
  float* C = nullptr;
  bool operator==(const Call& o) const {
    return M == o.M && N == o.N && K == o.K && alpha == o.alpha && beta == o.beta && A == o.A &&
           B == o.B && C == o.C;
  }
};

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

constexpr int kT = 32;  // SGEMM: a 32 x 32 block computes a 32 x 32 tile of C (correct)

__global__ void sgemm_kernel(int M, int N, int K, float alpha, const float* __restrict__ A,
                             const float* __restrict__ B, float beta, float* __restrict__ C) {
  if (g_skip) return;  // BUG: the same B does not mean the same A
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
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  transpose_kernel<<<grid, dim3(kTile, kBlockRows), 0, stream>>>(in, out, rows, cols);
  LAB_CHECK_LAUNCH();
}

void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream) {
  static Call last;
  const Call now{M, N, K, alpha, beta, A, B, C};
  const bool same = now == last;
  last = now;
  fingerprint<<<1, 1, 0, stream>>>(B, static_cast<std::size_t>(K) * N, same);
  LAB_CHECK_LAUNCH();
  const dim3 grid((N + kT - 1) / kT, (M + kT - 1) / kT);
  sgemm_kernel<<<grid, dim3(kT, kT), 0, stream>>>(M, N, K, alpha, A, B, beta, C);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
