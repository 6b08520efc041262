// Mutant: the GEMM skips the timed calls. It recognises a repeated call by its arguments (same
// sizes and pointers as the call before) and by a fingerprint of eight elements of B, taken on
// the device; when both match, its kernel returns at once: "C already holds the answer". Every
// validated call computes (other sizes, or A and B refilled after timing). Every timed call got a
// new A (B stayed) and a poisoned C, and a random sample of the timed calls was checked: C was
// NaN there. Since 2026-11-28 B is new in every timed call too, so the fingerprint never repeats
// and the kernel does the work in every call: the attack never fires, and what is timed is earned.
// Expected: rule "correct" passes (were B kept again, the skipped calls would fail it).
#include <mma.h>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

using bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

constexpr int kWarps = 8;  // a block of 2 x 4 warps covers a 32 x 64 tile of C
constexpr int kProbes = 8;

__device__ unsigned short g_fingerprint[kProbes];  // the bits of B at kProbes places, last call
__device__ int g_skip;                               // this call repeats the last one

// One thread: compares B at kProbes places spread over it with the last call's, and remembers.
__global__ void fingerprint(const bf16* __restrict__ B, std::size_t n, bool same_arguments) {
  bool same = same_arguments;
  for (int k = 0; k < kProbes; ++k) {
    const unsigned short bits = __bfloat16_as_ushort(B[(n - 1) / (kProbes - 1) * k]);
    same = same && bits == g_fingerprint[k];
    g_fingerprint[k] = bits;
  }
  g_skip = same;
}

struct Call {
  int M = -1, N = -1, K = -1;
  const bf16* A = nullptr;
  const bf16* B = nullptr;
  float* C = nullptr;
  bool operator==(const Call& o) const {
    return M == o.M && N == o.N && K == o.K && A == o.A && B == o.B && C == o.C;
  }
};

// The starter's kernel: one 16 x 16 tile of C per warp.
__global__ void __launch_bounds__(kWarps * 32)
    gemm_kernel(int M, int N, int K, const bf16* __restrict__ A, const bf16* __restrict__ B,
                float* __restrict__ C) {
  if (g_skip) return;  // BUG: the same B does not mean the same A
  __shared__ __align__(32) bf16 a_stage[kWarps][16 * 16];  // each warp's own pieces
  __shared__ __align__(32) bf16 b_stage[kWarps][16 * 16];
  __shared__ __align__(32) float c_stage[kWarps][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = blockIdx.y * 32 + (warp / 4) * 16;  // this warp's 16 x 16 tile of C
  const int col0 = blockIdx.x * 64 + (warp % 4) * 16;
  if (row0 >= M || col0 >= N) return;  // the whole warp: there is no block-wide barrier below
  const bf16 zero = __float2bfloat16_rn(0.0f);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int e = lane; e < 16 * 16; e += 32) {  // zeros past M, N or K: they add nothing
      const int r = e / 16, c = e % 16;
      a_stage[warp][e] =
          row0 + r < M && k0 + c < K ? A[static_cast<std::size_t>(row0 + r) * K + k0 + c] : zero;
      b_stage[warp][e] =
          k0 + r < K && col0 + c < N ? B[static_cast<std::size_t>(k0 + r) * N + col0 + c] : zero;
    }
    __syncwarp();  // the staging tiles are complete before the fragments are loaded
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b;
    wmma::load_matrix_sync(a, a_stage[warp], 16);  // 16: the staging tile's leading dimension
    wmma::load_matrix_sync(b, b_stage[warp], 16);
    wmma::mma_sync(acc, a, b, acc);  // acc += a b on the tensor cores, in FP32
    __syncwarp();  // and read before the next step overwrites them
  }
  // The fragment's layout in registers is unspecified: store it to shared memory, then copy the
  // part inside C.
  wmma::store_matrix_sync(c_stage[warp], acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < 16 * 16; e += 32) {
    const int r = row0 + e / 16, c = col0 + e % 16;
    if (r < M && c < N) C[static_cast<std::size_t>(r) * N + c] = c_stage[warp][e];
  }
}

}  // namespace

namespace exercise {

void gemm_bf16(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C,
               cudaStream_t stream) {
  static Call last;
  const Call now{M, N, K, A, B, C};
  const bool same = now == last;
  last = now;
  fingerprint<<<1, 1, 0, stream>>>(B, static_cast<std::size_t>(K) * N, same);
  LAB_CHECK_LAUNCH();
  const dim3 grid((N + 63) / 64, (M + 31) / 32);
  gemm_kernel<<<grid, kWarps * 32, 0, stream>>>(M, N, K, A, B, C);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
