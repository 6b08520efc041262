/// @file cublas.hpp
/// @brief cuBLAS for a lesson's library references: LAB_CUBLAS_CHECK, which throws on a failed
/// call, and lab::CublasHandle, a handle that lives as long as its object. Header-only: a lesson
/// that includes it links CUDA::cublas, and no other program needs cuBLAS.
#pragma once

#include <cublas_v2.h>

#include <stdexcept>
#include <string>

namespace lab {

/// @brief Checks a cuBLAS return code; throws std::runtime_error unless it is
/// CUBLAS_STATUS_SUCCESS.
/// @param status what the call returned
/// @param call the call's source text
/// @param file source file of the call
/// @param line source line of the call
inline void cublas_check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                             " failed: " + cublasGetStatusName(status) + " (" +
                             cublasGetStatusString(status) + ")");
}

}  // namespace lab

/// Checks a cuBLAS call, as LAB_CHECK does a CUDA one: throws std::runtime_error with file,
/// line, the call's text and cuBLAS's status.
#define LAB_CUBLAS_CHECK(call) ::lab::cublas_check((call), #call, __FILE__, __LINE__)

namespace lab {

/// @brief A cuBLAS handle, created with the object and destroyed with it. Create it before
/// anything is timed: cublasCreate loads the library's kernels. Not copyable.
class CublasHandle {
 public:
  /// @brief Creates the handle (default math mode: calls that care name their compute type).
  CublasHandle() { LAB_CUBLAS_CHECK(cublasCreate(&handle_)); }
  /// @brief Destroys the handle.
  ~CublasHandle() { cublasDestroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  /// @return the handle, for settings (cublasSetMathMode)
  cublasHandle_t get() const noexcept { return handle_; }

  /// @brief Binds the handle to @p stream, so that the call it is passed to enqueues there.
  /// @param stream the stream of the call
  /// @return the handle
  cublasHandle_t on(cudaStream_t stream) const {
    LAB_CUBLAS_CHECK(cublasSetStream(handle_, stream));
    return handle_;
  }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace lab
