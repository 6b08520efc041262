// Lesson 05, instructor's tuning sweep (issue #50): which tile shapes make the reference SGEMM
// and transpose fastest on this GPU, measured in one process in about a minute.
//
//   05-shared-memory-sweep OUT.json [--sgemm-size N] [--transpose-size N]
//   05-shared-memory-sweep --bank-model   (the transposes' shared-memory bank model; no GPU)
//
// SGEMM: the reference solution's warp-tiled kernel (solutions/05-shared-memory/exercise.cu) with
// its tile parameters made template parameters: block tile BM x BN x BK, warp tile WM x WN,
// thread tile TM x TN (4 x 4 sub-blocks per lane, as the reference), one or two shared buffers,
// float4 or scalar fragment loads from shared memory, and the launch bound's blocks per SM. Each
// configuration is checked first (odd sizes with K, M and N tails, both float4 and scalar global
// paths, beta 0 and not), then timed at N^3 against cuBLAS in pedantic FP32 (lesson 05's
// reference), and checked again at the timed size.
// Transpose: the reference's padded shared tile, generalized over tile size, threads per block
// (hence elements per thread) and vector width of the global loads and stores; the 64 x 64 float4
// tile made conflict-free three ways (a per-lane rotated element order, an unpadded XOR-swizzled
// tile, a warp on 4 half rows: `seg`, the reference since session 29), each checked exactly, then
// timed at N x N against a float4 copy of the same bytes; beside each, the bank conflicts of its
// shared accesses by a model of the banks.
// Timing is the course's: lab::benchmark, cold L2, lead-in, 20 samples (median, min, max).
// Prints both tables sorted by time and writes them as JSON. Exit 0 when every configuration
// validated, 1 when one did not (it is then left out of the ranking), 77 with no GPU.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "lab/check.hpp"
#include "lab/cublas.hpp"
#include "lab/data.hpp"
#include "lab/device.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/reference.hpp"
#include "lab/timing.hpp"
#include "lab/validate.hpp"

namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// =============================================================================================
// SGEMM: the reference's kernel, tile shapes as template parameters.

// One configuration. A warp computes a WM x WN piece of the block's tile; its 32 lanes form a
// kLaneRows x kLaneCols grid over it, and each lane owns (TM / 4) x (TN / 4) sub-blocks of 4 x 4,
// kStrideM rows and kStrideN columns apart (the reference: 64 x 64 warps, 8 x 16 per lane, 2 x 4
// sub-blocks 32 rows and 16 columns apart), so neighbouring lanes read neighbouring float4s.
template <int BM_, int BN_, int BK_, int WM_, int WN_, int TM_, int TN_, bool kDoubleBuffer_,
          bool kVecShared_, int kMinBlocks_, int kGroup_ = 1>
struct Tiles {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, TM = TM_, TN = TN_;
  static constexpr bool kDoubleBuffer = kDoubleBuffer_;  // false: one buffer, two barriers a step
  static constexpr bool kVecShared = kVecShared_;        // false: fragments read a float at a time
  static constexpr int kMinBlocks = kMinBlocks_;         // __launch_bounds__: caps the registers
  static constexpr int kGroup = kGroup_;  // block rows a grouped tile order walks together
  static constexpr int kStages = 0;       // B through registers (Piped: a ring of cp.async)
  static constexpr int kLaneRows = WM / TM, kLaneCols = WN / TN;
  static constexpr int kSubM = TM / 4, kSubN = TN / 4;
  static constexpr int kStrideM = WM / kSubM, kStrideN = WN / kSubN;
  static constexpr int kWarpsN = BN / WN;
  static constexpr int kThreads = (BM / WM) * kWarpsN * 32;
  static constexpr int kVecsA = BM * BK / 4, kVecsB = BK * BN / 4;  // float4s per tile
  static constexpr int kLoadsA = (kVecsA + kThreads - 1) / kThreads;
  static constexpr int kLoadsB = (kVecsB + kThreads - 1) / kThreads;
  static constexpr int kPadA = 4;  // as the reference: shifts each k-row of As by 4 banks
  static constexpr int kBuffers = kDoubleBuffer ? 2 : 1;
  static constexpr int kFloatsA = kBuffers * BK * (BM + kPadA);
  static constexpr std::size_t kSmemBytes = (kFloatsA + kBuffers * BK * BN) * sizeof(float);
  static_assert(kLaneRows * kLaneCols == 32, "a warp's lanes must tile its piece exactly");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 sub-blocks and loads");
  static_assert(BM % WM == 0 && BN % WN == 0, "warps must tile the block");
  static_assert(BK % 2 == 0, "a step must start on fragment slot 0");

  static std::string name() {
    return std::to_string(BM) + "x" + std::to_string(BN) + "x" + std::to_string(BK) + " w" +
           std::to_string(WM) + "x" + std::to_string(WN) + " t" + std::to_string(TM) + "x" +
           std::to_string(TN) + (kDoubleBuffer ? " db" : " 1buf") + (kVecShared ? "" : " scalar") +
           " mb" + std::to_string(kMinBlocks) + (kGroup > 1 ? " g" + std::to_string(kGroup) : "");
  }
};

// The block tile a block computes: (column, row) of the grid, in launch order or grouped. The
// launch order runs along rows of tiles: at 4096^3 (a 32 x 32 grid) the 264 blocks resident at
// once on an H200 cover 8 block rows, so they read 8 row panels of A and all 32 column panels of
// B. Grouped, consecutive blocks walk a column of G tiles first, then the next column: with G 16
// they read 16 panels of A and about 17 of B, 33 instead of 40, so more of their reads hit in L2.
template <int G>
__device__ __forceinline__ int2 tile_of_block() {
  if constexpr (G == 1) {
    return make_int2(blockIdx.x, blockIdx.y);
  } else {
    const int id = blockIdx.x + blockIdx.y * gridDim.x;
    const int per_group = G * gridDim.x;  // tiles in G full rows
    const int first_row = id / per_group * G;
    const int rows = min(static_cast<int>(gridDim.y) - first_row, G);
    const int in_group = id % per_group;
    return make_int2(in_group / rows, first_row + in_group % rows);
  }
}

// Four consecutive floats P[r][c .. c + 3], zeros past the edges (the reference's load4).
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

// acc += the outer product of one k's fragments: TM x TN FMAs.
template <class T>
__device__ __forceinline__ void outer_product(float (&acc)[T::TM][T::TN],
                                              const float4 (&a_frag)[T::kSubM],
                                              const float4 (&b_frag)[T::kSubN]) {
  float a[T::TM], b[T::TN];
#pragma unroll
  for (int s = 0; s < T::kSubM; ++s) {
    a[4 * s + 0] = a_frag[s].x;
    a[4 * s + 1] = a_frag[s].y;
    a[4 * s + 2] = a_frag[s].z;
    a[4 * s + 3] = a_frag[s].w;
  }
#pragma unroll
  for (int s = 0; s < T::kSubN; ++s) {
    b[4 * s + 0] = b_frag[s].x;
    b[4 * s + 1] = b_frag[s].y;
    b[4 * s + 2] = b_frag[s].z;
    b[4 * s + 3] = b_frag[s].w;
  }
#pragma unroll
  for (int i = 0; i < T::TM; ++i)
#pragma unroll
    for (int j = 0; j < T::TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

// C = alpha acc + beta C for a lane whose first output is (r0, c0), a float4 at a time where the
// row allows it.
template <class T>
__device__ __forceinline__ void store_c(const float (&acc)[T::TM][T::TN], int M, int N,
                                        float alpha, float beta, float* __restrict__ C, int r0,
                                        int c0, bool vec_c) {
#pragma unroll
  for (int i = 0; i < T::TM; ++i) {
    const int r = r0 + (i / 4) * T::kStrideM + i % 4;
    if (r >= M) continue;
#pragma unroll
    for (int h = 0; h < T::kSubN; ++h) {
      const int c = c0 + h * T::kStrideN;
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
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    sgemm_tiled(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C, bool vec_a,
                bool vec_b, bool vec_c) {
  constexpr int BM = T::BM, BN = T::BN, BK = T::BK, TM = T::TM, TN = T::TN;
  constexpr int kThreads = T::kThreads;
  // Dynamic shared memory: the larger tiles pass the 48 KiB a static array may take. As holds
  // the A tile transposed (As[k][m]), as in the reference.
  extern __shared__ __align__(16) float smem[];
  auto As = reinterpret_cast<float(*)[BK][BM + T::kPadA]>(smem);
  auto Bs = reinterpret_cast<float(*)[BK][BN]>(smem + T::kFloatsA);

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int m0 = (warp / T::kWarpsN) * T::WM + (lane / T::kLaneCols) * 4;
  const int n0 = (warp % T::kWarpsN) * T::WN + (lane % T::kLaneCols) * 4;
  const int2 tile = tile_of_block<T::kGroup>();
  const int row0 = tile.y * BM;
  const int col0 = tile.x * BN;

  float4 a_next[T::kLoadsA], b_next[T::kLoadsB];
  auto load_tiles = [&](int k0) {  // global memory -> registers
#pragma unroll
    for (int i = 0; i < T::kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      if (T::kVecsA % kThreads == 0 || f < T::kVecsA)
        a_next[i] = load4(A, M, K, row0 + f / (BK / 4), k0 + (f % (BK / 4)) * 4, vec_a);
    }
#pragma unroll
    for (int i = 0; i < T::kLoadsB; ++i) {
      const int f = tid + i * kThreads;
      if (T::kVecsB % kThreads == 0 || f < T::kVecsB)
        b_next[i] = load4(B, K, N, k0 + f / (BN / 4), col0 + (f % (BN / 4)) * 4, vec_b);
    }
  };
  auto store_tiles = [&](int buf) {  // registers -> shared memory
#pragma unroll
    for (int i = 0; i < T::kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      if (T::kVecsA % kThreads == 0 || f < T::kVecsA) {
        const int m = f / (BK / 4), k = (f % (BK / 4)) * 4;
        As[buf][k + 0][m] = a_next[i].x;
        As[buf][k + 1][m] = a_next[i].y;
        As[buf][k + 2][m] = a_next[i].z;
        As[buf][k + 3][m] = a_next[i].w;
      }
    }
#pragma unroll
    for (int i = 0; i < T::kLoadsB; ++i) {
      const int f = tid + i * kThreads;
      if (T::kVecsB % kThreads == 0 || f < T::kVecsB)
        *reinterpret_cast<float4*>(&Bs[buf][f / (BN / 4)][(f % (BN / 4)) * 4]) = b_next[i];
    }
  };

  // One k's values of A and B for this lane, in two slots (the next k's read while this k's
  // FMAs run). Scalar mode reads the same floats one at a time: what float4 reads save.
  float4 a_frag[2][T::kSubM], b_frag[2][T::kSubN];
  auto read4 = [](const float* p) {
    if constexpr (T::kVecShared) {
      return *reinterpret_cast<const float4*>(p);
    } else {
      const volatile float* q = p;  // volatile: keeps the compiler from merging them into one
      return make_float4(q[0], q[1], q[2], q[3]);
    }
  };
  auto load_fragments = [&](int slot, int buf, int k) {  // shared memory -> registers
#pragma unroll
    for (int s = 0; s < T::kSubM; ++s) a_frag[slot][s] = read4(&As[buf][k][m0 + s * T::kStrideM]);
#pragma unroll
    for (int s = 0; s < T::kSubN; ++s) b_frag[slot][s] = read4(&Bs[buf][k][n0 + s * T::kStrideN]);
  };

  float acc[TM][TN] = {};
  auto multiply = [&](int slot) { outer_product<T>(acc, a_frag[slot], b_frag[slot]); };

  // The reference's pipeline. One buffer: the last k of a step waits for every warp to finish
  // reading the tiles before overwriting them, then waits again for the new ones.
  const int steps = (K + BK - 1) / BK;
  load_tiles(0);
  store_tiles(0);
  __syncthreads();
  load_fragments(0, 0, 0);
  for (int step = 0; step < steps; ++step) {
    const int cur = T::kDoubleBuffer ? (step & 1) : 0;
    const int next = T::kDoubleBuffer ? (cur ^ 1) : 0;
    const bool more = step + 1 < steps;
    if (more) load_tiles((step + 1) * BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK) {
        load_fragments((k + 1) % 2, cur, k + 1);
      } else if (more) {
        if (!T::kDoubleBuffer) __syncthreads();
        store_tiles(next);
        __syncthreads();
        load_fragments(0, next, 0);
      }
      multiply(k % 2);
    }
  }

  store_c<T>(acc, M, N, alpha, beta, C, row0 + m0, col0 + n0, vec_c);
}

// The same tiles with B brought in by cp.async (sm_80 and later): a ring of kStages B tiles that
// the copy engine of the SM fills while the warps compute, so B needs no registers for staging
// and no shared stores of its own; A still goes through registers, to be stored transposed, into
// two buffers. One barrier a step. B's k-rows are contiguous in global memory and in the tile, so
// 16-byte copies serve all of B except the right edge and unaligned matrices, which copy a float
// at a time; copies past K or N fill zeros (a copy of 0 source bytes).
template <class T, int kStages_>
struct Piped : T {
  static constexpr int kStages = kStages_;
  static constexpr int kFloatsA = 2 * T::BK * (T::BM + T::kPadA);
  static constexpr std::size_t kSmemBytes =
      (kFloatsA + kStages * T::BK * T::BN) * sizeof(float);
  static_assert(kStages >= 2, "a ring of at least two B tiles");
  static_assert(!T::kDoubleBuffer && T::kVecShared, "A has two buffers here; float4 reads");
  static std::string name() {  // "... 1buf ..." of the tiles becomes "... cpB3 ..."
    std::string n = T::name();
    return n.replace(n.find(" 1buf"), 5, " cpB" + std::to_string(kStages));
  }
};

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
// 16 bytes, or bytes (0 to 4) of a float and zeros for the rest.
__device__ __forceinline__ void copy16_async(float* dst, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(dst)), "l"(src));
}
__device__ __forceinline__ void copy4_async(float* dst, const float* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(bytes));
}
__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

template <class T>
__global__ void __launch_bounds__(T::kThreads, T::kMinBlocks)
    sgemm_piped(int M, int N, int K, float alpha, const float* __restrict__ A,
                const float* __restrict__ B, float beta, float* __restrict__ C, bool vec_a,
                bool vec_b, bool vec_c) {
  constexpr int BM = T::BM, BN = T::BN, BK = T::BK, TM = T::TM, TN = T::TN, S = T::kStages;
  constexpr int kThreads = T::kThreads;
  extern __shared__ __align__(16) float smem[];
  auto As = reinterpret_cast<float(*)[BK][BM + T::kPadA]>(smem);
  auto Bs = reinterpret_cast<float(*)[BK][BN]>(smem + T::kFloatsA);

  const int tid = threadIdx.x;
  const int warp = tid / 32, lane = tid % 32;
  const int m0 = (warp / T::kWarpsN) * T::WM + (lane / T::kLaneCols) * 4;
  const int n0 = (warp % T::kWarpsN) * T::WN + (lane % T::kLaneCols) * 4;
  const int2 tile = tile_of_block<T::kGroup>();
  const int row0 = tile.y * BM;
  const int col0 = tile.x * BN;
  const int steps = (K + BK - 1) / BK;

  auto copy_b = [&](int step) {  // B tile of a step -> its ring slot, asynchronously
    if (step < steps) {
      const int k0 = step * BK;
#pragma unroll
      for (int i = 0; i < T::kLoadsB; ++i) {
        const int f = tid + i * kThreads;
        if (T::kVecsB % kThreads == 0 || f < T::kVecsB) {
          const int r = f / (BN / 4), c = (f % (BN / 4)) * 4;
          float* dst = &Bs[step % S][r][c];
          const int gr = k0 + r, gc = col0 + c;
          const float* src = B + static_cast<std::size_t>(gr) * N + gc;
          if (vec_b && gr < K && gc + 3 < N) {
            copy16_async(dst, src);
          } else {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const bool in = gr < K && gc + j < N;
              copy4_async(dst + j, in ? src + j : B, in ? 4 : 0);
            }
          }
        }
      }
    }
    commit_async();  // an empty group past the end keeps the count of groups per step at one
  };
  float4 a_next[T::kLoadsA];
  auto load_a = [&](int k0) {
#pragma unroll
    for (int i = 0; i < T::kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      if (T::kVecsA % kThreads == 0 || f < T::kVecsA)
        a_next[i] = load4(A, M, K, row0 + f / (BK / 4), k0 + (f % (BK / 4)) * 4, vec_a);
    }
  };
  auto store_a = [&](int buf) {
#pragma unroll
    for (int i = 0; i < T::kLoadsA; ++i) {
      const int f = tid + i * kThreads;
      if (T::kVecsA % kThreads == 0 || f < T::kVecsA) {
        const int m = f / (BK / 4), k = (f % (BK / 4)) * 4;
        As[buf][k + 0][m] = a_next[i].x;
        As[buf][k + 1][m] = a_next[i].y;
        As[buf][k + 2][m] = a_next[i].z;
        As[buf][k + 3][m] = a_next[i].w;
      }
    }
  };

  float4 a_frag[2][T::kSubM], b_frag[2][T::kSubN];
  auto load_fragments = [&](int slot, int step, int k) {
#pragma unroll
    for (int s = 0; s < T::kSubM; ++s)
      a_frag[slot][s] = *reinterpret_cast<const float4*>(&As[step & 1][k][m0 + s * T::kStrideM]);
#pragma unroll
    for (int s = 0; s < T::kSubN; ++s)
      b_frag[slot][s] = *reinterpret_cast<const float4*>(&Bs[step % S][k][n0 + s * T::kStrideN]);
  };
  float acc[TM][TN] = {};
  auto multiply = [&](int slot) { outer_product<T>(acc, a_frag[slot], b_frag[slot]); };

  // The first S - 1 B tiles in flight, A's first tile stored; then each step copies the B tile
  // S - 1 steps ahead into the slot the last step read, loads the next A tile into registers,
  // and at its last k stores that A tile, waits for its own copies of the next B tile (the
  // groups of later steps may stay pending) and for every warp (one barrier).
#pragma unroll
  for (int s = 0; s < S - 1; ++s) copy_b(s);
  load_a(0);
  store_a(0);
  wait_async<S - 2>();
  __syncthreads();
  load_fragments(0, 0, 0);
  for (int step = 0; step < steps; ++step) {
    const bool more = step + 1 < steps;
    copy_b(step + S - 1);
    if (more) load_a((step + 1) * BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      if (k + 1 < BK) {
        load_fragments((k + 1) % 2, step, k + 1);
      } else if (more) {
        store_a((step + 1) & 1);
        wait_async<S - 2>();
        __syncthreads();
        load_fragments(0, step + 1, 0);
      }
      multiply(k % 2);
    }
  }

  store_c<T>(acc, M, N, alpha, beta, C, row0 + m0, col0 + n0, vec_c);
}

struct Gemm {
  int M, N, K;
  float alpha, beta;
  const float* A;
  const float* B;
  float* C;
};
using GemmLaunch = std::function<void(const Gemm&, cudaStream_t)>;
struct GemmConfig {
  std::string name;
  GemmLaunch launch;
};

template <class T>
GemmConfig gemm_config() {
  constexpr auto kernel = [] {
    if constexpr (T::kStages > 0)
      return sgemm_piped<T>;
    else
      return sgemm_tiled<T>;
  }();
  // Above 48 KiB a kernel must opt in to its dynamic shared memory; once, before any launch.
  LAB_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(T::kSmemBytes)));
  return {T::name(), [](const Gemm& g, cudaStream_t s) {
            const dim3 grid((g.N + T::BN - 1) / T::BN, (g.M + T::BM - 1) / T::BM);
            kernel<<<grid, T::kThreads, T::kSmemBytes, s>>>(
                g.M, g.N, g.K, g.alpha, g.A, g.B, g.beta, g.C, g.K % 4 == 0 && aligned16(g.A),
                g.N % 4 == 0 && aligned16(g.B), g.N % 4 == 0 && aligned16(g.C));
            LAB_CHECK_LAUNCH();
          }};
}

// The configurations: the reference of session 26 first (two buffers), the reference of sessions
// 27-29 second (one buffer; the reference since session 30 is the last row), then shapes that do well for FP32 SIMT GEMM on
// Ampere and Hopper (CUTLASS's and the well-known hand-written ones): bigger block tiles for
// more reuse per shared load, BK 16 for half the barriers, 64 x 32 warps, 8 x 16 lanes, and
// the reference with each of its choices undone (one buffer, scalar reads, no 2-block bound).
std::vector<GemmConfig> gemm_configs() {
  //                      BM   BN  BK  WM  WN  TM  TN  2buf   vec   minB
  return {gemm_config<Tiles<128, 128, 8, 32, 64, 8, 8, true, true, 2>>(),  // session 26's
          gemm_config<Tiles<128, 128, 8, 32, 64, 8, 8, false, true, 2>>(),  // sessions 27-29
          gemm_config<Tiles<128, 128, 8, 32, 64, 8, 8, true, false, 2>>(),
          gemm_config<Tiles<128, 128, 8, 32, 64, 8, 8, true, true, 1>>(),
          gemm_config<Tiles<128, 128, 8, 64, 32, 8, 8, true, true, 2>>(),
          gemm_config<Tiles<128, 128, 16, 32, 64, 8, 8, true, true, 2>>(),
          gemm_config<Tiles<128, 128, 16, 64, 32, 8, 8, true, true, 2>>(),
          gemm_config<Tiles<128, 128, 32, 32, 64, 8, 8, true, true, 1>>(),
          gemm_config<Tiles<128, 128, 8, 32, 32, 8, 4, true, true, 1>>(),
          gemm_config<Tiles<128, 128, 8, 64, 64, 8, 16, true, true, 2>>(),
          gemm_config<Tiles<128, 256, 8, 32, 64, 8, 8, true, true, 1>>(),
          gemm_config<Tiles<256, 128, 8, 64, 32, 8, 8, true, true, 1>>(),
          gemm_config<Tiles<128, 256, 16, 32, 64, 8, 8, true, true, 1>>(),
          gemm_config<Tiles<256, 128, 16, 64, 32, 8, 8, true, true, 1>>(),
          gemm_config<Tiles<128, 256, 8, 64, 64, 8, 16, true, true, 1>>(),
          gemm_config<Tiles<256, 128, 8, 64, 64, 16, 8, true, true, 1>>(),
          gemm_config<Tiles<128, 64, 8, 32, 64, 8, 8, true, true, 3>>(),
          gemm_config<Tiles<64, 128, 8, 32, 64, 8, 8, true, true, 3>>(),
          gemm_config<Tiles<64, 64, 8, 32, 64, 8, 8, true, true, 1>>(),  // small, 2 buffers
          // One buffer (the H200 run's best, 0.894) with the next best choices of that run, which
          // it timed only with two: BK 16 (0.884 against BK 8's 0.865), 64 x 32 warps (even with
          // 32 x 64), the launch bound of 1 against 2, the 128 x 256 tile (best of the larger
          // tiles at BK 16), and the reference's 64 x 64 fallback for small grids, which has one
          // buffer now.
          gemm_config<Tiles<128, 128, 16, 32, 64, 8, 8, false, true, 2>>(),
          gemm_config<Tiles<128, 128, 16, 64, 32, 8, 8, false, true, 2>>(),
          gemm_config<Tiles<128, 128, 8, 64, 32, 8, 8, false, true, 2>>(),
          gemm_config<Tiles<128, 128, 16, 32, 64, 8, 8, false, true, 1>>(),
          gemm_config<Tiles<128, 256, 16, 32, 64, 8, 8, false, true, 1>>(),
          gemm_config<Tiles<64, 64, 8, 32, 64, 8, 8, false, true, 1>>(),
          // One buffer with 128 outputs a lane, as cuBLAS's FP32 kernels on Hopper run (8 warps
          // an SM, 5.3 FMAs per float read from shared memory instead of 8 x 8's 4): with two buffers
          // these read 0.81-0.85; added in session 29, first run in session 30 (128 x 256: 0.902).
          gemm_config<Tiles<128, 128, 8, 64, 64, 8, 16, false, true, 2>>(),
          gemm_config<Tiles<128, 256, 8, 64, 64, 8, 16, false, true, 1>>(),
          gemm_config<Tiles<256, 128, 8, 64, 64, 16, 8, false, true, 1>>(),
          // Session 30: the reference in a grouped tile order (more L2 hits), and B by cp.async
          // into a ring of 2 to 4 tiles (sgemm_piped: no registers staging B, one barrier a step),
          // at the reference's shape, at BK 16, and at cuBLAS's 8 x 16 lanes.
          gemm_config<Tiles<128, 128, 8, 32, 64, 8, 8, false, true, 2, 16>>(),
          gemm_config<Piped<Tiles<128, 128, 8, 32, 64, 8, 8, false, true, 2>, 2>>(),
          gemm_config<Piped<Tiles<128, 128, 8, 32, 64, 8, 8, false, true, 2>, 3>>(),
          gemm_config<Piped<Tiles<128, 128, 8, 32, 64, 8, 8, false, true, 2>, 4>>(),
          gemm_config<Piped<Tiles<128, 128, 8, 32, 64, 8, 8, false, true, 2, 16>, 3>>(),
          gemm_config<Piped<Tiles<128, 128, 16, 32, 64, 8, 8, false, true, 2>, 3>>(),
          gemm_config<Piped<Tiles<128, 128, 8, 64, 32, 8, 8, false, true, 2>, 3>>(),
          gemm_config<Piped<Tiles<128, 128, 8, 64, 64, 8, 16, false, true, 2>, 3>>(),
          gemm_config<Piped<Tiles<128, 128, 8, 64, 64, 8, 16, false, true, 2>, 4>>(),
          gemm_config<Piped<Tiles<128, 256, 8, 64, 64, 8, 16, false, true, 1>, 3>>(),
          // Around the first shape past 0.90 (128 x 256, 8 x 16 lanes, one buffer, one block an
          // SM: 0.902 in session 30's first run): the tile the other way round with the same
          // lanes, other warp shapes, BK 16, and a grouped order (the reference since: 0.913).
          gemm_config<Tiles<256, 128, 8, 64, 64, 8, 16, false, true, 1>>(),
          gemm_config<Tiles<128, 256, 8, 32, 128, 8, 16, false, true, 1>>(),
          gemm_config<Tiles<128, 256, 8, 128, 32, 16, 8, false, true, 1>>(),
          gemm_config<Tiles<128, 256, 16, 64, 64, 8, 16, false, true, 1>>(),
          gemm_config<Tiles<128, 256, 8, 64, 64, 8, 16, false, true, 1, 8>>()};  // the reference
}

// cuBLAS as lesson 05 calls it (see cublas_sgemm there): row-major C = A B is column-major
// C^T = B^T A^T.
GemmLaunch cublas_launch(const lab::CublasHandle& cublas) {
  return [&cublas](const Gemm& g, cudaStream_t s) {
    LAB_CUBLAS_CHECK(cublasSgemm(cublas.on(s), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha,
                                 g.B, g.N, g.A, g.K, &g.beta, g.C, g.N));
  };
}

// A product's inputs and, at some places, its answer in double (computed once, shared by every
// configuration): A, B, C on entry from seeds, as lesson 05 fills them.
struct GemmCase {
  GemmCase(int M, int N, int K, float alpha, float beta, std::uint64_t seed)
      : M(M),
        N(N),
        K(K),
        alpha(alpha),
        beta(beta),
        seed(seed),
        A(static_cast<std::size_t>(M) * K),
        B(static_cast<std::size_t>(K) * N),
        C(static_cast<std::size_t>(M) * N) {
    lab::Stream s;
    lab::fill_random(A.data(), A.size(), seed, s);
    lab::fill_random(B.data(), B.size(), seed + 1, s);
    LAB_CHECK(cudaStreamSynchronize(s));
    // Places: the first and last row and column in full (the tails of M and N), and random ones.
    std::mt19937_64 draw(seed);
    const std::size_t rows = M, cols = N;
    for (std::size_t j = 0; j < cols; ++j) {
      at.push_back(j);
      at.push_back((rows - 1) * cols + j);
    }
    for (std::size_t i = 0; i < rows; ++i) {
      at.push_back(i * cols);
      at.push_back(i * cols + cols - 1);
    }
    for (int e = 0; e < 2048; ++e) at.push_back(draw() % C.size());
    const lab::Rounded r = lab::alpha_beta_at(lab::random_product_at(at, N, K, seed, seed + 1), at,
                                              alpha, beta, seed + 2);
    want = r.values;
    tolerance = lab::sum_tolerance(K + 2.0, r.magnitude);
  }
  std::string name() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
           (beta == 0.0f ? " beta=0" : "");
  }
  Gemm gemm() const { return {M, N, K, alpha, beta, A.data(), B.data(), C.data()}; }
  // C as on entry: the fill when beta != 0, else NaN (C is write-only).
  void reset(cudaStream_t s) const {
    if (beta != 0.0f)
      lab::fill_random(C.data(), C.size(), seed + 2, s);
    else
      lab::poison(C.data(), C.bytes(), s);
  }
  // An empty string when C holds the answer at the checked places, else what differs.
  std::string check(cudaStream_t s) const {
    std::vector<float> all;
    C.download(s, all);
    std::vector<float> got;
    for (const std::size_t i : at) got.push_back(all[i]);
    const lab::Comparison c = lab::allclose(got, want, tolerance);
    return c.ok ? "" : name() + ": " + c.summary();
  }

  int M, N, K;
  float alpha, beta;
  std::uint64_t seed;
  lab::DeviceBuffer<float> A, B, C;
  std::vector<std::size_t> at;
  std::vector<float> want;
  lab::Tolerance tolerance;
};

// =============================================================================================
// Transpose: the reference's padded tile, generalized. A block moves a TILE x TILE tile with
// THREADS threads, VEC floats per global access (float, float2, float4), the tile padded by PAD
// floats per row. Config 1, <32, 256, 1, 1> (32 x 8 threads, 4 rows per thread), was the
// reference until session 28; the reference now is <64, 256, 4, 1, segmented> (below).
//
// Or (Arrange below) lanes that move their VEC floats in a rotated order, in the padded tile or in
// an unpadded one whose columns are XOR-ed by the row. Why, for the 64 x 64 float4 tile (the
// sweep's fastest, but padded a 2-way conflict on every shared access). A bank is a word mod 32.
// A warp stores 2 tile rows R, R + 1 (R even): lane = 16 h + j stores row R + h, float4 j,
// columns 4j + q (q = 0..3, one scalar store each), and reads back rows 4j + q of tile column
// C = 2m + h. The lane is in quarter k = lane / 8 = 2h + j / 8; it moves element q at its step t.
//  - Padded [64][65], q = t (plain): element (r, c) in bank (r + c) mod 32; lanes j and j + 8 are
//    32 columns (stores) or rows (reads) apart, one bank: 2-way on every access.
//  - Padded, q = (t + rho) mod 4 with rho = k - h (rotated).
//    Stores: bank = R + h + 4j + q; over a quarter's 8 lanes (j mod 8 = 0..7) the 8 banks that
//    are t + rho + h = t + k (+ R) mod 4, another residue for each quarter: 32 banks. Reads:
//    bank = 4j + q + 2m + h, the same residues t + k (+ 2m): 32 banks.
//  - Swizzled [64][64]: element (r, c) at word 64 r + (c ^ r), a permutation of each row (r and c
//    < 64). Rows start on bank 0, so the bank is (c ^ r) mod 32: bits 2-4 are (c >> 2) ^ (r >> 2),
//    bits 0-1 are (c ^ r) & 3. XOR alone cannot help (j and j + 8 differ in bit 5 of c only); the
//    order q = t ^ rho with rho = k ^ h (an XOR: its own inverse) does.
//    Stores: c = 4j + q, r = R + h. Bits 2-4: j ^ (R >> 2), all 8 values over a quarter's 8
//    lanes; bits 0-1: q ^ h ^ (R & 3) = t ^ k ^ (R & 3), another value for each quarter. 32
//    lanes, 32 banks.
//    Reads: r = 4j + q, c = C = 2m + h. Bits 2-4: (C >> 2) ^ j, all 8 over a quarter; bits 0-1:
//    (C & 3) ^ q = (2m & 3) ^ h ^ t ^ rho = (2m & 3) ^ t ^ k, one per quarter. 32 banks.
//  - 32-wide tiles (8 float4 per row, a warp on 4 rows: h = k): rho = 0, the padding or the XOR
//    alone does.
//  - Padded [64][65], segmented: no rotation, another warp shape. A warp takes the first or the
//    second half of VEC rows (32 words of each, one segment) instead of the whole of 2 rows:
//    lane = 8 h + j (h = 0..3, j = 0..7) moves row R + h, float4 S + j (S = 0 or 8). Stores:
//    bank = R + h + 4 (S + j) + q = R + h + 4 j + q (mod 32), 4 j + h all 32 values; reads
//    (rows 4 (S + j) + q of column C + h): bank = 4 j + q + C + h (mod 32), the same. Each lane
//    still moves whole float4s, each row segment is 128 contiguous bytes (coalesced), and the
//    element order stays plain: the 32-wide tile's warp shape inside a 64-wide tile.
// bank_model() counts the conflicts of a block's shared accesses with the kernel's own index
// functions, and the sweep prints it beside every transpose configuration.

template <int VEC>
__device__ __forceinline__ void load_vec(const float* p, float (&v)[VEC]) {
  if constexpr (VEC == 4) {
    const float4 x = *reinterpret_cast<const float4*>(p);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else if constexpr (VEC == 2) {
    const float2 x = *reinterpret_cast<const float2*>(p);
    v[0] = x.x, v[1] = x.y;
  } else {
    v[0] = *p;
  }
}

template <int VEC>
__device__ __forceinline__ void store_vec(float* p, const float (&v)[VEC]) {
  if constexpr (VEC == 4)
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
  else if constexpr (VEC == 2)
    *reinterpret_cast<float2*>(p) = make_float2(v[0], v[1]);
  else
    *p = v[0];
}

// x[q] for a q known only at run time, as selects (an indexed register array would go to local
// memory). With a q known at compile time it is just x[q].
template <int VEC>
__device__ __forceinline__ float pick(const float (&x)[VEC], int q) {
  float out = x[0];
#pragma unroll
  for (int j = 1; j < VEC; ++j) out = q == j ? x[j] : out;
  return out;
}

// Where the tile keeps its elements, shared by the kernel and bank_model(). Vector v of a block
// (v = threadIdx.x + i * THREADS) is tile row row_of(v), columns vector_of(v) * VEC + 0..VEC-1
// when it is loaded, and tile column row_of(v), rows vector_of(v) * VEC + 0..VEC-1 when the
// output vector is built (row_of(v) = v / kPerRow, vector_of(v) = v % kPerRow but segmented).
enum class Arrange { plain, rotated, swizzled, segmented };

template <int TILE, int VEC, int PAD, Arrange A>
struct TileLayout {
  static constexpr int kPerRow = TILE / VEC;  // vectors per tile row
  static constexpr int kWords = TILE * (TILE + PAD);
  static constexpr bool kSwizzled = A == Arrange::swizzled;
  static_assert(A == Arrange::plain || A == Arrange::segmented ||
                    (VEC == 4 && (TILE == 32 || TILE == 64)),
                "the rotations are worked out for float4 tiles of 32 and 64");
  static_assert(!kSwizzled || PAD == 0, "the swizzle replaces the padding");
  static constexpr bool kSegmented = A == Arrange::segmented;
  static constexpr int kPerSegment = 32 / VEC;      // vectors in 32 words of a row
  static constexpr int kSegments = TILE / 32;       // segments per row
  static_assert(!kSegmented || TILE % 32 == 0, "segments are 32 words");
  // The tile row and the vector within it of block vector v (v = threadIdx.x + i * THREADS).
  __host__ __device__ static constexpr int row_of(int v) {
    if (!kSegmented) return v / kPerRow;
    return (v / 32 / kSegments) * VEC + v % 32 / kPerSegment;
  }
  __host__ __device__ static constexpr int vector_of(int v) {
    if (!kSegmented) return v % kPerRow;
    return (v / 32 % kSegments) * kPerSegment + v % kPerSegment;
  }
  // rho: k - h (rotated) or k ^ h (swizzled), k = lane / 8, h = lane / kPerRow (comment above).
  __host__ __device__ static constexpr int rotation(int lane) {
    return kSwizzled ? ((lane / 8) ^ (lane / kPerRow)) & (VEC - 1)
                     : (lane / 8 - lane / kPerRow) & (VEC - 1);
  }
  // The element of its vector a lane moves at step t, and the step that moves element q.
  __host__ __device__ static constexpr int element(int lane, int t) {
    if (A == Arrange::plain || kSegmented) return t;
    return kSwizzled ? t ^ rotation(lane) : (t + rotation(lane)) & (VEC - 1);
  }
  __host__ __device__ static constexpr int step_of(int lane, int q) {
    if (A == Arrange::plain || kSegmented) return q;
    return kSwizzled ? q ^ rotation(lane) : (q - rotation(lane)) & (VEC - 1);
  }
  struct Place {
    int row, col;  // of tile[TILE][TILE + PAD]
    __host__ __device__ constexpr int word() const { return row * (TILE + PAD) + col; }
  };
  // Where element (r, c) of the tile is kept: the column permuted within its row by the swizzle.
  __host__ __device__ static constexpr Place place(int r, int c) {
    return {r, kSwizzled ? c ^ r : c};
  }
  __host__ __device__ static constexpr Place stored_at(int v, int q) {
    return place(row_of(v), vector_of(v) * VEC + q);
  }
  __host__ __device__ static constexpr Place read_from(int v, int q) {
    return place(vector_of(v) * VEC + q, row_of(v));
  }
};

template <int TILE, int THREADS, int VEC, int PAD, Arrange A>
__global__ void __launch_bounds__(THREADS)
    transpose_tile(const float* __restrict__ in, float* __restrict__ out, int rows, int cols,
                   bool vec_in, bool vec_out) {
  using Layout = TileLayout<TILE, VEC, PAD, A>;
  constexpr int kPerRow = Layout::kPerRow;
  constexpr int kSteps = TILE * kPerRow / THREADS;
  static_assert(kSteps * THREADS == TILE * kPerRow, "every thread moves the same number");
  __shared__ float tile[TILE][TILE + PAD];
  const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kSteps; ++i) {  // kSteps independent loads in flight per thread
    const int v = threadIdx.x + i * THREADS;
    const int r = r0 + Layout::row_of(v), c = c0 + Layout::vector_of(v) * VEC;
    if (r >= rows) continue;
    float x[VEC];
    const float* p = in + static_cast<std::size_t>(r) * cols + c;
    if (vec_in && c + VEC <= cols) {
      load_vec<VEC>(p, x);
    } else {
#pragma unroll
      for (int q = 0; q < VEC; ++q) x[q] = c + q < cols ? p[q] : 0.0f;
    }
#pragma unroll
    for (int t = 0; t < VEC; ++t) {
      const int q = Layout::element(lane, t);
      const auto at = Layout::stored_at(v, q);
      tile[at.row][at.col] = pick(x, q);
    }
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < kSteps; ++i) {
    const int v = threadIdx.x + i * THREADS;
    const int orow = c0 + Layout::row_of(v), oc = r0 + Layout::vector_of(v) * VEC;  // out: cols x rows
    if (orow >= cols) continue;
    float y[VEC], x[VEC];  // y[t]: the element read at step t; x: in order
#pragma unroll
    for (int t = 0; t < VEC; ++t) {
      const auto at = Layout::read_from(v, Layout::element(lane, t));
      y[t] = tile[at.row][at.col];
    }
#pragma unroll
    for (int q = 0; q < VEC; ++q) x[q] = pick(y, Layout::step_of(lane, q));
    float* p = out + static_cast<std::size_t>(orow) * rows + oc;
    if (vec_out && oc + VEC <= rows) {
      store_vec<VEC>(p, x);
    } else {
#pragma unroll
      for (int q = 0; q < VEC; ++q)
        if (oc + q < rows) p[q] = x[q];
    }
  }
}

// The bank model of a full tile: for each warp-wide shared store and read of transpose_tile, the
// wavefronts it takes (the most distinct words any one bank serves; one word read by several
// lanes is one), and the extra ones per needed one (ncu's shared_bank_conflicts, lesson 05's
// transpose_conflicts rule: at most 1.0). Edge tiles, where some lanes skip, are left out.
struct BankModel {
  double store = 0, read = 0;  // extra wavefronts per warp-wide access
  bool permutation = true;     // every element of the tile has a word of its own
};

template <int TILE, int THREADS, int VEC, int PAD, Arrange A>
BankModel bank_model() {
  using Layout = TileLayout<TILE, VEC, PAD, A>;
  constexpr int kSteps = TILE * Layout::kPerRow / THREADS;
  auto wavefronts = [](const std::vector<int>& words) {
    std::vector<std::vector<int>> per_bank(32);
    for (const int w : words)
      if (std::find(per_bank[w % 32].begin(), per_bank[w % 32].end(), w) == per_bank[w % 32].end())
        per_bank[w % 32].push_back(w);
    std::size_t most = 0;
    for (const auto& b : per_bank) most = std::max(most, b.size());
    return static_cast<int>(most);
  };
  BankModel m;
  std::vector<int> owner(Layout::kWords, 0);  // how many elements the store side put there
  int accesses = 0, extra_store = 0, extra_read = 0;
  for (int warp = 0; warp < THREADS / 32; ++warp)
    for (int i = 0; i < kSteps; ++i)
      for (int t = 0; t < VEC; ++t) {
        std::vector<int> stores, reads;
        for (int lane = 0; lane < 32; ++lane) {
          const int v = warp * 32 + lane + i * THREADS, q = Layout::element(lane, t);
          stores.push_back(Layout::stored_at(v, q).word());
          reads.push_back(Layout::read_from(v, q).word());
          const int w = stores.back();
          if (w < 0 || w >= Layout::kWords || ++owner[w] > 1) m.permutation = false;
        }
        extra_store += wavefronts(stores) - 1;
        extra_read += wavefronts(reads) - 1;
        ++accesses;
      }
  m.store = double(extra_store) / accesses;
  m.read = double(extra_read) / accesses;
  return m;
}

using TransposeLaunch = std::function<void(const float*, float*, int, int, cudaStream_t)>;
struct TransposeConfig {
  std::string name;
  TransposeLaunch launch;
  BankModel model;
};

template <int TILE, int THREADS, int VEC, int PAD, Arrange A = Arrange::plain>
TransposeConfig transpose_config() {
  const std::string name =
      std::to_string(TILE) + "x" + std::to_string(TILE) + " " + std::to_string(THREADS) + "thr " +
      std::to_string(TILE * TILE / THREADS) + "/thr vec" + std::to_string(VEC) +
      (A == Arrange::swizzled ? " xor" : " pad" + std::to_string(PAD)) +
      (A == Arrange::rotated ? " rot" : "") + (A == Arrange::segmented ? " seg" : "");
  return {name,
          [](const float* in, float* out, int rows, int cols, cudaStream_t s) {
            const dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
            transpose_tile<TILE, THREADS, VEC, PAD, A>
                <<<grid, THREADS, 0, s>>>(in, out, rows, cols, cols % VEC == 0 && aligned16(in),
                                          rows % VEC == 0 && aligned16(out));
            LAB_CHECK_LAUNCH();
          },
          bank_model<TILE, THREADS, VEC, PAD, A>()};
}

// Tiles of 32 and 64, 2 to 16 elements per thread, float2 and float4 on both global sides. With
// VEC floats a warp covers 32 * VEC / TILE tile rows; padding 1 keeps a 32-wide tile's vector
// accesses conflict-free (bank = row + column), a 64-wide one's up to 2-way. Then the float4
// tiles made conflict-free at 64 wide too (the comment above transpose_tile), at 128, 256 and
// 512 threads as the padded ones: swizzled ("xor"; also at 32 wide beside session 28's reference,
// 32x32 128thr vec4 pad1), padded with the rotated order ("pad1 rot"), and padded with a warp on
// 4 half rows ("pad1 seg"; the reference is its 256-thread row).
std::vector<TransposeConfig> transpose_configs() {
  constexpr Arrange kXor = Arrange::swizzled, kRot = Arrange::rotated;
  constexpr Arrange kSeg = Arrange::segmented;
  //                        TILE THREADS VEC PAD [Arrange]
  return {transpose_config<32, 256, 1, 1>(),  // the reference until session 28
          transpose_config<32, 128, 1, 1>(),       transpose_config<32, 512, 1, 1>(),
          transpose_config<64, 256, 1, 1>(),       transpose_config<64, 512, 1, 1>(),
          transpose_config<64, 1024, 1, 1>(),      transpose_config<32, 128, 2, 1>(),
          transpose_config<32, 256, 2, 1>(),       transpose_config<32, 64, 4, 1>(),
          transpose_config<32, 128, 4, 1>(),       transpose_config<32, 256, 4, 1>(),
          transpose_config<64, 256, 2, 1>(),       transpose_config<64, 128, 4, 1>(),
          transpose_config<64, 256, 4, 1>(),       transpose_config<64, 512, 4, 1>(),
          transpose_config<64, 256, 4, 2>(),       transpose_config<64, 256, 4, 0, kXor>(),
          transpose_config<64, 128, 4, 0, kXor>(), transpose_config<64, 512, 4, 0, kXor>(),
          transpose_config<32, 128, 4, 0, kXor>(), transpose_config<64, 256, 4, 1, kRot>(),
          transpose_config<64, 128, 4, 1, kRot>(), transpose_config<64, 512, 4, 1, kRot>(),
          transpose_config<64, 256, 4, 1, kSeg>(),  // the reference
          transpose_config<64, 128, 4, 1, kSeg>(),
          transpose_config<64, 512, 4, 1, kSeg>(), transpose_config<64, 256, 2, 1, kSeg>(),
          transpose_config<32, 128, 4, 1, kSeg>()};
}

// The copy ceiling as lab::ceilings measures it (a float4 grid-stride copy, 8 blocks of 256 per
// SM), here over the transpose's own buffers.
__global__ void copy_float4(const float4* __restrict__ in, float4* __restrict__ out,
                            std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

// An empty string when out = in^T for in filled from @p seed, at every place (odd sizes) or at
// 1 << 16 random ones (the timing size), else what differs.
std::string check_transpose(const lab::DeviceBuffer<float>& out, int rows, int cols,
                            std::uint64_t seed, bool every, cudaStream_t s) {
  const std::size_t n = static_cast<std::size_t>(rows) * cols;
  std::vector<float> all(n);  // only the transpose's part of the buffer
  LAB_CHECK(cudaMemcpyAsync(all.data(), out.data(), n * sizeof(float), cudaMemcpyDeviceToHost, s));
  LAB_CHECK(cudaStreamSynchronize(s));
  std::mt19937_64 draw(seed);
  const std::size_t count = every ? n : std::min<std::size_t>(n, 1 << 16);
  std::vector<float> got, want;
  for (std::size_t e = 0; e < count; ++e) {
    const std::size_t o = every ? e : draw() % n;  // out[c * rows + r] = in[r * cols + c]
    got.push_back(all[o]);
    want.push_back(lab::random_input(seed, (o % rows) * cols + o / rows));
  }
  const lab::Comparison c = lab::allclose(got, want, lab::Tolerance{0.0, 0.0});
  return c.ok ? "" : std::to_string(rows) + "x" + std::to_string(cols) + ": " + c.summary();
}

// =============================================================================================
// Timing and the tables.

// The course's method (cold L2, lead-in, warm-up), 20 samples exactly.
lab::Stats time_it(const std::function<void(cudaStream_t)>& launch, cudaStream_t s) {
  lab::BenchmarkOptions o;
  o.stop.min_samples = 20;
  o.max_samples = 20;
  o.timeout_s = 5.0;
  return lab::benchmark(launch, s, o).gpu_ms;
}

struct Row {
  std::string name;
  std::string error;  // empty: validated
  lab::Stats ms;
  double rate = 0;                 // TFLOP/s or GB/s
  double fraction = 0;             // of cuBLAS or of the copy
  std::optional<BankModel> model;  // a transpose's bank model
};

// "conflicts per access by the bank model: stores 0, reads 1" (see bank_model()).
std::string describe(const BankModel& m) {
  char text[120];
  std::snprintf(text, sizeof text, "conflicts per access by the bank model: stores %g, reads %g%s",
                m.store, m.read, m.permutation ? "" : " (NOT a permutation of the tile)");
  return text;
}

void print_table(const char* title, const char* unit, const char* of, std::vector<Row>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.error.empty() != b.error.empty()) return a.error.empty();
    return a.ms.median < b.ms.median;
  });
  std::printf("\n%s\n%-36s %9s %9s %9s %9s %8s\n", title, "config", "median ms", "min", "max", unit,
              of);
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      std::printf("%-36s WRONG: %s\n", r.name.c_str(), r.error.c_str());
      continue;
    }
    std::printf("%-36s %9.4f %9.4f %9.4f %9.1f %8.3f\n", r.name.c_str(), r.ms.median, r.ms.min,
                r.ms.max, r.rate, r.fraction);
  }
}

nlohmann::json to_json(const std::vector<Row>& rows, const char* rate, const char* fraction) {
  nlohmann::json out = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json j = {{"config", r.name}, {"valid", r.error.empty()}};
    if (!r.error.empty()) {
      j["error"] = r.error;
    } else {
      j["median_ms"] = r.ms.median;
      j["min_ms"] = r.ms.min;
      j["max_ms"] = r.ms.max;
      j["samples"] = r.ms.n;
      j[rate] = r.rate;
      j[fraction] = r.fraction;
    }
    if (r.model)
      j["bank_model"] = {{"store_conflicts_per_access", r.model->store},
                         {"read_conflicts_per_access", r.model->read},
                         {"permutation", r.model->permutation}};
    out.push_back(j);
  }
  return out;
}

int parse_size(const char* flag, const char* text, int least, int most) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < least || v > most) {
    std::fprintf(stderr, "%s must be a whole number from %d to %d, not '%s'\n", flag, least, most,
                 text);
    std::exit(lab::kExitUsage);
  }
  return static_cast<int>(v);
}

}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  int gemm_n = 4096, transpose_n = 8192;
  bool model_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bank-model")) {
      model_only = true;
    } else if (!std::strcmp(argv[i], "--sgemm-size") && i + 1 < argc) {
      gemm_n = parse_size("--sgemm-size", argv[++i], 1, 16384);
    } else if (!std::strcmp(argv[i], "--transpose-size") && i + 1 < argc) {
      transpose_n = parse_size("--transpose-size", argv[++i], 1, 32768);
    } else if (argv[i][0] != '-' && !json_path) {
      json_path = argv[i];
    } else {
      json_path = nullptr;
      break;
    }
  }
  if (model_only) {  // the transposes' bank model alone: host arithmetic, no GPU needed
    bool all_permutations = true;
    for (const TransposeConfig& cfg : transpose_configs()) {
      std::printf("  %-36s %s\n", cfg.name.c_str(), describe(cfg.model).c_str());
      all_permutations = all_permutations && cfg.model.permutation;
    }
    return all_permutations ? lab::kExitOk : lab::kExitIncorrect;
  }
  if (!json_path) {
    std::fprintf(stderr,
                 "usage: 05-shared-memory-sweep OUT.json [--sgemm-size N] [--transpose-size N]\n"
                 "       05-shared-memory-sweep --bank-model\n");
    return lab::kExitUsage;
  }
  const std::string why = lab::gpu_unavailable_reason();
  if (!why.empty()) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return lab::kExitNoGpu;
  }
  try {
    const lab::DeviceInfo& d = lab::device_info();
    std::printf("%s, %d SMs; SGEMM %d^3 FP32, transpose %d x %d float32\n", d.name.c_str(), d.sms,
                gemm_n, transpose_n, transpose_n);
    lab::Stream stream;
    bool all_valid = true;

    // ---- SGEMM. Lesson 05's validation sizes: K, M and N tails; 300x644x260 takes the float4
    // global paths with partial tiles; beta 0 writes a C that holds NaN.
    lab::CublasHandle cublas;
    LAB_CUBLAS_CHECK(cublasSetMathMode(cublas.get(), CUBLAS_PEDANTIC_MATH));
    std::vector<GemmCase> cases;
    cases.emplace_back(1000, 777, 515, 1.25f, -0.5f, 11);
    cases.emplace_back(129, 67, 1031, 0.75f, 0.0f, 21);
    cases.emplace_back(300, 644, 260, 1.0f, 0.5f, 31);
    const GemmCase big(gemm_n, gemm_n, gemm_n, 1.0f, 0.0f, 41);  // the timing case, as lesson 05's
    const double flops = 2.0 * gemm_n * double(gemm_n) * gemm_n;

    std::vector<GemmConfig> configs = gemm_configs();
    configs.insert(configs.begin(), {"cublas (pedantic FP32)", cublas_launch(cublas)});
    std::vector<Row> gemm_rows;
    double cublas_ms = 0;
    for (const GemmConfig& cfg : configs) {
      Row row{cfg.name, "", {}, 0, 0, std::nullopt};
      for (const GemmCase& c : cases) {  // checked before it is timed
        c.reset(stream);
        cfg.launch(c.gemm(), stream);
        if (row.error.empty()) row.error = c.check(stream);
      }
      if (row.error.empty()) {
        big.reset(stream);
        row.ms = time_it([&](cudaStream_t s) { cfg.launch(big.gemm(), s); }, stream);
        row.error = big.check(stream);  // the last timed call's answer
        if (!row.error.empty()) row.error += " (after timing)";
      }
      if (&cfg == &configs.front()) cublas_ms = row.ms.median;  // the first row is cuBLAS
      row.rate = flops / (row.ms.median * 1e9);
      row.fraction = cublas_ms / row.ms.median;
      all_valid = all_valid && row.error.empty();
      std::printf("  %-36s %s\n", cfg.name.c_str(), row.error.empty() ? "ok" : row.error.c_str());
      std::fflush(stdout);
      gemm_rows.push_back(row);
    }
    print_table("SGEMM (fraction: cuBLAS's median time over the config's; issue #50 asks 0.90)",
                "TFLOP/s", "of cuBLAS", gemm_rows);

    // ---- Transpose: exact at lesson 05's odd shapes, then timed at N x N with a new input.
    std::vector<Row> transpose_rows;
    const std::size_t big_n = static_cast<std::size_t>(transpose_n) * transpose_n;
    lab::DeviceBuffer<float> in(big_n), out(big_n);
    const double bytes = 2.0 * 4.0 * big_n;
    {
      lab::fill_random(in.data(), in.size(), 51, stream);
      const int blocks = d.sms * 8;
      // (the tail of a size that is not a multiple of 4 is not copied: a ceiling, not a copy)
      const std::size_t vectors = big_n / 4;
      Row row{"copy float4 (same bytes)", "", {}, 0, 1.0, std::nullopt};
      row.ms = time_it(
          [&](cudaStream_t s) {
            copy_float4<<<blocks, 256, 0, s>>>(reinterpret_cast<const float4*>(in.data()),
                                               reinterpret_cast<float4*>(out.data()), vectors);
            LAB_CHECK_LAUNCH();
          },
          stream);
      row.rate = bytes / (row.ms.median * 1e6);
      transpose_rows.push_back(row);
    }
    const double copy_ms = transpose_rows[0].ms.median, copy_gbs = transpose_rows[0].rate;
    const int shapes[][2] = {{1000, 777}, {33, 4097}, {4097, 33}, {1, 1}};
    for (const TransposeConfig& cfg : transpose_configs()) {
      Row row{cfg.name, "", {}, 0, 0, cfg.model};
      std::uint64_t seed = 61;
      for (const auto& shape : shapes) {
        const int r = shape[0], c = shape[1];
        lab::fill_random(in.data(), static_cast<std::size_t>(r) * c, ++seed, stream);
        lab::poison(out.data(), out.bytes(), stream);
        cfg.launch(in.data(), out.data(), r, c, stream);
        if (row.error.empty()) row.error = check_transpose(out, r, c, seed, true, stream);
      }
      if (row.error.empty()) {
        lab::fill_random(in.data(), in.size(), ++seed, stream);
        lab::poison(out.data(), out.bytes(), stream);
        row.ms = time_it(
            [&](cudaStream_t s) { cfg.launch(in.data(), out.data(), transpose_n, transpose_n, s); },
            stream);
        row.error = check_transpose(out, transpose_n, transpose_n, seed, false, stream);
        if (!row.error.empty()) row.error += " (after timing)";
      }
      row.rate = bytes / (row.ms.median * 1e6);
      row.fraction = copy_ms / row.ms.median;
      all_valid = all_valid && row.error.empty();
      std::printf("  %-36s %s; %s\n", cfg.name.c_str(),
                  row.error.empty() ? "ok" : row.error.c_str(), describe(cfg.model).c_str());
      std::fflush(stdout);
      transpose_rows.push_back(row);
    }
    print_table("Transpose (fraction: the copy's median time over the config's; #50 asks 0.95)",
                "GB/s", "of copy", transpose_rows);
    // Lesson 05's own fraction is of lab::ceilings' copy (its own 256 MiB buffers): say it too.
    const double ceiling = lab::ceilings().copy_gbs;
    std::printf(
        "\nlesson 05's copy ceiling (lab::ceilings): %.1f GB/s; this run's copy: %.1f GB/s\n",
        ceiling, copy_gbs);
    for (const Row& r : transpose_rows)
      if (r.error.empty() && r.name.rfind("copy", 0) != 0) {
        std::printf("best transpose: %s, %.3f of this copy, %.3f of lesson 05's ceiling\n",
                    r.name.c_str(), r.fraction, r.rate / ceiling);
        break;
      }
    for (const Row& r : gemm_rows)
      if (r.error.empty() && r.name.rfind("cublas", 0) != 0) {
        std::printf("best sgemm: %s, %.3f of cuBLAS (%.1f TFLOP/s)\n", r.name.c_str(), r.fraction,
                    r.rate);
        break;
      }

    nlohmann::json doc = {
        {"device", d.name},
        {"sms", d.sms},
        {"method",
         "lab::benchmark, cold L2, 20 samples; fraction = reference median / config median"},
        {"sgemm",
         {{"size", gemm_n},
          {"math", "CUBLAS_PEDANTIC_MATH"},
          {"configs", to_json(gemm_rows, "tflops", "fraction_of_cublas")}}},
        {"transpose",
         {{"size", transpose_n},
          {"ceiling_copy_gbs", ceiling},
          {"configs", to_json(transpose_rows, "gbs", "fraction_of_copy")}}}};
    std::ofstream file(json_path);
    file << doc.dump(2) << "\n";
    if (!file) {
      std::fprintf(stderr, "cannot write %s\n", json_path);
      return lab::kExitCudaError;
    }
    std::printf("wrote %s\n", json_path);
    return all_valid ? lab::kExitOk : lab::kExitIncorrect;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return lab::kExitCudaError;
  }
}
