// Lesson 10 mutant: the solution with row_scores a thread per row again, its reads made with cp.async into shared memory (uncoalesced copies beside coalesced plain loads).
// Lesson 10, the reference: the same application after two rounds of profile-then-fix.
//
// Round 1 (ncu: both heavy kernels use 4 of every 32 bytes they fetch; "uncoalesced global
// accesses"): column_stats had a warp read 32 rows of one column, row_scores had each thread walk
// its own row. Now a warp always reads 32 neighbouring floats of one row.
// Round 2 (nsys: with those fixed, standardize and its 256 MiB temporary are half the time): the
// temporary table goes; scores are computed straight from x, so the app reads x twice and writes
// almost nothing, the least any correct order of work can do (the scores need the column
// statistics, which need every row, and x is 5x larger than L2).
#include <cuda_pipeline.h>
#include <nvtx3/nvtx3.hpp>

#include <algorithm>

#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/device.hpp"

namespace exercise {

namespace {

constexpr int kThreads = 256;

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

// Pass 2, uncoalesced behind cp.async: one thread per row, as the app handed out had it, but
// each thread copies its row into shared memory with cp.async (global to shared, no register)
// and scores it from there. A warp's copy instruction takes one float from each of 32 rows: 32
// sectors for 128 bytes, which plain-load metrics do not see.
constexpr int kStaged = 32;  // columns staged per step

__global__ void __launch_bounds__(kThreads)
    row_scores(const float* __restrict__ x, int rows, int cols, const float* __restrict__ mean,
               const float* __restrict__ inv_std, float* __restrict__ score) {
  __shared__ float staged[kStaged][kThreads];  // column k of this thread's row at [k][threadIdx.x]
  const int r = blockIdx.x * kThreads + threadIdx.x;
  if (r >= rows) return;  // each thread reads back only what it copied: no block-wide barrier
  const float* row = x + static_cast<long long>(r) * cols;
  float s = 0.0f;
  for (int c0 = 0; c0 < cols; c0 += kStaged) {
    const int n = min(kStaged, cols - c0);
    for (int k = 0; k < n; ++k)
      __pipeline_memcpy_async(&staged[k][threadIdx.x], &row[c0 + k], sizeof(float));
    __pipeline_commit();
    __pipeline_wait_prior(0);
    for (int k = 0; k < n; ++k) {
      const float z = (staged[k][threadIdx.x] - __ldg(&mean[c0 + k])) * __ldg(&inv_std[c0 + k]);
      s = fmaf(z, z, s);
    }
  }
  score[r] = s;
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
    row_scores<<<(rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(x, rows, cols, mean, inv_std, score);
    LAB_CHECK_LAUNCH();
  }
}

}  // namespace exercise
