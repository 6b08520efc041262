/// @file bf16.cuh
/// @brief BF16 copies of FP32 data, made the one way the harness makes them: each value rounded
/// to nearest even, the same bits on the host and on the device, so that a reference or an input
/// check regenerates a BF16 copy instead of reading it back (device code: include it from a .cu
/// file).
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>

#include "lab/check.hpp"
#include "lab/data.hpp"

namespace lab {

/// @param x an FP32 value
/// @return its BF16 copy, rounded to nearest even (the host and device versions of
///         __float2bfloat16_rn give the same bits)
__host__ __device__ inline __nv_bfloat16 to_bf16(float x) { return __float2bfloat16_rn(x); }

/// @brief out[i] = to_bf16(in[i]) for i < n (grid-stride). Launched by lab::round_to_bf16.
/// @param in FP32 values, on the device
/// @param out their BF16 copies, on the device
/// @param n elements
template <class Float = float>
__global__ void round_to_bf16_kernel(const Float* __restrict__ in, __nv_bfloat16* __restrict__ out,
                                     std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = to_bf16(in[i]);
}

/// @brief Writes the BF16 copy of @p n FP32 values (enqueued on @p stream).
/// @param in FP32 values, on the device
/// @param out their BF16 copies, on the device
/// @param n elements
/// @param stream where to launch the conversion
inline void round_to_bf16(const float* in, __nv_bfloat16* out, std::size_t n,
                          cudaStream_t stream) {
  round_to_bf16_kernel<<<1024, 256, 0, stream>>>(in, out, n);
  LAB_CHECK_LAUNCH();
}

/// @brief The BF16 copy of what lab::fill_random(p, n, seed) wrote at p[i], the same bits on the
/// host and the device: what a BF16 input must still hold (lab::changed_input), and how a
/// reference regenerates it.
struct RandomBf16 {
  std::uint64_t seed;  ///< the FP32 fill's seed
  /// @param i element index
  /// @return the BF16 copy of the fill's value at @p i
  __host__ __device__ __nv_bfloat16 operator()(std::uint64_t i) const {
    return to_bf16(random_input(seed, i));
  }
};

}  // namespace lab
