/// @file presets.hpp
/// @brief Named lab::BenchmarkOptions for measurements that need not follow the course's full
/// method (the defaults of BenchmarkOptions{}, which every judged variant uses).
#pragma once

#include <cstddef>

#include "lab/timing.hpp"

namespace lab {

/// @brief The course's method with a stopping rule of the caller's: at least @p samples samples
/// and @p total_ms of GPU time, then until the median is known to @p precision, giving up after
/// @p timeout_s. For calls that are slow, or host-paced, or whose numbers no rule judges closely.
/// @param samples the fewest samples
/// @param total_ms the least GPU time measured, milliseconds
/// @param precision the median's uncertainty to reach, relative (0.01: 1%)
/// @param timeout_s give up (converged = false) after this many seconds
/// @return the options
inline BenchmarkOptions measure_until(std::size_t samples, double total_ms, double precision,
                                      double timeout_s) {
  BenchmarkOptions o;
  o.stop.min_samples = samples;
  o.stop.min_total_ms = total_ms;
  o.stop.target_precision = precision;
  o.timeout_s = timeout_s;
  return o;
}

/// @brief A short measurement, for numbers no rule judges closely: a calibration, a sweep under
/// the table, a slow baseline. One warm-up run, then at least @p samples samples (and
/// @p total_ms of GPU time) until the median is known to 2%.
/// @param timeout_s give up (converged = false) after this many seconds
/// @param samples the fewest samples
/// @param total_ms the least GPU time measured, milliseconds
/// @return the options
inline BenchmarkOptions short_run(double timeout_s = 10.0, std::size_t samples = 5,
                                  double total_ms = 0) {
  BenchmarkOptions o = measure_until(samples, total_ms, 0.02, timeout_s);
  o.warmup_runs = 1;
  o.warmup_ms = 0;
  return o;
}

/// @brief The course's method with a looser stopping rule: for variants whose rules' thresholds
/// are tens of percent away, where the default 0.5% would cost seconds (transfers over PCIe are
/// noisier than kernels).
/// @param precision the median's uncertainty to reach, relative (0.01: 1%)
/// @return the options
inline BenchmarkOptions median_within(double precision) {
  BenchmarkOptions o;
  o.stop.target_precision = precision;
  return o;
}

}  // namespace lab
