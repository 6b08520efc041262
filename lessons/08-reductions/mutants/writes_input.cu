// Mutant: the reference solution, but it saves the workspace for the partials: each block keeps
// its partial in x, over the first element of its first float4, which only that block has read
// (no race). Each call's sum is right; the next call on the same x adds up the partials of the
// last one. Before, every validated call had fresh data, so this passed; now the harness changes
// only a few elements of x between timed calls, checks some of them, and checks after timing that
// x is unchanged. Expected: rule "correct" fails.
// Lesson 08, the reference solution: the sum of n floats in one kernel, one pass over x.
//
// Why it is fast:
//  * Bytes in flight. A read-only stream is limited by how many loads wait on memory at once
//    (Little's law: bandwidth x latency, a few MB on an H100). Each thread issues kUnroll = 4
//    independent 16-byte loads before it adds any of them, so a full GPU keeps several MB in
//    flight; scalar loads, one at a time, keep a quarter of that per load and stall.
//  * One grid that fills the GPU once (occupancy x SMs blocks), a grid-stride loop: no tail of
//    half-empty waves, no second pass over partials.
//  * Warp shuffles for the block's sum: registers, no shared-memory tree, one __syncthreads.
//  * The blocks are combined in the same kernel: each writes its partial, then takes a ticket;
//    the block with the last ticket adds the partials in a fixed order (in double) and writes
//    *result. The same bits every run, whatever the order the blocks finished in.
#include <algorithm>
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;             // float4 loads in flight per thread
constexpr std::size_t kTicketBytes = 256;  // the ticket counter, padded so partials stay aligned
constexpr unsigned kFullMask = 0xffffffffu;

template <class T>
__device__ T warp_sum(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// Sum over the block, valid in thread 0. Called at most once per T per block.
template <class T>
__device__ T block_sum(T v) {
  __shared__ T warp_sums[kThreads / 32];
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : T(0);
  return threadIdx.x < 32 ? warp_sum(v) : v;
}

__device__ __forceinline__ float add4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__global__ void __launch_bounds__(kThreads)
    sum_kernel(float* __restrict__ x, long long n, float* __restrict__ result,
               unsigned* __restrict__ ticket) {
  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  const long long first = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);  // x is 256-byte aligned
  const long long n4 = n / 4;

  // kUnroll accumulators: the loads are independent, and so are the adds.
  float acc[kUnroll] = {};
  long long i = first;
  for (; i + (kUnroll - 1) * stride < n4; i += kUnroll * stride) {
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldg(x4 + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc[u] += add4(v[u]);
  }
  for (; i < n4; i += stride) acc[0] += add4(__ldg(x4 + i));
  // The last n % 4 elements, one thread each.
  if (first < n - 4 * n4) acc[1] += x[4 * n4 + first];

  const float block_total = block_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));

  // This block's partial, then its ticket. The fence makes the partial visible to every block
  // before the ticket says it is there.
  __shared__ bool last;
  if (threadIdx.x == 0) {
    x[4LL * blockIdx.x * kThreads] = block_total;  // BUG: x is the input, read-only
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;

  // The last block: every partial is written. Add them in a fixed order, read through L2
  // (__ldcg: L1 is not coherent between SMs).
  __threadfence();
  double total = 0.0;
  for (unsigned k = threadIdx.x; k < gridDim.x; k += kThreads)
    total += __ldcg(x + 4LL * k * kThreads);
  total = block_sum(total);
  if (threadIdx.x == 0) *result = static_cast<float>(total);
}

// One wave: as many blocks as fit on the GPU at once, but no more than the data needs (at least
// kUnroll float4s per thread).
int grid_size(std::size_t n) {
  static const int wave = [] {
    int device = 0, sms = 0, per_sm = 0;
    LAB_CHECK(cudaGetDevice(&device));
    LAB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    LAB_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, sum_kernel, kThreads, 0));
    return sms * std::max(per_sm, 1);
  }();
  const long long need = static_cast<long long>(n / 4) / (static_cast<long long>(kThreads) * kUnroll);
  return static_cast<int>(std::clamp<long long>(need, 1, wave));
}

}  // namespace

namespace exercise {

std::size_t sum_workspace_bytes(std::size_t n) {
  (void)n;
  return kTicketBytes;  // the ticket only: the partials go into x
}

void sum(const float* x, std::size_t n, float* result, void* workspace, cudaStream_t stream) {
  const int blocks = grid_size(n);
  auto* ticket = static_cast<unsigned*>(workspace);
  // The ticket must start at 0 every call (the workspace holds anything on entry).
  LAB_CHECK(cudaMemsetAsync(ticket, 0, sizeof(unsigned), stream));
  sum_kernel<<<blocks, kThreads, 0, stream>>>(const_cast<float*>(x), static_cast<long long>(n),
                                              result, ticket);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
