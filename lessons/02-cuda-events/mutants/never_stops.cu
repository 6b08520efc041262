// Mutant: records the start event but never the stop event. cudaEventSynchronize on an event
// that was never recorded returns at once, and cudaEventElapsedTime then fails with
// cudaErrorInvalidResourceHandle ("cudaEventRecord() has not been called on either event").
// LAB_CHECK turns that into an error in the destructor (declared noexcept(false), so it reaches
// the harness): the first call of time_phases stops the run with exit code 3, its check failed
// with the message naming cudaEventElapsedTime. Must fail `correct`.
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

RegionTimer::RegionTimer(cudaStream_t stream, float* result_ms)
    : state_(std::make_unique<State>()) {
  state_->result_ms = result_ms;
  LAB_CHECK(cudaEventCreate(&state_->start));
  LAB_CHECK(cudaEventCreate(&state_->stop));
  LAB_CHECK(cudaEventRecord(state_->start, stream));
}

RegionTimer::~RegionTimer() noexcept(false) {
  // the mistake: no cudaEventRecord(stop, stream) here
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
