/// @file ratio.hpp
/// @brief Numbers a lesson hands to Lesson::metric, with their 95% intervals: how many times faster
/// one measurement is than another (the interval of a ratio of medians, lab/stats.hpp), how far a
/// reported time is from a measured median (that median's order-statistic interval). The
/// checker judges a metric rule `ambiguous` only when this interval straddles the bar.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "lab/harness.hpp"
#include "lab/stats.hpp"

namespace lab {

/// @brief A number from medians and its 95% interval (Lesson::metric's value, low and high).
struct Reading {
  double value = 0;  ///< from the medians
  double low = 0;    ///< lower end of its interval
  double high = 0;   ///< upper end
};

/// @param slow the slower (or reference) measurement
/// @param fast the other one, from the same run
/// @return time of @p slow / time of @p fast (how many times faster @p fast is): value from the
///         medians, low and high the ratio's interval (lab::ratio_of_medians: Price-Bonett from
///         each median's order-statistic interval, widened by a reading step; a step of the event
///         timer, 0.5 us, where all readings are equal)
inline Reading speedup(const Measurement& slow, const Measurement& fast) {
  const MedianRatio r = ratio_of_medians(slow.gpu_ms, fast.gpu_ms, StoppingRule{}.resolution_ms);
  return {r.value, r.low, r.high};
}

/// @param error a signed relative error (e.g. reported / reference - 1)
/// @param low the lower end of its interval
/// @param high the upper end
/// @return |error|, with low 0 when the interval holds 0 (as good as it can be known), else the
///         distance from 0 to its nearer end, and high the distance to its farther end
inline Reading absolute_error(double error, double low, double high) {
  Reading r;
  r.value = std::fabs(error);
  r.low = (low <= 0 && high >= 0) ? 0 : std::min(std::fabs(low), std::fabs(high));
  r.high = std::max(std::fabs(low), std::fabs(high));
  return r;
}

/// @param reported a number to judge (e.g. a time a student's timer reported)
/// @param t the measurement it should match
/// @return |reported / median - 1|, over the median's 95% interval [median_low, median_high]:
///         low 0 when @p reported lies inside it (as good as the median can be known), else the
///         distance to its nearer end; high the distance to the farther. A NaN or an infinity
///         reads as 0, 100% off.
inline Reading relative_error(double reported, const Stats& t) {
  if (!std::isfinite(reported)) reported = 0;
  return absolute_error(reported / t.median - 1, reported / t.median_high - 1,
                        reported / t.median_low - 1);
}

/// @param a a reading
/// @param b another
/// @return the worse of the two, part by part (for a rule on the largest error of several)
inline Reading worst(const Reading& a, const Reading& b) {
  return {std::max(a.value, b.value), std::max(a.low, b.low), std::max(a.high, b.high)};
}

/// @brief Records @p r as the lesson's metric @p name.
/// @param lesson the lesson
/// @param name the metric's name, for the checker's rules
/// @param r the reading
/// @param unit for display
inline void metric(Lesson& lesson, const std::string& name, const Reading& r,
                   const std::string& unit = "") {
  lesson.metric(name, r.value, r.low, r.high, unit);
}

}  // namespace lab
