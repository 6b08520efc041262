// The starter's chain (K launches on the stream, no graph), with a call counter that makes a
// minority of the calls slower on the GPU (a 9 ms spin before the chain; every call still
// computes the whole chain, so every check passes). The fast calls stay just ahead of the slow
// ones, so the median is a fast call while its 95% interval reaches the slow ones: a symmetric
// interval of the speedup then held the bar, and so did the host-free share's low end, which
// earned `ambiguous` (full points) for the starter. The benefit of the doubt stops 5% short of a
// bar and the ratio's interval stays within the medians' own ends: `speedup` fails.
#include <cmath>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

namespace {

__global__ void hold(long long ns) {  // one thread spins on %globaltimer
  long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); while (t - t0 < ns);
}

}  // namespace

struct Chain::State {
  Step step;
  int steps = 0;
  long long fast = 0, slow = 0, calls = 0;  // calls of run(): the controller
};

Chain::Chain() : state_(std::make_unique<State>()) {}
Chain::~Chain() = default;

void Chain::setup(const Step& step, int steps, cudaStream_t) {
  state_->step = step;
  state_->steps = steps;
}

void Chain::run(cudaStream_t stream) {
  State& s = *state_;
  ++s.calls;
  // Slow when the fast calls lead by sqrt(calls): at any sample count n the fast ones are a
  // majority of about sqrt(n), inside the median's 95% order-statistic interval.
  const bool slow = s.steps >= 1000 && (s.fast - s.slow) >= std::ceil(std::sqrt(double(s.calls)));
  (slow ? s.slow : s.fast) += 1;
  if (slow) hold<<<1, 1, 0, stream>>>(9'000'000);  // 9 ms of GPU time, ~5 us of host time
  for (int i = 0; i < s.steps; ++i) s.step(i, stream);
}

}  // namespace exercise
