/// @file fill.cuh
/// @brief lab::fill_with: a device array filled from the same functor that regenerates it, so that
/// what the harness wrote, what its reference reads on the host and what lab::changed_input
/// compares on the device are one definition (device code: include it from a .cu file).
///
/// @code
/// struct Input {  // x[i] of one seed: the same on host and device
///   std::uint64_t seed;
///   __host__ __device__ float operator()(std::uint64_t i) const { ... }
/// };
/// lab::fill_with(p.x.data(), p.n, Input{seed}, stream);
/// // reference: Input{seed}(i) on the host; after timing: lab::changed_input("x", ..., Input{seed})
/// @endcode
#pragma once

#include <cstddef>
#include <cstdint>

#include "lab/check.hpp"
#include "lab/device.hpp"

namespace lab {

/// @brief p[i] = value(i) for every i < n (grid-stride). Launched by lab::fill_with.
/// @param p the array, on the device
/// @param n its elements
/// @param value the value at an index
template <class T, class Value>
__global__ void fill_with_kernel(T* __restrict__ p, long long n, Value value) {
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    p[i] = value(static_cast<std::uint64_t>(i));
}

/// @brief Fills a device array from @p value (enqueued on @p stream): 256 threads a block, at
/// most 16 blocks per SM (lab::grid_for), each thread striding over the array.
/// @param p the array, on the device
/// @param n its elements
/// @param value a functor with a __host__ __device__ operator()(std::uint64_t) const returning
///        the element at an index
/// @param stream where to launch the fill
template <class T, class Value>
void fill_with(T* p, long long n, const Value& value, cudaStream_t stream) {
  fill_with_kernel<<<grid_for(n, 256, 16), 256, 0, stream>>>(p, n, value);
  LAB_CHECK_LAUNCH();
}

}  // namespace lab
