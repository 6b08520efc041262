// Mutant: does not compile. cudaEventElapsedTime returns an error code and writes the time
// through its first argument; this calls it as if it returned the milliseconds. The checker must
// report the compiler's error for this lesson and grade the others.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace l02 {

struct RegionTimer::State {
  cudaStream_t stream = nullptr;
  float* result_ms = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
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
  LAB_CHECK(cudaEventSynchronize(state_->stop));
  *state_->result_ms = cudaEventElapsedTime(state_->start, state_->stop);
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
