// Taught path: the starter's three TODOs done with the calls they name, and nothing more.
// The solution already is the taught path (mutants/expected.toml says so); this is the same
// method rendered differently, as a student following the TODOs would write it: the raw event
// API the second TODO names (cudaEventCreate, cudaEventRecord on `stream` before and after the
// work, cudaEventSynchronize on the stop event, cudaEventElapsedTime, cudaEventDestroy) instead
// of the library's lab::Event / lab::elapsed_ms; "a couple of" untimed warm-up calls (2, not 3,
// and no synchronize after them: the first start event is recorded behind them in the stream);
// 21 samples sorted with std::sort, the middle one returned (the solution: 31 and nth_element).
//
// Bar (rule `accurate`, timing_error <= 0.10): the README's H100 run has the solution at +3%,
// +1% and +0% of the library's median at ~0.1, 1 and 10 ms (0.034; H200 0.024), the excess at
// 0.1 ms being the few microseconds between a start event on an idle stream and the kernel's
// first instruction (Q1). This timer brackets exactly the same stream positions, so the same
// ~0.03-0.04, about a third of the bar; 21 samples of a compute-bound kernel whose single event
// samples spread +-0.4% (README) move the median by far less than that.
// Expected: passes every rule.
#include <algorithm>
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  // 1. Warm up: the first call loads the kernel's code (lazy loading); not timed.
  for (int i = 0; i < 2; ++i) work(stream);

  // 2. Time on the GPU's clock: two events on the work's own stream bracket one execution.
  cudaEvent_t start, stop;
  LAB_CHECK(cudaEventCreate(&start));
  LAB_CHECK(cudaEventCreate(&stop));
  std::vector<float> samples;
  for (int i = 0; i < 21; ++i) {
    LAB_CHECK(cudaEventRecord(start, stream));
    work(stream);
    LAB_CHECK(cudaEventRecord(stop, stream));
    LAB_CHECK(cudaEventSynchronize(stop));  // waits for this stream's work only
    float ms = 0;
    LAB_CHECK(cudaEventElapsedTime(&ms, start, stop));
    samples.push_back(ms);
  }
  LAB_CHECK(cudaEventDestroy(start));
  LAB_CHECK(cudaEventDestroy(stop));

  // 3. Many samples, and their median: noise only ever slows a run down.
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}
