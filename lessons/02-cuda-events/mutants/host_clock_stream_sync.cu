// Mutant: a host clock with cudaStreamSynchronize(stream) at both ends. The constructor waits
// until the stream is idle before it reads the clock, the destructor waits again before it reads
// it a second time. Its times are right (the region's work plus a launch and a wake-up, a few
// microseconds), alone, while another stream is busy (a blocking stream is not ordered with
// another blocking stream, so it never waits for that one), and with work queued on its own
// stream (the constructor lets that work finish before the clock starts). But the constructor
// stalls the host until the stream runs dry, before the region has even begun: the host cannot
// enqueue the next work while the GPU runs, which is what events are for. In the queued round the
// work queued before the call has always finished when copy_in is enqueued.
// Expected: fails `starts-without-waiting` (and passes the other rules).
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
  LAB_CHECK(cudaStreamSynchronize(stream));  // the mistake: waits for the stream to run dry
  state_->start = std::chrono::steady_clock::now();
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
