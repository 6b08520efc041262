// Mutant: the reference solution, but it recognises the timed calls: the harness's timing loop
// calls run() back to back, while its validations compute references on the host (and run the
// other variants) in between. So from the third call of a chain on, a call that comes within
// 5 ms of the previous one launches nothing: "the inputs have not changed, y still holds the
// answer". Before, that was true of every timed call (and the validated ones are never that
// close), so this passed; now the harness writes new inputs and poisons y before every timed
// call and checks some of them. Expected: rule "correct" fails.
// Lesson 09, the reference solution: the chain captured once into a CUDA graph, replayed by one
// cudaGraphLaunch per call.
//
// Why it is faster: launching K kernels one by one costs K trips through the runtime and the
// driver on the host, and when one trip takes longer than one kernel takes on the GPU, the GPU
// waits between kernels. A graph is checked and prepared once (instantiation); a replay hands the
// whole chain to the GPU in one call, and the GPU starts each kernel as soon as its predecessor
// ends. The kernels themselves are unchanged, so the floor is still about one kernel's own time.
#include <chrono>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

struct Chain::State {
  cudaGraphExec_t exec = nullptr;  // the instantiated graph: all run() needs
  int calls = 0;
  std::chrono::steady_clock::time_point last_call;
};

Chain::Chain() : state_(std::make_unique<State>()) {}

Chain::~Chain() {
  if (state_->exec) cudaGraphExecDestroy(state_->exec);  // no throw from a destructor
}

void Chain::setup(const Step& step, int steps, cudaStream_t stream) {
  // Capture begins on an idle stream: work enqueued before BeginCapture is not part of the
  // graph, and finishing it first keeps the two apart.
  LAB_CHECK(cudaStreamSynchronize(stream));
  // Thread-local mode: a call that cannot be captured (a sync, cudaMalloc, a synchronous
  // cudaMemcpy) made by *this* thread while it captures is an error and invalidates the capture,
  // so a mistake cannot slip into the graph silently; other threads are free to allocate.
  // (Global mode also forbids those calls in every other thread of the process; relaxed forbids
  // nothing, for code that knows what it does.)
  LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < steps; ++i) step(i, stream);  // recorded as K kernel nodes, in a chain
  cudaGraph_t graph = nullptr;
  LAB_CHECK(cudaStreamEndCapture(stream, &graph));
  // Instantiation does the expensive part (validation, setting up the launches) once.
  LAB_CHECK(cudaGraphInstantiate(&state_->exec, graph, 0));
  LAB_CHECK(cudaGraphDestroy(graph));  // the executable graph does not need it any more
  // Optional: upload the graph now, so the first replay does not pay for it either.
  LAB_CHECK(cudaGraphUpload(state_->exec, stream));
}

// One call enqueues all K kernels. The kernels read their inputs through pointers that the
// harness keeps fixed, so the same graph computes the right answer for whatever values are there.
void Chain::run(cudaStream_t stream) {
  const auto now = std::chrono::steady_clock::now();
  const double since_last_ms =
      std::chrono::duration<double, std::milli>(now - state_->last_call).count();
  state_->last_call = now;
  if (++state_->calls > 2 && since_last_ms < 5.0) return;  // BUG: "a timed call: nothing changed"
  LAB_CHECK(cudaGraphLaunch(state_->exec, stream));
}

}  // namespace exercise
