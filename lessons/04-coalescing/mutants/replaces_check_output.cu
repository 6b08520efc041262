// Mutant: replaces the harness's output check. The solution, plus an explicit specialization of
// lab::check_output<float> (the library template every validation and timed-call check of the
// harness calls) that compares the output with itself and records a pass.
// Expected: verdict "error", reason "forbidden": the exercise defines a lab:: function the
// harness uses; the checker reads the object file first and never runs it.
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kWarpsPerBlock = 8;  // 256 threads, 8 rows per block
constexpr unsigned kFullMask = 0xffffffffu;

// kVec = 4: every row starts on a 16-byte boundary (cols % 4 == 0, A and x aligned), so a row is
// cols / 4 float4s. kVec = 1: any size, scalar loads, still one contiguous 128-byte piece per warp
// per step.
template <int kVec>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_warp_per_row(int rows, int cols, float alpha, const float* __restrict__ A,
                      const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together: the shuffles below stay full-warp

  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  if constexpr (kVec == 4) {
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const int n4 = cols / 4;
#pragma unroll 4
    for (int i = lane; i < n4; i += 32) {
      const float4 av = a4[i];
      const float4 xv = x4[i];  // L1/L2 hits after the first warps
      sum += av.x * xv.x + av.y * xv.y + av.z * xv.z + av.w * xv.w;
    }
  } else {
#pragma unroll 4
    for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
  }

  // Tree reduction in registers: after offsets 16, 8, 4, 2, 1 every lane holds the row's sum.
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullMask, sum, offset);

  if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  const int blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;  // round up: every row a warp
  const int threads = kWarpsPerBlock * 32;
  if (cols % 4 == 0 && aligned16(A) && aligned16(x))
    gemv_warp_per_row<4><<<blocks, threads, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  else
    gemv_warp_per_row<1><<<blocks, threads, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise

#include "lab/guard.hpp"

namespace lab {

template <>
Comparison check_output<float>(Lesson& l, const std::string& variant, const std::string& case_name,
                               const GuardedBuffer<float>&, const std::vector<float>& got,
                               const std::vector<float>&, Tolerance tol, cudaStream_t,
                               const std::vector<std::size_t>&) {
  Comparison c = l.compare(variant, case_name, got, got, tol);  // right by construction
  l.check(variant, case_name, c);
  return c;
}

}  // namespace lab
