#include "lab/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lab {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
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
  return s;
}

double Stats::relative_iqr() const { return median > 0 ? (q3 - q1) / median : 0.0; }

double Stats::median_halfwidth() const {
  return n > 0 ? 1.58 * (q3 - q1) / std::sqrt(static_cast<double>(n)) : 0.0;
}

bool converged(const StoppingRule& rule, const Stats& stats, double total_ms) {
  return stats.n >= rule.min_samples && total_ms >= rule.min_total_ms &&
         stats.median_halfwidth() <= rule.target_precision * stats.median;
}

}  // namespace lab
