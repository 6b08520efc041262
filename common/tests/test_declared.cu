// lab::declared_checks, lab::RandomArray and lab::ResetOutput on the host (no GPU): every form of
// declaration is accepted and makes its actions, and the checks are made from the declarations.
// What those actions write is tested on the device (test_gpu.cu); lab::column_stats here.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "lab/column_sums.cuh"
#include "lab/declared.cuh"

namespace {

struct Problem {
  lab::DeviceBuffer<float> x, a;
  lab::GuardedBuffer<float> y;
};

struct Inputs {  // as a lesson writes it: a seed and a range of its own for a
  lab::RandomInput x, a;
  explicit Inputs(std::uint64_t seed) : x{seed}, a{lab::derive_seed(seed, 1), 0.99f, 1.01f} {}
};

}  // namespace

TEST_CASE("RandomArray: from the seed itself, the lesson's struct or a generator of the problem") {
  const lab::RandomArray<Problem> plain("x", &Problem::x);
  const lab::RandomArray<Problem> a("a", &Problem::a, &Inputs::a);
  const lab::RandomArray<Problem> made("x", &Problem::x, [](const Problem&, std::uint64_t seed) {
    return lab::RandomInput{seed, 0.5f, 2.0f};  // any functor of an index (the GPU test fills it)
  });
  for (const lab::RandomArray<Problem>* in : {&plain, &a, &made}) {
    CHECK(static_cast<bool>(in->fill));
    CHECK(static_cast<bool>(in->changed));
  }
  CHECK(plain.name == "x");
  CHECK(a.name == "a");
  CHECK(made.name == "x");
}

TEST_CASE("ResetOutput: a guarded output of any type, or a plain array that is added into") {
  struct Outputs {
    lab::GuardedBuffer<float> y;
    lab::GuardedBuffer<unsigned char> workspace;
    lab::DeviceBuffer<float> partial_sums;
  };
  const std::vector<lab::ResetOutput<Outputs>> outputs = {&Outputs::y, &Outputs::workspace,
                                                          &Outputs::partial_sums};
  for (const lab::ResetOutput<Outputs>& out : outputs) CHECK(static_cast<bool>(out.reset));
}

TEST_CASE("declared_checks: fill, reset, inputs_changed declared; the lesson's own check") {
  int checked = 0;
  const lab::Checks<Problem> c = lab::declared_checks<Problem>(
      {{"x", &Problem::x, &Inputs::x}, {"a", &Problem::a, &Inputs::a}}, {&Problem::y},
      [&checked](lab::Look&, Problem&) { ++checked; });
  CHECK(static_cast<bool>(c.fill));
  CHECK(static_cast<bool>(c.reset));
  CHECK(static_cast<bool>(c.inputs_changed));
  REQUIRE(static_cast<bool>(c.check));
  CHECK(!c.change);  // nothing optional is set
  CHECK(!c.between_calls);
  CHECK(!c.late_inputs);
  lab::Lesson lesson("99-test", "declared checks");
  lab::Look look(lesson, "exercise", "case", 1, nullptr, nullptr);
  Problem p;
  c.check(look, p);
  CHECK(checked == 1);
}

TEST_CASE("column_stats: each column's mean and 1 / std (population) from its sums") {
  // Two columns over 4 rows: {1, 2, 3, 4} and {5, 5, 5, 7}.
  const lab::ColumnSums sums{{10.0, 22.0}, {30.0, 124.0}};
  const lab::ColumnStats stats = lab::column_stats(sums, 4);
  REQUIRE(stats.mean.size() == 2);
  REQUIRE(stats.inv_std.size() == 2);
  CHECK(stats.mean[0] == 2.5);
  CHECK(stats.mean[1] == 5.5);
  CHECK(stats.inv_std[0] == doctest::Approx(1.0 / std::sqrt(1.25)));  // divided by 4, not 3
  CHECK(stats.inv_std[1] == doctest::Approx(1.0 / std::sqrt(0.75)));
  CHECK(std::isinf(lab::column_stats({{8.0}, {16.0}}, 4).inv_std[0]));  // a constant column
}

TEST_CASE("standardized_square_sums: each listed row's sum of squared z-scores, in that order") {
  // Two columns over 2 rows, x = {{1, 10}, {4, 14}}, with mean {2, 12} and inv_std {1, 0.5}:
  // row 0 is (-1)^2 + (-1)^2 = 2, row 1 is 2^2 + 1^2 = 5. Rows come in any order, repeats kept.
  const std::vector<float> x{1, 10, 4, 14};
  auto value = [&x](std::uint64_t i) { return x[i]; };
  const lab::ColumnStats stats{{2.0, 12.0}, {1.0, 0.5}};
  CHECK(lab::standardized_square_sums({1, 0, 1}, 2, value, stats) == std::vector<double>{5, 2, 5});
  // Each column is standardized by its own statistics: swapped, row 1 is (-4)^2 + 12^2.
  const lab::ColumnStats swapped{{12.0, 2.0}, {0.5, 1.0}};
  CHECK(lab::standardized_square_sums({1}, 2, value, swapped) == std::vector<double>{160});
}
