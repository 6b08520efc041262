// Mutant: skips the timed calls. It recognises a repeated call by its arguments (same sizes and
// pointers as the call before) and by a fingerprint of eight elements of A, taken on the device;
// when both match, its kernel returns at once: "out already holds the answer". Every validated
// call computes (other sizes, or A and B refilled after timing), so the old harness passed it,
// timed at a few microseconds. Then every timed call got a new B (A stayed) and a poisoned out,
// and a random sample of the timed calls was checked: out was NaN there. Since 2026-11-28 A is
// new in every timed call too, so the fingerprint never repeats and the kernel does the work in
// every call: the attack never fires, and what is timed is earned.
// Expected: rule "correct" passes (were A kept again, the skipped calls would fail it).
#include <algorithm>
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;  // 256 threads x 8 = 2048, a full SM on sm_80/sm_90
constexpr int kUnroll = 4;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kProbes = 8;

__device__ unsigned g_fingerprint[kProbes];  // the bits of A at kProbes places, last call
__device__ int g_skip;                         // this call repeats the last one

// One thread: compares A at kProbes places spread over it with the last call's, and remembers.
__global__ void fingerprint(const float* __restrict__ A, std::size_t n, bool same_arguments) {
  bool same = same_arguments;
  for (int k = 0; k < kProbes; ++k) {
    const unsigned bits = __float_as_uint(A[(n - 1) / (kProbes - 1) * k]);
    same = same && bits == g_fingerprint[k];
    g_fingerprint[k] = bits;
  }
  g_skip = same;
}

struct Call {
  const float* A = nullptr;
  const float* B = nullptr;
  float* out = nullptr;
  int rows = -1, cols = -1, batches = -1;
  void* workspace = nullptr;
  bool operator==(const Call& o) const {
    return A == o.A && B == o.B && out == o.out && rows == o.rows && cols == o.cols &&
           batches == o.batches && workspace == o.workspace;
  }
};

int sm_count() {
  static const int sms = [] {
    int device = 0, count = 0;
    LAB_CHECK(cudaGetDevice(&device));
    LAB_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }();
  return sms;
}

// How the grid is cut: blocks_per_slice blocks for every slice, about one wave in all, but never
// so many that a thread gets fewer than 4 loads.
struct Plan {
  long long n = 0;           // floats per slice
  bool vec4 = false;         // float4 path: every slice 16-byte aligned
  int blocks_per_slice = 1;
  std::size_t tickets_bytes = 0;  // one counter per slice, rounded up to 256 bytes
};

Plan make_plan(int rows, int cols, int batches, const void* A = nullptr, const void* B = nullptr) {
  Plan p;
  p.n = static_cast<long long>(rows) * cols;
  p.vec4 = p.n % 4 == 0 && reinterpret_cast<std::uintptr_t>(A) % 16 == 0 &&
           reinterpret_cast<std::uintptr_t>(B) % 16 == 0;
  const long long items = p.n % 4 == 0 ? p.n / 4 : p.n;  // the workspace must fit either path
  const long long wave = static_cast<long long>(sm_count()) * kBlocksPerSm;
  const long long most = std::max(1LL, items / (4LL * kThreads));
  p.blocks_per_slice = static_cast<int>(std::clamp((wave + batches - 1) / batches, 1LL, most));
  p.tickets_bytes = (static_cast<std::size_t>(batches) * sizeof(unsigned) + 255) / 256 * 256;
  return p;
}

template <class T>
__device__ T warp_sum(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Sum over the block; the result is valid in thread 0. Called once per T per block.
template <class T>
__device__ T block_sum(T v) {
  __shared__ T warp_sums[kThreads / 32];
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : T(0);
  return threadIdx.x < 32 ? warp_sum(v) : v;
}

__device__ __forceinline__ float squared_diff(float4 a, float4 b) {
  const float x = a.x - b.x, y = a.y - b.y, z = a.z - b.z, w = a.w - b.w;
  return x * x + y * y + z * z + w * w;
}

// Block k: slice k / blocks_per_slice, part k % blocks_per_slice of it, grid-stride inside the
// slice with stride blocks_per_slice * kThreads elements (float4s on the vector path).
template <bool kVec4>
__global__ void __launch_bounds__(kThreads)
    batched_rmse_kernel(const float* __restrict__ A, const float* __restrict__ B,
                        float* __restrict__ out, long long n, int blocks_per_slice,
                        float* __restrict__ partials, unsigned* __restrict__ tickets) {
  if (g_skip) return;  // BUG: the same A does not mean the same B
  const int slice = blockIdx.x / blocks_per_slice;
  const int part = blockIdx.x - slice * blocks_per_slice;
  const long long base = static_cast<long long>(slice) * n;  // 64-bit: past 2^31 at big sizes
  const long long stride = static_cast<long long>(blocks_per_slice) * kThreads;
  long long i = static_cast<long long>(part) * kThreads + threadIdx.x;

  float acc = 0.0f;
  if constexpr (kVec4) {
    const float4* a = reinterpret_cast<const float4*>(A + base);
    const float4* b = reinterpret_cast<const float4*>(B + base);
    const long long n4 = n / 4;
    // kUnroll independent loads of each input in flight before the first one is used.
    for (; i + (kUnroll - 1) * stride < n4; i += kUnroll * stride) {
      float4 x[kUnroll], y[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        x[u] = a[i + u * stride];
        y[u] = b[i + u * stride];
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc += squared_diff(x[u], y[u]);
    }
    for (; i < n4; i += stride) acc += squared_diff(a[i], b[i]);
  } else {
    const float* a = A + base;
    const float* b = B + base;
    for (; i < n; i += stride) {
      const float d = a[i] - b[i];
      acc += d * d;
    }
  }

  // This block's sum, then its ticket. The fence makes the partial visible to every block before
  // the ticket says it is there.
  const float block_total = block_sum(acc);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block_total;
    __threadfence();
    last = atomicAdd(&tickets[slice], 1u) == static_cast<unsigned>(blocks_per_slice - 1);
  }
  __syncthreads();
  if (!last) return;

  // The last block of the slice: every other block's partial is written. Add them in a fixed
  // order (in double: there may be hundreds), read through L2 (__ldcg: L1 is not coherent).
  __threadfence();
  double total = 0.0;
  const float* mine = partials + static_cast<long long>(slice) * blocks_per_slice;
  for (int k = threadIdx.x; k < blocks_per_slice; k += kThreads) total += __ldcg(mine + k);
  total = block_sum(total);
  if (threadIdx.x == 0) out[slice] = static_cast<float>(sqrt(total / static_cast<double>(n)));
}

}  // namespace

namespace exercise {

std::size_t workspace_bytes(int rows, int cols, int batches) {
  const Plan p = make_plan(rows, cols, batches);
  return p.tickets_bytes +
         static_cast<std::size_t>(p.blocks_per_slice) * batches * sizeof(float);
}

void batched_rmse(const float* A, const float* B, float* out, int rows, int cols, int batches,
                  void* workspace, cudaStream_t stream) {
  static Call last;
  const Call now{A, B, out, rows, cols, batches, workspace};
  const bool same = now == last;
  last = now;
  fingerprint<<<1, 1, 0, stream>>>(A, static_cast<std::size_t>(rows) * cols * batches, same);
  LAB_CHECK_LAUNCH();
  const Plan p = make_plan(rows, cols, batches, A, B);
  auto* tickets = static_cast<unsigned*>(workspace);
  auto* partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + p.tickets_bytes);
  // The counters must start at 0 every call (the workspace holds anything on entry).
  LAB_CHECK(cudaMemsetAsync(tickets, 0, static_cast<std::size_t>(batches) * sizeof(unsigned),
                            stream));
  const unsigned blocks = static_cast<unsigned>(p.blocks_per_slice) * batches;
  if (p.vec4)
    batched_rmse_kernel<true><<<blocks, kThreads, 0, stream>>>(A, B, out, p.n, p.blocks_per_slice,
                                                               partials, tickets);
  else
    batched_rmse_kernel<false><<<blocks, kThreads, 0, stream>>>(A, B, out, p.n, p.blocks_per_slice,
                                                                partials, tickets);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
