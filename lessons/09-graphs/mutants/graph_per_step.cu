// Mutant: a graph per kernel. K one-node graphs, launched one by one: correct, but each
// cudaGraphLaunch costs the host about as much as the kernel launch it replaces, so nothing is
// saved. The "speedup" rule must fail.
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

struct Chain::State {
  std::vector<cudaGraphExec_t> execs;
};

Chain::Chain() : state_(std::make_unique<State>()) {}

Chain::~Chain() {
  for (cudaGraphExec_t e : state_->execs) cudaGraphExecDestroy(e);
}

void Chain::setup(const Step& step, int steps, cudaStream_t stream) {
  LAB_CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < steps; ++i) {
    LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    step(i, stream);
    cudaGraph_t graph = nullptr;
    LAB_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    LAB_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    LAB_CHECK(cudaGraphDestroy(graph));
    state_->execs.push_back(exec);
  }
}

void Chain::run(cudaStream_t stream) {
  for (cudaGraphExec_t e : state_->execs) LAB_CHECK(cudaGraphLaunch(e, stream));  // K launches
}

}  // namespace exercise
