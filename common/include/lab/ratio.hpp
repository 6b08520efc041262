/// @file ratio.hpp
/// @brief Numbers a lesson hands to Lesson::metric, with their uncertainty from quartiles: how many
/// times faster one measurement is than another, how far a reported time is from a measured one.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

#include "lab/harness.hpp"

namespace lab {

/// @brief A number from medians, with its pessimistic and optimistic readings from quartiles
/// (Lesson::metric's value, low and high).
struct Reading {
  double value = 0;  ///< from the medians
  double low = 0;    ///< pessimistic
  double high = 0;   ///< optimistic
};

/// @param slow the slower (or reference) measurement
/// @param fast the other one
/// @return time of @p slow / time of @p fast (how many times faster @p fast is): value from the
///         medians, low = q1 of slow / q3 of fast, high = q3 of slow / q1 of fast
inline Reading speedup(const Measurement& slow, const Measurement& fast) {
  const Stats& a = slow.gpu_ms;
  const Stats& b = fast.gpu_ms;
  return {a.median / b.median, a.q1 / b.q3, a.q3 / b.q1};
}

/// @param reported a number to judge (e.g. a time a student's timer reported)
/// @param t the measurement it should match
/// @return |reported / median - 1|: low 0 when @p reported lies within [q1, q3] (as good as the
///         median), else the distance to the nearer quartile; high the distance to the farther. A
///         NaN or an infinity reads as 0, 100% off.
inline Reading relative_error(double reported, const Stats& t) {
  if (!std::isfinite(reported)) reported = 0;
  const double to_q1 = std::fabs(reported / t.q1 - 1), to_q3 = std::fabs(reported / t.q3 - 1);
  Reading r;
  r.value = std::fabs(reported / t.median - 1);
  r.low = (reported >= t.q1 && reported <= t.q3) ? 0 : std::min(to_q1, to_q3);
  r.high = std::max(to_q1, to_q3);
  return r;
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
