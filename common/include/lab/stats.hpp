/// @file stats.hpp
/// @brief Sample statistics, the confidence interval of the median and the stopping rule of
/// lab::benchmark (host only, no CUDA; the checker compiles this file too).
#pragma once

#include <cstddef>
#include <vector>

namespace lab {

/// The confidence level of every median interval the course reports (nominal; the exact coverage
/// of an order-statistic interval is at least this, see MedianInterval).
inline constexpr double kMedianConfidence = 0.95;

/// @brief A distribution-free confidence interval for the median: two order statistics
/// [x_(l), x_(u)] of the sorted sample, with u = n + 1 - l (1-based ranks).
///
/// For independent samples of any continuous distribution the chance that it holds the true
/// median is exactly `coverage` = P(l <= B <= n - l), B ~ Binomial(n, 1/2): the number of samples
/// below the median. l is the largest rank whose coverage is still >= the confidence asked for, so
/// coverage >= confidence (95.9% for n = 20, 96.7% for n = 50, 95.4% for n = 1000: the binomial is
/// discrete). With ties (quantised readings) the closed interval covers at least as often.
/// Below 6 samples no pair of ranks reaches 95%: then l = 1 (the range) and coverage says how
/// much less it is.
struct MedianInterval {
  double low = 0;             ///< x_(lower_rank)
  double high = 0;            ///< x_(upper_rank)
  std::size_t lower_rank = 0;  ///< l, 1-based (0 when there are no samples)
  std::size_t upper_rank = 0;  ///< u = n + 1 - l
  double coverage = 0;        ///< exact coverage for continuous data (see above)
};

/// @param n number of samples
/// @param k a count
/// @return P(B <= k) for B ~ Binomial(n, 1/2) (1 when k >= n)
double binomial_half_cdf(std::size_t n, std::size_t k);

/// @param n number of samples
/// @param confidence the level asked for, in (0, 1)
/// @return the ranks of the symmetric order-statistic interval (see MedianInterval); low/high 0
MedianInterval median_interval_ranks(std::size_t n, double confidence = kMedianConfidence);

/// @param sorted values in ascending order
/// @param confidence the level asked for, in (0, 1)
/// @return the order-statistic interval of the median (all zero when @p sorted is empty)
MedianInterval median_interval_sorted(const std::vector<double>& sorted,
                                      double confidence = kMedianConfidence);

/// @param sorted values in ascending order
/// @return the smallest positive difference between two readings (0 if they are all equal). For
///         readings quantised to a timer's step this is a multiple of the step, hence >= it: an
///         upper bound of how far quantisation moved the median.
double reading_step(const std::vector<double>& sorted);

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
  double median_low = 0;       ///< the median's 95% order-statistic interval (MedianInterval) ...
  double median_high = 0;      ///< ... its upper end
  double median_coverage = 0;  ///< ... and its exact coverage (>= 0.95 from 6 samples on)
  double step = 0;             ///< reading_step() of the samples (0: all equal)

  /// @return the interquartile range relative to the median (0 when the median is 0): the
  ///         spread of single samples, not the uncertainty of the median
  double relative_iqr() const;
  /// @return the larger distance from the median to an end of its 95% interval
  ///         (median_low, median_high): how well the median is known, before quantisation
  double median_halfwidth() const;
};

/// @param samples the values (any order; copied and sorted)
/// @return their summary; all zero when @p samples is empty
Stats summarize(std::vector<double> samples);

/// @param sorted values in ascending order (not empty)
/// @param q the quantile in [0, 1]
/// @return the quantile by linear interpolation between closest ranks
double quantile_sorted(const std::vector<double>& sorted, double q);

/// @param p a probability in (0, 1)
/// @return the standard normal quantile z with Phi(z) = p (NaN outside (0, 1))
double normal_quantile(double p);

/// @brief A ratio of two medians measured in the same run, with its interval.
struct MedianRatio {
  double value = 0;  ///< median of the numerator / median of the denominator
  double low = 0;    ///< lower end of its interval
  double high = 0;   ///< upper end (infinite when the denominator's interval reaches 0)
};

/// @brief The ratio of two medians of independent samples (a speedup: the baseline's times over
/// the variant's) and its interval by Price & Bonett (2002): each median's standard error on the
/// log scale from its own order-statistic interval (Stats::median_low, median_high, and that
/// interval's exact coverage), then log(ratio) +- z sqrt(se_a^2 + se_b^2). Widened by one reading
/// step on each median (Stats::step, or @p tie_step where all readings are equal), in the
/// direction that widens. Approximate: the checker's tests measure its coverage (within 2 points of
/// 95% from 20 samples per side). Never past the ratio of the medians' own interval ends
/// (numerator.median_low / denominator.median_high .. median_high / median_low, each widened by
/// a step): on the log scale the interval is symmetric, but a median's own interval need not be,
/// and a program that makes a minority of its calls slower on purpose stretches only its slow
/// end; the favourable end must not grow with it. The checker and lab::speedup both use it.
/// @param numerator summary of the numerator's samples (positive)
/// @param denominator summary of the denominator's samples (positive)
/// @param tie_step the step to assume for a summary whose readings are all equal
/// @param confidence the level, in (0, 1)
/// @return value, low and high; all zero if a summary is empty or not positive
MedianRatio ratio_of_medians(const Stats& numerator, const Stats& denominator, double tie_step = 0,
                             double confidence = kMedianConfidence);

/// @brief The stopping rule's inputs.
struct StoppingRule {
  std::size_t min_samples = 20;     ///< never stop before this many samples
  double min_total_ms = 50.0;       ///< ... nor before this much measured GPU time
  double target_precision = 0.005;  ///< uncertainty of the median / median to reach (0.5%)
  /// The timer's resolution (ms) when the samples show no step of their own (every reading the
  /// same): CUDA documents "around 0.5 us" for events. lab::benchmark divides it by the batch.
  double resolution_ms = 0.5e-3;
};

/// @param stats the samples
/// @param resolution_ms the step to assume when the samples show none (see StoppingRule)
/// @return how far the true median may be from the measured one: median_halfwidth() plus one
///         reading step (quantisation can move a median by up to a step, and a zero-width
///         interval from tied readings says nothing finer than that)
double median_uncertainty(const Stats& stats, double resolution_ms);

/// @param rule the thresholds
/// @param stats the samples so far
/// @param total_ms the sum of the samples (GPU time measured so far)
/// @return true once there are enough samples, enough time, and median_uncertainty() is within
///         target_precision of the median
bool converged(const StoppingRule& rule, const Stats& stats, double total_ms);

}  // namespace lab
