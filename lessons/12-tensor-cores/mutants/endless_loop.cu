// Mutant: an endless loop. The starter's kernel walks the column tiles of C with a grid-stride
// loop whose stride was typed with blockIdx.x instead of gridDim.x: the blocks with
// blockIdx.x == 0 step by 0 and compute their first tile forever (they store to C every time, so
// the compiler cannot drop the loop). The first launch never finishes.
// Expected: verdict "error", reason "timeout" (the checker kills the process group).
#include <mma.h>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

using bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

constexpr int kWarps = 8;
constexpr int kMaxColumnBlocks = 16;

// The starter's kernel: one 16 x 16 tile of C per warp.
__global__ void __launch_bounds__(kWarps * 32)
    gemm_kernel(int M, int N, int K, const bf16* __restrict__ A, const bf16* __restrict__ B,
                float* __restrict__ C) {
  __shared__ __align__(32) bf16 a_stage[kWarps][16 * 16];  // each warp's own pieces
  __shared__ __align__(32) bf16 b_stage[kWarps][16 * 16];
  __shared__ __align__(32) float c_stage[kWarps][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = blockIdx.y * 32 + (warp / 4) * 16;
  if (row0 >= M) return;
  const bf16 zero = __float2bfloat16_rn(0.0f);
  // At most kMaxColumnBlocks blocks across; each walks its share of the column tiles.
  for (int bx = blockIdx.x; bx * 64 < N; bx += blockIdx.x) {  // BUG: should be gridDim.x
    const int col0 = bx * 64 + (warp % 4) * 16;
    if (col0 >= N) continue;

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
    __syncwarp();
  }
}

}  // namespace

namespace exercise {

void gemm_bf16(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C,
               cudaStream_t stream) {
  const int column_blocks = (N + 63) / 64;
  const dim3 grid(column_blocks < kMaxColumnBlocks ? column_blocks : kMaxColumnBlocks, (M + 31) / 32);
  gemm_kernel<<<grid, kWarps * 32, 0, stream>>>(M, N, K, A, B, C);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
