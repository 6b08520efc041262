// Mutant: "the graph already ran, the answer is there": replays the graph on the first call
// only, and later calls do nothing. The harness poisons the output and writes new inputs before
// the second call: the "correct" rule must fail.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

struct Chain::State {
  cudaGraphExec_t exec = nullptr;
  bool done = false;
};

Chain::Chain() : state_(std::make_unique<State>()) {}

Chain::~Chain() {
  if (state_->exec) cudaGraphExecDestroy(state_->exec);
}

void Chain::setup(const Step& step, int steps, cudaStream_t stream) {
  LAB_CHECK(cudaStreamSynchronize(stream));
  LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < steps; ++i) step(i, stream);
  cudaGraph_t graph = nullptr;
  LAB_CHECK(cudaStreamEndCapture(stream, &graph));
  LAB_CHECK(cudaGraphInstantiate(&state_->exec, graph, 0));
  LAB_CHECK(cudaGraphDestroy(graph));
}

void Chain::run(cudaStream_t stream) {
  if (state_->done) return;  // BUG: the inputs may have changed since
  LAB_CHECK(cudaGraphLaunch(state_->exec, stream));
  state_->done = true;
}

}  // namespace exercise
