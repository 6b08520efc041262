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
  // Each side summarised with its median's interval at the level asked for (summarize's is at
  // 95%), then the one ratio interval of lab/stats.hpp.
  auto summary = [&](const std::vector<double>& sorted) {
    Stats s = summarize(sorted);
    const MedianInterval m = median_interval_sorted(sorted, confidence);
    s.median_low = m.low;
    s.median_high = m.high;
    s.median_coverage = m.coverage;
    return s;
  };
  const MedianRatio r =
      ratio_of_medians(summary(numerator), summary(denominator), tie_step_ms, confidence);
  Interval out;
  out.ok = true;
  out.value = r.value;
  out.low = r.low;
  out.high = r.high;
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
