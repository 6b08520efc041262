/// @file stats.hpp
/// @brief Sample statistics and the stopping rule of lab::benchmark (host only, no CUDA).
#pragma once

#include <cstddef>
#include <vector>

namespace lab {

/// @brief Summary of a set of timing samples. The median is the headline: GPU timings are
/// right-skewed (rare slow samples), which moves the mean and stddev but not the median.
struct Stats {
  double median = 0;  ///< middle sample (mean of the two middle ones for even n)
  double min = 0;     ///< fastest sample
  double q1 = 0;      ///< first quartile (linear interpolation, like NumPy's default)
  double q3 = 0;      ///< third quartile
  double mean = 0;    ///< arithmetic mean
  double stddev = 0;  ///< sample standard deviation (n - 1)
  double max = 0;     ///< slowest sample
  std::size_t n = 0;  ///< number of samples

  /// @return the interquartile range relative to the median (0 when the median is 0)
  double relative_iqr() const;
  /// @return the half-width of the ~95% confidence interval of the median,
  ///         1.58 * IQR / sqrt(n) (the box-plot notch of McGill, Tukey and Larsen)
  double median_halfwidth() const;
};

/// @param samples the values (any order; copied and sorted)
/// @return their summary; all zero when @p samples is empty
Stats summarize(std::vector<double> samples);

/// @param sorted values in ascending order (not empty)
/// @param q the quantile in [0, 1]
/// @return the quantile by linear interpolation between closest ranks
double quantile_sorted(const std::vector<double>& sorted, double q);

/// @brief The stopping rule's inputs.
struct StoppingRule {
  std::size_t min_samples = 20;     ///< never stop before this many samples
  double min_total_ms = 50.0;       ///< ... nor before this much measured GPU time
  double target_precision = 0.005;  ///< median half-width / median to reach (0.5%)
};

/// @param rule the thresholds
/// @param stats the samples so far
/// @param total_ms the sum of the samples (GPU time measured so far)
/// @return true once there are enough samples, enough time and the median is pinned down
bool converged(const StoppingRule& rule, const Stats& stats, double total_ms);

}  // namespace lab
