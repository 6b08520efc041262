/// @file same_bits.cuh
/// @brief An output compared bit for bit with a reference computed on the device into an array
/// of its own, both left on the device (device code: include it from a .cu file). For an output
/// too large to copy to the host on every check (a runtime-compiled operator against the same
/// source compiled once: the same bits or a wrong answer).
///
/// @code
/// reference(x_again, want);                                  // x made again from its seed
/// const std::string wrong = lab::compare_bits(out, want, s);  // "" when right
/// look.check(wrong.empty(), wrong);
/// @endcode
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lab/guard.hpp"
#include "lab/read_only.cuh"

namespace lab {

/// @brief The values of a device array, as lab::count_changed expects them: it then compares two
/// arrays.
template <class T>
struct ValuesIn {
  const T* p;  ///< the array, on the device
  /// @param i element index
  /// @return p[i]
  __host__ __device__ T operator()(std::uint64_t i) const { return p[i]; }
};

/// @brief What compare_bits() says when elements differ.
/// @param c what count_changed() found (c.count > 0)
/// @param n elements compared
/// @param got the output at c.first
/// @param expected the reference at c.first
/// @return e.g. "3 of 4096 differ; first at [17]: got 1.000000, expected 2.000000 (bit for bit)"
inline std::string bits_differ_message(const Changed& c, std::size_t n, float got, float expected) {
  return std::to_string(c.count) + " of " + std::to_string(n) + " differ; first at [" +
         std::to_string(c.first) + "]: got " + std::to_string(got) + ", expected " +
         std::to_string(expected) + " (bit for bit)";
}

/// @param p an array on the device
/// @param i an index into it
/// @param stream where to copy (waited for)
/// @return p[i]
inline float read_element(const float* p, std::size_t i, cudaStream_t stream) {
  float v = 0;
  LAB_CHECK(cudaMemcpyAsync(&v, p + i, sizeof v, cudaMemcpyDeviceToHost, stream));
  LAB_CHECK(cudaStreamSynchronize(stream));
  return v;
}

/// @brief Compares @p out with @p want bit for bit, on the device, then reads @p out's guard zone
/// (waits for @p stream).
/// @param out the output
/// @param want the reference, out.size() floats on the device
/// @param stream where to compare
/// @return "" when every element has the reference's bits and the guard zone is untouched;
///         otherwise what differs, in words (bits_differ_message, or GuardedBuffer::damage)
inline std::string compare_bits(const GuardedBuffer<float>& out, const float* want,
                                cudaStream_t stream) {
  const Changed c = count_changed(out.data(), out.size(), ValuesIn<float>{want}, stream);
  if (c.count > 0)
    return bits_differ_message(c, out.size(), read_element(out.data(), c.first, stream),
                               read_element(want, c.first, stream));
  return out.damage(stream);
}

}  // namespace lab
