/// @file reduce.cuh
/// @brief Sums across a warp and across a block with warp shuffles (device code: include it from
/// a .cu file). Lessons 06 and 08 build their given kernels on it; lesson 08 teaches what it does.
#pragma once

namespace lab {

/// @brief The sum of @p v over the 32 lanes of a warp, by shuffling down: lane 0 holds it, the
/// other lanes hold partial sums. Every lane of the warp must call it.
/// @param v this lane's value
/// @return the warp's sum in lane 0
template <class T>
__device__ inline T warp_sum(T v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

/// @brief The sum of @p v over a block of @p Threads threads (a multiple of 32, at most 1024): each
/// warp adds its lanes, warp 0 adds the warps' sums. Every thread of the block must call it, and
/// only thread 0 gets the sum. It uses a shared array without a barrier after reading it: call
/// it once per kernel, or put a __syncthreads() between two calls.
/// @param v this thread's value
/// @return the block's sum in thread 0
template <int Threads>
__device__ inline float block_sum(float v) {
  static_assert(Threads % 32 == 0 && Threads <= 1024, "a block of whole warps, at most 1024");
  __shared__ float warp_sums[Threads / 32];
  v = warp_sum(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = threadIdx.x < Threads / 32 ? warp_sums[threadIdx.x] : 0.0f;
  if (warp == 0) v = warp_sum(v);
  return v;
}

}  // namespace lab
