#include <doctest/doctest.h>

#include <cmath>
#include <random>

#include "lab/stats.hpp"
#include "lab/timing.hpp"

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

TEST_CASE("binomial tail and the ranks of the median's order-statistic interval") {
  CHECK(lab::binomial_half_cdf(10, 2) == Approx(56.0 / 1024));
  CHECK(lab::binomial_half_cdf(20, 5) == Approx(0.020694732666015625));
  CHECK(lab::binomial_half_cdf(20, 20) == 1.0);
  const lab::MedianInterval r20 = lab::median_interval_ranks(20);
  CHECK(r20.lower_rank == 6);
  CHECK(r20.upper_rank == 15);
  CHECK(r20.coverage == Approx(1 - 2 * 0.020694732666015625));
  const lab::MedianInterval r50 = lab::median_interval_ranks(50);
  CHECK(r50.lower_rank == 18);
  CHECK(r50.coverage >= 0.95);
  CHECK(lab::median_interval_ranks(6).coverage == Approx(1 - 2.0 / 64));  // the range, 96.9%
  CHECK(lab::median_interval_ranks(5).coverage == Approx(1 - 2.0 / 32));  // below 95%: says so
  // Large n: exact and still close to the level asked for.
  const lab::MedianInterval big = lab::median_interval_ranks(100000);
  CHECK(big.coverage >= 0.95);
  CHECK(big.coverage < 0.9505);
  CHECK(lab::median_interval_ranks(1).coverage == 0);
}

namespace {

// Fraction of `draws` samples of size n whose 95% interval holds the true median.
template <class Draw>
double coverage_of(Draw draw, double true_median, std::size_t n, int draws, std::mt19937_64& rng) {
  int hits = 0;
  std::vector<double> x(n);
  for (int d = 0; d < draws; ++d) {
    for (double& v : x) v = draw(rng);
    const lab::Stats s = lab::summarize(x);
    hits += s.median_low <= true_median && true_median <= s.median_high;
  }
  return static_cast<double>(hits) / draws;
}

}  // namespace

TEST_CASE("the median interval covers the true median as often as it says") {
  std::mt19937_64 rng(18);
  std::normal_distribution<double> normal(1.0, 0.05);
  std::lognormal_distribution<double> lognormal(0.0, 0.5);  // median exp(0) = 1
  std::exponential_distribution<double> expo(1.0);           // median ln 2
  const int draws = 4000;  // a coverage of 95% is then measured to +-0.7% (2 sigma)
  for (std::size_t n : {20u, 50u, 200u}) {
    const double exact = lab::median_interval_ranks(n).coverage;
    CAPTURE(n);
    CAPTURE(exact);
    REQUIRE(exact >= 0.95);
    CHECK(coverage_of([&](auto& g) { return normal(g); }, 1.0, n, draws, rng) ==
          Approx(exact).epsilon(0.015));
    CHECK(coverage_of([&](auto& g) { return lognormal(g); }, 1.0, n, draws, rng) ==
          Approx(exact).epsilon(0.015));
    // Heavy right tail: a Pareto with shape 1.2 (infinite variance), median 2^(1/1.2).
    CHECK(coverage_of([&](auto& g) { return std::pow(1.0 - std::generate_canonical<double, 53>(g), -1 / 1.2); },
                      std::pow(2.0, 1 / 1.2), n, draws, rng) == Approx(exact).epsilon(0.015));
    CHECK(coverage_of([&](auto& g) { return 1.0 + expo(g); }, 1.0 + std::log(2.0), n, draws, rng) ==
          Approx(exact).epsilon(0.015));
  }
}

TEST_CASE("the median interval shrinks like 1/sqrt(n)") {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> lognormal(0.0, 0.5);
  auto mean_width = [&](std::size_t n) {
    double sum = 0;
    for (int d = 0; d < 200; ++d) {
      std::vector<double> x(n);
      for (double& v : x) v = lognormal(rng);
      const lab::Stats s = lab::summarize(x);
      sum += s.median_high - s.median_low;
    }
    return sum / 200;
  };
  const double w50 = mean_width(50), w200 = mean_width(200), w800 = mean_width(800);
  CHECK(w200 < 0.6 * w50);   // 1/sqrt(4) = 0.5
  CHECK(w800 < 0.6 * w200);
}

TEST_CASE("quantised readings: the interval still covers, and ties do not converge by themselves") {
  // Readings in steps of 1/32 of a unit: the closed interval covers at least as often as stated.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> normal(1.0, 0.02);
  int hits = 0;
  const int draws = 2000;
  for (int d = 0; d < draws; ++d) {
    std::vector<double> x(30);
    for (double& v : x) v = std::round(normal(rng) * 32) / 32;
    const lab::Stats s = lab::summarize(x);
    hits += s.median_low <= 1.0 && 1.0 <= s.median_high;
    CHECK(s.step >= 1.0 / 32 - 1e-12);
  }
  CHECK(static_cast<double>(hits) / draws >= lab::median_interval_ranks(30).coverage - 0.01);

  lab::StoppingRule rule;  // 0.5%, resolution 0.5 us
  // A 20 us kernel read 40 times as the same value: zero width, but the timer's 0.5 us
  // resolution is 2.5% of it: not pinned down to 0.5%.
  const lab::Stats tied = lab::summarize(std::vector<double>(40, 0.020));
  CHECK(tied.median_halfwidth() == 0);
  CHECK(tied.step == 0);
  CHECK(lab::median_uncertainty(tied, rule.resolution_ms) == Approx(0.5e-3));
  CHECK_FALSE(lab::converged(rule, tied, 100.0));
  // The same at 1 ms is known to 0.05%.
  CHECK(lab::converged(rule, lab::summarize(std::vector<double>(40, 1.0)), 100.0));
  // With a step of its own (32 ns readings) the 20 us kernel's ties are known finely enough.
  std::vector<double> stepped(40, 0.020);
  stepped[0] = 0.020 + 32e-6;
  const lab::Stats s = lab::summarize(stepped);
  CHECK(s.step == Approx(32e-6));
  CHECK(lab::converged(rule, s, 100.0));
}

TEST_CASE("stopping rule: needs samples, time and a pinned median") {
  lab::StoppingRule rule;  // 20 samples, 50 ms, 0.5%
  std::vector<double> tight(20, 1.0);
  tight[0] = 1.001;
  const lab::Stats s = lab::summarize(tight);
  CHECK(s.median_low == 1.0);
  CHECK(s.median_high == 1.0);
  CHECK(lab::converged(rule, s, 60.0));                  // known to one step, 0.1%
  CHECK_FALSE(lab::converged(rule, s, 40.0));            // not enough GPU time
  CHECK_FALSE(lab::converged(rule, lab::summarize(std::vector<double>(19, 1.0)), 60.0));  // n

  std::vector<double> noisy;
  for (int i = 0; i < 20; ++i) noisy.push_back(i % 2 ? 1.0 : 1.2);
  const lab::Stats ns = lab::summarize(noisy);
  CHECK(ns.median_halfwidth() == Approx(0.1));  // [1.0, 1.2] around 1.1
  CHECK_FALSE(lab::converged(rule, ns, 100.0));
  rule.target_precision = 0.3;  // 0.1 + a step of 0.2 = 27%
  CHECK(lab::converged(rule, ns, 100.0));
}

TEST_CASE("the interval of the median is the one the stopping rule uses") {
  std::vector<double> x;
  for (int i = 1; i <= 20; ++i) x.push_back(i);
  const lab::Stats s = lab::summarize(x);
  CHECK(s.median_low == 6);    // ranks 6 and 15 of 20
  CHECK(s.median_high == 15);
  CHECK(s.median_halfwidth() == Approx(4.5));  // median 10.5
  CHECK(s.median_coverage == Approx(0.9586).epsilon(1e-3));
}

TEST_CASE("the process's time budget: set, spent, removed") {
  CHECK(std::isinf(lab::time_budget_left_s()));  // none by default
  lab::set_time_budget(100);
  CHECK(lab::time_budget_left_s() <= 100);
  CHECK(lab::time_budget_left_s() > 99);
  lab::set_time_budget(1e-9);
  CHECK(lab::time_budget_left_s() == 0);  // spent: never negative
  lab::set_time_budget(0);
  CHECK(std::isinf(lab::time_budget_left_s()));
}

TEST_CASE("the ratio's interval stays within the medians' own ends (a lopsided median interval)") {
  auto summary = [](double median, double low, double high) {
    lab::Stats s;
    s.n = 100;
    s.median = median;
    s.median_low = low;
    s.median_high = high;
    s.median_coverage = 0.96;
    s.step = 1e-6;
    return s;
  };
  // The denominator's calls come at two speeds, a minority three times slower: its median is a
  // fast call, its interval reaches the slow ones. The symmetric log-scale interval would put the
  // ratio's upper end near 1.7; the medians' own ends allow at most about 1.01.
  const lab::MedianRatio r =
      lab::ratio_of_medians(summary(1.0, 0.995, 1.005), summary(1.0, 0.999, 3.0));
  CHECK(r.value == doctest::Approx(1.0));
  CHECK(r.high == doctest::Approx(1.005 / 0.999).epsilon(1e-4));
  CHECK(r.low < 0.7);  // the slow side keeps its width
  // Symmetric, well-behaved medians: the interval is Price and Bonett's, the ends unused.
  const lab::MedianRatio even =
      lab::ratio_of_medians(summary(2.0, 1.98, 2.02), summary(1.0, 0.99, 1.01));
  CHECK(even.high < 2.0 * 2.02 / 1.98 / 0.99 * 1.01);
  CHECK(even.high > 2.0 * 1.01);
}
