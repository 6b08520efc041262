// lab::declared_checks and lab::RandomArray on the host (no GPU): the values each declared input
// gets from a seed (the ones the reference regenerates), and the checks made from the
// declarations.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

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

bool same(const lab::RandomInput& u, const lab::RandomInput& v) {
  return u.seed == v.seed && u.lo == v.lo && u.hi == v.hi;
}

}  // namespace

TEST_CASE("RandomArray: the values a seed gives, from the seed itself or the lesson's struct") {
  const lab::RandomArray<Problem> plain("x", &Problem::x);
  CHECK(plain.name == "x");
  CHECK(plain.array == &Problem::x);
  CHECK(same(plain.values(42), lab::RandomInput{42}));  // lab::fill_random's defaults, [-1, 1)
  const lab::RandomArray<Problem> a("a", &Problem::a, &Inputs::a);
  CHECK(a.array == &Problem::a);
  for (const std::uint64_t seed : {1ull, 42ull, 1ull << 40}) {
    CHECK(same(a.values(seed), Inputs(seed).a));  // what the reference reads
    CHECK(!same(a.values(seed), Inputs(seed).x));
  }
  CHECK(a.values(7)(3) == lab::random_input(lab::derive_seed(7, 1), 3, 0.99f, 1.01f));
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
