// Lesson 02 reference: a region timer made of two CUDA events on the timed stream.
//
// An event is a milestone in a stream's queue. The GPU writes a timestamp into it when it gets
// there, i.e. after all the work queued before it on that stream and before the work queued
// after it. Two of them bracket exactly the region's work, whatever other streams are doing,
// and waiting for the second one waits for this stream's work up to that point, nothing else.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace l02 {

// What one timer keeps. Owns its two events, so they are destroyed on every way out, including
// an exception thrown by a CUDA call in ~RegionTimer.
struct RegionTimer::State {
  cudaStream_t stream = nullptr;
  float* result_ms = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    // Not synchronizing: an event destroyed before the GPU reaches it is released afterwards.
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }
};

RegionTimer::RegionTimer(cudaStream_t stream, float* result_ms)
    : state_(std::make_unique<State>()) {
  state_->stream = stream;
  state_->result_ms = result_ms;
  // Default flags: timing enabled. (cudaEventDisableTiming makes cheaper events for pure
  // synchronization, which cudaEventElapsedTime refuses.)
  LAB_CHECK(cudaEventCreate(&state_->start));
  LAB_CHECK(cudaEventCreate(&state_->stop));
  // On the timed stream, never on stream 0: the legacy default stream waits for every blocking
  // stream, so an event there would wait for (and time) other streams' work too.
  LAB_CHECK(cudaEventRecord(state_->start, stream));
}

RegionTimer::~RegionTimer() noexcept(false) {
  State& s = *state_;
  LAB_CHECK(cudaEventRecord(s.stop, s.stream));
  // Wait for this one milestone. cudaDeviceSynchronize would also wait for every other stream.
  LAB_CHECK(cudaEventSynchronize(s.stop));
  // Milliseconds between the two GPU timestamps (steps of about 32 ns on the H100; an empty
  // region reads about 1.3 us, so this is not a tool for regions of a few microseconds).
  LAB_CHECK(cudaEventElapsedTime(s.result_ms, s.start, s.stop));
}

PhaseTimes time_phases(const Pipeline& pipeline, cudaStream_t stream) {
  // One scope per phase: the destructor at each closing brace stops the timer and writes the
  // time. It waits for the phase to finish before the next one is enqueued, so the next start
  // event lands on an idle stream and its region also holds a few microseconds of launch
  // latency: nothing next to a 0.5 ms kernel or a 10 ms copy.
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
