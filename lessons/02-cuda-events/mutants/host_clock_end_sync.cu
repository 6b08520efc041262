// Mutant: a host clock read in the constructor without any wait, and cudaStreamSynchronize(stream)
// in the destructor before it is read again. With the stream idle at the start of a region (alone,
// or while another stream is busy: a blocking stream is not ordered with another blocking stream)
// its times are right, a launch and a wake-up aside. But the clock starts when the host gets
// there, not when the GPU does: with 50 ms of work already queued on the stream, copy-in's region
// holds the rest of that work as well as the copies. Events start where the GPU reaches them in
// the stream's queue. Expected: fails `accurate-when-queued` (and passes the other rules).
#include <chrono>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace l02 {

struct RegionTimer::State {
  cudaStream_t stream = nullptr;
  float* result_ms = nullptr;
  std::chrono::steady_clock::time_point start;
};

RegionTimer::RegionTimer(cudaStream_t stream, float* result_ms)
    : state_(std::make_unique<State>()) {
  state_->stream = stream;
  state_->result_ms = result_ms;
  state_->start = std::chrono::steady_clock::now();  // the mistake: the host's now, not the GPU's
}

RegionTimer::~RegionTimer() noexcept(false) {
  LAB_CHECK(cudaStreamSynchronize(state_->stream));
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
