// Lesson 05, the reference solution: a transpose without bank conflicts, and a warp-tiled SGEMM.
//
// transpose: the starter's tile with one float of padding per row, tile[32][33]. Word (r, c) of
// the tile is at r * 33 + c, bank (r + c) % 32, so a column (c fixed, r = 0..31) covers all 32
// banks: the column read that was replayed 32 times is one shared-memory access. Both global
// sides stay coalesced, and the kernel runs near the copy ceiling.
//
// sgemm: the README's register-blocked block tile (128 x 128 for big matrices, 256 threads, 8 x 8
// outputs per thread, K in steps of BK = 8, A stored transposed in shared memory, two shared
// buffers), with three changes aimed at the inner loop, which is all that matters at 4096^3:
//  * warp tiles: each warp computes a 32 x 64 piece of C, its lanes a 4 x 8 grid over it. For one
//    k a warp then reads 4 distinct float4s of A and 8 of B from shared memory, each load one
//    128-byte wavefront; a warp piece of 16 x 128 needs 2 wavefronts for each B load.
//  * fragments in two register slots: the values of A and B for k + 1 are read from shared
//    memory while the 64 FMAs of k run, so a warp never waits on a shared load it just issued;
//  * across steps the same: the last k of a step first stores the prefetched global tiles into
//    the other buffer, passes the barrier and reads k = 0 of the new tiles, and only then does
//    its own FMAs, which hide the barrier and that first read.
// Sizes that are not multiples of the tiles take the same path: loads past M, N or K give zeros
// (a zero in A or B adds nothing to a dot product), stores past M or N are skipped. float4 global
// loads and stores only where the row length and the pointer allow them.
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

// ---------------------------------------------------------------------------------------------
// transpose

constexpr int kTile = 32;
constexpr int kBlockRows = 8;

__global__ void __launch_bounds__(kTile* kBlockRows)
    transpose_padded(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[kTile][kTile + 1];  // +1: a column spans all 32 banks
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kTile + tx;
  const int r0 = blockIdx.y * kTile + ty;
#pragma unroll
  for (int j = 0; j < kTile; j += kBlockRows)  // 4 independent loads in flight per thread
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

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

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
  __shared__ __align__(16) float As[2][kBK][BM + 4];
  __shared__ __align__(16) float Bs[2][kBK][BN];

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
  auto store_tiles = [&](int buf) {  // registers -> shared memory
#pragma unroll
    for (int i = 0; i < kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      const int m = f / (kBK / 4), k = (f % (kBK / 4)) * 4;
      As[buf][k + 0][m] = a_next[i].x;
      As[buf][k + 1][m] = a_next[i].y;
      As[buf][k + 2][m] = a_next[i].z;
      As[buf][k + 3][m] = a_next[i].w;
    }
#pragma unroll
    for (int i = 0; i < kLoadsB; ++i) {
      const int f = tid + i * kThreads;
      *reinterpret_cast<float4*>(&Bs[buf][f / (BN / 4)][(f % (BN / 4)) * 4]) = b_next[i];
    }
  };

  // The 8 values of A and 8 of B that one k brings to this lane, in two slots: slot (k + 1) % 2
  // is read from shared memory while the FMAs use slot k % 2.
  float4 a_frag[2][2], b_frag[2][2];
  auto load_fragments = [&](int slot, int buf, int k) {  // shared memory -> registers
    a_frag[slot][0] = *reinterpret_cast<const float4*>(&As[buf][k][m0]);
    a_frag[slot][1] = *reinterpret_cast<const float4*>(&As[buf][k][m0 + kWarpM / 2]);
    b_frag[slot][0] = *reinterpret_cast<const float4*>(&Bs[buf][k][n0]);
    b_frag[slot][1] = *reinterpret_cast<const float4*>(&Bs[buf][k][n0 + kWarpN / 2]);
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
  store_tiles(0);
  __syncthreads();
  load_fragments(0, 0, 0);
  for (int step = 0; step < steps; ++step) {
    const int cur = step & 1;
    const bool more = step + 1 < steps;  // the same in every thread: the barrier below is safe
    if (more) load_tiles((step + 1) * kBK);  // in flight during the 8 k's below

#pragma unroll
    for (int k = 0; k < kBK; ++k) {
      if (k + 1 < kBK) {
        load_fragments((k + 1) % 2, cur, k + 1);
      } else if (more) {
        // The other buffer was last read before the barrier of the previous step (its k = 0 was
        // read after it, from `cur`), so it may be overwritten now. The barrier makes the new
        // tiles whole before anyone reads them, and it comes after every read of `cur` in this
        // step, which the next step's stores will overwrite: one barrier per step is enough.
        store_tiles(cur ^ 1);
        __syncthreads();
        load_fragments(0, cur ^ 1, 0);
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
  const dim3 block(kTile, kBlockRows);
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  transpose_padded<<<grid, block, 0, stream>>>(in, out, rows, cols);
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
