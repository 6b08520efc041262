// Reference solution: Hopper's asynchronous machinery, the README's steps 1-3. The TMA copies
// tiles into a 4-stage ring of shared memory guarded by mbarriers, wgmma multiplies them straight
// from shared memory, and the block's warps are specialised: one producer warpgroup that only
// issues copies, two consumer warpgroups that only multiply (no clusters, not persistent: step 4).
//
// Each block of 3 warpgroups (384 threads) computes a 128 x 256 tile of C, walking K in steps of
// BK = 64 BF16 = 128 bytes, exactly one row of the 128-byte swizzle:
//  * the producer's one thread asks the TMA for a 128 x 64 box of A and a 256 x 64 box of Bt per
//    step (48 KiB, two instructions, no registers while in flight); the TMA writes them swizzled,
//    the layout wgmma's descriptors read without bank conflicts, and zeros for every element past
//    M, N or K, so the tails of the loads need no code;
//  * full[s] completes when both boxes of stage s have landed (the TMA counts the bytes against
//    the producer's expect_tx), empty[s] when the 8 consumer warps have finished reading it:
//    three stages' copies stay in flight while the tensor cores work on the fourth;
//  * each consumer warpgroup owns 64 rows and issues wgmma m64n256k16 (the widest N: a row of A
//    read once feeds 256 columns), 4 per step, the accumulators in 128 registers per thread; it
//    keeps one step's wgmmas in flight while it waits for the next stage;
//  * setmaxnreg moves registers from the producer (40 per thread) to the consumers (232).
// The epilogue writes C from the accumulators' registers, float2 where the pair lies inside C.
//
// Built for sm_90a only (lessons/13-hopper-gemm/CMakeLists.txt); ptxas -v: 168 registers at
// launch, no spills, and no C75xx note (a device function call or printf in this kernel would
// serialise every wgmma: C7510).
#include <cuda.h>  // CUtensorMap

#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/tensor_map.hpp"

namespace {

// The block tile and the ring. One stage = A 128 x 64 (16 KiB) + Bt 256 x 64 (32 KiB) = 48 KiB;
// 4 stages = 192 KiB of the 227 KiB a block may have (5 would not fit).
constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4;
constexpr int WGMMA_M = 64, WGMMA_N = 256, WGMMA_K = 16;
constexpr int CONSUMERS = BM / WGMMA_M;                    // 2 consumer warpgroups
constexpr int THREADS = 128 * (1 + CONSUMERS);             // + 1 producer warpgroup
constexpr int A_STAGE_BYTES = BM * BK * 2;
constexpr int B_STAGE_BYTES = BN * BK * 2;
constexpr int STAGE_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;  // the full barrier's byte count
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 /* alignment */ + 2 * STAGES * 8;
// 128 x 40 + 256 x 232 = 64,512 of the SM's 65,536 registers (one block per SM).
constexpr int PRODUCER_REGS = 40, CONSUMER_REGS = 232;
static_assert(128 * PRODUCER_REGS + 128 * CONSUMERS * CONSUMER_REGS <= 65536, "registers");
static_assert(BK * 2 == 128, "a box row is one 128-byte swizzle row");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory");

// PTX takes 32-bit shared-window addresses, not generic pointers.
__device__ __forceinline__ std::uint32_t smem_u32(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// An mbarrier's phase completes when its pending arrivals and its pending bytes are both 0.
__device__ __forceinline__ void mbar_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// One arrival, and `bytes` more to land in this phase (the TMA counts them off as they land).
__device__ __forceinline__ void mbar_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Waits until the phase of parity `parity` has completed. try_wait may suspend the thread for a
// while before it says no: the loop is not a hot spin.
__device__ __forceinline__ void mbar_wait(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  while (!done)
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
}

// One box of a 2-D tensor (coordinates in elements, innermost first) into shared memory; its
// bytes are reported to `bar`. One thread issues it; the TMA does the rest, swizzle included.
__device__ __forceinline__ void tma_load_2d(std::uint32_t dst, const CUtensorMap* map,
                                            std::uint32_t bar, int inner, int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(inner), "r"(outer)
      : "memory");
}

// wgmma is asynchronous: fence orders the warpgroup's register accesses before the next wgmma,
// commit closes the issued ones into a group, wait<N> returns once at most N groups are in flight.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// The compiler does not know wgmma is asynchronous: this keeps it from moving accumulator
// accesses across the points where the hardware reads or writes them.
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// The shared-memory matrix descriptor of a K-major tile with the 128-byte swizzle (PTX ISA,
// "matrix descriptor"): start address >> 4 (bits 0-13); leading byte offset 1 (unused when a
// wgmma's 16 K values, 32 bytes, lie inside one swizzle row); stride byte offset 1024 >> 4 (8 rows
// of 128 bytes, bits 32-45); base offset 0 (tiles start on 1024-byte boundaries, the swizzle's
// period); swizzle mode 1 = 128 bytes (bits 62-63). The k-th 16-wide slice starts 32 k bytes
// into the row: the hardware applies the swizzle to the final address.
__device__ __forceinline__ std::uint64_t desc_k128(std::uint32_t smem_addr) {
  return static_cast<std::uint64_t>((smem_addr & 0x3FFFF) >> 4) | std::uint64_t{1} << 16 |
         std::uint64_t{1024 >> 4} << 32 | std::uint64_t{1} << 62;
}

// One wgmma m64n256k16: D (64 x 256, FP32, 128 registers per thread) += A (64 x 16) B (16 x 256),
// both BF16 from shared memory, K-major (no transpose). d[4 j + i] holds row
// 16 (warp in the warpgroup) + lane / 4 + 8 (i / 2), column 8 j + 2 (lane % 4) + i % 2.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a,
                                                 uint64_t desc_b) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16\n"
      "{"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111,"
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
      "},"
      " %128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
        "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
        "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(desc_a), "l"(desc_b), "r"(1));
}

// One block: the 128 x 256 tile of C at (blockIdx.y, blockIdx.x). Stage s of the ring serves
// k-steps t = s, s + 4, s + 8, ...: round r = t / 4. The producer waits empty[s] for round r - 1
// (not in round 0: the ring starts empty), the consumers wait full[s] for round r; parities
// alternate, and no barrier gets two phases ahead of its waiters.
__global__ void __launch_bounds__(THREADS, 1)
    hopper_gemm(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                float* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __trap();  // built for a target without wgmma (not sm_90a): never the case in this lesson
#else
  extern __shared__ std::uint8_t smem_raw[];
  // Every tile starts on a 1024-byte boundary: what the 128-byte swizzle and base offset 0 need.
  const std::uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const std::uint32_t a_smem = base, b_smem = base + STAGES * A_STAGE_BYTES;
  const std::uint32_t bars = base + STAGES * STAGE_BYTES;
  auto full = [&](int s) { return bars + 8u * s; };
  auto empty = [&](int s) { return bars + 8u * (STAGES + s); };

  const int warpgroup = threadIdx.x / 128, lane = threadIdx.x % 32;
  const int k_steps = (K + BK - 1) / BK;  // the last box reads zeros past K
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  if (threadIdx.x == 0) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(&a_map)) : "memory");
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<std::uint64_t>(&b_map)) : "memory");
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full(s), 1);                  // the producer's arrive.expect_tx
      mbar_init(empty(s), CONSUMERS * 4);     // lane 0 of each consumer warp
    }
    // The TMA (the async proxy) completes transactions on these barriers: make their
    // initialisation visible to it, not only to this block's threads.
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  __syncthreads();

  if (warpgroup == 0) {
    // The producer: one thread issues every copy; the warpgroup gives its registers back
    // (setmaxnreg is warpgroup-wide: all 128 threads run it).
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
    if (threadIdx.x == 0) {
      for (int t = 0; t < k_steps; ++t) {
        const int s = t % STAGES, round = t / STAGES;
        if (round > 0) mbar_wait(empty(s), (round - 1) & 1);
        mbar_arrive_expect_tx(full(s), STAGE_BYTES);  // whole boxes: zeros past the edges count
        tma_load_2d(a_smem + s * A_STAGE_BYTES, &a_map, full(s), t * BK, m0);
        tma_load_2d(b_smem + s * B_STAGE_BYTES, &b_map, full(s), t * BK, n0);
      }
    }
    return;  // nothing below waits for the producer's threads
  }

  // A consumer warpgroup: 64 rows of the tile.
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
  const int half = warpgroup - 1, warp = (threadIdx.x % 128) / 32;
  float d[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) d[i] = 0.0f;

  for (int t = 0; t < k_steps; ++t) {
    const int s = t % STAGES;
    mbar_wait(full(s), (t / STAGES) & 1);
    // This warpgroup's 64 rows start 64 x 128 bytes into the A tile (a multiple of 1024).
    const std::uint32_t a_tile = a_smem + s * A_STAGE_BYTES + half * (WGMMA_M * 128);
    const std::uint32_t b_tile = b_smem + s * B_STAGE_BYTES;
#pragma unroll
    for (int i = 0; i < 128; ++i) fence_operand(d[i]);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / WGMMA_K; ++kk)  // 16 K values = 32 bytes further along the row
      wgmma_m64n256k16(d, desc_k128(a_tile + kk * 32), desc_k128(b_tile + kk * 32));
    wgmma_commit();
    // One group (this step) stays in flight; once the previous step's is done, its stage goes
    // back to the producer while the tensor cores work on this one.
    wgmma_wait<1>();
#pragma unroll
    for (int i = 0; i < 128; ++i) fence_operand(d[i]);
    if (t > 0) {
      __syncwarp();
      if (lane == 0) mbar_arrive(empty((t - 1) % STAGES));
    }
  }
  wgmma_wait<0>();
#pragma unroll
  for (int i = 0; i < 128; ++i) fence_operand(d[i]);

  // The epilogue, from registers: a quad of lanes writes 32 contiguous bytes of a row. Rows past
  // M and columns past N were computed from the TMA's zeros and are not written; float2 only
  // where both columns are inside C and the pair is 8-byte aligned (N even).
  const int row0 = m0 + half * WGMMA_M + warp * 16 + lane / 4;
  const int col0 = n0 + 2 * (lane % 4);
#pragma unroll
  for (int j = 0; j < WGMMA_N / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = row0 + 8 * h, col = col0 + 8 * j;
      if (row >= M || col >= N) continue;
      float* out = C + static_cast<std::size_t>(row) * N + col;
      const float x = d[4 * j + 2 * h], y = d[4 * j + 2 * h + 1];
      if (col + 1 < N && N % 2 == 0) {
        *reinterpret_cast<float2*>(out) = make_float2(x, y);
      } else {
        out[0] = x;
        if (col + 1 < N) out[1] = y;
      }
    }
  }
#endif
}

}  // namespace

namespace exercise {

void gemm_bf16(int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* Bt, float* C,
               cudaStream_t stream) {
  // The tensor maps describe A and Bt once (boxes of 128 x 64 and 256 x 64); made on the host at
  // each call, in microseconds, while the GPU works on what is queued.
  const CUtensorMap a_map = lab::tensor_map_2d_bf16(A, M, K, BM, BK);
  const CUtensorMap b_map = lab::tensor_map_2d_bf16(Bt, N, K, BN, BK);
  LAB_CHECK(cudaFuncSetAttribute(hopper_gemm, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  const dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  hopper_gemm<<<grid, THREADS, SMEM_BYTES, stream>>>(a_map, b_map, C, M, N, K);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
