// Mutant: a host clock and no synchronization at all. A phase only enqueues its work and
// returns, so this measures the enqueue calls (microseconds), not the copies or the kernel
// (milliseconds). The output is still right (the harness waits before it checks). Must fail
// `accurate`.
#include <chrono>

#include "exercise.cuh"

namespace l02 {

struct RegionTimer::State {
  float* result_ms = nullptr;
  std::chrono::steady_clock::time_point start;
};

RegionTimer::RegionTimer(cudaStream_t, float* result_ms) : state_(std::make_unique<State>()) {
  state_->result_ms = result_ms;
  state_->start = std::chrono::steady_clock::now();
}

RegionTimer::~RegionTimer() noexcept(false) {
  const auto stop = std::chrono::steady_clock::now();
  *state_->result_ms = std::chrono::duration<float, std::milli>(stop - state_->start).count();
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
