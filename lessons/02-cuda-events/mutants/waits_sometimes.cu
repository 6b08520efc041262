// Mutant: the reference timer (events on the stream, cudaEventSynchronize(stop)), except that
// every third call of time_phases (the 1st, 4th, 7th, 10th ...) ends its last region with
// cudaDeviceSynchronize, "to be safe". Its times are right in every call, but in those calls it
// waits for the other stream's kernel: with 9 busy calls that is 3 of them (1 of 2 with --quick),
// under the old bar of half the calls. Must fail `does-not-wait`, which allows no call to wait.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace l02 {

namespace {
bool wait_for_device = false;  // set by time_phases for the region that stops the world
}  // namespace

struct RegionTimer::State {
  cudaStream_t stream = nullptr;
  float* result_ms = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  ~State() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

RegionTimer::RegionTimer(cudaStream_t stream, float* result_ms)
    : state_(std::make_unique<State>()) {
  state_->stream = stream;
  state_->result_ms = result_ms;
  LAB_CHECK(cudaEventCreate(&state_->start));
  LAB_CHECK(cudaEventCreate(&state_->stop));
  LAB_CHECK(cudaEventRecord(state_->start, stream));
}

RegionTimer::~RegionTimer() noexcept(false) {
  LAB_CHECK(cudaEventRecord(state_->stop, state_->stream));
  if (wait_for_device)
    LAB_CHECK(cudaDeviceSynchronize());  // the mistake, now and then: stops the world
  else
    LAB_CHECK(cudaEventSynchronize(state_->stop));
  LAB_CHECK(cudaEventElapsedTime(state_->result_ms, state_->start, state_->stop));
}

PhaseTimes time_phases(const Pipeline& pipeline, cudaStream_t stream) {
  static int calls = 0;
  const bool this_call_waits = calls++ % 3 == 0;
  PhaseTimes t;
  {
    RegionTimer timer(stream, &t.copy_in_ms);
    pipeline.copy_in(stream);
  }
  {
    RegionTimer timer(stream, &t.kernel_ms);
    pipeline.kernel(stream);
  }
  wait_for_device = this_call_waits;
  {
    RegionTimer timer(stream, &t.copy_out_ms);
    pipeline.copy_out(stream);
  }
  wait_for_device = false;
  return t;
}

}  // namespace l02
