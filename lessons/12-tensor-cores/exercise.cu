// Lesson 12, the exercise: a matrix product on the tensor cores, C = A B, BF16 in, FP32 out.
//
// This is the one file you edit. It is correct, and it is slow: a warp computes one 16 x 16 tile
// of C by itself (the harness's wmma_naive). At each step of 16 along K it copies its own 16 x 16
// pieces of A and B into shared memory, loads them as fragments and issues one tensor-core
// multiply-accumulate. Nothing a warp loads is used by another warp: the tensor cores wait for
// loads, 1 KiB of them for every 8192 FLOPs.
//
// Goal (what the checker measures, in the same run, at 4096 x 4096 x 4096):
//   * correct on every size the harness checks (1000x777x515, 129x67x1031, 264x392x520, 1x1x1
//     and the timing size), within the FP32-accumulation tolerance of lessons/12-tensor-cores/
//     README.md against an FP64 reference from the same BF16 inputs; C holds NaN on entry;
//   * at least 0.15x the speed of cuBLAS on the same BF16 product (cublas_bf16);
//   * at least 3x faster than lesson 05's register-tiled FP32 SGEMM (sgemm_fp32).
//
// Build and run (from the repository root):
//   cmake --workflow --preset lab                            # builds everything, checks the lessons
//   build/release/lessons/12-tensor-cores/starter --quick    # small sizes, seconds
//   build/release/lessons/12-tensor-cores/starter --variant cublas_bf16 --variant exercise
#include <mma.h>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

using bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

constexpr int kWarps = 8;  // a block of 2 x 4 warps covers a 32 x 64 tile of C

// TODO: make the warps of a block share their loads.
//
//  1. Block tile in shared memory. Let a block of 8 warps compute a 128 x 128 tile of C. Walk
//     along K in steps of 32: the 256 threads load the 128 x 32 tile of A and the 32 x 128 tile
//     of B into __shared__ bf16 arrays (zeros past M, N or K), __syncthreads(), compute, and
//     __syncthreads() again before the next step overwrites them. Each element fetched from
//     global memory now feeds 128 / 16 = 8 warps' worth of fragments instead of one.
//  2. Several fragments per warp. Give each warp a 32 x 64 piece of the block tile: 2 x 4
//     accumulator fragments (wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][4]).
//     Per 16 along K it loads 2 A fragments and 4 B fragments and does 2 x 4 = 8 mma_sync: each
//     fragment loaded from shared memory is used 4 (A) or 2 (B) times.
//  3. Coalesced loads. Let neighbouring threads load neighbouring 16-byte chunks (8 bf16) of a
//     row: a row of the A tile is 64 bytes, 4 threads; a row of the B tile 256 bytes, 16 threads.
//     A 16-byte load needs an address that is a multiple of 16: only when K % 8 == 0 (rows of A)
//     and N % 8 == 0 (rows of B); otherwise load the 8 elements one by one.
//  4. Padding. wmma::load_matrix_sync reads 8 rows of 16 bytes at a time; with a row of 64
//     bytes (A tile) or 256 bytes (B tile) those rows start in the same few banks. Add 8 bf16
//     (16 bytes) to every row of both tiles (leading dimensions 40 and 136): the 8 rows then
//     cover all 32 banks. The leading dimension must stay a multiple of 8 elements and every
//     fragment pointer 32-byte aligned (__shared__ __align__(128) arrays do it).
//  5. Edges. Keep the zeros in the tiles past M, N or K; store a fragment straight to C with
//     wmma::store_matrix_sync only when all of it is inside C (and N % 8 == 0, for alignment),
//     otherwise through a 16 x 16 float staging tile and element by element.
//  6. For more: load the next tiles into registers while the tensor cores work on the current
//     ones, and alternate two shared buffers (one barrier per step; lesson 05's SGEMM does it).
// Keep the accumulators in float: FP16 accumulation fails the accuracy check.
__global__ void __launch_bounds__(kWarps * 32)
    gemm_kernel(int M, int N, int K, const bf16* __restrict__ A, const bf16* __restrict__ B,
                float* __restrict__ C) {
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
  const dim3 grid((N + 63) / 64, (M + 31) / 32);  // round up: every tile of C has a warp
  gemm_kernel<<<grid, kWarps * 32, 0, stream>>>(M, N, K, A, B, C);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
