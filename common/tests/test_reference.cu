// What the harnesses' checks are built from, on the host (no GPU): the reference at the checked
// places (lab/reference.hpp: a product, a gemv, a BLAS update, a transpose, a device-made
// reference confirmed on the host), the tolerance of a product whose inputs are rounded first,
// the name of a validation case, the BF16 copy of an input (lab/bf16.cuh), a CUB call whose size
// query fails (lab/cub_call.hpp), and speedups between variants that were not measured
// (lab/speedups.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/bf16.cuh"
#include "lab/check.hpp"
#include "lab/cub_call.hpp"
#include "lab/format.hpp"
#include "lab/harness.hpp"
#include "lab/reference.hpp"
#include "lab/speedups.hpp"
#include "lab/validate.hpp"
#include "lab/variant.hpp"

TEST_CASE("values_at: the value at each place asked for, in order; no places: every place") {
  auto square = [](std::size_t i) { return static_cast<float>(i * i); };
  CHECK(lab::values_at({7, 2, 7}, 10, square) == std::vector<float>{49, 4, 49});
  CHECK(lab::values_at({}, 4, square) == std::vector<float>{0, 1, 4, 9});
  CHECK(lab::values_at({}, 0, square).empty());
  auto twice = [](std::size_t i) { return 2.0 * i; };  // the value's own type
  CHECK(lab::values_at({3}, 10, twice) == std::vector<double>{6.0});
}

TEST_CASE("confirm_on_host: the host's value at every (n / spread)th place and the last tail") {
  std::vector<float> want(10000, -1.0f);  // a device replay that got every place wrong
  lab::confirm_on_host(want, 4096, 64, [](std::size_t i) { return static_cast<float>(i); });
  std::size_t confirmed = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool host = i % 2 == 0 || i >= want.size() - 64;  // stride 10000 / 4096 = 2
    CHECK(want[i] == (host ? static_cast<float>(i) : -1.0f));
    confirmed += want[i] != -1.0f;
  }
  CHECK(confirmed == 5000 + 32);
  std::vector<float> few(3, -1.0f);  // fewer places than the tail: all of them
  lab::confirm_on_host(few, 4096, 64, [](std::size_t) { return 7.0f; });
  CHECK(few == std::vector<float>{7, 7, 7});
}

TEST_CASE("random_product_at: the product of the two fills, regenerated from their seeds") {
  const int N = 5, K = 9;
  const std::vector<std::size_t> at = {0, 12, 7, 12};
  const std::vector<lab::Dot> got = lab::random_product_at(at, N, K, 21, 22);
  REQUIRE(got.size() == at.size());
  for (std::size_t e = 0; e < at.size(); ++e) {
    const std::size_t i = at[e] / N, j = at[e] % N;
    double sum = 0;
    for (std::size_t k = 0; k < K; ++k)
      sum += double{lab::random_input(21, i * K + k)} * lab::random_input(22, k * N + j);
    CHECK(got[e].value == doctest::Approx(sum).epsilon(1e-12));
  }
  // B from its own seed: the same seed for both is another product.
  CHECK(lab::random_product_at({7}, N, K, 21, 21)[0].value != doctest::Approx(got[2].value));
}

TEST_CASE("rounded: each sum as the float it is compared with, and the largest magnitude") {
  const std::vector<lab::Dot> sums = {{0.1, 3.0}, {-2.5, 7.5}, {1e-30, 0.5}};
  const lab::Rounded r = lab::rounded(sums);
  CHECK(r.values == std::vector<float>{0.1f, -2.5f, 1e-30f});
  CHECK(r.magnitude == 7.5);
  const lab::Rounded none = lab::rounded({});
  CHECK(none.values.empty());
  CHECK(none.magnitude == 0);
}

TEST_CASE("random_gemv_at: alpha A x + beta y0 from the three fills, and its magnitude") {
  const int cols = 7;
  const std::vector<std::size_t> rows = {4, 0, 4};
  const lab::Rounded y = lab::random_gemv_at(rows, cols, 1.5f, 31, 32, -0.5f, 33);
  REQUIRE(y.values.size() == rows.size());
  double largest = 0;
  for (std::size_t e = 0; e < rows.size(); ++e) {
    double ax = 0, magnitude = 0;
    for (int k = 0; k < cols; ++k) {
      const double t = double{lab::random_input(31, rows[e] * cols + k)} * lab::random_input(32, k);
      ax += t;
      magnitude += std::fabs(t);
    }
    const double old = -0.5 * lab::random_input(33, rows[e]);
    CHECK(y.values[e] == static_cast<float>(1.5 * ax + old));
    largest = std::max(largest, 1.5 * magnitude + std::fabs(old));
  }
  CHECK(y.magnitude == doctest::Approx(largest).epsilon(1e-12));
  // beta == 0: y0 is not read (y is write-only), whatever its seed.
  const lab::Rounded write_only = lab::random_gemv_at(rows, cols, 1.5f, 31, 32);
  CHECK(write_only.values == lab::random_gemv_at(rows, cols, 1.5f, 31, 32, 0.0f, 99).values);
  CHECK(write_only.values[1] != y.values[1]);
}

TEST_CASE("alpha_beta_at: alpha S + beta C0, C0 regenerated at each place; beta 0 reads none") {
  const std::vector<lab::Dot> sums = {{2.0, 3.0}, {-1.0, 5.0}, {2.0, 3.0}};
  const std::vector<std::size_t> at = {9, 4, 2};  // C0 is regenerated at the place, not the rank
  const lab::Rounded r = lab::alpha_beta_at(sums, at, -1.5f, 0.5f, 41);
  REQUIRE(r.values.size() == 3);
  double largest = 0;
  for (std::size_t e = 0; e < at.size(); ++e) {
    const double old = 0.5 * lab::random_input(41, at[e]);
    CHECK(r.values[e] == static_cast<float>(-1.5 * sums[e].value + old));
    largest = std::max(largest, 1.5 * sums[e].magnitude + std::fabs(old));
  }
  CHECK(r.values[0] != r.values[2]);  // the same sum at two places: two starting values
  CHECK(r.magnitude == largest);
  // beta == 0: the output is write-only, whatever the seed.
  const lab::Rounded write_only = lab::alpha_beta_at(sums, at, -1.5f, 0.0f, 41);
  CHECK(write_only.values == std::vector<float>{-3.0f, 1.5f, -3.0f});
  CHECK(write_only.magnitude == 7.5);
}

TEST_CASE("transposed: out[j][i] of out = in^T is in[i][j], for any rows and columns") {
  // in is 2 x 3, in[i][j] = 10 i + j; out is 3 x 2.
  auto in = [](std::uint64_t k) { return static_cast<float>(10 * (k / 3) + k % 3); };
  const auto out = lab::transposed(in, 2, 3);
  CHECK(lab::values_at({}, 6, out) == std::vector<float>{0, 10, 1, 11, 2, 12});
  // Square, from a fill's values: the diagonal stays, the rest swaps.
  auto fill = [](std::uint64_t k) { return lab::random_input(51, k); };
  const auto square = lab::transposed(fill, 4, 4);
  CHECK(square(5) == lab::random_input(51, 5));
  CHECK(square(1) == lab::random_input(51, 4));
  CHECK(square(4) == lab::random_input(51, 1));
}

TEST_CASE("sum_tolerance: inputs rounded first add 2u + u^2 of the magnitude, else nothing") {
  const double u = std::ldexp(1.0, -10), s = 1100;
  const lab::Tolerance plain = lab::sum_tolerance(4096, s);
  CHECK(lab::sum_tolerance(4096, s, 0.0).atol == plain.atol);  // bit for bit
  CHECK(plain.atol == 4.0 * std::sqrt(4096.0) * std::ldexp(1.0, -24) * s);
  const lab::Tolerance tf32 = lab::sum_tolerance(4096, s, u);
  CHECK(tf32.rtol == 1e-6);
  CHECK(tf32.atol == doctest::Approx(plain.atol + (2 * u + u * u) * s).epsilon(1e-14));
  CHECK(tf32.atol > 100 * plain.atol);  // the rounding of the inputs dominates at K = 4096
}

TEST_CASE("a validation case is named by its extents") {
  CHECK(lab::dims(std::vector<int>{1000, 777}) == "1000x777");
  CHECK(lab::dims(std::vector<int>{1, 1, 1}) == "1x1x1");
  CHECK(lab::dims({4097, 33}) == "4097x33");  // a braced list still takes the first form
}

TEST_CASE("a BF16 input copy: rounded to nearest even, the same for the reference and the check") {
  auto bits = [](__nv_bfloat16 b) {
    unsigned short u;
    std::memcpy(&u, &b, sizeof u);
    return u;
  };
  CHECK(bits(lab::to_bf16(1.0f)) == 0x3F80);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1. Just above it: up.
  CHECK(bits(lab::to_bf16(1.0f + std::ldexp(1.0f, -8))) == 0x3F80);
  CHECK(bits(lab::to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20))) == 0x3F81);
  // 1 + 3 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6: up, to the even one.
  CHECK(bits(lab::to_bf16(1.0f + 3 * std::ldexp(1.0f, -8))) == 0x3F82);
  const lab::RandomBf16 input{5};
  for (std::uint64_t i = 0; i < 100; ++i)
    REQUIRE(bits(input(i)) == bits(lab::to_bf16(lab::random_input(5, i))));
}

TEST_CASE("a CUB call whose size query fails says which algorithm, and allocates nothing") {
  int queries = 0;
  auto failing = [&queries](void* temp, std::size_t&, cudaStream_t) {
    CHECK(temp == nullptr);  // the query: no storage yet
    ++queries;
    return cudaErrorInvalidValue;
  };
  CHECK_THROWS_AS(lab::CubCall("cub::DeviceReduce::Sum", failing), lab::CudaError);
  try {
    lab::CubCall("cub::DeviceReduce::Sum", failing);
  } catch (const lab::CudaError& e) {
    CHECK(std::string(e.what()).find("cub::DeviceReduce::Sum (size query)") != std::string::npos);
    CHECK(e.code() == cudaErrorInvalidValue);
  }
  CHECK(queries == 2);
}

TEST_CASE("speedups between variants: nothing where one was not measured, a misspelt name throws") {
  struct Problem {};
  lab::Lesson lesson("99-test", "speedups");
  lab::Variants<Problem> variants(lesson);
  auto add = [&](const char* name, lab::Role role) {
    variants.add({name, role, name, [](Problem&, cudaStream_t) {},
                  [](const Problem&) { return lab::Work{1, 1}; }});
  };
  add("given", lab::Role::Baseline);
  add("library", lab::Role::Reference);
  add("exercise", lab::Role::Exercise);
  CHECK_FALSE(lab::speedup(variants, "given", "exercise").has_value());  // declared, not measured
  CHECK(lab::speedups(variants, "library").empty());
  CHECK_THROWS_AS(lab::speedup(variants, "given", "exercse"), std::logic_error);
  CHECK_THROWS_AS(lab::speedups(variants, "librari"), std::logic_error);
  // Nothing measured: the note is its heading alone.
  CHECK(lab::tflops_note(variants, 1e9, "library", 1000.0) == "TFLOP/s (fraction of library; of the tensor roof):");
  CHECK_THROWS_AS(lab::tflops_note(variants, 1e9, "librari", 1000.0), std::logic_error);
}
