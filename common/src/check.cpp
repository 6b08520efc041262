#include "lab/check.hpp"

#include <sstream>

namespace lab {

CudaError::CudaError(cudaError_t code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  std::ostringstream out;
  out << file << ":" << line << ": " << call << " failed: " << cudaGetErrorName(code) << " ("
      << cudaGetErrorString(code) << ")";
  throw CudaError(code, out.str());
}

}  // namespace lab
