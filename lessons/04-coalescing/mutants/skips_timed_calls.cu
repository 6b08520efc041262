// Mutant: skips the timed calls. It recognises a repeated call by its arguments (same sizes,
// scalars and pointers as the call before) and by a fingerprint of eight elements of A, taken on
// the device; when both match, its kernel returns at once: "y already holds the answer". The
// validated calls all compute (other sizes, other pointers, or A refilled after timing), so the
// old harness passed it, timed at a few microseconds. Then every timed call got a new x and a
// new starting y (A stayed), and a random sample of the timed calls was checked: y was wrong
// there. Since 2026-11-28 A is new in every timed call too, so the fingerprint never repeats and
// the kernel does the work in every call: the attack never fires, and what is timed is earned.
// Expected: rule "correct" passes (were A kept again, the skipped calls would fail it).
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kProbes = 8;

__device__ unsigned g_fingerprint[kProbes];  // the bits of A at kProbes places, last call
__device__ int g_skip;                         // this call repeats the last one

// One thread: compares A at kProbes places spread over it with the last call's, and remembers.
__global__ void fingerprint(const float* __restrict__ A, std::size_t n, bool same_arguments) {
  bool same = same_arguments;
  for (int k = 0; k < kProbes; ++k) {
    const unsigned bits = __float_as_uint(A[(n - 1) / (kProbes - 1) * k]);
    same = same && bits == g_fingerprint[k];
    g_fingerprint[k] = bits;
  }
  g_skip = same;
}

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(int rows, int cols, float alpha, const float* __restrict__ A,
                const float* __restrict__ x, float beta, float* __restrict__ y) {
  if (g_skip) return;  // BUG: the same A does not mean the same x, nor the same y
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
#pragma unroll 4
  for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullMask, sum, offset);
  if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

struct Call {
  int rows = -1, cols = -1;
  float alpha = 0.0f, beta = 0.0f;
  const float* A = nullptr;
  const float* x = nullptr;
  float* y = nullptr;
  bool operator==(const Call& o) const {
    return rows == o.rows && cols == o.cols && alpha == o.alpha && beta == o.beta && A == o.A &&
           x == o.x && y == o.y;
  }
};

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  static Call last;
  const Call now{rows, cols, alpha, beta, A, x, y};
  const bool same = now == last;
  last = now;
  fingerprint<<<1, 1, 0, stream>>>(A, static_cast<std::size_t>(rows) * cols, same);
  LAB_CHECK_LAUNCH();
  const int blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  gemv_kernel<<<blocks, kWarpsPerBlock * 32, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
