/// @file validate.hpp
/// @brief Comparing results with a reference: NumPy's allclose semantics, relative L2 error,
/// NaN never passes, and the first mismatches reported with index and values (host only).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lab {

/// @brief Tolerances with NumPy's meaning: |got - expected| <= atol + rtol * |expected|.
struct Tolerance {
  double rtol = 1e-5;  ///< relative tolerance, scaled by |expected|
  double atol = 1e-8;  ///< absolute tolerance
};

/// @brief One element that is not close enough.
struct Mismatch {
  std::size_t index;  ///< flat index of the element
  double got;         ///< value computed by the code under test
  double expected;    ///< reference value
};

/// @brief Outcome of comparing two arrays.
struct Comparison {
  bool ok = true;                  ///< every element close, no NaN, sizes equal
  std::size_t count = 0;           ///< number of elements compared
  std::size_t mismatches = 0;      ///< number of elements not close
  double max_abs_error = 0;        ///< largest |got - expected| over finite pairs
  double max_rel_error = 0;        ///< largest |got - expected| / |expected| (expected != 0)
  double rel_l2_error = 0;         ///< ||got - expected||_2 / ||expected||_2
  std::vector<Mismatch> first;     ///< the first few mismatches, in index order
  std::string note;                ///< set when the comparison could not run (size mismatch)
  /// made in a --replay run from the values the student's program recorded (Lesson::compare):
  /// the only kind of check of the exercise such a run keeps
  bool replayed = false;

  /// @return one line for a student: "ok" or "3 of 1000 differ; first at [17]: got nan, expected 1.5"
  std::string summary() const;
};

/// @param got values computed by the code under test
/// @param expected reference values
/// @param n number of elements
/// @param tol tolerances (NumPy semantics, equal_nan=False: NaN anywhere is a mismatch;
///            infinities match only an infinity of the same sign)
/// @param max_report how many mismatches to keep in Comparison::first
/// @return the comparison
Comparison allclose(const float* got, const float* expected, std::size_t n, Tolerance tol = {},
                    std::size_t max_report = 5);

/// @overload
/// @param got values computed by the code under test
/// @param expected reference values
/// @param n number of elements
/// @param tol tolerances (as for float)
/// @param max_report how many mismatches to keep
/// @return the comparison
Comparison allclose(const double* got, const double* expected, std::size_t n, Tolerance tol = {},
                    std::size_t max_report = 5);

/// @brief The tolerance for a float sum of @p terms terms added in any order (a dot product, an
/// element of a matrix product): the worst case, n 2^-24 sum|terms|, is far too loose at
/// thousands of terms. Higham and Mary's probabilistic bound (SIAM J. Sci. Comput. 2019),
/// lambda sqrt(n) 2^-24 sum|terms|, holds with probability at least 1 - 2n exp(-lambda^2 / 2):
/// a proof needs lambda = 8 at n = 4096 (lesson 08). lambda = 4 is a working tolerance, not a
/// proven one: errors of random sign add like a random walk, and the lessons' worst measured
/// errors stay near a hundredth of it. rtol 1e-6 pays for rounding the result itself. A missing
/// term, a stale element or a wrong index is off by far more. Code that rounds its inputs first
/// (tensor cores on TF32) adds what that costs: each product a b becomes a(1 + d1) b(1 + d2),
/// |d| <= u, which moves the sum by at most (2u + u^2) sum|terms|, whatever the order.
/// @param terms the number of terms added (e.g. K + 2 for alpha A B + beta C)
/// @param magnitude the largest sum|terms| over the checked elements
/// @param input_rounding u, the relative rounding applied to each input before it is multiplied
///        (0: the inputs as given; 2^-10 for TF32)
/// @return the tolerance
inline Tolerance sum_tolerance(double terms, double magnitude, double input_rounding = 0) {
  const double u = input_rounding;
  return Tolerance{1e-6, (4.0 * std::sqrt(terms) * 0x1p-24 + 2.0 * u + u * u) * magnitude};
}

/// @brief A dot product computed for a reference, with what its tolerance scales with.
struct Dot {
  double value = 0;      ///< sum_k a[k] b[k]
  double magnitude = 0;  ///< sum_k |a[k] b[k]|: the magnitude for lab::sum_tolerance
};

/// @brief A reference dot product of two float arrays, in double: every product is exact and
/// the sum is far more precise than any float code under test (an element of y = A x, or of
/// C = A B with B's column stored as a row). Four chains of sums: the host is not the bottleneck.
/// @param a first array
/// @param b second array
/// @param n elements of each
/// @return the sum and its magnitude
Dot dot_product(const float* a, const float* b, std::size_t n);

/// @param got values computed by the code under test
/// @param expected reference values (sizes must match, else the comparison fails with a note)
/// @param tol tolerances
/// @return the comparison
template <class T>
Comparison allclose(const std::vector<T>& got, const std::vector<T>& expected, Tolerance tol = {}) {
  if (got.size() != expected.size()) {
    Comparison c;
    c.ok = false;
    c.note = "size " + std::to_string(got.size()) + " != expected " +
             std::to_string(expected.size());
    return c;
  }
  return allclose(got.data(), expected.data(), got.size(), tol);
}

/// @brief The counter-based generator behind lab::fill_random: the same (seed, index) gives the
/// same value on host and device, so references can be computed without copying inputs back.
/// @param seed run seed
/// @param index element index
/// @return a value uniform in [0, 1)
#if defined(__CUDACC__)
__host__ __device__
#endif
inline float uniform01(std::uint64_t seed, std::uint64_t index) {
  // splitmix64 of the pair: good enough for test data, and cheap on both sides.
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull + index + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // 24 random bits
}

/// @param values host array to fill with uniform values in [lo, hi)
/// @param n number of elements
/// @param seed run seed (same sequence as lab::fill_random on the device)
/// @param lo lower bound
/// @param hi upper bound
void fill_random_host(float* values, std::size_t n, std::uint64_t seed, float lo = -1.0f,
                      float hi = 1.0f);

}  // namespace lab
