// Lesson 01 reference: warm up, time each execution with events on the work's own stream, take
// the median of many samples.
#include <algorithm>
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/memory.hpp"

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  // Warm-up: the first call pays for loading the kernel's code; later ones do not.
  for (int i = 0; i < 3; ++i) work(stream);
  LAB_CHECK(cudaStreamSynchronize(stream));

  // Events are timestamps taken by the GPU as it reaches them in the stream, so the pair brackets
  // exactly the work in between, and waiting for `stop` never waits for other streams.
  lab::Event start, stop;
  std::vector<double> samples;
  for (int i = 0; i < 31; ++i) {
    start.record(stream);
    work(stream);
    stop.record(stream);
    samples.push_back(lab::elapsed_ms(start, stop));
  }
  // The median: timing noise is one-sided (a run can be slowed, never sped up), which drags the
  // mean and the maximum but not the middle value.
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}
