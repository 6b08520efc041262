// Mutant: launches the captured cudaGraph_t instead of the instantiated cudaGraphExec_t. They
// are different types, so this does not compile: a graph must be instantiated before it runs.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

struct Chain::State {
  cudaGraph_t graph = nullptr;
};

Chain::Chain() : state_(std::make_unique<State>()) {}

Chain::~Chain() {
  if (state_->graph) cudaGraphDestroy(state_->graph);
}

void Chain::setup(const Step& step, int steps, cudaStream_t stream) {
  LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < steps; ++i) step(i, stream);
  LAB_CHECK(cudaStreamEndCapture(stream, &state_->graph));
}

void Chain::run(cudaStream_t stream) { LAB_CHECK(cudaGraphLaunch(state_->graph, stream)); }

}  // namespace exercise
