#include "lab/check.hpp"

#include <sstream>

namespace lab {

CudaError::CudaError(cudaError_t code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  // The runtime keeps a failed call's error as the thread's "last error" too: reported here, it
  // is cleared there, or the next LAB_CHECK_LAUNCH would blame an innocent launch for it (a
  // sticky error, a crashed kernel, is returned by every later call anyway).
  cudaGetLastError();
  std::ostringstream out;
  out << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
      << cudaGetErrorString(code) << ")";
  throw CudaError(code, out.str());
}

}  // namespace lab
