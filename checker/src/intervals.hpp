// Confidence intervals for the readings the rules judge, from the samples a result file carries
// (variants[*].samples_ms, docs/result-file.md). Pure functions: no files, no randomness, so a
// verdict built on them is the same every time it is computed.
//
// - The median of one variant: the distribution-free order-statistic interval of lab/stats.hpp
//   (exact coverage >= the level asked for, for any continuous distribution).
// - A constant over a median (a rate: bytes / time; a fraction of a ceiling: bytes / time /
//   ceiling) or a median over a constant: the same interval mapped through the monotone function,
//   so the same coverage.
// - The ratio of two medians measured in the same run (a speedup): Price & Bonett's interval
//   (2002): each median's standard error on the log scale is estimated from its own
//   order-statistic interval, and log(ratio) +- z sqrt(se_a^2 + se_b^2). Approximate, not exact:
//   checker/tests/test_intervals.cpp measures its coverage on normal, lognormal and heavy-tailed
//   samples: within 2 points of 95% from 20 samples per variant on, within 1.5 from 50 on, and
//   more conservative (wider) below 20.
//
// Every interval is also widened by the readings' quantisation: one reading step (the smallest
// difference between two samples) on each median, or `tie_step_ms` when all samples are equal,
// so that tied readings never claim a precision the timer does not have.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lab/stats.hpp"

namespace lab {

/// The level every interval of the checker is computed at.
inline constexpr double kIntervalConfidence = 0.95;
/// CUDA's documented event resolution ("around 0.5 us"), in ms: the step assumed for tied samples.
inline constexpr double kEventResolutionMs = 0.5e-3;

struct Interval {
  bool ok = false;          ///< false: too few samples (< 6 at 95%) or a non-positive one; why in `note`
  double value = 0;         ///< the reading itself, from the sample medians
  double low = 0;           ///< lower end
  double high = 0;          ///< upper end
  double confidence = 0;    ///< nominal level (kIntervalConfidence unless asked otherwise)
  double coverage = 0;      ///< exact coverage where the method has one (order statistics), else
                            ///< the nominal level
  std::string note;         ///< the method in a few words, or why !ok
};

/// The order-statistic interval of the median of @p samples (any order), widened by one step.
Interval median_interval(std::vector<double> samples, double confidence = kIntervalConfidence,
                         double tie_step_ms = kEventResolutionMs);

/// `constant / median(samples)`: e.g. a bandwidth from times, or a fraction of a ceiling
/// (pass bytes / ceiling in the matching units). Coverage as median_interval's.
Interval constant_over_median(double constant, std::vector<double> samples,
                              double confidence = kIntervalConfidence,
                              double tie_step_ms = kEventResolutionMs);

/// `median(samples) / constant`. Coverage as median_interval's.
Interval median_over_constant(std::vector<double> samples, double constant,
                              double confidence = kIntervalConfidence,
                              double tie_step_ms = kEventResolutionMs);

/// `median(numerator) / median(denominator)` for two independent sets of positive samples from
/// the same run: a speedup is ratio_of_medians(baseline times, variant times).
Interval ratio_of_medians(std::vector<double> numerator, std::vector<double> denominator,
                          double confidence = kIntervalConfidence,
                          double tie_step_ms = kEventResolutionMs);

// normal_quantile and the ratio interval itself live in lab/stats.hpp (lab::speedup uses them too).

/// A variant's samples_ms (empty when the file has none, e.g. written before they were added,
/// or when any entry is not a positive number).
std::vector<double> samples_of(const nlohmann::json& variant);

}  // namespace lab
