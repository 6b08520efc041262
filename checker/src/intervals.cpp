#include "intervals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "lab/stats.hpp"

namespace lab {

namespace {

// Sorted positive samples, or why not.
std::string prepare(std::vector<double>& samples, double confidence) {
  if (!(confidence > 0 && confidence < 1)) return "the confidence level must be in (0, 1)";
  for (double x : samples)
    if (!(x > 0) || !std::isfinite(x)) return "a sample is not a positive number";
  std::sort(samples.begin(), samples.end());
  const MedianInterval r = median_interval_ranks(samples.size(), confidence);
  if (r.coverage < confidence)
    return std::to_string(samples.size()) + " samples are too few for a " +
           std::to_string(static_cast<int>(std::lround(100 * confidence))) + "% interval";
  return "";
}

double step_of(const std::vector<double>& sorted, double tie_step) {
  const double s = reading_step(sorted);
  return s > 0 ? s : tie_step;
}

Interval failed(std::string why) {
  Interval out;
  out.note = std::move(why);
  return out;
}

}  // namespace

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) return std::numeric_limits<double>::quiet_NaN();
  // Bisection on Phi(z) = erfc(-z / sqrt 2) / 2: 100 halvings of [-40, 40] reach double precision.
  double lo = -40, hi = 40;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) lo = mid;
    else hi = mid;
  }
  return 0.5 * (lo + hi);
}

Interval median_interval(std::vector<double> samples, double confidence, double tie_step_ms) {
  if (auto why = prepare(samples, confidence); !why.empty()) return failed(why);
  const MedianInterval r = median_interval_sorted(samples, confidence);
  const double step = step_of(samples, tie_step_ms);
  Interval out;
  out.ok = true;
  out.value = quantile_sorted(samples, 0.5);
  out.low = std::max(r.low - step, 0.0);
  out.high = r.high + step;
  out.confidence = confidence;
  out.coverage = r.coverage;
  out.note = "order statistics " + std::to_string(r.lower_rank) + " and " +
             std::to_string(r.upper_rank) + " of " + std::to_string(samples.size()) +
             ", +- one reading step";
  return out;
}

Interval constant_over_median(double constant, std::vector<double> samples, double confidence,
                              double tie_step_ms) {
  Interval m = median_interval(std::move(samples), confidence, tie_step_ms);
  if (!m.ok) return m;
  Interval out = m;
  out.value = constant / m.value;
  out.low = constant / m.high;
  out.high = m.low > 0 ? constant / m.low : std::numeric_limits<double>::infinity();
  if (out.low > out.high) std::swap(out.low, out.high);  // a negative constant
  return out;
}

Interval median_over_constant(std::vector<double> samples, double constant, double confidence,
                              double tie_step_ms) {
  if (constant == 0 || !std::isfinite(constant)) return failed("the constant is 0 or not finite");
  Interval m = median_interval(std::move(samples), confidence, tie_step_ms);
  if (!m.ok) return m;
  Interval out = m;
  out.value = m.value / constant;
  out.low = m.low / constant;
  out.high = m.high / constant;
  if (out.low > out.high) std::swap(out.low, out.high);
  return out;
}

Interval ratio_of_medians(std::vector<double> numerator, std::vector<double> denominator,
                          double confidence, double tie_step_ms) {
  if (auto why = prepare(numerator, confidence); !why.empty()) return failed("numerator: " + why);
  if (auto why = prepare(denominator, confidence); !why.empty())
    return failed("denominator: " + why);
  // The standard error of log(median) from the median's own order-statistic interval: its ends
  // are the median +- z_c standard errors, z_c from that interval's exact coverage c.
  auto log_se = [confidence](const std::vector<double>& x) {
    const MedianInterval r = median_interval_sorted(x, confidence);
    const double z = normal_quantile(0.5 * (1 + r.coverage));
    return (std::log(r.high) - std::log(r.low)) / (2 * z);
  };
  const double ma = quantile_sorted(numerator, 0.5), mb = quantile_sorted(denominator, 0.5);
  const double sa = log_se(numerator), sb = log_se(denominator);
  const double half = normal_quantile(0.5 * (1 + confidence)) * std::sqrt(sa * sa + sb * sb);
  // Quantisation: each median may be off by one reading step, in the direction that widens.
  const double step_a = step_of(numerator, tie_step_ms), step_b = step_of(denominator, tie_step_ms);
  const double down = (ma - step_a) / ma * mb / (mb + step_b);
  const double up = mb > step_b ? (ma + step_a) / ma * mb / (mb - step_b)
                                : std::numeric_limits<double>::infinity();
  Interval out;
  out.ok = true;
  out.value = ma / mb;
  out.low = std::max(out.value * std::exp(-half) * down, 0.0);
  out.high = out.value * std::exp(half) * up;
  out.confidence = confidence;
  out.coverage = confidence;
  out.note = "ratio of medians, Price-Bonett interval on the log scale, +- one reading step";
  return out;
}

std::vector<double> samples_of(const nlohmann::json& variant) {
  std::vector<double> out;
  if (!variant.is_object() || !variant.contains("samples_ms") || !variant["samples_ms"].is_array())
    return out;
  for (const auto& x : variant["samples_ms"]) {
    if (!x.is_number() || !(x.get<double>() > 0)) return {};
    out.push_back(x.get<double>());
  }
  return out;
}

}  // namespace lab
