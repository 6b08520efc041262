// Mutant: never returns. It records both events but then waits for the time to "arrive" in
// *result_ms, as if the GPU would write it there by itself; nothing ever does. The checker must
// kill it at the time limit and go on.
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
  volatile float* result = state_->result_ms;
  while (*result == 0.0f) {
  }  // the mistake: nobody writes it
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
