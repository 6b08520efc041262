// Mutant: events recorded on the legacy default stream 0 instead of the stream it was given.
//
// Stream 0 is a barrier for every blocking stream (made with cudaStreamCreate): an event recorded
// there completes only after all work queued before it on ALL blocking streams, and the given
// stream's next work waits for it. The harness's unrelated kernel runs on such a stream, so the
// start event waits for it to finish, the phase runs after it, and the stop event follows the
// phase: the elapsed times come out right, but every phase (and time_phases) waits for the other
// stream. Must fail `does-not-wait`.
//
// (Had the other stream been made with cudaStreamNonBlocking, stream 0 would not wait for it and
// this version would pass here; it would still be timing at the mercy of whatever else uses
// stream 0.)
#include "exercise.cuh"
#include "lab/check.hpp"

namespace l02 {

struct RegionTimer::State {
  float* result_ms = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  ~State() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

RegionTimer::RegionTimer(cudaStream_t, float* result_ms) : state_(std::make_unique<State>()) {
  state_->result_ms = result_ms;
  LAB_CHECK(cudaEventCreate(&state_->start));
  LAB_CHECK(cudaEventCreate(&state_->stop));
  LAB_CHECK(cudaEventRecord(state_->start, 0));  // the mistake: stream 0, not the given stream
}

RegionTimer::~RegionTimer() noexcept(false) {
  LAB_CHECK(cudaEventRecord(state_->stop, 0));
  LAB_CHECK(cudaEventSynchronize(state_->stop));
  LAB_CHECK(cudaEventElapsedTime(state_->result_ms, state_->start, state_->stop));
}

PhaseTimes time_phases(const Pipeline& pipeline, cudaStream_t stream) {
  PhaseTimes t;
  {
    RegionTimer timer(stream, &t.copy_in_ms);
    pipeline.copy_in(stream);
  }
  {
    RegionTimer timer(stream, &t.kernel_ms);
    pipeline.kernel(stream);
  }
  {
    RegionTimer timer(stream, &t.copy_out_ms);
    pipeline.copy_out(stream);
  }
  return t;
}

}  // namespace l02
