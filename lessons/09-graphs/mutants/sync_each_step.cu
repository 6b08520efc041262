// Mutant: launches each step and waits for it (cudaStreamSynchronize after every kernel), as a
// loop that checks each step's result would. Correct, and slower than the plain stream loop:
// every kernel pays a full host -> GPU -> host round trip. The "speedup" rule must fail.
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
  for (int i = 0; i < state_->steps; ++i) {
    state_->step(i, stream);
    LAB_CHECK(cudaStreamSynchronize(stream));  // BUG: run() must only enqueue
  }
}

}  // namespace exercise
