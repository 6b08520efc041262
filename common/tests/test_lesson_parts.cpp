// The pieces a lesson harness is built from, without a GPU: the variant list, the readings of
// metrics, the tolerance of a float sum, number formatting, regenerated inputs, the reference of
// a matrix product.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/data.hpp"
#include "lab/format.hpp"
#include "lab/harness.hpp"
#include "lab/presets.hpp"
#include "lab/ratio.hpp"
#include "lab/timed_calls.hpp"
#include "lab/validate.hpp"
#include "lab/variant.hpp"

namespace {

struct Problem {
  double n = 1000;
};

lab::Variant<Problem> variant(const std::string& name, lab::Role role, unsigned needs) {
  return {name, role, "a " + name,
          [](Problem&, cudaStream_t) {},
          [](const Problem& p) { return lab::Work{4 * p.n, p.n}; }, needs};
}

}  // namespace

TEST_CASE("variants are declared once, in order, and a misspelt name is an error") {
  lab::Lesson lesson("99-test", "variants");
  lab::Variants<Problem> variants(lesson);
  variants.add(variant("given", lab::Role::Baseline, 1));
  variants.add(variant("exercise", lab::Role::Exercise, 4));
  variants.add(variant("library", lab::Role::Reference, 2));

  // Declared to the lesson, in the order added.
  const lab::Result& r = lesson.result();
  REQUIRE(r.variants.size() == 3);
  CHECK(r.variants[0].name == "given");
  CHECK(r.variants[1].role == lab::Role::Exercise);
  CHECK(r.variants[2].description == "a library");

  CHECK(variants["library"].work(Problem{}).bytes == 4000);
  CHECK_THROWS_WITH_AS(variants["exercse"],
                       "no variant named 'exercse' (variants: given, exercise, library)",
                       std::logic_error);
  CHECK_THROWS_AS(variants.measurement("librari"), std::logic_error);
  CHECK(variants.measurement("library") == nullptr);  // declared, not measured
  CHECK_THROWS_AS(lesson.selected("librari"), std::logic_error);
  CHECK_THROWS_WITH_AS(variants.add(variant("given", lab::Role::Baseline, 0)),
                       "variant 'given' declared twice", std::logic_error);

  // With no --variant every one is selected; validations run the exercise last.
  CHECK(variants.any_selected());
  CHECK(variants.needs() == 7);
  std::vector<std::string> order;
  for (const auto* v : variants.selected_exercise_last()) order.push_back(v->name);
  CHECK(order == std::vector<std::string>{"given", "library", "exercise"});
}

TEST_CASE("a variant without a launch can be declared but not measured") {
  lab::Lesson lesson("99-test", "variants");
  lab::Variants<Problem> variants(lesson);
  variants.add({"exercise", lab::Role::Exercise, "a timer, judged on what it reports"});
  Problem p;
  CHECK_THROWS_WITH_AS(variants.measure(variants["exercise"], p),
                       "variant 'exercise' has no launch or work: it cannot be measured",
                       std::logic_error);
}

TEST_CASE("a speedup and a relative error come with 95% intervals that shrink with more samples") {
  // Samples spread evenly over +-10% of their median (a known, symmetric spread).
  auto spread = [](double median, int n) {
    std::vector<double> x;
    for (int i = 0; i < n; ++i) x.push_back(median * (0.9 + 0.2 * i / (n - 1)));
    return lab::summarize(x);
  };
  lab::Measurement slow, fast;
  slow.gpu_ms = spread(10, 41);
  fast.gpu_ms = spread(2, 41);
  const lab::Reading s = lab::speedup(slow, fast);
  CHECK(s.value == doctest::Approx(5.0));
  CHECK(s.low < 5.0);
  CHECK(s.high > 5.0);
  // The one implementation: the same interval as lab::ratio_of_medians with the event timer's step.
  const lab::MedianRatio r = lab::ratio_of_medians(slow.gpu_ms, fast.gpu_ms, 0.5e-3);
  CHECK(s.low == r.low);
  CHECK(s.high == r.high);
  // Not the quartiles' ratio (which does not shrink): with ten times the samples it is narrower.
  CHECK(s.low > slow.gpu_ms.q1 / fast.gpu_ms.q3);
  lab::Measurement slow_many, fast_many;
  slow_many.gpu_ms = spread(10, 401);
  fast_many.gpu_ms = spread(2, 401);
  const lab::Reading many = lab::speedup(slow_many, fast_many);
  CHECK(many.high - many.low < 0.5 * (s.high - s.low));
  // Empty or non-positive summaries give no reading rather than a made-up one.
  CHECK(lab::speedup(slow, lab::Measurement{}).value == 0);

  const lab::Stats t = spread(1.0, 41);
  REQUIRE(t.median_low < 1.0);
  REQUIRE(t.median_high > 1.0);
  const lab::Reading inside = lab::relative_error(1.0, t);  // inside the median's interval
  CHECK(inside.value == doctest::Approx(0.0));
  CHECK(inside.low == 0);
  CHECK(inside.high == doctest::Approx(std::max(1 / t.median_low - 1, 1 - 1 / t.median_high)));
  const lab::Reading off = lab::relative_error(2.0, t);
  CHECK(off.value == doctest::Approx(1.0));
  CHECK(off.low == doctest::Approx(2.0 / t.median_high - 1));
  CHECK(off.high == doctest::Approx(2.0 / t.median_low - 1));
  // A timer that reports NaN or infinity is 100% off, never 0% (NaN compares false everywhere).
  CHECK(lab::relative_error(std::numeric_limits<double>::quiet_NaN(), t).value == 1.0);
  CHECK(lab::relative_error(std::numeric_limits<double>::infinity(), t).value == 1.0);

  // A signed error and its interval, read as a distance from 0 (lesson 02's per-call errors).
  const lab::Reading around = lab::absolute_error(-0.01, -0.03, 0.02);
  CHECK(around.value == doctest::Approx(0.01));
  CHECK(around.low == 0);
  CHECK(around.high == doctest::Approx(0.03));
  const lab::Reading below = lab::absolute_error(-0.5, -0.9, -0.2);
  CHECK(below.value == doctest::Approx(0.5));
  CHECK(below.low == doctest::Approx(0.2));
  CHECK(below.high == doctest::Approx(0.9));

  const lab::Reading w = lab::worst(inside, off);
  CHECK(w.value == off.value);
  CHECK(w.low == off.low);
  CHECK(w.high == doctest::Approx(std::max(inside.high, off.high)));
}

TEST_CASE("the tolerance of a float sum grows with the square root of its terms") {
  const lab::Tolerance t = lab::sum_tolerance(4098, 1024);
  CHECK(t.rtol == 1e-6);
  CHECK(t.atol == doctest::Approx(4 * std::sqrt(4098.0) * std::ldexp(1.0, -24) * 1024));
  CHECK(lab::sum_tolerance(4 * 4098, 1024).atol == doctest::Approx(2 * t.atol));
}

TEST_CASE("numbers into text") {
  CHECK(lab::text("%d of %s", 3, "four") == "3 of four");
  CHECK(lab::fixed(2.345, 1) == "2.3");
  CHECK(lab::dims({1000, 777}) == "1000x777");
  CHECK(lab::dims({3, 5, 7}) == "3x5x7");
  CHECK(lab::text("%s", std::string(600, 'x').c_str()).size() == 511);  // cut, not overflowed
}

TEST_CASE("an input is regenerated element by element, as the host fill wrote it") {
  std::vector<float> host(1000);
  lab::fill_random_host(host.data(), host.size(), 77, -2.0f, 3.0f);
  for (std::size_t i = 0; i < host.size(); ++i) {
    CHECK(lab::random_input(77, i, -2.0f, 3.0f) == host[i]);
    if (lab::random_input(77, i, -2.0f, 3.0f) != host[i]) break;  // one failure says enough
  }
  lab::fill_random_host(host.data(), host.size(), 78);  // the default range, [-1, 1)
  CHECK(lab::random_input(78, 999) == host[999]);
}

TEST_CASE("a short run is short") {
  const lab::BenchmarkOptions o = lab::short_run(0.5);
  CHECK(o.timeout_s == 0.5);
  CHECK(o.stop.min_samples == 5);
  CHECK(o.warmup_runs == 1);
  CHECK(lab::median_within(0.01).stop.target_precision == 0.01);
  CHECK(lab::median_within(0.01).stop.min_samples == lab::BenchmarkOptions{}.stop.min_samples);
}

TEST_CASE("a sample of a product's elements: first and last rows and columns in full, by seed") {
  const std::size_t M = 7, N = 5;
  const std::vector<std::size_t> at = lab::lines_and_elements(61, M, N, 2, 100);
  REQUIRE(at.size() == 4 * N + 4 * M + 100);
  for (std::size_t j = 0; j < N; ++j) {  // rows 0 and M-1, row by row
    CHECK(at[j] == j);
    CHECK(at[N + j] == (M - 1) * N + j);
  }
  for (std::size_t i = 0; i < M; ++i) {  // then columns 0 and N-1, column by column
    CHECK(at[4 * N + i] == i * N);
    CHECK(at[4 * N + M + i] == i * N + N - 1);
    CHECK(at[4 * N + 2 * M + i] % N == at[4 * N + 2 * M] % N);  // a random column, down its rows
    CHECK(at[4 * N + 2 * M + i] / N == i);
  }
  for (std::size_t j = 0; j < N; ++j)  // a random row, along its columns
    CHECK(at[2 * N + j] == at[2 * N] + j);
  std::vector<bool> seen(M * N, false);
  for (const std::size_t e : at) {
    REQUIRE(e < M * N);
    seen[e] = true;
  }
  // 100 random elements of 35 reach places outside the four fixed lines.
  CHECK(std::count(seen.begin(), seen.end(), true) > static_cast<long>(2 * N + 2 * M - 4));
  // The same seed draws the same sample (a --replay run), another seed another one.
  CHECK(lab::lines_and_elements(61, M, N, 2, 100) == at);
  CHECK(lab::lines_and_elements(62, M, N, 2, 100) != at);
  // No random lines: the four fixed ones only (a 1 x 1 matrix: its one element, each time).
  CHECK(lab::lines_and_elements(61, M, N, 0, 0).size() == 2 * N + 2 * M);
  CHECK(lab::lines_and_elements(61, 1, 1, 0, 3) == std::vector<std::size_t>(7, 0));
}

TEST_CASE("a product's reference: the exact element at each index asked for, from regenerated inputs") {
  // Odd sizes, and a list with repeats, out of order, sharing rows and columns: each element
  // must come from its own row of A and column of B, wherever it sits in the list.
  const int M = 7, N = 5, K = 13;
  auto a_at = [](std::uint64_t i) { return lab::random_input(11, i); };
  auto b_at = [](std::uint64_t i) { return lab::random_input(12, i); };
  const std::vector<std::size_t> rows = {6, 0, 3, 0}, cols = {4, 1};
  const std::vector<std::size_t> grid = lab::crossings(rows, cols, N);
  CHECK(grid == std::vector<std::size_t>{34, 31, 4, 1, 19, 16, 4, 1});
  std::vector<std::size_t> at = grid;
  at.push_back(M * N - 1);
  at.push_back(2 * N + 2);
  const std::vector<lab::Dot> dots = lab::product_at(at, N, K, a_at, b_at);
  REQUIRE(dots.size() == at.size());
  for (std::size_t e = 0; e < at.size(); ++e) {
    const std::size_t i = at[e] / N, j = at[e] % N;
    double sum = 0, magnitude = 0;
    for (std::size_t k = 0; k < K; ++k) {
      const double t = static_cast<double>(a_at(i * K + k)) * b_at(k * N + j);
      sum += t;
      magnitude += std::fabs(t);
    }
    CHECK(dots[e].value == doctest::Approx(sum).epsilon(1e-12));
    CHECK(dots[e].magnitude == doctest::Approx(magnitude).epsilon(1e-12));
  }
  CHECK(lab::product_at({}, N, K, a_at, b_at).empty());
}

TEST_CASE("a kept reference is made again only for other inputs or other elements") {
  lab::KeptReference<int> kept;
  int made = 0;
  auto make = [&made] { return ++made; };
  CHECK(kept.get(1, {0, 1}, make) == 1);
  CHECK(kept.get(1, {0, 1}, make) == 1);  // the next variant of the same validation
  CHECK(kept.get(2, {0, 1}, make) == 2);  // new inputs
  CHECK(kept.get(2, {0, 2}, make) == 3);  // other elements
  CHECK(made == 3);
}

TEST_CASE("a fresh log-uniform draw stays in its band and spreads over it") {
  // What lessons 01 and 02 hand a timer: a length no constant can match.
  std::vector<double> draws;
  for (int i = 0; i < 2000; ++i) draws.push_back(lab::fresh_log_uniform(0.05, 0.5));
  int low_decade_half = 0;
  for (const double d : draws) {
    CHECK(d >= 0.05);
    CHECK(d < 0.5);
    low_decade_half += d < std::sqrt(0.05 * 0.5);  // below the geometric middle
  }
  CHECK(low_decade_half > 800);  // about half, as a log-uniform draw puts it
  CHECK(low_decade_half < 1200);
}
