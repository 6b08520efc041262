/// @file read_only.cuh
/// @brief Is a read-only input still what the harness wrote? Compared on the device, element by
/// element and bit for bit, with its values regenerated from their seed (device code: include it
/// from a .cu file). The same comparison checks an output whose every bit is known.
///
/// A harness checks its inputs after the exercise's timed calls: an exercise that keeps partial
/// results in an input it was told is read-only is right once, then wrong on the next call with
/// other data. The expected values are regenerated, never read back, so nothing the exercise
/// could have written is trusted. Arrays of float or of __nv_bfloat16.
#pragma once

#include <cuda_bf16.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "lab/data.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"

namespace lab {

/// @brief An input's value at an index, as lab::fill_random(p, n, seed, stream, lo, hi) wrote it
/// (RandomInput{seed}: range [-1, 1)). A harness whose inputs are made otherwise passes its own
/// functor to changed_input().
struct RandomInput {
  std::uint64_t seed;  ///< the fill's seed
  float lo = -1.0f;    ///< the fill's lower bound
  float hi = 1.0f;     ///< the fill's upper bound
  /// @param i element index
  /// @return the value at @p i
  __host__ __device__ float operator()(std::uint64_t i) const {
    return random_input(seed, i, lo, hi);
  }
};

/// @brief Bit-for-bit equality: a NaN matches only the same NaN, and -0 is not +0.
/// @param a a value
/// @param b another
/// @return whether their bits are the same
__device__ inline bool same_bits(float a, float b) {
  return __float_as_uint(a) == __float_as_uint(b);
}

/// @overload
/// @param a a value
/// @param b another
/// @return whether their bits are the same
__device__ inline bool same_bits(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __bfloat16_as_ushort(a) == __bfloat16_as_ushort(b);
}

/// @brief stats[0] += the number of elements of p[0 .. n) that are not, bit for bit, value(i);
/// stats[1] = min(stats[1], the smallest such index). Launched by lab::count_changed.
/// @param p the array, on the device
/// @param n its elements
/// @param value the expected value at an index, of the array's type
/// @param stats two counters on the device: {0, ~0} on entry
template <class T, class Value>
__global__ void count_changed_kernel(const T* __restrict__ p, std::size_t n, Value value,
                                     unsigned long long* stats) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    if (!same_bits(p[i], value(i))) {
      atomicAdd(&stats[0], 1ull);
      atomicMin(&stats[1], static_cast<unsigned long long>(i));
    }
}

/// @brief How many elements of an array differ from their expected values, and the first.
struct Changed {
  unsigned long long count = 0;  ///< elements that differ
  unsigned long long first = 0;  ///< the smallest index among them (meaningless when count == 0)
};

/// @brief Compares a device array, bit for bit, with values regenerated on the device (waits for
/// @p stream): a read-only input with what the harness wrote, or an output whose every bit is
/// known (a transpose moves bits, it computes nothing).
/// @param p the array (float or __nv_bfloat16), on the device
/// @param n its elements
/// @param value the expected value at an index: RandomInput{seed}, or the lesson's own functor
///        (a struct with a __host__ __device__ operator()(std::uint64_t) const that returns the
///        array's type: a BF16 input is compared with values rounded as the harness rounded them)
/// @param stream where to run the comparison
/// @return how many differ, and the first
template <class T, class Value>
Changed count_changed(const T* p, std::size_t n, Value value, cudaStream_t stream) {
  static_assert(std::is_same_v<decltype(value(std::uint64_t{})), T>,
                "the expected value must have the array's type");
  DeviceBuffer<unsigned long long> stats(2);
  const unsigned long long init[2] = {0ull, ~0ull};
  LAB_CHECK(cudaMemcpyAsync(stats.data(), init, sizeof init, cudaMemcpyHostToDevice, stream));
  count_changed_kernel<<<1024, 256, 0, stream>>>(p, n, value, stats.data());
  LAB_CHECK_LAUNCH();
  unsigned long long found[2];
  LAB_CHECK(cudaMemcpyAsync(found, stats.data(), sizeof found, cudaMemcpyDeviceToHost, stream));
  LAB_CHECK(cudaStreamSynchronize(stream));
  return {found[0], found[1]};
}

/// @brief What changed_input() says about an input.
/// @param name what the message calls it, e.g. "A"
/// @param c what count_changed() found
/// @param n elements of the input
/// @return "" when nothing changed, else how many elements changed and the first
inline std::string changed_message(const std::string& name, const Changed& c, std::size_t n) {
  if (c.count == 0) return "";
  return name + " was written: " + std::to_string(c.count) + " of its " + std::to_string(n) +
         " elements changed, the first at [" + std::to_string(c.first) + "]";
}

/// @brief Compares a read-only input with the values the harness wrote (waits for @p stream).
/// @param name what the message calls it, e.g. "A"
/// @param p the input (float or __nv_bfloat16), on the device
/// @param n its elements
/// @param value the expected value at an index, of the input's type: RandomInput{seed}, or the
///        lesson's own functor
/// @param stream where to run the comparison
/// @return "" when every element is as written, else how many changed and the first
template <class T, class Value, std::enable_if_t<!std::is_integral_v<Value>, int> = 0>
std::string changed_input(const std::string& name, const T* p, std::size_t n, Value value,
                          cudaStream_t stream) {
  return changed_message(name, count_changed(p, n, value, stream), n);
}

/// @overload
/// @param name what the message calls it
/// @param p the input, on the device
/// @param n its elements
/// @param seed the seed lab::fill_random(p, n, seed) was called with
/// @param stream where to run the comparison
/// @return "" when every element is as written, else what changed
inline std::string changed_input(const std::string& name, const float* p, std::size_t n,
                                 std::uint64_t seed, cudaStream_t stream) {
  return changed_input(name, p, n, RandomInput{seed}, stream);
}

/// @brief Records the check "inputs unchanged after timing" of @p variant.
/// @param lesson the lesson
/// @param variant whose timed calls ran on the inputs
/// @param changes changed_input()'s answer for each input ("" for an intact one)
inline void check_inputs_unchanged(Lesson& lesson, const std::string& variant,
                                   const std::vector<std::string>& changes) {
  std::string what;
  for (const std::string& c : changes)
    if (!c.empty()) what += (what.empty() ? "" : "; ") + c;
  lesson.check(variant, "inputs unchanged after timing", what.empty(),
               what + " (inputs are read-only: see exercise.cuh)");
}

}  // namespace lab
