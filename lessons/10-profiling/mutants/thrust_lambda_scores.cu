// A legitimately different correct solution that the seal must not refuse: NVTX ranges through
// the C API (with Thrust, whose algorithms then open NVTX ranges of their own), a workspace size
// cached in a static map behind a std::mutex, iostream output with manipulators, and the scores
// from thrust::for_each with a __device__ lambda. Judged on its correctness.
#include "exercise.cuh"

#include <nvtx3/nvToolsExt.h>
#include <thrust/execution_policy.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <utility>

namespace {
constexpr int kThreads = 256;

// One block per column: the column's mean and inverse standard deviation, in double, of the
// values shifted by the column's first one.
__global__ void stats(const float* x, int rows, int cols, float* mean, float* inv_std) {
  __shared__ double sums[kThreads], squares[kThreads];
  const int c = blockIdx.x;
  const float shift = x[c];
  double s = 0, q = 0;
  for (int r = threadIdx.x; r < rows; r += kThreads) {
    const double v = static_cast<double>(x[static_cast<long long>(r) * cols + c]) - shift;
    s += v;
    q += v * v;
  }
  sums[threadIdx.x] = s;
  squares[threadIdx.x] = q;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      sums[threadIdx.x] += sums[threadIdx.x + half];
      squares[threadIdx.x] += squares[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double m = sums[0] / rows;
    mean[c] = static_cast<float>(m + shift);
    inv_std[c] = static_cast<float>(1.0 / sqrt(squares[0] / rows - m * m));
  }
}
}  // namespace

namespace exercise {
std::size_t workspace_bytes(int rows, int cols) {
  static std::mutex lock;
  static std::map<std::pair<int, int>, std::size_t> known;
  std::lock_guard<std::mutex> hold(lock);
  auto it = known.find({rows, cols});
  if (it == known.end()) it = known.emplace(std::make_pair(rows, cols), std::size_t{0}).first;
  return it->second;
}
void anomaly_scores(const float* x, int rows, int cols, float* mean, float* inv_std, float* score,
                    void*, cudaStream_t stream) {
  nvtxRangePushA("anomaly_scores");
  stats<<<cols, kThreads, 0, stream>>>(x, rows, cols, mean, inv_std);
  // One thread per row: the sum of its squared standardized values.
  thrust::for_each(thrust::cuda::par_nosync.on(stream), thrust::counting_iterator<int>(0),
                   thrust::counting_iterator<int>(rows), [=] __device__(int r) {
                     float total = 0.0f;
                     for (int c = 0; c < cols; ++c) {
                       const float z =
                           (x[static_cast<long long>(r) * cols + c] - mean[c]) * inv_std[c];
                       total += z * z;
                     }
                     score[r] = total;
                   });
  static bool once = false;
  if (!once) {
    std::cout << std::fixed << std::setprecision(2) << "rows " << rows << ", cols " << cols << "\n";
    once = true;
  }
  nvtxRangePop();
}
}  // namespace exercise
