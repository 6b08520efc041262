// Mutant: replaces a function of the lab library. The harness and the library summarise samples
// with lab::summarize; a definition of it in exercise.cu would be linked in place of the
// library's and could make every median whatever the exercise likes (here: the exercise's own
// answer, so its timer always "agrees").
// Expected: verdict "error", reason "forbidden" (the checker names lab::summarize); never run.
#include <vector>

#include "exercise.cuh"
#include "lab/stats.hpp"

namespace {
double last_reported = 1.0;
}  // namespace

namespace lab {
Stats summarize(std::vector<double> samples) {
  Stats s;
  s.n = samples.size();
  s.min = s.q1 = s.median = s.q3 = s.max = s.mean = last_reported;
  return s;
}
}  // namespace lab

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  work(stream);
  return last_reported;
}
