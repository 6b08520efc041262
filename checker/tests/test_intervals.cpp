// The checker's intervals on synthetic samples of known distribution: they must cover the true
// value about as often as they say (4000 draws each: a coverage of 95% is measured to +-0.7% at
// two standard errors), shrink with more samples, and refuse what they cannot judge.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

#include "helpers.hpp"
#include "intervals.hpp"
#include "runs.hpp"

using namespace lab;
using doctest::Approx;

namespace {

using Draw = std::function<double(std::mt19937_64&)>;

// A distribution with a known median.
struct Known {
  const char* name;
  Draw draw;
  double median;
};

std::vector<Known> distributions() {
  return {
      // Timing noise around 1 ms.
      {"normal", [](std::mt19937_64& g) { return std::normal_distribution<double>(1.0, 0.05)(g); },
       1.0},
      // Right-skewed: median e^0 = 1.
      {"lognormal", [](std::mt19937_64& g) { return std::lognormal_distribution<double>(0.0, 0.5)(g); },
       1.0},
      // Heavy right tail, infinite variance: Pareto with shape 1.2, median 2^(1/1.2).
      {"pareto", [](std::mt19937_64& g) {
         return std::pow(1.0 - std::generate_canonical<double, 53>(g), -1 / 1.2);
       },
       std::pow(2.0, 1 / 1.2)},
  };
}

std::vector<double> sample(const Draw& draw, std::size_t n, double scale, std::mt19937_64& g) {
  std::vector<double> x(n);
  for (double& v : x) v = scale * draw(g);
  return x;
}

constexpr int kDraws = 4000;

}  // namespace

TEST_SUITE("intervals") {

TEST_CASE("the median interval covers the true median at least as often as it says, not much more") {
  std::mt19937_64 g(2024);
  for (const Known& d : distributions())
    for (std::size_t n : {20u, 50u, 200u}) {
      int hits = 0;
      double exact = 0;
      for (int k = 0; k < kDraws; ++k) {
        const Interval i = median_interval(sample(d.draw, n, 1.0, g));
        REQUIRE(i.ok);
        exact = i.coverage;
        hits += i.low <= d.median && d.median <= i.high;
      }
      const double measured = static_cast<double>(hits) / kDraws;
      CAPTURE(std::string(d.name));
      CAPTURE(n);
      CAPTURE(measured);
      CHECK(exact >= 0.95);
      CHECK(exact <= 0.97);  // the binomial's steps: 95.9% at 20, 96.7% at 50, 96.0% at 200
      CHECK(std::abs(measured - exact) <= 0.015);
    }
}

TEST_CASE("a constant over a median keeps the median interval's coverage") {
  // A bandwidth: 2 GB over lognormal times; its true value is 2 / median.
  std::mt19937_64 g(5);
  const Known d = distributions()[1];
  int hits = 0;
  for (int k = 0; k < kDraws; ++k) {
    const Interval i = constant_over_median(2.0, sample(d.draw, 30, 1.0, g));
    REQUIRE(i.ok);
    CHECK(i.low <= i.value);
    CHECK(i.value <= i.high);
    hits += i.low <= 2.0 / d.median && 2.0 / d.median <= i.high;
  }
  const double exact = median_interval(std::vector<double>(30, 1.0)).coverage;
  CHECK(static_cast<double>(hits) / kDraws == Approx(exact).epsilon(0.015));
  const Interval m = median_over_constant({1, 2, 3, 4, 5, 6, 7}, 2.0);
  CHECK(m.value == Approx(2.0));
  CHECK(m.low == Approx(0.0));   // x_(1) = 1, less one step of 1, over 2
  CHECK(m.high == Approx(4.0));  // x_(7) = 7, plus a step, over 2
}

TEST_CASE("the ratio of two medians covers the true ratio within 2 points of 95%") {
  std::mt19937_64 g(99);
  for (const Known& d : distributions())
    for (std::size_t n : {20u, 50u, 200u}) {
      // A variant 1.5x slower than its baseline, and the speedup is baseline / variant... here
      // numerator = 1.5 x, denominator = x, both of the same shape.
      int hits = 0;
      for (int k = 0; k < kDraws; ++k) {
        const Interval i =
            ratio_of_medians(sample(d.draw, n, 1.5, g), sample(d.draw, n + 7, 1.0, g));
        REQUIRE(i.ok);
        hits += i.low <= 1.5 && 1.5 <= i.high;
      }
      const double measured = static_cast<double>(hits) / kDraws;
      CAPTURE(std::string(d.name));
      CAPTURE(n);
      CAPTURE(measured);
      // Measured: 95.9-96.6% at n = 20 (a little conservative), 94.7-96.1% from 50 on.
      CHECK(std::abs(measured - 0.95) <= (n == 20 ? 0.02 : 0.015));
    }
}

TEST_CASE("a ratio of two different shapes: a GPU-like timing mix over a normal") {
  // 90% of samples tight around 1.1, 10% slow outliers (exponential tail): the median is found
  // from a large sample instead of a formula.
  auto mix = [](std::mt19937_64& g) {
    const double u = std::generate_canonical<double, 53>(g);
    return u < 0.9 ? 1.1 + 0.003 * std::normal_distribution<double>()(g)
                   : 1.1 + 0.2 * std::exponential_distribution<double>()(g);
  };
  std::mt19937_64 g(11);
  std::vector<double> big(400001);
  for (double& v : big) v = mix(g);
  std::nth_element(big.begin(), big.begin() + 200000, big.end());
  const double truth = big[200000] / 1.0;
  int hits = 0;
  for (int k = 0; k < kDraws; ++k) {
    std::vector<double> a(50), b(50);
    for (double& v : a) v = mix(g);
    for (double& v : b) v = 1.0 + 0.01 * std::normal_distribution<double>()(g);
    const Interval i = ratio_of_medians(a, b);
    hits += i.low <= truth && truth <= i.high;
  }
  CHECK(static_cast<double>(hits) / kDraws == Approx(0.95).epsilon(0.02));
}

TEST_CASE("intervals shrink like 1/sqrt(n)") {
  std::mt19937_64 g(3);
  const Known d = distributions()[1];
  auto widths = [&](std::size_t n) {
    double median = 0, ratio = 0;
    for (int k = 0; k < 200; ++k) {
      const Interval m = median_interval(sample(d.draw, n, 1.0, g));
      const Interval r = ratio_of_medians(sample(d.draw, n, 2.0, g), sample(d.draw, n, 1.0, g));
      median += m.high - m.low;
      ratio += (r.high - r.low) / r.value;
    }
    return std::pair{median / 200, ratio / 200};
  };
  const auto w50 = widths(50), w200 = widths(200), w800 = widths(800);
  CHECK(w200.first < 0.6 * w50.first);  // 1/sqrt(4) = 0.5
  CHECK(w800.first < 0.6 * w200.first);
  CHECK(w200.second < 0.6 * w50.second);
  CHECK(w800.second < 0.6 * w200.second);
}

TEST_CASE("tied readings are widened by the timer's step, never zero width") {
  // Forty identical 20 us readings: the interval is one documented event resolution wide.
  const Interval tied = median_interval(std::vector<double>(40, 0.020));
  REQUIRE(tied.ok);
  CHECK(tied.low == Approx(0.020 - kEventResolutionMs));
  CHECK(tied.high == Approx(0.020 + kEventResolutionMs));
  const Interval ratio = ratio_of_medians(std::vector<double>(40, 0.040), std::vector<double>(40, 0.020));
  CHECK(ratio.value == Approx(2.0));
  // 0.5 us is 1.25% of the 40 us numerator and 2.5% of the 20 us denominator.
  CHECK(ratio.low == Approx(2.0 * (0.040 - 0.0005) / 0.040 * 0.020 / 0.0205));
  CHECK(ratio.high == Approx(2.0 * (0.040 + 0.0005) / 0.040 * 0.020 / 0.0195));
  // Readings in 32 ns steps: the step seen in the samples is used instead.
  std::vector<double> stepped(40, 0.020);
  stepped[3] = 0.020032;
  const Interval s = median_interval(stepped);
  CHECK(s.high == Approx(0.020032));
  CHECK(s.low == Approx(0.020 - 32e-6));
}

TEST_CASE("what cannot be judged is said, not guessed") {
  CHECK_FALSE(median_interval({1, 2, 3, 4, 5}).ok);  // below 6 samples no 95% interval exists
  CHECK(median_interval({1, 2, 3, 4, 5, 6}).ok);
  CHECK(median_interval({1, 2, 3, 4, 5}).note.find("too few") != std::string::npos);
  CHECK_FALSE(median_interval({}).ok);
  CHECK_FALSE(median_interval({1, 2, 3, -4, 5, 6, 7}).ok);
  CHECK_FALSE(ratio_of_medians(std::vector<double>{1, 2, 3, 4, 5, 6}, std::vector<double>{1, 2}).ok);
  CHECK_FALSE(median_over_constant({1, 2, 3, 4, 5, 6}, 0.0).ok);
  CHECK(normal_quantile(0.975) == Approx(1.959963985));
  CHECK(normal_quantile(0.5) == Approx(0.0));
}

TEST_CASE("samples_of reads a result file's samples_ms") {
  const auto v = nlohmann::json::parse(R"({"name": "x", "samples_ms": [1.5, 2.5, 3]})");
  CHECK(samples_of(v) == std::vector<double>{1.5, 2.5, 3});
  CHECK(samples_of(nlohmann::json::parse(R"({"name": "x"})")).empty());  // an older file
  CHECK(samples_of(nlohmann::json::parse(R"({"samples_ms": [1, "a"]})")).empty());
  CHECK(samples_of(nlohmann::json::parse(R"({"samples_ms": [1, 0]})")).empty());
}

TEST_CASE("result files with and without the median interval and the samples are accepted") {
  json doc = test::sample_result();
  CHECK(validate_result(doc) == "");  // without: written before they were added
  json& v = doc["variants"][1];
  v["time_ms"]["median_low"] = 0.99;
  v["time_ms"]["median_high"] = 1.01;
  v["time_ms"]["median_coverage"] = 0.959;
  v["samples_ms"] = {1.0, 0.99, 1.01};
  v["time_ms"]["n"] = 3;  // as many as the samples (validate_result holds the two together)
  v["stop_reason"] = "converged";
  CHECK(validate_result(doc) == "");
  CHECK(samples_of(v).size() == 3);
  v["samples_ms"][1] = "fast";
  CHECK(test::contains(validate_result(doc), "variants[1].samples_ms[1]"));
  v["samples_ms"][1] = -1.0;
  CHECK(test::contains(validate_result(doc), "not a positive time"));
  v["samples_ms"] = 1.0;
  CHECK(test::contains(validate_result(doc), "expected an array"));
  v["samples_ms"] = json::array();
  v["time_ms"]["median_low"] = "low";
  CHECK(test::contains(validate_result(doc), "median_low"));
}

}  // TEST_SUITE
