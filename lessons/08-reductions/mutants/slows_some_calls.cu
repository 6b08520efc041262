// The starter's tree reduction, with a call counter that makes a minority of the timed calls
// four times slower (the whole sum done four times; each call's result is still exact). The fast
// calls stay just ahead of the slow ones, so the median is a fast call while its 95% interval
// reaches the slow ones: a symmetric interval of the ratio to cub's time then held the bar
// (0.9), and `ambiguous` earned full points for the starter's 0.3. The benefit of the doubt stops
// 5% short of a bar and the ratio's interval stays within the medians' own ends: `over_cub` fails.
#include <cmath>
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 256;

// out[blockIdx.x] = the sum of this block's kThreads elements of x.
__global__ void __launch_bounds__(kThreads)
    tree_kernel(const float* __restrict__ x, long long n, float* __restrict__ out) {
  __shared__ float s[kThreads];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

long long blocks_for(long long count) { return (count + kThreads - 1) / kThreads; }

}  // namespace

namespace exercise {

// Two arrays of partial sums: the first pass writes n / 256 of them into the first, the second
// pass n / 256^2 into the second, and later passes alternate (each smaller than the last).
std::size_t sum_workspace_bytes(std::size_t n) {
  const long long first = blocks_for(static_cast<long long>(n));
  return static_cast<std::size_t>(first + blocks_for(first)) * sizeof(float);
}

// TODO: make this fast. The steps of the lesson, each one measured by the harness:
//   1. Give each thread many elements: a fixed grid that fills the GPU once (a few blocks per
//      SM) and a grid-stride loop. Then one launch reads all of x.
//   2. Add inside a warp with __shfl_xor_sync / __shfl_down_sync instead of a shared-memory tree.
//   3. Keep several loads in flight per thread: float4 loads (x is 256-byte aligned; mind the
//      last n % 4 elements), a few of them issued before any is added, into separate
//      accumulators. This is the step the harness's `shuffle` variant does not take.
//   4. Combine the blocks' partial sums without a second pass over memory: the last block to
//      finish adds them (a ticket counter in the workspace, zeroed with cudaMemsetAsync every
//      call), or atomicAdd into a zeroed *result.
static void sum_once(const float* x, std::size_t n, float* result, void* workspace, cudaStream_t stream) {
  auto* a = static_cast<float*>(workspace);
  float* b = a + blocks_for(static_cast<long long>(n));
  const float* in = x;
  long long count = static_cast<long long>(n);
  bool into_a = true;
  for (;;) {
    const long long blocks = blocks_for(count);
    float* out = blocks == 1 ? result : (into_a ? a : b);
    tree_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(in, count, out);
    LAB_CHECK_LAUNCH();
    if (blocks == 1) return;
    in = out;
    count = blocks;
    into_a = !into_a;
  }
}

void sum(const float* x, std::size_t n, float* result, void* workspace, cudaStream_t stream) {
  // At the timing size only: the calls are slow (the whole sum 4 times) when the fast ones lead
  // by sqrt(calls), so the fast ones are a majority of about sqrt(n) of any n samples.
  static long long fast = 0, slow = 0, calls = 0;
  bool is_slow = false;
  if (n >= (std::size_t{1} << 27)) {
    ++calls;
    is_slow = fast - slow >= static_cast<long long>(std::ceil(std::sqrt(static_cast<double>(calls))));
    (is_slow ? slow : fast) += 1;
  }
  for (int pass = 0; pass < (is_slow ? 4 : 1); ++pass) sum_once(x, n, result, workspace, stream);
}

}  // namespace exercise
