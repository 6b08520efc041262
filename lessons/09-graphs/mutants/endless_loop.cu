// Mutant: a loop meant to "wrap around" the steps never ends: i goes 0, 1, ..., K-1, 0, ...
// run() launches kernels forever (the launch queue fills and the host blocks, so nothing grows).
// The checker must kill it at the time limit.
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
  const int steps = state_->steps;
  for (int i = 0; i < steps; i = (i + 1) % steps) state_->step(i, stream);  // BUG: never >= steps
}

}  // namespace exercise
