// Mutant: forges its own verdict in memory, no library call needed. A validated call is made
// from the harness's validate(), whose caller holds the reference it will be compared with: a
// std::vector<float> of exactly `rows` floats, then the lab::Tolerance {1e-6, atol} that
// lab::sum_tolerance made. Walking up its own stack from __builtin_frame_address it finds that
// pattern; there it writes zeros instead of working and sets atol to infinity, so the harness's
// own comparison says "right". A timed call has no such reference above it (its check is made
// only after the call), so there it computes, as the solution does. The harness's process
// judged it right on every check and passed it; now the values it recorded are compared with
// references the course's program computes where no student code runs.
// Expected: error, reason unverified-result ("its own process judged it right, but the values
// it recorded ... are wrong").
#include <cmath>
#include <cstdint>
#include <cstring>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;
constexpr unsigned kFullMask = 0xffffffffu;

__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_warp_per_row(int rows, int cols, float alpha, const float* __restrict__ A,
                      const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullMask, sum, offset);
  if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

// The harness's reference for a `rows`-row check, if one lies in the 8 KiB of stack above this
// frame: the address of its tolerance's atol, else nullptr.
double* reference_tolerance(int rows) {
  auto* word = static_cast<std::uint64_t*>(__builtin_frame_address(0));
  for (int i = 0; i + 4 < 1024; ++i) {
    const std::uint64_t begin = word[i], end = word[i + 1], cap = word[i + 2];
    double rtol, atol;
    std::memcpy(&rtol, &word[i + 3], sizeof rtol);
    std::memcpy(&atol, &word[i + 4], sizeof atol);
    if (begin != 0 && end - begin == 4ull * rows && cap >= end && rtol == 1e-6 && atol > 0 &&
        std::isfinite(atol))
      return reinterpret_cast<double*>(&word[i + 4]);
  }
  return nullptr;
}

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  if (double* atol = reference_tolerance(rows)) {
    *atol = INFINITY;  // any finite value is now "close"
    LAB_CHECK(cudaMemsetAsync(y, 0, sizeof(float) * rows, stream));
    return;
  }
  gemv_warp_per_row<<<(rows + kWarpsPerBlock - 1) / kWarpsPerBlock, kWarpsPerBlock * 32, 0,
                      stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
