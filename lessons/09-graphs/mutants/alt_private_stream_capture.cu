// A legitimately different solution: the graph is captured on a stream of the Chain's own, not on
// the stream the harness hands to setup(). setup() makes a private non-blocking stream (a
// lab::SideStream, the way an exercise makes a stream), begins a thread-local capture there,
// records step(i, private) for every i, ends the capture and instantiates the graph once.
// run(stream) launches that executable graph on the harness's stream: a cudaGraphExec_t belongs
// to no stream, so it may be launched on any one, and the launch is ordered after whatever the
// harness enqueued there before (new inputs, the poisoned output). The destructor frees the
// executable graph and the graph; the stream frees itself.
//
// Why do it this way: the harness's stream is never put in capture mode, so nothing else enqueued
// on it (by the harness, or by a library sharing it) can be swallowed into the graph or break the
// capture, and setup() need not wait for that stream to be idle first (the reference solution
// synchronizes it before capturing). Non-blocking, because a blocking stream that is capturing
// would turn any implicit synchronization with the legacy default stream 0 into a capture error.
// The Chain keeps the plain cudaGraph_t beside the executable one until the end (as a program that
// later wants to inspect or re-instantiate it would), which costs only host memory.
//
// What the checker measures is the same as for the reference: one cudaGraphLaunch of a 1000-node
// chain per call. Expected: passes every rule (correct, speedup >= 1.333x over `stream`,
// exercise_host_share <= 0.5), with the taught path's margins.
#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace exercise {

// Everything setup() makes and run() or the destructor needs.
struct Chain::State {
  lab::SideStream capture_on;         // private: only ever used for the capture
  cudaGraph_t recorded = nullptr;     // what the capture recorded: K kernel nodes in a row
  cudaGraphExec_t replay = nullptr;   // the instantiated form, launched by run()
};

Chain::Chain() : state_(std::make_unique<State>()) {}

// No LAB_CHECK here: a destructor must not throw. A launch of `replay` still queued on the
// harness's stream is fine: the runtime releases the executable graph once the launch is done.
Chain::~Chain() {
  State& s = *state_;
  if (s.replay) cudaGraphExecDestroy(s.replay);
  if (s.recorded) cudaGraphDestroy(s.recorded);
}

void Chain::setup(const Step& step, int steps, cudaStream_t /*stream: only run() uses it*/) {
  State& s = *state_;
  // While capturing, work enqueued on capture_on is recorded, not run. Thread-local mode: a call
  // this thread makes that a graph cannot hold (a synchronization, cudaMalloc, a blocking copy)
  // fails and invalidates the capture, instead of slipping by unnoticed.
  LAB_CHECK(cudaStreamBeginCapture(s.capture_on, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < steps; ++i) step(i, s.capture_on);  // Step launches on the stream it gets
  LAB_CHECK(cudaStreamEndCapture(s.capture_on, &s.recorded));

  // The costly part (checking the graph, preparing its launches) happens once, here, untimed.
  LAB_CHECK(cudaGraphInstantiate(&s.replay, s.recorded, 0));
}

// Timed: a single launch of all K steps, on the stream the harness times.
void Chain::run(cudaStream_t stream) { LAB_CHECK(cudaGraphLaunch(state_->replay, stream)); }

}  // namespace exercise
