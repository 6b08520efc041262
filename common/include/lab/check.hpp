/// @file check.hpp
/// @brief Error checking for CUDA runtime calls and kernel launches, in every build type.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace lab {

/// @brief A failed CUDA call: carries the error code and a message naming the call and its place.
class CudaError : public std::runtime_error {
 public:
  /// @param code the CUDA error that was returned
  /// @param message the full text: file:line, the call, the error's name and description
  CudaError(cudaError_t code, const std::string& message);
  /// @return the CUDA error code
  cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// @brief Throws CudaError describing @p code at @p file:@p line for the call text @p call.
/// @param code the error returned by the call
/// @param call the call's source text
/// @param file source file of the call
/// @param line source line of the call
[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);

/// @brief Checks a CUDA return code; throws CudaError unless it is cudaSuccess.
/// @param code the error returned by the call
/// @param call the call's source text
/// @param file source file of the call
/// @param line source line of the call
inline void check(cudaError_t code, const char* call, const char* file, int line) {
  if (code != cudaSuccess) throw_cuda_error(code, call, file, line);
}

}  // namespace lab

/// Checks a CUDA runtime call; never compiled away. Throws lab::CudaError with file, line,
/// the call's text and the CUDA error string.
#define LAB_CHECK(call) ::lab::check((call), #call, __FILE__, __LINE__)

/// Checks the launch that just happened (bad configuration, missing kernel image...). Errors
/// inside the kernel show up at the next synchronizing call, which LAB_CHECK also checks.
#define LAB_CHECK_LAUNCH() ::lab::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
