// Reference solution: the README's taught path (block tiles shared by the warps) carried on with
// `mma.sync` and `ldmatrix` by hand (inline PTX), tiles swizzled in shared memory, and a 4-stage
// `cp.async` pipeline; nothing Hopper-only (no wgmma, no TMA: what lesson 13 adds).
//
// Each block of 8 warps computes a 128 x 256 tile of C. Along K in steps of BK = 32:
//  * cp.async copies the 128 x 32 tile of A and the 32 x 256 tile of B straight from global to
//    shared memory, 16 bytes per copy, without passing through registers. Four stages of shared
//    memory (96 KB), one per step: a step's tiles are asked for four steps before they are used,
//    so three steps' copies are always in flight while the tensor cores work;
//  * each warp owns a 64 x 64 piece of the tile: 4 x 8 accumulator tiles of 16 x 8 (the shape of
//    mma.sync.m16n8k16), 128 floats per thread. Per 16 along K (a slice) it loads 4 A fragments
//    and 8 B fragments with 8 ldmatrix.x4 and issues 32 mma.sync: 4 KB read from shared memory per
//    128 KFLOP, against 12 KB per 128 KFLOP for WMMA warps of 32 x 64;
//  * the tiles are stored swizzled, not padded: the 16-byte chunk c of tile row r is stored at
//    chunk c XOR (a few bits of r), so the 8 rows that one ldmatrix phase reads, and the 8 chunks
//    that one cp.async phase writes, fall in 8 different groups of 4 banks;
//  * two sets of fragments in registers: while one slice multiplies, the next slice's fragments
//    load, across the step boundary too. So the one barrier per step sits before the step's last
//    slice multiplies: the warps wait for each other while the tensor cores still have 32
//    mma.sync per warp queued, instead of idling until fragments arrive after the barrier. The
//    barrier makes the next step's tiles visible to every warp, and tells the block that every
//    warp has read all it needs of this step's stage, which the copies four steps ahead refill.
// The price of the big tile is occupancy: up to 255 registers per thread (ptxas -v: no spills),
// one block of 8 warps per SM. The 32 independent mma.sync per warp and slice keep the tensor
// cores busy anyway (what CUTLASS's 128 x 256 Ampere kernels do).
//
// Sizes that are not multiples of the tile: copies past M, N or K write zeros (cp.async with a
// source size of 0 fills its 16 bytes with zeros), and zeros add nothing to a dot product; C is
// written element by element (pairs where possible) with a bound check on each. cp.async needs
// 16-byte aligned sources: when K or N is not a multiple of 8 (or A or B is not 16-byte aligned)
// the same kernel fills its tiles with bounds-checked 2-byte loads through registers instead
// (template parameter kAsync = false); the pipeline, the swizzle and the multiplies are the same.
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

using bf16 = __nv_bfloat16;

constexpr int kBM = 128, kBN = 256, kBK = 32;  // block tile, and its depth along K
constexpr int kStages = 4;                     // shared-memory stages of the cp.async pipeline
constexpr int kWarpsM = 2, kWarpsN = 4;        // 8 warps, each a 64 x 64 piece of the tile
constexpr int kThreads = kWarpsM * kWarpsN * 32;
constexpr int kWarpM = kBM / kWarpsM, kWarpN = kBN / kWarpsN;  // 64 x 64
constexpr int kTilesM = kWarpM / 16;  // 4 mma tiles of 16 rows down a warp's piece ...
constexpr int kTilesN = kWarpN / 8;   // ... by 8 of 8 columns across
constexpr int kChunk = 8;             // BF16 per 16-byte chunk
constexpr int kChunksRowA = kBK / kChunk;  // 4 chunks per 64-byte row of the A tile
constexpr int kChunksRowB = kBN / kChunk;  // 32 per 512-byte row of the B tile
constexpr int kChunksA = kBM * kBK / kChunk / kThreads;  // 2 chunks of the A tile per thread
constexpr int kChunksB = kBK * kBN / kChunk / kThreads;  // 4 of the B tile
constexpr int kStageA = kBM * kBK, kStageB = kBK * kBN;  // BF16 per stage
constexpr int kSmemBytes = kStages * (kStageA + kStageB) * static_cast<int>(sizeof(bf16));
static_assert(kChunksA * kChunk * kThreads == kStageA && kChunksB * kChunk * kThreads == kStageB,
              "the threads cover both tiles exactly");
static_assert((kChunksRowA == 4 || kChunksRowA % 8 == 0) && kChunksRowB % 8 == 0,
              "the swizzle below handles rows of 4 chunks or of a multiple of 8");

bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// Where chunk c (16 bytes) of tile row r lives in a tile of kRowChunks chunks per row, in BF16
// from the start of the tile. Shared memory serves 128 bytes at once: 8 bank groups of 16 bytes
// (4 banks each). Without a swizzle, the 8 consecutive rows that one ldmatrix phase reads at the
// same chunk c fall in at most 2 groups (A: 64-byte rows) or in 1 group (B: 512-byte rows).
// The swizzle stores chunk c at c XOR (a few bits of r), chosen so those 8 rows fall in 8 groups:
//  * rows of 8 chunks or more (B, and A with kBK = 64): c XOR (r % 8) permutes the chunks inside
//    each aligned run of 8, so rows r0 .. r0 + 7 at the same c land in groups c % 8 XOR 0 .. 7;
//  * rows of 4 chunks (A with kBK = 32): 2 rows share a 128-byte line. c XOR ((r / 2) % 4): r % 2
//    picks the half of the line, the XOR one of its 4 groups, a different one for each r / 2.
// It also keeps cp.async's writes free of conflicts: 8 neighbouring chunks of a tile (one phase of
// a warp's 16-byte copies) are one aligned run of 8 in a row, or 2 whole rows of 4.
template <int kRowChunks>
__device__ __forceinline__ int swizzled(int r, int c) {
  constexpr int kRowsPerLine = kRowChunks >= 8 ? 1 : 8 / kRowChunks;  // rows per 128 bytes
  constexpr int kPattern = kRowChunks >= 8 ? 8 : kRowChunks;         // how many XOR masks
  return r * kRowChunks * kChunk + (c ^ ((r / kRowsPerLine) % kPattern)) * kChunk;
}
__device__ __forceinline__ int offset_a(int r, int c) { return swizzled<kChunksRowA>(r, c); }
__device__ __forceinline__ int offset_b(int r, int c) { return swizzled<kChunksRowB>(r, c); }

// Global -> shared, 16 bytes, without registers; src_bytes = 0 writes 16 zeros and reads nothing
// (the source must still be a valid address: the callers pass the matrix's first element).
__device__ __forceinline__ void cp_async_16(bf16* dst, const bf16* src, bool inside) {
  const unsigned int d = static_cast<unsigned int>(__cvta_generic_to_shared(dst));
  const int src_bytes = inside ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {  // all but the newest kPending groups landed
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// The fallback's chunk: P[r][c .. c + 7] of a rows x cols matrix, zeros past its edges, read
// 2 bytes at a time (no alignment needed), stored as one 16-byte value.
__device__ __forceinline__ void copy_chunk_checked(bf16* dst, const bf16* __restrict__ P, int rows,
                                                   int cols, int r, int c) {
  unsigned int h[kChunk] = {};
  if (r < rows) {
    const bf16* p = P + static_cast<std::size_t>(r) * cols;
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      if (c + j < cols) h[j] = __bfloat16_as_ushort(p[c + j]);
  }
  *reinterpret_cast<uint4*>(dst) =
      make_uint4(h[0] | h[1] << 16, h[2] | h[3] << 16, h[4] | h[5] << 16, h[6] | h[7] << 16);
}

// Four 8 x 8 BF16 matrices from shared memory into a warp's registers: lanes 8i .. 8i + 7 give
// the addresses of matrix i's 8 rows (16 bytes each), and register i of every lane receives its
// piece of matrix i. .trans hands out each matrix transposed.
// (volatile and "memory": it reads shared memory that the compiler does not see, so it must stay
// between the barriers where the code puts it.)
__device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], const bf16* p) {
  const unsigned int a = static_cast<unsigned int>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned int (&r)[4], const bf16* p) {
  const unsigned int a = static_cast<unsigned int>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a)
               : "memory");
}

// d += a b for one 16 x 8 tile, 16 deep: a 16 x 16 (row-major fragment, 4 registers of 2 BF16),
// b 16 x 8 (column fragment, 2 registers), d 16 x 8 in FP32 (4 floats per lane).
__device__ __forceinline__ void mma_bf16_16x8x16(float (&d)[4], const unsigned int (&a)[4],
                                                 unsigned int b0, unsigned int b1) {
  asm(  // not volatile: a pure function of its registers, free to be scheduled
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <bool kAsync>
__global__ void __launch_bounds__(kThreads, 1)
    gemm_mma(int M, int N, int K, const bf16* __restrict__ A, const bf16* __restrict__ B,
             float* __restrict__ C, bool pairs_c) {
  extern __shared__ __align__(128) unsigned char smem[];
  bf16* As = reinterpret_cast<bf16*>(smem);  // kStages tiles of A [m][k], then of B [k][n]
  bf16* Bs = As + kStages * kStageA;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;  // the warp's piece: rows wm * 64 ..
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  const int steps = (K + kBK - 1) / kBK;  // the last step's tiles are zero-filled past K

  // Step `step`'s tiles into stage `step % kStages`. Chunk f of a tile is row f / (chunks per
  // row), chunk f % (chunks per row): neighbouring threads copy neighbouring 16 bytes of a row.
  // With kAsync, K % 8 == 0 and N % 8 == 0, so a chunk lies wholly inside K (N) or wholly past.
  auto load_step = [&](int step) {
    bf16* as = As + (step % kStages) * kStageA;
    bf16* bs = Bs + (step % kStages) * kStageB;
    const int k0 = step * kBK;
#pragma unroll
    for (int i = 0; i < kChunksA; ++i) {
      const int f = tid + i * kThreads, r = f / kChunksRowA, c = f % kChunksRowA;
      const int gr = row0 + r, gc = k0 + c * kChunk;
      if constexpr (kAsync) {
        const bool inside = gr < M && gc < K;
        cp_async_16(as + offset_a(r, c), inside ? A + static_cast<std::size_t>(gr) * K + gc : A,
                    inside);
      } else {
        copy_chunk_checked(as + offset_a(r, c), A, M, K, gr, gc);
      }
    }
#pragma unroll
    for (int i = 0; i < kChunksB; ++i) {
      const int f = tid + i * kThreads, r = f / kChunksRowB, c = f % kChunksRowB;
      const int gr = k0 + r, gc = col0 + c * kChunk;
      if constexpr (kAsync) {
        const bool inside = gr < K && gc < N;
        cp_async_16(bs + offset_b(r, c), inside ? B + static_cast<std::size_t>(gr) * N + gc : B,
                    inside);
      } else {
        copy_chunk_checked(bs + offset_b(r, c), B, K, N, gr, gc);
      }
    }
  };

  // Which row and chunk of a fragment this lane addresses in ldmatrix.x4: lanes 0-15 rows 0-15
  // of the 16-row block at its first 8 columns, lanes 16-31 the same rows 8 columns on. For A
  // (16 x 16 of [m][k]) that is matrices a0 a1 a2 a3 of the mma's A fragment; for B (16 x 16 of
  // [k][n], transposed on the way) it is b0 b1 of one 8-column tile, then b0 b1 of the next.
  const int frag_row = lane % 16, frag_chunk = lane / 16;

  // One 16-deep slice of the warp's piece: 4 A fragments (16 x 16) and 8 B fragments (16 x 8,
  // two per ldmatrix.x4.trans).
  struct Fragments {
    unsigned int a[kTilesM][4], b[kTilesN / 2][4];
  };
  auto load_fragments = [&](Fragments& f, int stage, int kk) {
    const bf16* as = As + stage * kStageA;
    const bf16* bs = Bs + stage * kStageB;
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
      ldmatrix_x4(f.a[i], as + offset_a(wm * kWarpM + i * 16 + frag_row, kk / kChunk + frag_chunk));
#pragma unroll
    for (int j = 0; j < kTilesN / 2; ++j)
      ldmatrix_x4_trans(f.b[j], bs + offset_b(kk + frag_row,
                                              (wn * kWarpN + j * 16) / kChunk + frag_chunk));
  };
  float acc[kTilesM][kTilesN][4] = {};
  auto multiply = [&](const Fragments& f) {  // every A fragment feeds 8 mma, every B fragment 4
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int j = 0; j < kTilesN; ++j)
        mma_bf16_16x8x16(acc[i][j], f.a[i], f.b[j / 2][(j % 2) * 2], f.b[j / 2][(j % 2) * 2 + 1]);
  };

  // Fill the pipeline: steps 0 .. kStages - 1, one commit group each, in every stage (a group is
  // empty where K has fewer steps: the wait counts below stay right).
#pragma unroll
  for (int s = 0; s < kStages; ++s) {
    if (s < steps) load_step(s);
    cp_async_commit();
  }
  cp_async_wait<kStages - 1>();  // step 0's group (the oldest) has landed, for every thread ...
  __syncthreads();               // ... and is visible to every warp

  // Two sets of fragments: while the tensor cores multiply one slice, the next slice's fragments
  // are loading. At the start of every step, frag[0] holds its first slice.
  constexpr int kSlices = kBK / 16;
  static_assert(kSlices % 2 == 0, "an even number of slices per step brings frag[0] back round");
  Fragments frag[2];
  load_fragments(frag[0], 0, 0);
  for (int step = 0; step < steps; ++step) {
    const int stage = step % kStages;
#pragma unroll
    for (int kk = 0; kk < kSlices; ++kk) {
      if (kk + 1 < kSlices) {
        load_fragments(frag[(kk + 1) % 2], stage, (kk + 1) * 16);
      } else {
        // The step's last slice is in registers: move on to the next step's tiles while it
        // multiplies. Groups committed so far: kStages + step; leaving the newest kStages - 2
        // pending means this thread's copies for step + 1 have landed, and the barrier makes
        // everyone's visible. Past the barrier every warp has read all it needs of `stage`, so
        // the copies for step + kStages may refill it.
        cp_async_wait<kStages - 2>();
        __syncthreads();
        if (step + kStages < steps) load_step(step + kStages);
        cp_async_commit();
        if (step + 1 < steps) load_fragments(frag[(kk + 1) % 2], (step + 1) % kStages, 0);
      }
      multiply(frag[kk % 2]);
    }
  }
  cp_async_wait<0>();  // no copy may still be writing when the block exits (only empty groups
                       // are left, but leave nothing to reasoning)

  // C: lane l holds, in tile (i, j), rows l / 4 and l / 4 + 8, columns 2 (l % 4) and the next.
  // A quad of lanes writes 32 consecutive bytes of a row: every 32-byte sector is written whole.
#pragma unroll
  for (int i = 0; i < kTilesM; ++i)
#pragma unroll
    for (int j = 0; j < kTilesN; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = row0 + wm * kWarpM + i * 16 + lane / 4 + half * 8;
        const int c = col0 + wn * kWarpN + j * 8 + (lane % 4) * 2;
        if (r >= M || c >= N) continue;
        float* out = C + static_cast<std::size_t>(r) * N + c;
        const float v0 = acc[i][j][half * 2], v1 = acc[i][j][half * 2 + 1];
        if (pairs_c) {  // N even and C 8-byte aligned: c is even, so c + 1 < N and out aligned
          *reinterpret_cast<float2*>(out) = make_float2(v0, v1);
        } else {
          out[0] = v0;
          if (c + 1 < N) out[1] = v1;
        }
      }
}

template <bool kAsync>
void launch(int M, int N, int K, const bf16* A, const bf16* B, float* C, bool pairs_c,
            cudaStream_t stream) {
  // 96 KB of dynamic shared memory is more than the default 48 KB: raise the kernel's own limit,
  // once per program (a per-kernel attribute, not a device-wide setting).
  static const bool opted_in = [] {
    LAB_CHECK(cudaFuncSetAttribute(gemm_mma<kAsync>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   kSmemBytes));
    return true;
  }();
  (void)opted_in;
  const dim3 grid((N + kBN - 1) / kBN, (M + kBM - 1) / kBM);
  gemm_mma<kAsync><<<grid, kThreads, kSmemBytes, stream>>>(M, N, K, A, B, C, pairs_c);
  LAB_CHECK_LAUNCH();
}

}  // namespace

namespace exercise {

void gemm_bf16(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C,
               cudaStream_t stream) {
  // cp.async of 16 bytes: every chunk's source 16-byte aligned, which needs rows of A and B that
  // are whole chunks (K % 8, N % 8) and aligned matrices.
  const bool async = K % kChunk == 0 && N % kChunk == 0 && aligned(A, 16) && aligned(B, 16);
  const bool pairs_c = N % 2 == 0 && aligned(C, 8);
  if (async)
    launch<true>(M, N, K, A, B, C, pairs_c, stream);
  else
    launch<false>(M, N, K, A, B, C, pairs_c, stream);
}

}  // namespace exercise
