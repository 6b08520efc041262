// A legitimately different correct solution that the seal must not refuse: the sum through
// thrust::reduce on the given stream, the value handed back to the host (Thrust's reduce returns
// it) and copied into *result. Thrust's code switches to the device it is given (cudaSetDevice)
// and formats its errors with strerror, from functions the compiler clones into the exercise's
// own code; the checker shows a program one GPU, so neither reaches anything. Slower than CUB (a
// temporary allocation and a round trip through the host each call): it is judged on its
// correctness, and its speed fails or passes like anyone's.
#include "exercise.cuh"

#include <thrust/execution_policy.h>
#include <thrust/reduce.h>

#include <stdexcept>
#include <string>

namespace exercise {
std::size_t sum_workspace_bytes(std::size_t) { return 0; }
void sum(const float* x, std::size_t n, float* result, void*, cudaStream_t stream) {
  if (n == 0) throw std::invalid_argument("sum of " + std::to_string(n) + " elements");
  const float s = thrust::reduce(thrust::cuda::par.on(stream), x, x + n, 0.0f);
  cudaMemcpyAsync(result, &s, sizeof s, cudaMemcpyHostToDevice, stream);
  cudaStreamSynchronize(stream);
}
}  // namespace exercise
