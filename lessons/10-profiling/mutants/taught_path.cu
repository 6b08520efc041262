// Taught path: the README's steps and the starter's TODOs done as they say, and nothing more.
// TODO 1: an NVTX range around each phase. Round 1 (ncu: the heavy kernels use 4 of every 32
// bytes they fetch): column statistics with the threads of a block along the columns, so a warp
// reads 32 neighbouring floats of a row; each block walks a slice of kRowsPerBlock rows and adds
// its partial sums into the workspace with atomicAdd. The statistics keep the given app's two
// passes (the mean, then the squares around it), now each a coalesced pass over x. Round 2
// (nsys: the temporary table is the next cost, as the bandwidth rule's hint says): no z; a warp
// per row computes the score straight from x (lesson 04's mapping). x is read three times: the
// one-pass variance of the solution (README, Q6) is not part of this path.
// Expected: passes every rule.
#include <nvtx3/nvtx3.hpp>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = 256;
constexpr int kWarps = kThreads / 32;

// sums[c] += x[r][c] over this block's rows: thread t owns columns t, t + 256, ...
__global__ void column_sums(const float* __restrict__ x, int rows, int cols, float* sums) {
  const int first = blockIdx.x * kRowsPerBlock;
  const int last = min(rows, first + kRowsPerBlock);
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    float s = 0.0f;
    for (int r = first; r < last; ++r) s += x[static_cast<long long>(r) * cols + c];
    atomicAdd(&sums[c], s);
  }
}

// squares[c] += (x[r][c] - mean[c])^2 over this block's rows, with mean[c] = sums[c] / rows.
__global__ void column_squares(const float* __restrict__ x, int rows, int cols,
                               const float* __restrict__ sums, float* squares) {
  const int first = blockIdx.x * kRowsPerBlock;
  const int last = min(rows, first + kRowsPerBlock);
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    const float m = sums[c] / rows;
    float s = 0.0f;
    for (int r = first; r < last; ++r) {
      const float d = x[static_cast<long long>(r) * cols + c] - m;
      s += d * d;
    }
    atomicAdd(&squares[c], s);
  }
}

__global__ void finish_stats(int rows, int cols, const float* __restrict__ sums,
                             const float* __restrict__ squares, float* __restrict__ mean,
                             float* __restrict__ inv_std) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  mean[c] = sums[c] / rows;
  inv_std[c] = rsqrtf(squares[c] / rows);
}

// A warp per row: lane l reads columns l, l + 32, ...; the shuffles add the 32 partial scores.
__global__ void row_scores(const float* __restrict__ x, int rows, int cols,
                           const float* __restrict__ mean, const float* __restrict__ inv_std,
                           float* __restrict__ score) {
  const int r = blockIdx.x * kWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;  // the whole warp shares the row, so it leaves together
  const float* row = x + static_cast<long long>(r) * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    const float z = (row[c] - mean[c]) * inv_std[c];
    s += z * z;
  }
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_down_sync(0xffffffffu, s, offset);
  if (lane == 0) score[r] = s;
}

}  // namespace

std::size_t workspace_bytes(int, int cols) {
  return 2 * static_cast<std::size_t>(cols) * sizeof(float);  // sums and squares per column
}

void anomaly_scores(const float* x, int rows, int cols, float* mean, float* inv_std, float* score,
                    void* workspace, cudaStream_t stream) {
  float* sums = static_cast<float*>(workspace);
  float* squares = sums + cols;
  const int slices = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  {
    nvtx3::scoped_range range{"column_stats"};
    LAB_CHECK(cudaMemsetAsync(workspace, 0, workspace_bytes(rows, cols), stream));
    column_sums<<<slices, kThreads, 0, stream>>>(x, rows, cols, sums);
    LAB_CHECK_LAUNCH();
    column_squares<<<slices, kThreads, 0, stream>>>(x, rows, cols, sums, squares);
    LAB_CHECK_LAUNCH();
    finish_stats<<<(cols + kThreads - 1) / kThreads, kThreads, 0, stream>>>(rows, cols, sums,
                                                                           squares, mean, inv_std);
    LAB_CHECK_LAUNCH();
  }
  {
    nvtx3::scoped_range range{"row_scores"};
    row_scores<<<(rows + kWarps - 1) / kWarps, kThreads, 0, stream>>>(x, rows, cols, mean,
                                                                      inv_std, score);
    LAB_CHECK_LAUNCH();
  }
}

}  // namespace exercise
