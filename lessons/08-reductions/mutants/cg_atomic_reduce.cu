// A legitimately different correct solution that the seal must not refuse: cooperative groups'
// warp reduction, one atomicAdd per warp, a grid sized from the occupancy calculator and the
// device's properties, and one line printed on the first call. Judged on its correctness.
#include "exercise.cuh"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <algorithm>
#include <cassert>
#include <cstdio>

namespace cg = cooperative_groups;

namespace {
__global__ void sum_kernel(const float* __restrict__ x, std::size_t n, float* result) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  float v = 0.0f;
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    v += x[i];
  v = cg::reduce(warp, v, cg::plus<float>());
  if (warp.thread_rank() == 0) atomicAdd(result, v);
}
}  // namespace

namespace exercise {
std::size_t sum_workspace_bytes(std::size_t) { return 0; }
void sum(const float* x, std::size_t n, float* result, void*, cudaStream_t stream) {
  int device = 0, blocks = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, sum_kernel, 256, 0);
  assert(blocks > 0);
  static bool told = false;
  if (!told) {
    std::printf("%s: %d SMs, %d blocks each\n", prop.name, sms, blocks);
    told = true;
  }
  cudaMemsetAsync(result, 0, sizeof(float), stream);
  sum_kernel<<<std::max(1, sms * blocks), 256, 0, stream>>>(x, n, result);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) std::fprintf(stderr, "launch: %s\n", cudaGetErrorString(e));
}
}  // namespace exercise
