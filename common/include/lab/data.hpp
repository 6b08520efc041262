/// @file data.hpp
/// @brief Test data on the device: seeded random inputs (never zeros) and poisoned outputs.
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

}  // namespace lab
