// Mutant: the starter's slow kernel, hidden beside the lead-in. Before each sample lab::benchmark
// holds the timed stream with a short spin kernel (the lead-in), records the start event behind
// it, and then calls the exercise; it lengthens the lead-in to twice the slowest enqueue it saw in
// the warm-up, up to 1 ms. This version launches its (correct, uncoalesced) kernel on the
// per-thread default stream, which nothing used to order with the timed stream, so the kernel ran
// while the lead-in spun, before the clock started; it then spins on the host for 450 us (so the
// lead-in grows to about 900 us) and makes the timed stream wait for its kernel. The clock saw
// only the last ~0.4 ms of a 1.3 ms kernel: "0.85 of the copy bandwidth", full points for the
// bandwidth rule, every answer right.
//
// Now lab::benchmark makes the per-thread default stream (and every lab::SideStream) wait for
// the start event before each timed call, and the stop event wait for it after: the kernel is
// timed from its start to its end, like the starter's. Expected: rule "bandwidth" fails.
#include <chrono>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

constexpr int kThreads = 128;

// The starter's kernel: one thread per row (every load of a warp in a different sector).
__global__ void gemv_kernel(int rows, int cols, float alpha, const float* __restrict__ A,
                            const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += a[c] * x[c];
  y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

cudaEvent_t g_done = nullptr;  // recorded after the hidden kernel

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  if (!g_done) LAB_CHECK(cudaEventCreateWithFlags(&g_done, cudaEventDisableTiming));
  const int blocks = (rows + kThreads - 1) / kThreads;
  gemv_kernel<<<blocks, kThreads, 0, cudaStreamPerThread>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
  LAB_CHECK(cudaEventRecord(g_done, cudaStreamPerThread));
  const auto begin = std::chrono::steady_clock::now();  // a slow enqueue: a longer lead-in
  while (std::chrono::steady_clock::now() - begin < std::chrono::microseconds(450)) {
  }
  LAB_CHECK(cudaStreamWaitEvent(stream, g_done, 0));  // the answer is ready when the stream goes on
}

}  // namespace exercise
