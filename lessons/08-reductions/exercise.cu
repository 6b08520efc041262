// Lesson 08, the exercise: a fast sum.
//
// This is the one file you edit. It is correct, and slow: the shared-memory tree with sequential
// addressing (the harness's `sequential` variant), one element per thread, one partial sum per
// block of 256, run pass after pass over the partials until one is left. Each pass is a full
// launch; the first one has n / 256 blocks, each loading 1 KiB and then spending 8 steps and 8
// barriers on it, with fewer threads busy at every step.
//
// Goal (what the checker measures, in the same run):
//   * correct: exact on integer-valued data, within the README's bound on data in [0, 1), at
//     n = 1, 3, 1000003, 2^24 + 7 and the timing size (before and after timing), with the
//     workspace full of 0xFF bytes on entry and nothing written past it or past result[0];
//   * [at least 0.9x the speed](check.toml#over_cub) of cub::DeviceReduce::Sum;
//   * [at least 0.8x the copy ceiling](check.toml#bandwidth) (4n bytes: x read once).
//
// Build and run (from the repository root):
//   cmake --workflow --preset lab                        # builds everything, checks the lessons
//   build/release/lessons/08-reductions/starter          # your version against the others
//   build/release/lessons/08-reductions/starter --quick  # small sizes, seconds
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
void sum(const float* x, std::size_t n, float* result, void* workspace, cudaStream_t stream) {
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

}  // namespace exercise
