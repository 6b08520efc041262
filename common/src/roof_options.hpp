// How a roof is timed (lab::ceilings, Lesson::measure_tensor_roof, lab::measure_tensor_roofs):
// big, steady work (a copy of 256 MiB, a product at 8192^3), so a short stopping rule is enough
// and each roof costs well under a second. lab::ceilings' FP32 roof keeps the 5 samples its
// pageable copies set. Private to the library's sources.
#pragma once

#include "lab/timing.hpp"

namespace lab {

inline BenchmarkOptions roof_options(Mode mode, double timeout_s) {
  BenchmarkOptions o;
  o.mode = mode;
  o.stop.min_samples = 10;
  o.stop.min_total_ms = 5;
  o.stop.target_precision = 0.01;
  o.timeout_s = timeout_s;
  o.warmup_runs = 1;
  o.warmup_ms = 0;
  return o;
}

}  // namespace lab
