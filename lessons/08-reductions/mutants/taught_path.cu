// Taught path: what the README's step 3 and the starter's hints 1-4 ask for, and nothing more.
// The harness's `shuffle` (a fixed grid that fills the GPU once, a grid-stride loop, warp
// shuffles) with the step it does not take: float4 loads, 4 of them issued before any is added,
// into separate accumulators, and the last n % 4 elements added by one thread each. The blocks
// meet by atomicAdd into *result, which a memset zeroed first (hint 4's second way).
// This is the kernel the bars must be reachable with.
// Expected: passes every rule.
#include <algorithm>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;  // 8 x 256 = 2048 threads: one full SM
constexpr int kLoads = 4;        // float4 loads in flight per thread

int sm_count() {
  static const int sms = [] {
    int device = 0, count = 0;
    LAB_CHECK(cudaGetDevice(&device));
    LAB_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
  }();
  return sms;
}

__device__ float add4(float4 v) { return (v.x + v.y) + (v.z + v.w); }

__global__ void sum_kernel(const float* __restrict__ x, long long n, float* __restrict__ result) {
  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  const long long first = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  const float4* x4 = reinterpret_cast<const float4*>(x);  // cudaMalloc: 256-byte aligned
  const long long n4 = n / 4;

  float acc[kLoads] = {};
  long long i = first;
  for (; i + (kLoads - 1) * stride < n4; i += kLoads * stride) {
    float4 v[kLoads];
    for (int u = 0; u < kLoads; ++u) v[u] = x4[i + u * stride];  // all loads first ...
    for (int u = 0; u < kLoads; ++u) acc[u] += add4(v[u]);       // ... then the adds
  }
  for (; i < n4; i += stride) acc[0] += add4(x4[i]);
  if (first < n - 4 * n4) acc[1] += x[4 * n4 + first];  // the last n % 4 elements

  float v = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  __shared__ float warp_sums[kThreads / 32];
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x == 0) atomicAdd(result, v);
  }
}

}  // namespace

namespace exercise {

std::size_t sum_workspace_bytes(std::size_t) { return 0; }

void sum(const float* x, std::size_t n, float* result, void*, cudaStream_t stream) {
  const long long n4 = static_cast<long long>(n / 4);
  const long long needed = std::max(1LL, (n4 + kThreads - 1) / kThreads);
  const int blocks = static_cast<int>(std::min<long long>(needed, kBlocksPerSm * sm_count()));
  LAB_CHECK(cudaMemsetAsync(result, 0, sizeof(float), stream));  // the blocks add into it
  sum_kernel<<<blocks, kThreads, 0, stream>>>(x, static_cast<long long>(n), result);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
