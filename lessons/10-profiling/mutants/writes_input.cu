// Lesson 10 mutant: writes into its input. Each warp of row_scores, once it has its row's score,
// keeps it in the row's first element of x ("read already, free scratch"). Every output of that
// call is right, and every validated or timed call starts from a table the harness wrote; but x
// is read-only (exercise.cuh): the next call on the same x would compute other statistics. The
// harness checks after timing that x still holds what it wrote.
// Expected: rule "correct" fails (on "inputs unchanged after timing").
#include <nvtx3/nvtx3.hpp>

#include <algorithm>

#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/device.hpp"

namespace exercise {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

struct Sums {  // the workspace: per column, in double so 262147 rows add up without drift
  double* sum;
  double* squares;
};

// Pass 1: each block takes a slice of rows; thread t owns columns t, t + 256, ... and walks the
// slice row by row, so a warp reads 32 consecutive floats of a row at a time. Values are shifted
// by the column's first value before they are added up: sum((x - shift)^2) - n * mean^2 then
// subtracts numbers of the size of the variance, not of the mean squared (without the shift, a
// column whose spread is small next to its mean loses its variance to rounding). Per-thread float
// partials over a slice (a few hundred rows) are accurate; slices meet in double atomics.
__global__ void __launch_bounds__(kThreads)
    column_partials(const float* __restrict__ x, int rows, int cols, int rows_per_block, Sums s) {
  const int first = blockIdx.x * rows_per_block;
  const int last = min(rows, first + rows_per_block);
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    const float shift = __ldg(&x[c]);
    float sum = 0.0f, squares = 0.0f;
#pragma unroll 4
    for (int r = first; r < last; ++r) {
      const float v = __ldg(&x[static_cast<long long>(r) * cols + c]) - shift;
      sum += v;
      squares = fmaf(v, v, squares);
    }
    atomicAdd(&s.sum[c], static_cast<double>(sum));
    atomicAdd(&s.squares[c], static_cast<double>(squares));
  }
}

// Of the shifted values: variance = E[v^2] - E[v]^2, mean = shift + E[v].
__global__ void finish_stats(const float* __restrict__ x, int rows, int cols, Sums s, float* mean,
                             float* inv_std) {
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x) {
    const double m = s.sum[c] / rows;
    const double var = s.squares[c] / rows - m * m;
    mean[c] = static_cast<float>(x[c] + m);
    inv_std[c] = static_cast<float>(1.0 / sqrt(var));
  }
}

// Pass 2: one warp per row, lanes striding along it (coalesced); the statistics are tiny and stay
// in L1. A warp-shuffle sum leaves the score in lane 0.
__global__ void __launch_bounds__(kThreads)
    row_scores(const float* x /* written: not __restrict__ */, int rows, int cols,
               const float* __restrict__ mean, const float* __restrict__ inv_std,
               float* __restrict__ score) {
  const int r = blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;  // whole warps leave together: r is the same for all 32 lanes
  const float* row = x + static_cast<long long>(r) * cols;
  float s = 0.0f;
#pragma unroll 4
  for (int c = lane; c < cols; c += 32) {
    const float z = (row[c] - __ldg(&mean[c])) * __ldg(&inv_std[c]);
    s = fmaf(z, z, s);
  }
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  if (lane == 0) {
    score[r] = s;
    // The statistics are done and this warp alone reads its row, all of it read by now: no race,
    // but x changes.
    const_cast<float*>(row)[0] = s;  // BUG: x is read-only
  }
}

}  // namespace

std::size_t workspace_bytes(int, int cols) { return 2 * static_cast<std::size_t>(cols) * sizeof(double); }

void anomaly_scores(const float* x, int rows, int cols, float* mean, float* inv_std, float* score,
                    void* workspace, cudaStream_t stream) {
  const Sums s{static_cast<double*>(workspace), static_cast<double*>(workspace) + cols};
  {
    nvtx3::scoped_range range{"column_stats"};
    LAB_CHECK(cudaMemsetAsync(workspace, 0, workspace_bytes(rows, cols), stream));
    // Enough blocks to fill the GPU several times over, but slices long enough that the atomics
    // (2 per column per block) stay a rounding error next to the reads.
    const int blocks = std::min((rows + 63) / 64, 8 * lab::device_info().sms);
    const int rows_per_block = (rows + blocks - 1) / blocks;
    column_partials<<<(rows + rows_per_block - 1) / rows_per_block, kThreads, 0, stream>>>(
        x, rows, cols, rows_per_block, s);
    LAB_CHECK_LAUNCH();
    finish_stats<<<(cols + kThreads - 1) / kThreads, kThreads, 0, stream>>>(x, rows, cols, s, mean, inv_std);
    LAB_CHECK_LAUNCH();
  }
  {
    nvtx3::scoped_range range{"row_scores"};
    row_scores<<<(rows + kWarps - 1) / kWarps, kThreads, 0, stream>>>(x, rows, cols, mean, inv_std, score);
    LAB_CHECK_LAUNCH();
  }
}

}  // namespace exercise
