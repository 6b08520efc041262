// Lesson 05, the reference solution: a transpose through a padded shared tile, and a warp-tiled
// SGEMM.
// Its tile shapes are the fastest of the instructor's tuning sweep on an H200 (tuning/sweep.cu,
// results in tuning/h200-sweep.txt; NOTES.md has the tables).
//
// transpose: the starter's idea, a tile through shared memory with one float of padding per row,
// made bigger: tile[64][65] moved by 256 threads with float4 global loads and stores (16 floats
// per thread each way, 4 loads in flight). Word (r, c) of the tile is at r * 65 + c, bank
// (r + c) % 32: the column reads no longer hit one bank 32 times. A warp moves 4 rows x 8 float4,
// one half of each row, not 2 whole rows: its lanes' words are 4 apart along a row and 1 bank
// apart across rows, 32 different banks, so no shared access conflicts (2 whole rows of 16 lanes
// would put lanes 32 words apart, one bank: a 2-way conflict on every access). Judged on the H200:
// 0.987, 0.990 and 0.992 of the copy ceiling; in the sweep tile[32][33] with 128 threads read 0.943,
// with scalar accesses 0.665.
//
// sgemm: the README's register-blocked block tile (128 x 256 for big matrices, 256 threads, 8 x 16
// outputs per thread, K in steps of BK = 8, A stored transposed in shared memory), with changes
// aimed at the inner loop, which is all that matters at 4096^3:
//  * warp tiles: each warp computes a 64 x 64 piece of C, its lanes an 8 x 4 grid over it. For one
//    k a warp then reads 8 distinct float4s of A and 4 of B in each shared load, each load one
//    128-byte wavefront, 6 loads for 128 FMAs a lane.
//  * fragments in two register slots: the values of A and B for k + 1 are read from shared
//    memory while the 128 FMAs of k run, so a warp never waits on a shared load it just issued;
//  * across steps the same: the last k of a step stores the prefetched global tiles (between two
//    barriers) and reads k = 0 of the new tiles, and only then does its own FMAs, which hide the
//    barriers and that first read.
//  * one shared buffer, not two: the next tiles already wait in registers while a step computes,
//    so a second buffer would only save one barrier per step. In the sweep (4096^3, H200) one
//    buffer ran faster with every shape it tried (0.90 of cuBLAS against 0.81 for this one). The
//    sweep measures, it does not explain; a guess: without a buffer index every shared address
//    is a constant offset from the lane's.
//  * 255 registers a thread (128 accumulators, two slots of fragments, the next tiles), so one
//    block of 8 warps per SM; 128 x 128 tiles of 8 x 8 lanes at two blocks per SM read 0.895.
//  * blocks in a grouped order (tile_of_block), for L2 hits: 0.913 in the sweep, where the
//    launch order read 0.902 and 0.907.
// Sizes that are not multiples of the tiles take the same path: loads past M, N or K give zeros
// (a zero in A or B adds nothing to a dot product), stores past M or N are skipped. float4 global
// loads and stores only where the row length and the pointer allow them.
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

// ---------------------------------------------------------------------------------------------
// transpose

constexpr int kTile = 64;
constexpr int kTransposeThreads = 256;
constexpr int kVecsPerRow = kTile / 4;                              // float4s in a tile row
constexpr int kVecsPerThread = kTile * kVecsPerRow / kTransposeThreads;  // 4 each way
static_assert(kVecsPerThread * kTransposeThreads == kTile * kVecsPerRow);

// Where float4 number v of the tile (v = threadIdx.x + i * kTransposeThreads) goes: warp w of the
// 32 vectors from 32 w moves rows 4 (w / 2) + 0..3, float4s 8 (w % 2) + 0..7 of each (a half row,
// 128 bytes: still coalesced). Lane l: row + l / 8, float4 + l % 8.
__device__ __forceinline__ int tile_row(int v) { return v / 64 * 4 + v % 32 / 8; }
__device__ __forceinline__ int tile_vec(int v) { return v / 32 % 2 * 8 + v % 8; }
static_assert(kTile == 64 && kVecsPerRow == 16, "tile_row and tile_vec are written for this tile");

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// vec_in: cols % 4 == 0 and in 16-byte aligned, so a float4 of a row is aligned (and the same
// for out with rows). Without it, or at the right edge, a thread moves its 4 floats one by one.
__global__ void __launch_bounds__(kTransposeThreads)
    transpose_padded(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                     bool vec_in, bool vec_out) {
  __shared__ float tile[kTile][kTile + 1];  // +1: a column no longer sits in one bank
  const int r0 = blockIdx.y * kTile, c0 = blockIdx.x * kTile;
#pragma unroll
  for (int i = 0; i < kVecsPerThread; ++i) {  // independent float4 loads in flight per thread
    const int v = threadIdx.x + i * kTransposeThreads;
    const int tr = tile_row(v), tc = tile_vec(v) * 4;  // place in the tile
    const int r = r0 + tr, c = c0 + tc;
    if (r >= rows) continue;
    const float* p = in + static_cast<std::size_t>(r) * cols + c;
    float4 x;
    if (vec_in && c + 4 <= cols) {
      x = *reinterpret_cast<const float4*>(p);
    } else {  // zeros past the right edge: never stored, as out has no row for them
      x.x = c < cols ? p[0] : 0.0f;
      x.y = c + 1 < cols ? p[1] : 0.0f;
      x.z = c + 2 < cols ? p[2] : 0.0f;
      x.w = c + 3 < cols ? p[3] : 0.0f;
    }
    tile[tr][tc + 0] = x.x;
    tile[tr][tc + 1] = x.y;
    tile[tr][tc + 2] = x.z;
    tile[tr][tc + 3] = x.w;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kVecsPerThread; ++i) {
    const int v = threadIdx.x + i * kTransposeThreads;
    const int tc = tile_row(v), tr = tile_vec(v) * 4;  // 4 tile rows of one column
    const int orow = c0 + tc, oc = r0 + tr;                      // out is cols x rows
    if (orow >= cols) continue;
    const float4 x = make_float4(tile[tr + 0][tc], tile[tr + 1][tc], tile[tr + 2][tc],
                                 tile[tr + 3][tc]);
    float* p = out + static_cast<std::size_t>(orow) * rows + oc;
    if (vec_out && oc + 4 <= rows) {
      *reinterpret_cast<float4*>(p) = x;
    } else {
      if (oc < rows) p[0] = x.x;
      if (oc + 1 < rows) p[1] = x.y;
      if (oc + 2 < rows) p[2] = x.z;
      if (oc + 3 < rows) p[3] = x.w;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// sgemm

constexpr int kBK = 8;  // depth of a K step: 8 x 128 FMAs per thread between two barriers

// A block computes a BM x BN tile of C with (BM / WM) x (BN / WN) warps, a warp a WM x WN piece of
// it. The warp's 32 lanes form a (WM / TM) x (WN / TN) grid over that piece, and a lane owns
// TM x TN outputs as (TM / 4) x (TN / 4) sub-blocks of 4 x 4, kStrideM rows and kStrideN columns
// apart. Neighbouring lanes thus read neighbouring float4s of shared memory (no bank conflicts)
// and store neighbouring float4s of C (coalesced). kGroup: consecutive blocks walk a column of
// kGroup tiles before the next column (see tile_of_block).
template <int BM_, int BN_, int WM_, int WN_, int TM_, int TN_, int kGroup_>
struct Tiles {
  static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, TM = TM_, TN = TN_;
  static constexpr int kGroup = kGroup_;
  static constexpr int kLaneCols = WN / TN;
  static constexpr int kSubM = TM / 4, kSubN = TN / 4;
  static constexpr int kStrideM = WM / kSubM, kStrideN = WN / kSubN;
  static constexpr int kWarpsN = BN / WN;
  static constexpr int kThreads = (BM / WM) * kWarpsN * 32;
  static constexpr int kLoadsA = BM * kBK / 4 / kThreads;  // float4s of the A tile per thread
  static constexpr int kLoadsB = kBK * BN / 4 / kThreads;  // float4s of the B tile per thread
  static_assert((WM / TM) * kLaneCols == 32, "a warp's lanes tile its piece exactly");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BM % WM == 0 && BN % WN == 0);
  static_assert(kLoadsA * 4 * kThreads == BM * kBK && kLoadsB * 4 * kThreads == kBK * BN);
};
// Big matrices: 128 x 256 tiles, 8 warps of 64 x 64, 8 x 16 outputs per lane: 6 float4 reads of
// shared memory for 128 FMAs, where 8 x 8 needs 4 for 64. cuBLAS's FP32 kernel at 4096^3 on the
// H200 has the same shape (ncu lists it as ..._tilesize256x128x8_stage3_warpsize4x2x1_ffma, in
// its column-major terms). Its 255 registers a thread leave room for one block per SM, 8 warps.
// Small grids: 64 x 64 tiles of 2 warps, 8 x 8 outputs per lane, 8x the blocks of 128 x 256.
using BigTiles = Tiles<128, 256, 64, 64, 8, 16, 8>;
using SmallTiles = Tiles<64, 64, 32, 64, 8, 8, 1>;

// Four consecutive floats P[r][c .. c + 3] of a rows x cols row-major matrix, zeros past its
// edges. vec: cols % 4 == 0 and P 16-byte aligned, so with c % 4 == 0 a float4 load is aligned.
__device__ __forceinline__ float4 load4(const float* __restrict__ P, int rows, int cols, int r,
                                        int c, bool vec) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (r >= rows) return v;
  const float* p = P + static_cast<std::size_t>(r) * cols + c;
  if (vec && c + 3 < cols) return *reinterpret_cast<const float4*>(p);
  if (c < cols) v.x = p[0];
  if (c + 1 < cols) v.y = p[1];
  if (c + 2 < cols) v.z = p[2];
  if (c + 3 < cols) v.w = p[3];
  return v;
}

// The (column, row) of the tile this block computes. In launch order blocks run along rows of
// tiles: the blocks resident at once share a few rows of A but read all of B. Grouped, they
// walk down a column of G tiles first, then the next column: they share G rows of A and a few
// columns of B, so more of their reads are L2 hits (about half a percent at 4096^3 on the H200, in the sweep).
template <int G>
__device__ __forceinline__ int2 tile_of_block() {
  if constexpr (G == 1) {
    return make_int2(blockIdx.x, blockIdx.y);
  } else {
    const int id = blockIdx.x + blockIdx.y * gridDim.x;
    const int per_group = G * gridDim.x;  // tiles in G whole rows
    const int first_row = id / per_group * G;
    const int rows = min(static_cast<int>(gridDim.y) - first_row, G);  // the last group: fewer
    const int in_group = id % per_group;
    return make_int2(in_group / rows, first_row + in_group % rows);
  }
}

// The launch bound names both numbers: T::kThreads a block and at least one block per SM. With
// the first alone the compiler took the same 255 registers and the same instructions but ordered
// them otherwise, and the kernel ran 1% slower: on one H200, 0.896 of cuBLAS in this program
// where the sweep's copy, bound with both, read 0.907 (ncu: more waits on shared loads).
template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    sgemm_warp_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                     const float* __restrict__ B, float beta, float* __restrict__ C, bool vec_a,
                     bool vec_b, bool vec_c) {
  constexpr int BM = T::BM, BN = T::BN, TM = T::TM, TN = T::TN;
  constexpr int kThreads = T::kThreads;
  static_assert(kBK % 2 == 0, "a step must start on fragment slot 0");

  // As holds the A tile transposed (As[k][m]), so a lane's 4 rows of A for one k are one float4.
  // The +4 padding shifts each k-row by 4 banks: the transposing stores below, 16 rows by 2
  // k-groups per warp, then hit 32 different banks. Rows stay 16-byte aligned.
  __shared__ __align__(16) float As[kBK][BM + 4];
  __shared__ __align__(16) float Bs[kBK][BN];

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  // This lane's first output in the block's tile (its sub-blocks: see Tiles above).
  const int m0 = (warp / T::kWarpsN) * T::WM + (lane / T::kLaneCols) * 4;
  const int n0 = (warp % T::kWarpsN) * T::WN + (lane % T::kLaneCols) * 4;
  const int2 tile = tile_of_block<T::kGroup>();
  const int row0 = tile.y * BM;
  const int col0 = tile.x * BN;

  // The next step's tiles, loaded from global memory into registers while this step computes.
  float4 a_next[T::kLoadsA], b_next[T::kLoadsB];
  auto load_tiles = [&](int k0) {  // global memory -> registers
#pragma unroll
    for (int i = 0; i < T::kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      a_next[i] = load4(A, M, K, row0 + f / (kBK / 4), k0 + (f % (kBK / 4)) * 4, vec_a);
    }
#pragma unroll
    for (int i = 0; i < T::kLoadsB; ++i) {
      const int f = tid + i * kThreads;
      b_next[i] = load4(B, K, N, k0 + f / (BN / 4), col0 + (f % (BN / 4)) * 4, vec_b);
    }
  };
  auto store_tiles = [&] {  // registers -> shared memory
#pragma unroll
    for (int i = 0; i < T::kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      const int m = f / (kBK / 4), k = (f % (kBK / 4)) * 4;
      As[k + 0][m] = a_next[i].x;
      As[k + 1][m] = a_next[i].y;
      As[k + 2][m] = a_next[i].z;
      As[k + 3][m] = a_next[i].w;
    }
#pragma unroll
    for (int i = 0; i < T::kLoadsB; ++i) {
      const int f = tid + i * kThreads;
      *reinterpret_cast<float4*>(&Bs[f / (BN / 4)][(f % (BN / 4)) * 4]) = b_next[i];
    }
  };

  // The TM values of A and TN of B that one k brings to this lane, in two slots: slot
  // (k + 1) % 2 is read from shared memory while the FMAs use slot k % 2.
  float4 a_frag[2][T::kSubM], b_frag[2][T::kSubN];
  auto load_fragments = [&](int slot, int k) {  // shared memory -> registers
#pragma unroll
    for (int s = 0; s < T::kSubM; ++s)
      a_frag[slot][s] = *reinterpret_cast<const float4*>(&As[k][m0 + s * T::kStrideM]);
#pragma unroll
    for (int s = 0; s < T::kSubN; ++s)
      b_frag[slot][s] = *reinterpret_cast<const float4*>(&Bs[k][n0 + s * T::kStrideN]);
  };

  // acc[i][j]: row m0 + (i / 4) kStrideM + i % 4, column n0 + (j / 4) kStrideN + j % 4, the
  // order in which the fragments list them.
  float acc[TM][TN] = {};
  auto multiply = [&](int slot) {  // TM x TN FMAs: the outer product of one k's fragments
    float a[TM], b[TN];
#pragma unroll
    for (int s = 0; s < T::kSubM; ++s) {
      const float4 v = a_frag[slot][s];
      a[4 * s] = v.x, a[4 * s + 1] = v.y, a[4 * s + 2] = v.z, a[4 * s + 3] = v.w;
    }
#pragma unroll
    for (int s = 0; s < T::kSubN; ++s) {
      const float4 v = b_frag[slot][s];
      b[4 * s] = v.x, b[4 * s + 1] = v.y, b[4 * s + 2] = v.z, b[4 * s + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  };

  const int steps = (K + kBK - 1) / kBK;
  load_tiles(0);
  store_tiles();
  __syncthreads();
  load_fragments(0, 0);
  for (int step = 0; step < steps; ++step) {
    const bool more = step + 1 < steps;  // the same in every thread: the barriers below are safe
    if (more) load_tiles((step + 1) * kBK);  // in flight during the 8 k's below

#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      if (k + 1 < kBK) {
        load_fragments((k + 1) % 2, k + 1);
      } else if (more) {
        // One buffer, two barriers: the first waits until every warp has read its last
        // fragments of these tiles (k = kBK - 1, read during k = kBK - 2) before they are
        // overwritten; the second makes the new tiles whole before anyone reads them.
        __syncthreads();
        store_tiles();
        __syncthreads();
        load_fragments(0, 0);
      }
      multiply(k % 2);
    }
  }

  // C = alpha acc + beta C, a float4 at a time where the row allows it.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int r = row0 + m0 + (i / 4) * T::kStrideM + i % 4;
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < T::kSubN; ++h) {
      const int c = col0 + n0 + h * T::kStrideN;
      float* p = C + static_cast<std::size_t>(r) * N + c;
      if (vec_c && c + 3 < N) {
        float4 out = make_float4(alpha * acc[i][h * 4 + 0], alpha * acc[i][h * 4 + 1],
                                 alpha * acc[i][h * 4 + 2], alpha * acc[i][h * 4 + 3]);
        if (beta != 0.0f) {
          const float4 old = *reinterpret_cast<const float4*>(p);
          out.x += beta * old.x;
          out.y += beta * old.y;
          out.z += beta * old.z;
          out.w += beta * old.w;
        }
        *reinterpret_cast<float4*>(p) = out;
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (c + j < N) p[j] = alpha * acc[i][h * 4 + j] + (beta == 0.0f ? 0.0f : beta * p[j]);
      }
    }
  }
}

template <class T>
void launch_sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                  float* C, cudaStream_t stream) {
  const dim3 grid((N + T::BN - 1) / T::BN, (M + T::BM - 1) / T::BM);
  const bool vec_a = K % 4 == 0 && aligned16(A);
  const bool vec_b = N % 4 == 0 && aligned16(B);
  const bool vec_c = N % 4 == 0 && aligned16(C);
  sgemm_warp_tiled<T><<<grid, T::kThreads, 0, stream>>>(M, N, K, alpha, A, B, beta, C, vec_a,
                                                        vec_b, vec_c);
  LAB_CHECK_LAUNCH();
}

// Streaming multiprocessors of the current device, read once (a cheap attribute query, no sync).
int sm_count() {
  static const int sms = [] {
    int device = 0, n = 0;
    LAB_CHECK(cudaGetDevice(&device));
    LAB_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    return n;
  }();
  return sms;
}

}  // namespace

namespace exercise {

void transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  const bool vec_in = cols % 4 == 0 && aligned16(in);
  const bool vec_out = rows % 4 == 0 && aligned16(out);
  transpose_padded<<<grid, kTransposeThreads, 0, stream>>>(in, out, rows, cols, vec_in, vec_out);
  LAB_CHECK_LAUNCH();
}

void sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C,
           cudaStream_t stream) {
  // The big tiles need enough of them to fill the GPU (one block per SM); below that (1024^3
  // makes only 32), 64 x 64 tiles give 8x the blocks at some cost in reuse.
  const long long big_tiles = static_cast<long long>((M + BigTiles::BM - 1) / BigTiles::BM) *
                              ((N + BigTiles::BN - 1) / BigTiles::BN);
  if (big_tiles >= sm_count())
    launch_sgemm<BigTiles>(M, N, K, alpha, A, B, beta, C, stream);
  else
    launch_sgemm<SmallTiles>(M, N, K, alpha, A, B, beta, C, stream);
}

}  // namespace exercise
