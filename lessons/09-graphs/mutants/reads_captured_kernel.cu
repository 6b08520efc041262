// Mutant: no graph is ever launched. setup() captures the chain once only to read the step
// kernel's arguments back (cudaGraphGetNodes, then cudaGraphKernelNodeGetParams), and run()
// launches one kernel of its own that applies the K fmaf's per element in order: bit for bit the
// chain, and about 300x the stream loop on the H100 (the harness's own `fused` variant). A red-team
// pass found it earned 10/10 (session 19). The step is opaque to the exercise (exercise.cuh):
// lesson 09 refuses the calls that read a captured node's parameters (check.toml,
// forbidden_calls). Expected: refused by the seal.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

namespace {

constexpr int kThreads = 256, kChunk = 1024;

__global__ void chain_in_one(const float* __restrict__ x, float* __restrict__ y, int n,
                             const float* __restrict__ a, const float* __restrict__ b, int steps) {
  __shared__ float sa[kChunk], sb[kChunk];
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  float v = j < n ? x[j] : 0.0f;
  for (int base = 0; base < steps; base += kChunk) {
    const int count = min(kChunk, steps - base);
    __syncthreads();
    for (int k = threadIdx.x; k < count; k += blockDim.x) {
      sa[k] = a[base + k];
      sb[k] = b[base + k];
    }
    __syncthreads();
    for (int k = 0; k < count; ++k) v = fmaf(sa[k], v, sb[k]);
  }
  if (j < n) y[j] = v;
}

}  // namespace

struct Chain::State {
  const float *x = nullptr, *a = nullptr, *b = nullptr;
  float* y = nullptr;
  int n = 0, steps = 0;
};

Chain::Chain() : state_(std::make_unique<State>()) {}
Chain::~Chain() = default;

void Chain::setup(const Step& step, int steps, cudaStream_t stream) {
  LAB_CHECK(cudaStreamSynchronize(stream));
  LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  step(0, stream);  // step 0 reads x and writes y; a and b are every step's coefficients
  cudaGraph_t graph = nullptr;
  LAB_CHECK(cudaStreamEndCapture(stream, &graph));
  std::size_t count = 1;
  cudaGraphNode_t node = nullptr;
  LAB_CHECK(cudaGraphGetNodes(graph, &node, &count));
  cudaKernelNodeParams p{};
  LAB_CHECK(cudaGraphKernelNodeGetParams(node, &p));
  // step_kernel(const float* src, float* dst, int n, const float* a, const float* b, int i)
  State& s = *state_;
  s.x = *static_cast<const float* const*>(p.kernelParams[0]);
  s.y = *static_cast<float* const*>(p.kernelParams[1]);
  s.n = *static_cast<const int*>(p.kernelParams[2]);
  s.a = *static_cast<const float* const*>(p.kernelParams[3]);
  s.b = *static_cast<const float* const*>(p.kernelParams[4]);
  s.steps = steps;
  LAB_CHECK(cudaGraphDestroy(graph));
}

void Chain::run(cudaStream_t stream) {
  const State& s = *state_;
  chain_in_one<<<(s.n + kThreads - 1) / kThreads, kThreads, 0, stream>>>(s.x, s.y, s.n, s.a, s.b,
                                                                         s.steps);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
