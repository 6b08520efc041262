// The lesson template, the exercise: y = a x.
//
// This is the one file you edit. It is correct, and slow: one block of 256 threads walks the
// whole array, so one SM of the GPU does all the work while the others wait.
//
// Goal (what the checker measures, in the same run):
//   * correct: y = a x at n = 1, 3, 1000003 and the timing size, before and after timing;
//   * [at least 0.7x the copy ceiling](check.toml#bandwidth) (8n bytes: x read once, y written
//     once).
//
// Build and run (from the repository root):
//   cmake --workflow --preset lab                    # builds everything, checks the lessons
//   build/release/lessons/_template/starter          # your version against the others
//   build/release/lessons/_template/starter --quick  # small sizes, seconds
#include "exercise.cuh"

namespace {

__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, float a,
                             std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = a * x[i];
}

}  // namespace

namespace exercise {

// TODO: give the GPU enough blocks to fill every SM (a few per SM, or one thread per element).
void scale(const float* x, float* y, float a, std::size_t n, cudaStream_t stream) {
  scale_kernel<<<1, 256, 0, stream>>>(x, y, a, n);
}

}  // namespace exercise
