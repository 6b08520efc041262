// lab/sum_reference.cuh on the host (no GPU): the exact sum of a generator's values, the bound a
// float sum in any order stays within, and the words of a wrong sum.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "lab/sum_reference.cuh"

TEST_CASE("sum_reference: the exact sum, its magnitude and one float accumulator's") {
  // -1, 2, -3, ... : a sum whose terms cancel, so the magnitude is not the sum.
  const auto alternating = [](std::uint64_t i) {
    return static_cast<float>(i % 2 == 0 ? -double(i + 1) : double(i + 1));
  };
  const lab::SumReference r = lab::sum_reference(1001, alternating);
  CHECK(r.exact == -501.0);
  CHECK(r.magnitude == 1001.0 * 1002.0 / 2);
  CHECK(r.sequential == -501.0f);
  CHECK(lab::sum_reference(0, alternating).exact == 0.0);
  // Past 2^24 a float accumulator stops growing by 1; the exact sum does not.
  const lab::SumReference ones = lab::sum_reference((1LL << 24) + 10, [](std::uint64_t) { return 1.0f; });
  CHECK(ones.exact == double((1LL << 24) + 10));
  CHECK(ones.sequential == 16777216.0f);
}

TEST_CASE("sum_bound: (8 sqrt(n) + 1) 2^-24 S1") {
  CHECK(lab::sum_bound(1, 1.0) == 9.0 * 0x1p-24);
  CHECK(lab::sum_bound(1LL << 28, 2.0) == (8.0 * 16384.0 + 1.0) * 0x1p-24 * 2.0);
  CHECK(lab::sum_bound(1000003, 0.0) == 0.0);
}

TEST_CASE("sum_mismatch: exactly, or within the bound with how far off") {
  CHECK(lab::sum_mismatch(3, 4, 0, "integer data") == "got 3, expected 4 exactly (integer data)");
  CHECK(lab::sum_mismatch(1.5, 1.25, 0.125, "") == "got 1.5, expected 1.25 within 0.125 (off by 0.25)");
  // A bound of 0 on data that need not be exact still says "within" (only the reason says exactly).
  CHECK(lab::sum_mismatch(1, 2, 0, "") == "got 1, expected 2 within 0 (off by 1)");
}
