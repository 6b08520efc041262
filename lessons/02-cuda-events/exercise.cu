// Lesson 02 exercise: a region timer, and the phase breakdown of a vector add.
//
// Read exercise.cuh first: it shows how RegionTimer is used and how the checker judges it.
//
// This starter times with the host clock and cudaDeviceSynchronize. With nothing else on the GPU
// that gives about the right numbers (plus the cost of a launch and of the wake-up after the
// sync). But cudaDeviceSynchronize waits for EVERY stream on the device: while an unrelated
// kernel runs on another stream, this timer waits for that kernel too, and reports its time as
// yours. Run it and read the "busy" line under the table. And its clock starts when the host
// reads it, not when the GPU reaches the region: with work already queued on your stream, the
// copy-in time holds that work too (the "queued" line).
//
// Goal: time on the GPU's own clock with CUDA events on the stream you are given, wait for your
// stop event only, and never wait when a timer starts.
#include <chrono>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace l02 {

// What one timer keeps between its construction and its destruction.
struct RegionTimer::State {
  cudaStream_t stream = nullptr;
  float* result_ms = nullptr;
  std::chrono::steady_clock::time_point start;
  // TODO: two events instead of the host clock (cudaEvent_t start, stop), created in the
  //       constructor with cudaEventCreate and destroyed with cudaEventDestroy (give State a
  //       destructor that does it, so they are freed even when a CUDA call throws).
};

RegionTimer::RegionTimer(cudaStream_t stream, float* result_ms)
    : state_(std::make_unique<State>()) {
  state_->stream = stream;
  state_->result_ms = result_ms;
  // TODO: record the start event on `stream` (cudaEventRecord): a milestone that the GPU
  //       stamps with its own clock when it reaches it in the stream's queue.
  state_->start = std::chrono::steady_clock::now();
}

RegionTimer::~RegionTimer() noexcept(false) {
  // TODO: record the stop event on the same stream, wait for THAT event only
  //       (cudaEventSynchronize), then read cudaEventElapsedTime(result_ms, start, stop).
  LAB_CHECK(cudaDeviceSynchronize());  // waits for the region's work... and for every other stream
  const auto stop = std::chrono::steady_clock::now();
  *state_->result_ms = std::chrono::duration<float, std::milli>(stop - state_->start).count();
}

// Nothing to change here once RegionTimer is right: one scope per phase, and the destructor at
// each closing brace writes that phase's time.
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
