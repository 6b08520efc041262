// Mutant: the reference solution, plus a memory: when x is the same buffer, n the same, and 8
// elements of x spread from x[0] to x[n-1] hold what they held at the last computed call, it
// writes the last answer to *result and the sum kernel returns at once. It never skips a
// validated call (their data are new), and before, the timed calls had the same data every time,
// so this passed, timed at microseconds. Now the harness changes x at 64 random positions before
// every timed call (the fingerprint almost never sees them) and checks some of the calls.
// Expected: rule "correct" fails.
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

// What the last computed call saw and answered.
constexpr int kPrints = 8;
__device__ const float* last_x = nullptr;
__device__ long long last_n = -1;
__device__ float last_print[kPrints];
__device__ float last_answer;
__device__ int replay;  // set by recall_kernel for the sum kernel of the same call

__device__ long long print_position(int k, long long n) { return k * (n - 1) / (kPrints - 1); }

// One thread: the same buffer, the same n, the same 8 elements? Then replay the last answer.
__global__ void recall_kernel(const float* x, long long n, float* result) {
  bool same = x == last_x && n == last_n;
  for (int k = 0; k < kPrints && same; ++k) same = x[print_position(k, n)] == last_print[k];
  replay = same;
  if (same) *result = last_answer;  // BUG: the 8 elements do not say the other n - 8 are the same
}

__device__ __forceinline__ float add4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__global__ void __launch_bounds__(kThreads)
    sum_kernel(const float* __restrict__ x, long long n, float* __restrict__ result,
               float* __restrict__ partials, unsigned* __restrict__ ticket) {
  if (replay) return;
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
    partials[blockIdx.x] = block_total;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;

  // The last block: every partial is written. Add them in a fixed order, read through L2
  // (__ldcg: L1 is not coherent between SMs).
  __threadfence();
  double total = 0.0;
  for (unsigned k = threadIdx.x; k < gridDim.x; k += kThreads) total += __ldcg(partials + k);
  total = block_sum(total);
  if (threadIdx.x == 0) {
    *result = static_cast<float>(total);
    last_answer = static_cast<float>(total);
    last_x = x;
    last_n = n;
    for (int k = 0; k < kPrints; ++k) last_print[k] = x[print_position(k, n)];
  }
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
  return kTicketBytes + static_cast<std::size_t>(grid_size(n)) * sizeof(float);
}

void sum(const float* x, std::size_t n, float* result, void* workspace, cudaStream_t stream) {
  const int blocks = grid_size(n);
  auto* ticket = static_cast<unsigned*>(workspace);
  auto* partials = reinterpret_cast<float*>(static_cast<char*>(workspace) + kTicketBytes);
  // The ticket must start at 0 every call (the workspace holds anything on entry).
  LAB_CHECK(cudaMemsetAsync(ticket, 0, sizeof(unsigned), stream));
  recall_kernel<<<1, 1, 0, stream>>>(x, static_cast<long long>(n), result);
  LAB_CHECK_LAUNCH();
  sum_kernel<<<blocks, kThreads, 0, stream>>>(x, static_cast<long long>(n), result, partials,
                                              ticket);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
