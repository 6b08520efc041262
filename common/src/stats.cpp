#include "lab/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace lab {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double binomial_half_cdf(std::size_t n, std::size_t k) {
  if (k >= n) return 1.0;
  // P(B = k) in logs (n can be 10^5), then the terms below it by the recurrence
  // P(i - 1) = P(i) * i / (n - i + 1), until they no longer change the sum.
  const double nd = static_cast<double>(n), kd = static_cast<double>(k);
  double term = std::exp(std::lgamma(nd + 1) - std::lgamma(kd + 1) - std::lgamma(nd - kd + 1) -
                         nd * std::log(2.0));
  double sum = 0;
  for (std::size_t i = k + 1; i-- > 0;) {
    sum += term;
    if (term < 1e-17 * sum || i == 0) break;
    term *= static_cast<double>(i) / static_cast<double>(n - i + 1);
  }
  return std::min(sum, 1.0);
}

MedianInterval median_interval_ranks(std::size_t n, double confidence) {
  MedianInterval r;
  if (n == 0) return r;
  // coverage(l) = 1 - 2 P(B <= l - 1) falls as l grows: find the largest l that still reaches
  // the confidence, starting from the normal approximation and stepping.
  auto coverage = [n](std::size_t l) { return 1.0 - 2.0 * binomial_half_cdf(n, l - 1); };
  const double z = 1.959963984540054;  // only a starting guess: the search below is exact
  const double guess = 0.5 * (static_cast<double>(n) - z * std::sqrt(static_cast<double>(n)));
  std::size_t l = static_cast<std::size_t>(std::max(1.0, std::floor(guess)));
  l = std::min(l, (n + 1) / 2);
  while (l > 1 && coverage(l) < confidence) --l;
  while (l + 1 <= (n + 1) / 2 && coverage(l + 1) >= confidence) ++l;
  r.lower_rank = l;
  r.upper_rank = n + 1 - l;
  r.coverage = l == (n + 1) / 2 && n % 2 == 1 ? 0.0 : coverage(l);  // a single rank covers nothing
  return r;
}

MedianInterval median_interval_sorted(const std::vector<double>& sorted, double confidence) {
  MedianInterval r = median_interval_ranks(sorted.size(), confidence);
  if (sorted.empty()) return r;
  r.low = sorted[r.lower_rank - 1];
  r.high = sorted[r.upper_rank - 1];
  return r;
}

double reading_step(const std::vector<double>& sorted) {
  double step = 0;
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    const double d = sorted[i] - sorted[i - 1];
    if (d > 0 && (step == 0 || d < step)) step = d;
  }
  return step;
}

Stats summarize(std::vector<double> samples) {
  Stats s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  s.median = quantile_sorted(samples, 0.5);
  s.q1 = quantile_sorted(samples, 0.25);
  s.q3 = quantile_sorted(samples, 0.75);
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double sq = 0;
    for (double x : samples) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(s.n - 1));
  }
  const MedianInterval ci = median_interval_sorted(samples);
  s.median_low = ci.low;
  s.median_high = ci.high;
  s.median_coverage = ci.coverage;
  s.step = reading_step(samples);
  return s;
}

double Stats::relative_iqr() const { return median > 0 ? (q3 - q1) / median : 0.0; }

double Stats::median_halfwidth() const {
  return n > 0 ? std::max(median - median_low, median_high - median) : 0.0;
}

double median_uncertainty(const Stats& stats, double resolution_ms) {
  return stats.median_halfwidth() + (stats.step > 0 ? stats.step : resolution_ms);
}

bool converged(const StoppingRule& rule, const Stats& stats, double total_ms) {
  return stats.n >= rule.min_samples && total_ms >= rule.min_total_ms &&
         stats.median_coverage >= kMedianConfidence &&
         median_uncertainty(stats, rule.resolution_ms) <= rule.target_precision * stats.median;
}

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

MedianRatio ratio_of_medians(const Stats& a, const Stats& b, double tie_step, double confidence) {
  MedianRatio out;
  if (a.n == 0 || b.n == 0 || !(a.median > 0) || !(b.median > 0) || !(a.median_low > 0) ||
      !(b.median_low > 0))
    return out;
  // The standard error of log(median) from the median's own order-statistic interval: its ends
  // are the median +- z_c standard errors, z_c from that interval's exact coverage c.
  auto log_se = [](const Stats& s) {
    const double z = normal_quantile(0.5 * (1 + std::min(s.median_coverage, 1 - 1e-12)));
    return z > 0 ? (std::log(s.median_high) - std::log(s.median_low)) / (2 * z) : 0.0;
  };
  const double sa = log_se(a), sb = log_se(b);
  const double half = normal_quantile(0.5 * (1 + confidence)) * std::sqrt(sa * sa + sb * sb);
  // Quantisation: each median may be off by one reading step, in the direction that widens.
  const double step_a = a.step > 0 ? a.step : tie_step, step_b = b.step > 0 ? b.step : tie_step;
  const double down = (a.median - step_a) / a.median * b.median / (b.median + step_b);
  const double up = b.median > step_b ? (a.median + step_a) / a.median * b.median / (b.median - step_b)
                                      : std::numeric_limits<double>::infinity();
  out.value = a.median / b.median;
  out.low = std::max(out.value * std::exp(-half) * down, 0.0);
  out.high = out.value * std::exp(half) * up;
  // Within the ratio of the medians' own interval ends (each widened by a step): where those are
  // lopsided (calls of two speeds), the symmetric interval would reach past the fast ones.
  const double box_low = std::max(a.median_low - step_a, 0.0) / (b.median_high + step_b);
  const double box_high = b.median_low > step_b ? (a.median_high + step_a) / (b.median_low - step_b)
                                                : std::numeric_limits<double>::infinity();
  out.low = std::max(out.low, std::min(box_low, out.value));
  out.high = std::min(out.high, std::max(box_high, out.value));
  return out;
}

}  // namespace lab
