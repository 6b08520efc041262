// Lesson 09, the exercise: replay the chain from a CUDA graph.
//
// This is the one file you edit. It is correct, and as slow as the `stream` variant: run()
// launches the K steps one by one, so every call pays K launch calls on the host, and the GPU,
// which needs about 2 us per kernel, waits for a host that needs more than that per launch.
//
// Goal (what the checker measures, in the same run):
//   * correct: bit for bit the host's replay of the chain, on every size the harness checks,
//     with new inputs on every call (before timing, a second time, and after timing);
//   * the `exercise` variant [at least 1.333x faster](check.toml#speedup) than `stream`, the same
//     chain launched kernel by kernel (rule `speedup`): a graph's kernel takes three quarters
//     of a stream-launched kernel's time, or less.
//   * run() keeps the host busy for [at most 0.5](check.toml#host-free) of the call's GPU time
//     (rule `host-free`): one launch per call, not K.
//
// Build and run (from the repository root):
//   cmake --workflow --preset lab                       # builds everything, checks the lessons
//   build/release/lessons/09-graphs/starter             # your version against the others
//   build/release/lessons/09-graphs/starter --quick     # small sizes, seconds
#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

// What run() needs between calls.
// TODO: keep the executable graph here (a cudaGraphExec_t) instead of the step function.
struct Chain::State {
  Step step;
  int steps = 0;
};

Chain::Chain() : state_(std::make_unique<State>()) {}

// TODO: destroy what setup() made (cudaGraphExecDestroy; cudaGraphDestroy if you kept the graph).
Chain::~Chain() = default;

// Untimed. TODO: capture the chain here, once:
//   1. cudaStreamBeginCapture(stream, <a capture mode>): from now on, work enqueued on `stream`
//      is recorded, not run. Which mode? Read the capture-mode section of the README.
//   2. call step(i, stream) for i = 0 .. steps - 1, as run() does now;
//   3. cudaStreamEndCapture(stream, &graph): the recorded work as a cudaGraph_t;
//   4. cudaGraphInstantiate(&exec, graph, 0): checked and prepared for launch, once;
//      the cudaGraph_t can then be destroyed (the executable graph is independent of it).
// Wrap every call in LAB_CHECK(...): a capture that went wrong says so at EndCapture.
void Chain::setup(const Step& step, int steps, cudaStream_t /*stream*/) {
  state_->step = step;
  state_->steps = steps;
}

// Timed. TODO: one cudaGraphLaunch(exec, stream) instead of the loop.
void Chain::run(cudaStream_t stream) {
  for (int i = 0; i < state_->steps; ++i) state_->step(i, stream);
}

}  // namespace exercise
