// Mutant: builds the graph inside run(), every call: capture, instantiate, launch, destroy.
// Correct, but the timed call now pays K captured launches plus an instantiation of a K-node
// graph: slower than launching the kernels directly. The "speedup" rule must fail.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

struct Chain::State {
  Step step;
  int steps = 0;
};

Chain::Chain() : state_(std::make_unique<State>()) {}

Chain::~Chain() = default;

void Chain::setup(const Step& step, int steps, cudaStream_t /*stream*/) {
  state_->step = step;
  state_->steps = steps;
}

void Chain::run(cudaStream_t stream) {
  LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < state_->steps; ++i) state_->step(i, stream);
  cudaGraph_t graph = nullptr;
  LAB_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  LAB_CHECK(cudaGraphInstantiate(&exec, graph, 0));  // BUG: once per call instead of once
  LAB_CHECK(cudaGraphDestroy(graph));
  LAB_CHECK(cudaGraphLaunch(exec, stream));
  LAB_CHECK(cudaGraphExecDestroy(exec));  // allowed while the launch runs: freed when it ends
}

}  // namespace exercise
