// Pieces of lab::Protocol's checks on the host (no GPU): which elements of a matrix product a
// check looks at (lab::product_elements), and an output updated in place, which starts every
// call from the seed of the fill before it (lab::ResetOutput::start through lab::declared_checks).
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "lab/declared.cuh"

namespace {

struct InPlace {
  lab::GuardedBuffer<float> a, y;  // nothing allocated: the test never touches the device
};

}  // namespace

TEST_CASE("product_elements: every element of a small product after a validated call") {
  lab::Lesson lesson("99-test", "product elements");
  lab::Look look(lesson, "exercise", "case", 5, nullptr, nullptr);
  const std::vector<std::size_t> at = lab::product_elements(look, 3, 4, 1000);
  REQUIRE(at.size() == 12);
  for (std::size_t e = 0; e < at.size(); ++e) CHECK(at[e] == e);  // row by row, in order
}

TEST_CASE("product_elements: past 1e9 multiply-adds, lines and elements of the inputs' seed") {
  lab::Lesson lesson("99-test", "product elements");
  const std::size_t M = 300, N = 200, K = 20000;  // 1.2e9 multiply-adds
  lab::Look look(lesson, "exercise", "case", 5, nullptr, nullptr);
  const std::vector<std::size_t> at = lab::product_elements(look, M, N, K);
  CHECK(at == lab::lines_and_elements(5, M, N, 2, 8192));
  lab::Look again(lesson, "cublas", "case", 5, nullptr, nullptr);
  CHECK(lab::product_elements(again, M, N, K) == at);  // the inputs' seed decides: a --replay too
  lab::Look other(lesson, "exercise", "case", 6, nullptr, nullptr);
  CHECK(lab::product_elements(other, M, N, K) != at);
  lab::Look at_limit(lesson, "exercise", "case", 5, nullptr, nullptr);
  CHECK(lab::product_elements(at_limit, 500, 200, 10000).size() == 500 * 200);  // 1e9: all of it
  CHECK(lab::product_elements(at_limit, 500, 200, 10001).size() == 4 * 200 + 4 * 500 + 8192);
}

TEST_CASE("product_elements: after a timed call, 32 rows drawn, then 32 columns, crossed") {
  lab::Lesson lesson("99-test", "product elements");
  const std::size_t M = 1000, N = 777;
  std::mt19937_64 pick(42), same(42);
  lab::Look look(lesson, "exercise", "case", 5, nullptr, &pick);
  const std::vector<std::size_t> at = lab::product_elements(look, M, N, 4096 * 4096ull);
  std::uniform_int_distribution<std::size_t> row(0, M - 1), col(0, N - 1);
  std::vector<std::size_t> rows, cols;
  for (int k = 0; k < 32; ++k) rows.push_back(row(same));
  for (int k = 0; k < 32; ++k) cols.push_back(col(same));
  CHECK(at == lab::crossings(rows, cols, N));  // the order of the draws is fixed: rows first
}

TEST_CASE("ResetOutput: an output updated in place starts from the seed of the last fill") {
  auto from_seed = [](const InPlace&, std::uint64_t seed) { return lab::RandomInput{seed}; };
  lab::ResetOutput<InPlace> a(&InPlace::a, from_seed);
  CHECK(static_cast<bool>(a.start));  // updated in place: started, not only reset
  CHECK(static_cast<bool>(a.reset));
  CHECK(!lab::ResetOutput<InPlace>(&InPlace::y).start);  // write-only: reset alone
  std::vector<std::uint64_t> started;  // what a.start was called with, instead of the fill
  a.start = [&started](InPlace&, std::uint64_t seed, cudaStream_t) { started.push_back(seed); };
  int resets = 0;
  lab::ResetOutput<InPlace> y(&InPlace::y);
  y.reset = [&resets](InPlace&, cudaStream_t) { ++resets; };
  const lab::Checks<InPlace> c =
      lab::declared_checks<InPlace>({}, {a, y}, [](lab::Look&, InPlace&) {});
  InPlace p;
  c.fill(p, 7, nullptr);
  c.reset(p, nullptr);
  c.reset(p, nullptr);  // the next variant of the same validation: the same starting values
  c.fill(p, 9, nullptr);
  c.reset(p, nullptr);
  CHECK(started == std::vector<std::uint64_t>{7, 7, 9});
  CHECK(resets == 3);
}
