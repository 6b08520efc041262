// Lesson 12, the reference solution: a tiled tensor-core GEMM with the warp-level matrix API
// (nvcuda::wmma), C = A B with BF16 inputs and FP32 accumulation.
//
// Each block of 8 warps computes a 128 x 128 tile of C. Along K in steps of BK = 32:
//  * the block stages a 128 x 32 tile of A and a 32 x 128 tile of B in shared memory, each
//    thread moving two 16-byte chunks (8 BF16) of each: neighbouring threads read neighbouring
//    chunks of a row, so every warp-wide load is a few whole 32-byte sectors;
//  * each warp owns a 32 x 64 piece of the tile, 2 x 4 accumulator fragments of 16 x 16 in FP32.
//    Per 16 along K it loads 2 fragments of A and 4 of B from shared memory and issues 8
//    tensor-core multiply-accumulates: every fragment loaded is used 4 (A) or 2 (B) times, and
//    every element fetched from global memory is used by 2 warps (A) or 4 warps (B) of the block
//    and 8 fragments' worth of FLOPs;
//  * every tile row is padded by 16 bytes (leading dimensions 40 and 136 BF16), so the 8 rows of
//    16 bytes that a fragment load reads at once fall in 8 different groups of 4 banks;
//  * two shared-memory buffers: while the tensor cores work on one, the next tiles' global loads
//    are in flight into registers and are then stored into the other, so one barrier per step is
//    enough (as in lesson 05's SGEMM).
// Sizes that are not multiples of the tiles take the same path: loads past M, N or K give zeros
// (a zero adds nothing to a dot product); fragments that stick out of C go through a small
// staging tile in shared memory and are stored element by element.
//
// Where this stops, and what comes next (README, "Beyond this kernel"): the loads still go
// through registers (cp.async, or TMA on Hopper, copies global to shared memory directly), and
// WMMA compiles to mma.sync, which cannot reach the Hopper tensor cores' full rate: cuBLAS uses
// wgmma, a warpgroup-wide multiply that reads its operands straight from shared memory.
#include <mma.h>

#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

using bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

constexpr int kBM = 128, kBN = 128, kBK = 32;  // block tile, and its depth along K
constexpr int kWarpsM = 4, kWarpsN = 2;        // 8 warps, each a 32 x 64 piece of the tile
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kFragsM = kBM / kWarpsM / 16;  // 2 fragments down ...
constexpr int kFragsN = kBN / kWarpsN / 16;  // ... by 4 across, per warp
constexpr int kPad = 8;                      // BF16 per tile row: 16 bytes
constexpr int kLdA = kBK + kPad;             // 40: rows 80 bytes apart
constexpr int kLdB = kBN + kPad;             // 136: rows 272 bytes apart
constexpr int kChunk = 8;                    // BF16 per 16-byte load
constexpr int kChunksA = kBM * kBK / kChunk / kThreads;  // 2 chunks of the A tile per thread
constexpr int kChunksB = kBK * kBN / kChunk / kThreads;  // 2 of the B tile
static_assert(kChunksA * kChunk * kThreads == kBM * kBK && kChunksB * kChunk * kThreads == kBK * kBN,
              "the threads cover both tiles exactly");
static_assert(kLdA % 8 == 0 && kLdB % 8 == 0, "wmma: a BF16 leading dimension is a multiple of 8");

bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// Eight consecutive BF16 P[r][c .. c + 7] of a rows x cols row-major matrix, zeros past its edges,
// as one 16-byte value. vec: cols % 8 == 0 and P 16-byte aligned, so with c % 8 == 0 the chunk is
// aligned and lies wholly inside the row or wholly past its end.
__device__ __forceinline__ uint4 load_chunk(const bf16* __restrict__ P, int rows, int cols, int r,
                                            int c, bool vec) {
  if (r >= rows || c >= cols) return make_uint4(0u, 0u, 0u, 0u);
  const bf16* p = P + static_cast<std::size_t>(r) * cols + c;
  if (vec) return *reinterpret_cast<const uint4*>(p);
  unsigned int h[kChunk];
#pragma unroll
  for (int j = 0; j < kChunk; ++j) h[j] = c + j < cols ? __bfloat16_as_ushort(p[j]) : 0u;
  return make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
}

__global__ void __launch_bounds__(kThreads, 2)
    gemm_tiled(int M, int N, int K, const bf16* __restrict__ A, const bf16* __restrict__ B,
               float* __restrict__ C, bool vec_a, bool vec_b, bool direct_c) {
  __shared__ __align__(128) bf16 As[2][kBM * kLdA];  // A tile, row-major [m][k], two buffers
  __shared__ __align__(128) bf16 Bs[2][kBK * kLdB];  // B tile, row-major [k][n]
  __shared__ __align__(128) float Cs[kThreads / 32][16 * 16];  // per warp: edge fragments

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;  // the warp's piece: rows wm * 32 ..
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;

  // Chunk f of a tile: row f / (chunks per row), chunk f % (chunks per row) of that row. Thread
  // tid takes chunks tid and tid + 256: 4 threads per 64-byte row of A, 16 per 256-byte row of B.
  uint4 a_next[kChunksA], b_next[kChunksB];
  auto load_tiles = [&](int k0) {  // global memory -> registers
#pragma unroll
    for (int i = 0; i < kChunksA; ++i) {
      const int f = tid + i * kThreads;
      a_next[i] = load_chunk(A, M, K, row0 + f / (kBK / kChunk), k0 + (f % (kBK / kChunk)) * kChunk,
                             vec_a);
    }
#pragma unroll
    for (int i = 0; i < kChunksB; ++i) {
      const int f = tid + i * kThreads;
      b_next[i] = load_chunk(B, K, N, k0 + f / (kBN / kChunk), col0 + (f % (kBN / kChunk)) * kChunk,
                             vec_b);
    }
  };
  auto store_tiles = [&](int buf) {  // registers -> shared memory, 16 bytes at a time
#pragma unroll
    for (int i = 0; i < kChunksA; ++i) {
      const int f = tid + i * kThreads;
      *reinterpret_cast<uint4*>(&As[buf][(f / (kBK / kChunk)) * kLdA + (f % (kBK / kChunk)) * kChunk]) =
          a_next[i];
    }
#pragma unroll
    for (int i = 0; i < kChunksB; ++i) {
      const int f = tid + i * kThreads;
      *reinterpret_cast<uint4*>(&Bs[buf][(f / (kBN / kChunk)) * kLdB + (f % (kBN / kChunk)) * kChunk]) =
          b_next[i];
    }
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kFragsM][kFragsN];
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int steps = (K + kBK - 1) / kBK;  // the last step's tiles are zero-padded past K
  load_tiles(0);
  store_tiles(0);
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int cur = step & 1;
    const bool more = step + 1 < steps;
    if (more) load_tiles((step + 1) * kBK);  // in flight while the tensor cores work

#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a[kFragsM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b[kFragsN];
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
        wmma::load_matrix_sync(a[i], &As[cur][(wm * 32 + i * 16) * kLdA + kk], kLdA);
#pragma unroll
      for (int j = 0; j < kFragsN; ++j)
        wmma::load_matrix_sync(b[j], &Bs[cur][kk * kLdB + wn * 64 + j * 16], kLdB);
#pragma unroll
      for (int i = 0; i < kFragsM; ++i)
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }

    // Storing into the other buffer needs no barrier before it: that buffer was last read in the
    // previous step, and every thread has passed the barrier at the end of that step since. The
    // barrier below then does both jobs: the new tiles are complete before the next step reads
    // them, and nobody overwrites `cur` (two steps from now) while a warp still reads it.
    if (more) store_tiles(cur ^ 1);
    __syncthreads();
  }

  // C: a fragment wholly inside C goes straight to global memory; one that sticks out of it goes
  // through the warp's staging tile, element by element. The conditions are the same for the
  // whole warp, as the collective wmma calls need.
#pragma unroll
  for (int i = 0; i < kFragsM; ++i)
#pragma unroll
    for (int j = 0; j < kFragsN; ++j) {
      const int r = row0 + wm * 32 + i * 16, c = col0 + wn * 64 + j * 16;
      if (r >= M || c >= N) continue;
      if (direct_c && r + 16 <= M && c + 16 <= N) {
        wmma::store_matrix_sync(C + static_cast<std::size_t>(r) * N + c, acc[i][j], N,
                                wmma::mem_row_major);
      } else {
        wmma::store_matrix_sync(Cs[warp], acc[i][j], 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 16 * 16; e += 32)
          if (r + e / 16 < M && c + e % 16 < N)
            C[static_cast<std::size_t>(r + e / 16) * N + c + e % 16] = Cs[warp][e];
        __syncwarp();  // read before the next fragment overwrites the staging tile
      }
    }
}

}  // namespace

namespace exercise {

void gemm_bf16(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C,
               cudaStream_t stream) {
  const dim3 grid((N + kBN - 1) / kBN, (M + kBM - 1) / kBM);
  const bool vec_a = K % kChunk == 0 && aligned(A, 16);  // 16-byte loads of A's rows
  const bool vec_b = N % kChunk == 0 && aligned(B, 16);  // ... and of B's
  // store_matrix_sync to global memory: a 32-byte aligned pointer and a leading dimension that
  // is a multiple of 4 floats; with N % 8 == 0 every fragment's corner is 32-byte aligned.
  const bool direct_c = N % 8 == 0 && aligned(C, 32);
  gemm_tiled<<<grid, kThreads, 0, stream>>>(M, N, K, A, B, C, vec_a, vec_b, direct_c);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
