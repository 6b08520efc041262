/// @file data.hpp
/// @brief Test data: seeded random inputs (never zeros) that can be regenerated element by element
/// on either side, and poisoned outputs.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include "lab/validate.hpp"

namespace lab {

/// @brief Fills device memory with 0xFF bytes: for floats that is a NaN, so an element that the
/// code under test never writes fails validation.
/// @param ptr device pointer
/// @param bytes number of bytes
/// @param stream where to enqueue the memset
void poison(void* ptr, std::size_t bytes, cudaStream_t stream);

/// @brief Fills device memory with the values of lab::uniform01, scaled to [lo, hi).
/// @param ptr device array
/// @param n number of elements
/// @param seed run seed
/// @param stream where to launch the fill kernel
/// @param lo lower bound
/// @param hi upper bound
void fill_random(float* ptr, std::size_t n, std::uint64_t seed, cudaStream_t stream,
                 float lo = -1.0f, float hi = 1.0f);

/// @brief The value lab::fill_random(p, n, seed, stream, lo, hi) writes at p[i], and
/// lab::fill_random_host at values[i]: a harness regenerates an input from its seed instead of
/// reading back a buffer the code under test could have written. On the device bit for bit (each
/// operation rounded separately, as the fill kernel does); on the host up to the host compiler's
/// rounding choices (the same expression as lab::fill_random_host).
/// @param seed the fill's seed
/// @param i element index
/// @param lo lower bound of the fill
/// @param hi upper bound of the fill
/// @return the element's value
#if defined(__CUDACC__)
__host__ __device__
#endif
inline float random_input(std::uint64_t seed, std::uint64_t i, float lo = -1.0f,
                          float hi = 1.0f) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(lo, __fmul_rn(hi - lo, uniform01(seed, i)));
#else
  return lo + (hi - lo) * uniform01(seed, i);
#endif
}

}  // namespace lab
