#include <doctest/doctest.h>

#include <cmath>

#include "lab/stats.hpp"

using doctest::Approx;

TEST_CASE("summarize: quartiles interpolate like NumPy, median of even n is the mean of the middle") {
  const lab::Stats s = lab::summarize({4, 1, 3, 2});
  CHECK(s.n == 4);
  CHECK(s.min == 1);
  CHECK(s.max == 4);
  CHECK(s.median == Approx(2.5));
  CHECK(s.q1 == Approx(1.75));  // numpy.percentile([1,2,3,4], 25)
  CHECK(s.q3 == Approx(3.25));
  CHECK(s.mean == Approx(2.5));
  CHECK(s.stddev == Approx(std::sqrt(5.0 / 3.0)));
}

TEST_CASE("summarize: an empty set and a single sample") {
  CHECK(lab::summarize({}).n == 0);
  const lab::Stats one = lab::summarize({7});
  CHECK(one.median == 7);
  CHECK(one.q1 == 7);
  CHECK(one.stddev == 0);
  CHECK(one.median_halfwidth() == 0);
}

TEST_CASE("a right-skewed outlier moves the mean, not the median") {
  std::vector<double> samples(99, 1.0);
  samples.push_back(100.0);
  const lab::Stats s = lab::summarize(samples);
  CHECK(s.median == 1.0);
  CHECK(s.mean == Approx(1.99));
  CHECK(s.relative_iqr() == 0);
}

TEST_CASE("median half-width is the box-plot notch 1.58 IQR / sqrt(n)") {
  std::vector<double> samples;
  for (int i = 0; i < 100; ++i) samples.push_back(1.0 + 0.01 * (i % 10));
  const lab::Stats s = lab::summarize(samples);
  CHECK(s.median_halfwidth() == Approx(1.58 * (s.q3 - s.q1) / 10.0));
}

TEST_CASE("stopping rule: needs samples, time and a pinned median") {
  lab::StoppingRule rule;  // 20 samples, 50 ms, 0.5%
  std::vector<double> tight(20, 1.0);
  tight[0] = 1.001;
  const lab::Stats s = lab::summarize(tight);
  CHECK(lab::converged(rule, s, 60.0));
  CHECK_FALSE(lab::converged(rule, s, 40.0));            // not enough GPU time
  CHECK_FALSE(lab::converged(rule, lab::summarize(std::vector<double>(19, 1.0)), 60.0));  // n

  std::vector<double> noisy;
  for (int i = 0; i < 20; ++i) noisy.push_back(i % 2 ? 1.0 : 1.2);
  CHECK_FALSE(lab::converged(rule, lab::summarize(noisy), 100.0));  // IQR 0.2: +-7%
  rule.target_precision = 0.1;
  CHECK(lab::converged(rule, lab::summarize(noisy), 100.0));
}
