#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "lab/validate.hpp"

TEST_CASE("allclose uses NumPy's rule: atol + rtol * |expected|") {
  lab::Tolerance tol{1e-3, 1e-6};
  const float expected[] = {1000.0f, 0.0f};
  const float inside[] = {1000.9f, 9e-7f};    // 0.9 <= 1e-6 + 1; 9e-7 <= 1e-6
  const float outside[] = {1001.1f, 2e-6f};
  CHECK(lab::allclose(inside, expected, 2, tol).ok);
  const lab::Comparison c = lab::allclose(outside, expected, 2, tol);
  CHECK_FALSE(c.ok);
  CHECK(c.mismatches == 2);
  REQUIRE(c.first.size() == 2);
  CHECK(c.first[0].index == 0);
  CHECK(c.first[1].index == 1);
  // the rule is asymmetric, as in NumPy: scaled by |expected| only
  const float a[] = {1.0f}, b[] = {1.0015f};
  CHECK(lab::allclose(a, b, 1, {1.5e-3, 0}).ok);
}

TEST_CASE("NaN never passes, even against NaN; infinities only match themselves") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float got[] = {nan, 1.0f, inf, inf};
  const float expected[] = {nan, nan, inf, -inf};
  const lab::Comparison c = lab::allclose(got, expected, 4, {1.0, 1.0});  // huge tolerances
  CHECK(c.mismatches == 3);
  CHECK(c.first[0].index == 0);
  CHECK(c.first[1].index == 1);
  CHECK(c.first[2].index == 3);
  CHECK(c.summary().find("3 of 4 elements differ") == 0);
  CHECK(c.summary().find("[0]: got nan") != std::string::npos);
}

TEST_CASE("errors: max abs, max rel and relative L2") {
  const double expected[] = {1.0, 2.0, -4.0};
  const double got[] = {1.0, 2.2, -4.0};
  const lab::Comparison c = lab::allclose(got, expected, 3, {0, 0});
  CHECK(c.max_abs_error == doctest::Approx(0.2));
  CHECK(c.max_rel_error == doctest::Approx(0.1));
  CHECK(c.rel_l2_error == doctest::Approx(0.2 / std::sqrt(21.0)));
  CHECK(c.mismatches == 1);
}

TEST_CASE("only the first few mismatches are kept, in index order") {
  std::vector<float> got(100, 1.0f), expected(100, 2.0f);
  const lab::Comparison c = lab::allclose(got.data(), expected.data(), 100, {}, 3);
  CHECK(c.mismatches == 100);
  REQUIRE(c.first.size() == 3);
  CHECK(c.first[2].index == 2);
}

TEST_CASE("vectors of different sizes fail with a note") {
  const lab::Comparison c = lab::allclose(std::vector<float>(3), std::vector<float>(4));
  CHECK_FALSE(c.ok);
  CHECK(c.summary() == "size 3 != expected 4");
}

TEST_CASE("random inputs: deterministic per seed, in range, never all zeros") {
  std::vector<float> a(1000), b(1000), c(1000);
  lab::fill_random_host(a.data(), a.size(), 7, -1.0f, 1.0f);
  lab::fill_random_host(b.data(), b.size(), 7, -1.0f, 1.0f);
  lab::fill_random_host(c.data(), c.size(), 8, -1.0f, 1.0f);
  CHECK(a == b);
  CHECK(a != c);
  int zeros = 0;
  double sum = 0;
  for (float x : a) {
    CHECK(x >= -1.0f);
    CHECK(x < 1.0f);
    zeros += x == 0.0f;
    sum += x;
  }
  CHECK(zeros < 5);
  CHECK(std::fabs(sum / 1000) < 0.1);  // roughly centred
}

TEST_CASE("dot_product: exact products summed in double, and the magnitude") {
  // Five elements: one step of the four chains and a tail of one.
  const float a[] = {1.0f, -2.0f, 3.0f, 0.5f, 4.0f}, b[] = {2.0f, 3.0f, -1.0f, 4.0f, 0.25f};
  lab::Dot d = lab::dot_product(a, b, 5);
  CHECK(d.value == -4.0);  // 2 - 6 - 3 + 2 + 1
  CHECK(d.magnitude == 14.0);
  CHECK(lab::dot_product(a, b, 0).value == 0.0);
  // A product a float would round: (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46.
  const float x = 1.0f + 0x1p-23f;
  CHECK(lab::dot_product(&x, &x, 1).value == 1.0 + 0x1p-22 + 0x1p-46);
  // A sum a float would lose, within a chain and across the chains.
  const float big[] = {1e8f, 1.0f, -1e8f, 0.0f, 1e8f, 1.0f, -1e8f}, ones[] = {1, 1, 1, 1, 1, 1, 1};
  d = lab::dot_product(big, ones, 7);
  CHECK(d.value == 2.0);
  CHECK(d.magnitude == 4e8 + 2.0);
  // A long one, against a plain loop in long double.
  std::vector<float> u(1001), v(1001);
  lab::fill_random_host(u.data(), u.size(), 3);
  lab::fill_random_host(v.data(), v.size(), 4);
  long double sum = 0, magnitude = 0;
  for (std::size_t k = 0; k < u.size(); ++k) {
    sum += static_cast<long double>(u[k]) * v[k];
    magnitude += std::fabs(static_cast<long double>(u[k]) * v[k]);
  }
  d = lab::dot_product(u.data(), v.data(), u.size());
  CHECK(std::fabs(d.value - static_cast<double>(sum)) <= 1e-13 * d.magnitude);
  CHECK(d.magnitude == doctest::Approx(static_cast<double>(magnitude)).epsilon(1e-13));
}
