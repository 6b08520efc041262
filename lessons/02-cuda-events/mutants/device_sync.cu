// Mutant: events on the right stream, so its numbers are right, but it waits with
// cudaDeviceSynchronize instead of cudaEventSynchronize(stop). That waits for every stream on the
// device: with an unrelated kernel running on another stream, every phase waits for it, and
// time_phases returns only after it has finished. Must fail `does-not-wait` (and only that).
#include "exercise.cuh"
#include "lab/check.hpp"

namespace l02 {

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
  LAB_CHECK(cudaDeviceSynchronize());  // the mistake: stops the world
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
