// Mutant: captures steps 0 .. K-2 and forgets the last one (an off-by-one in the capture loop).
// Every answer is one multiply-add short: the "correct" rule must fail.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

struct Chain::State {
  cudaGraphExec_t exec = nullptr;
};

Chain::Chain() : state_(std::make_unique<State>()) {}

Chain::~Chain() {
  if (state_->exec) cudaGraphExecDestroy(state_->exec);
}

void Chain::setup(const Step& step, int steps, cudaStream_t stream) {
  LAB_CHECK(cudaStreamSynchronize(stream));
  LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < steps - 1; ++i) step(i, stream);  // BUG: should be i < steps
  cudaGraph_t graph = nullptr;
  LAB_CHECK(cudaStreamEndCapture(stream, &graph));
  LAB_CHECK(cudaGraphInstantiate(&state_->exec, graph, 0));
  LAB_CHECK(cudaGraphDestroy(graph));
}

void Chain::run(cudaStream_t stream) { LAB_CHECK(cudaGraphLaunch(state_->exec, stream)); }

}  // namespace exercise
