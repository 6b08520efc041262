// The starter with one kernel renamed ERR_NVGPUCTRPERM_row_scores. The checker took ncu's
// refusal to read the counters from anywhere in ncu's log, which also holds every kernel's name:
// the run read "unavailable", and the counter rule was skipped (0 of 0, out of the total) where
// it fails (the starter's 0.222). It now reads the refusal only from a line of ncu's that starts
// with it: `coalesced` fails as the starter's does.
#include <nvtx3/nvtx3.hpp>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

namespace {

constexpr int kThreads = 256;

// Sum of v over the block (valid in thread 0); every thread must call it.
__device__ float block_sum(float v) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.0f;
  if (threadIdx.x < 32)
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  __syncthreads();  // partial[] is reused by the next call
  return v;
}

// Phase 1: one block per column; its threads walk down the rows of that column.
__global__ void column_stats(const float* x, int rows, int cols, float* mean, float* inv_std) {
  const int c = blockIdx.x;
  float sum = 0.0f;
  for (int r = threadIdx.x; r < rows; r += kThreads) sum += x[static_cast<long long>(r) * cols + c];
  sum = block_sum(sum);
  __shared__ float m;
  if (threadIdx.x == 0) m = sum / rows;
  __syncthreads();
  float squares = 0.0f;
  for (int r = threadIdx.x; r < rows; r += kThreads) {
    const float d = x[static_cast<long long>(r) * cols + c] - m;
    squares += d * d;
  }
  squares = block_sum(squares);
  if (threadIdx.x == 0) {
    mean[c] = m;
    inv_std[c] = rsqrtf(squares / rows);
  }
}

// Phase 2: z = (x - mean) * inv_std, element by element, into a temporary table.
__global__ void standardize(const float* x, long long n, int cols, const float* mean,
                            const float* inv_std, float* z) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % cols);
    z[i] = (x[i] - mean[c]) * inv_std[c];
  }
}

// Phase 3: one thread per row adds up the squares of its row of z.
__global__ void ERR_NVGPUCTRPERM_row_scores(const float* z, int rows, int cols, float* score) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) {
    const float v = z[static_cast<long long>(r) * cols + c];
    s += v * v;
  }
  score[r] = s;
}

}  // namespace

std::size_t workspace_bytes(int rows, int cols) {
  return static_cast<std::size_t>(rows) * cols * sizeof(float);  // the standardized table z
}

void anomaly_scores(const float* x, int rows, int cols, float* mean, float* inv_std, float* score,
                    void* workspace, cudaStream_t stream) {
  float* z = static_cast<float*>(workspace);
  const long long n = static_cast<long long>(rows) * cols;

  column_stats<<<cols, kThreads, 0, stream>>>(x, rows, cols, mean, inv_std);
  LAB_CHECK_LAUNCH();

  standardize<<<1024, kThreads, 0, stream>>>(x, n, cols, mean, inv_std, z);
  LAB_CHECK_LAUNCH();

  ERR_NVGPUCTRPERM_row_scores<<<(rows + kThreads - 1) / kThreads, kThreads, 0, stream>>>(z, rows, cols, score);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
