/// @file cub_call.hpp
/// @brief lab::CubCall: a CUB device-wide algorithm with its temporary storage, sized by CUB's own
/// query and allocated once, outside every timed call; each call then only enqueues the
/// algorithm. Every status CUB returns is checked (lab::CudaError, naming the algorithm).
///
/// @code
/// p.sum = lab::CubCall("cub::DeviceReduce::Sum",
///                      [x, out, n](void* temp, std::size_t& bytes, cudaStream_t s) {
///                        return cub::DeviceReduce::Sum(temp, bytes, x, out, n, s);
///                      });
/// p.sum(stream);  // in the variant's launch
/// @endcode
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace lab {

/// @brief A CUB algorithm bound to its arguments, with temporary storage of its own.
class CubCall {
 public:
  /// The algorithm on its arguments, in CUB's two-phase form: with temp == nullptr it only sets
  /// @p bytes to the storage it needs; else it enqueues the algorithm on the stream.
  using Call = std::function<cudaError_t(void* temp, std::size_t& bytes, cudaStream_t)>;

  /// @brief Nothing bound: a variant that is not selected needs no storage.
  CubCall() = default;

  /// @brief Asks CUB how much temporary storage @p call needs (stream 0, as CUB's default; the
  /// query enqueues nothing), and allocates it (at least one byte).
  /// @param name what an error message calls it, e.g. "cub::DeviceReduce::Sum"
  /// @param call the algorithm on its arguments
  CubCall(std::string name, Call call) : name_(std::move(name)), call_(std::move(call)) {
    check(call_(nullptr, bytes_, nullptr), (name_ + " (size query)").c_str(), __FILE__, __LINE__);
    temp_ = DeviceBuffer<unsigned char>(std::max<std::size_t>(bytes_, 1));
  }

  /// @brief Enqueues the algorithm on @p stream, on the storage allocated once.
  /// @param stream where it runs
  void operator()(cudaStream_t stream) const {
    std::size_t bytes = bytes_;  // CUB takes it by reference
    check(call_(temp_.data(), bytes, stream), name_.c_str(), __FILE__, __LINE__);
  }

  /// @return the bytes of temporary storage CUB asked for
  std::size_t temp_bytes() const { return bytes_; }

 private:
  std::string name_;
  Call call_;
  std::size_t bytes_ = 0;
  DeviceBuffer<unsigned char> temp_;
};

}  // namespace lab
