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
// 0.987 and 0.990 of the copy ceiling; in the sweep tile[32][33] with 128 threads read 0.943,
// with scalar accesses 0.665.
//
// sgemm: the README's register-blocked block tile (128 x 128 for big matrices, 256 threads, 8 x 8
// outputs per thread, K in steps of BK = 8, A stored transposed in shared memory), with changes
// aimed at the inner loop, which is all that matters at 4096^3:
//  * warp tiles: each warp computes a 32 x 64 piece of C, its lanes a 4 x 8 grid over it. For one
//    k a warp then reads 4 distinct float4s of A and 8 of B from shared memory, each load one
//    128-byte wavefront; a warp piece of 16 x 128 needs 2 wavefronts for each B load.
//  * fragments in two register slots: the values of A and B for k + 1 are read from shared
//    memory while the 64 FMAs of k run, so a warp never waits on a shared load it just issued;
//  * across steps the same: the last k of a step stores the prefetched global tiles (between two
//    barriers) and reads k = 0 of the new tiles, and only then does its own FMAs, which hide the
//    barriers and that first read.
//  * one shared buffer, not two: the next tiles already wait in registers while a step computes,
//    so a second buffer would only save one barrier per step. In the sweep (4096^3, H200) one
//    buffer ran at 0.894 of cuBLAS, two at 0.865. The sweep measures, it does not explain; a
//    guess: without a buffer index every shared address is a constant offset from the lane's.
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

constexpr int kBK = 8;  // depth of a K step: 8 x 64 FMAs per thread between two barriers

// A warp computes a kWarpM x kWarpN piece of the block's tile. Its 32 lanes form a kLaneRows x
// kLaneCols grid over that piece, and each lane owns four 4 x 4 sub-blocks of it, kWarpM / 2 rows
// and kWarpN / 2 columns apart (8 x 8 outputs). Neighbouring lanes thus read neighbouring float4s
// of shared memory (no bank conflicts) and store neighbouring float4s of C (coalesced).
constexpr int kWarpM = 32;
constexpr int kWarpN = 64;
constexpr int kLaneRows = 4;
constexpr int kLaneCols = 8;
static_assert(kLaneRows * kLaneCols == 32 && kWarpM == 2 * 4 * kLaneRows &&
              kWarpN == 2 * 4 * kLaneCols);

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

template <int BM, int BN>
__global__ void __launch_bounds__((BM / kWarpM) * (BN / kWarpN) * 32, BM == 128 ? 2 : 1)
    sgemm_warp_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                     const float* __restrict__ B, float beta, float* __restrict__ C, bool vec_a,
                     bool vec_b, bool vec_c) {
  constexpr int kWarpsN = BN / kWarpN;                 // warps across the block's tile
  constexpr int kThreads = (BM / kWarpM) * kWarpsN * 32;
  constexpr int kLoadsA = BM * kBK / 4 / kThreads;  // float4s of the A tile per thread
  constexpr int kLoadsB = kBK * BN / 4 / kThreads;  // float4s of the B tile per thread
  static_assert(BM % kWarpM == 0 && BN % kWarpN == 0);
  static_assert(kLoadsA * 4 * kThreads == BM * kBK && kLoadsB * 4 * kThreads == kBK * BN);
  static_assert(kBK % 2 == 0, "a step must start on fragment slot 0");

  // As holds the A tile transposed (As[k][m]), so a lane's 4 rows of A for one k are one float4.
  // The +4 padding shifts each k-row by 4 banks: the transposing stores below, 16 rows by 2
  // k-groups per warp, then hit 32 different banks. Rows stay 16-byte aligned.
  __shared__ __align__(16) float As[kBK][BM + 4];
  __shared__ __align__(16) float Bs[kBK][BN];

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  // This lane's first output in the block's tile (its sub-blocks: see kWarpM above).
  const int m0 = (warp / kWarpsN) * kWarpM + (lane / kLaneCols) * 4;
  const int n0 = (warp % kWarpsN) * kWarpN + (lane % kLaneCols) * 4;
  const int row0 = blockIdx.y * BM;
  const int col0 = blockIdx.x * BN;

  // The next step's tiles, loaded from global memory into registers while this step computes.
  float4 a_next[kLoadsA], b_next[kLoadsB];
  auto load_tiles = [&](int k0) {  // global memory -> registers
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      a_next[i] = load4(A, M, K, row0 + f / (kBK / 4), k0 + (f % (kBK / 4)) * 4, vec_a);
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      const int f = tid + i * kThreads;
      b_next[i] = load4(B, K, N, k0 + f / (BN / 4), col0 + (f % (BN / 4)) * 4, vec_b);
    }
  };
  auto store_tiles = [&] {  // registers -> shared memory
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      const int m = f / (kBK / 4), k = (f % (kBK / 4)) * 4;
      As[k + 0][m] = a_next[i].x;
      As[k + 1][m] = a_next[i].y;
      As[k + 2][m] = a_next[i].z;
      As[k + 3][m] = a_next[i].w;
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      const int f = tid + i * kThreads;
      *reinterpret_cast<float4*>(&Bs[f / (BN / 4)][(f % (BN / 4)) * 4]) = b_next[i];
    }
  };

  // The 8 values of A and 8 of B that one k brings to this lane, in two slots: slot (k + 1) % 2
  // is read from shared memory while the FMAs use slot k % 2.
  float4 a_frag[2][2], b_frag[2][2];
  auto load_fragments = [&](int slot, int k) {  // shared memory -> registers
    a_frag[slot][0] = *reinterpret_cast<const float4*>(&As[k][m0]);
    a_frag[slot][1] = *reinterpret_cast<const float4*>(&As[k][m0 + kWarpM / 2]);
    b_frag[slot][0] = *reinterpret_cast<const float4*>(&Bs[k][n0]);
    b_frag[slot][1] = *reinterpret_cast<const float4*>(&Bs[k][n0 + kWarpN / 2]);
  };

  // acc[i][j]: row m0 + i (i < 4) or m0 + kWarpM / 2 + i - 4, column n0 + j (j < 4) or
  // n0 + kWarpN / 2 + j - 4, the order in which the fragments list them.
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;
  auto multiply = [&](int slot) {  // 64 FMAs: the outer product of one k's fragments
    const float4 a0 = a_frag[slot][0], a1 = a_frag[slot][1];
    const float4 b0 = b_frag[slot][0], b1 = b_frag[slot][1];
    const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
    const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
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
  for (int i = 0; i < 8; ++i) {
    const int r = row0 + m0 + (i / 4) * (kWarpM / 2) + i % 4;
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int c = col0 + n0 + h * (kWarpN / 2);
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

template <int BM, int BN>
void launch_sgemm(int M, int N, int K, float alpha, const float* A, const float* B, float beta,
                  float* C, cudaStream_t stream) {
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  const bool vec_a = K % 4 == 0 && aligned16(A);
  const bool vec_b = N % 4 == 0 && aligned16(B);
  const bool vec_c = N % 4 == 0 && aligned16(C);
  sgemm_warp_tiled<BM, BN><<<grid, (BM / kWarpM) * (BN / kWarpN) * 32, 0, stream>>>(
      M, N, K, alpha, A, B, beta, C, vec_a, vec_b, vec_c);
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
  // 128 x 128 tiles need enough of them to fill the GPU (2 blocks per SM); below that (1024^3
  // makes only 64), 64 x 64 tiles give 4x the blocks at some cost in reuse.
  const long long big_tiles = static_cast<long long>((M + 127) / 128) * ((N + 127) / 128);
  if (big_tiles >= 2LL * sm_count())
    launch_sgemm<128, 128>(M, N, K, alpha, A, B, beta, C, stream);
  else
    launch_sgemm<64, 64>(M, N, K, alpha, A, B, beta, C, stream);
}

}  // namespace exercise
