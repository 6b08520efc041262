// Taught path: the README's steps 2 and 3 and the starter's TODOs, done in place in the starter.
// The solution already is the taught path (mutants/expected.toml says so); this is the same
// method rendered differently, as the starter edited line by line: State keeps the starter's
// fields with two cudaEvent_t in place of the host clock and a destructor that destroys them
// (step 2); the constructor creates both and records the start event on `stream`; the
// destructor records the stop event on the same stream, cudaEventSynchronize(stop),
// cudaEventElapsedTime (step 3), every call through LAB_CHECK. time_phases is the starter's,
// unchanged. (The solution also deletes State's copy operations and comments each call.)
//
// Bars, from the README's H100 runs: the solution's phase_error 0.060-0.164 (the kernel phase
// 6-9% above the library's, which times it on a GPU kept busy by a lead-in; the copies of the
// "alone" round up to 10% slow in their first calls), against 0.25 for both `accurate` rules.
// selftest --repeat 5 on the H100 gave this file 1.05x the old bar of 0.10 at its narrowest,
// which is why the bar moved (README, "Why the bar is 25%").
// waited_for_other_stream 0 against a bar of 0: nothing here waits for anything but this
// stream's stop event, and the other stream's kernel runs at least 100 ms and 4x the pipeline.
// This timer makes the same calls on the same stream positions, so the same numbers.
// Expected: passes every rule.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace l02 {

// What one timer keeps between its construction and its destruction.
struct RegionTimer::State {
  cudaStream_t stream = nullptr;
  float* result_ms = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  // Frees the events however the timer ends, also when a CUDA call in ~RegionTimer throws.
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
  LAB_CHECK(cudaEventRecord(state_->start, stream));  // a milestone in this stream's queue
}

RegionTimer::~RegionTimer() noexcept(false) {
  LAB_CHECK(cudaEventRecord(state_->stop, state_->stream));
  LAB_CHECK(cudaEventSynchronize(state_->stop));  // this milestone only, not the whole device
  LAB_CHECK(cudaEventElapsedTime(state_->result_ms, state_->start, state_->stop));
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
