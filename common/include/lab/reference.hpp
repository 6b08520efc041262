/// @file reference.hpp
/// @brief A check's reference values, built on the host from inputs regenerated from their seed
/// (never read back): the wanted value at each checked place (lab::values_at), the exact product
/// of two lab::fill_random matrices there (lab::random_product_at), a device-made reference
/// confirmed on the host at spread places (lab::confirm_on_host), and those products rounded to
/// float with the magnitude their tolerance scales with (lab::rounded, for lab::sum_tolerance),
/// a BLAS update alpha S + beta C0 (lab::alpha_beta_at), a gemv's y = alpha A x + beta y0 at
/// checked rows (lab::random_gemv_at), and a transpose's output (lab::transposed).
/// Header-only, so that the host arithmetic is compiled with the harness that checks with it.
///
/// @code
/// const std::vector<std::size_t> at = look.indices(rows, 4096);
/// const lab::Rounded y = lab::rounded(lab::random_product_at(at, 1, cols, seed, seed + 1));
/// look.compare(p.y, at, y.values, lab::sum_tolerance(cols + 2.0, y.magnitude));
/// @endcode
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "lab/data.hpp"
#include "lab/timed_calls.hpp"
#include "lab/validate.hpp"

namespace lab {

/// @brief The reference at each checked place.
/// @param at the places (from Look::indices or a lesson's own list); empty: every place below
///        @p n, in order (Look::compare_host's whole output)
/// @param n the places of the whole output
/// @param value the wanted value at a place
/// @return value(at[k]) for each k, or value(i) for each i < n when @p at is empty
template <class Value>
auto values_at(const std::vector<std::size_t>& at, std::size_t n, const Value& value) {
  std::vector<std::decay_t<decltype(value(std::size_t{}))>> out;
  out.reserve(at.empty() ? n : at.size());
  if (at.empty())
    for (std::size_t i = 0; i < n; ++i) out.push_back(value(i));
  for (const std::size_t i : at) out.push_back(value(i));
  return out;
}

/// @brief A whole output's reference made on the device (the lesson's own kernel replayed over
/// an output too large for the host to compute at every check) is only as right as that replay:
/// this puts the host's value at every (n / @p spread)th place and at the last @p tail, so that a
/// replay that differs from the host fails the comparison there.
/// @param want the device's reference, one value for every place of the output
/// @param spread about how many places are spread over the output (at least one apart)
/// @param tail how many places at its end, all of them
/// @param value the host's value at a place
template <class T, class Value>
void confirm_on_host(std::vector<T>& want, std::size_t spread, std::size_t tail, const Value& value) {
  const std::size_t n = want.size();
  const std::size_t stride = std::max<std::size_t>(1, n / spread);
  for (std::size_t i = 0; i < n; i += stride) want[i] = value(i);
  for (std::size_t i = n > tail ? n - tail : 0; i < n; ++i) want[i] = value(i);
}

/// @brief lab::product_at for inputs that lab::fill_random made: A (M x K) from @p a_seed, B
/// (K x N) from @p b_seed, both in [-1, 1), regenerated here with lab::random_input.
/// @param at C's elements, as row-major indices i * N + j
/// @param N columns of B and C
/// @param K columns of A, rows of B
/// @param a_seed A's fill seed
/// @param b_seed B's fill seed
/// @return for each element, the exact sum_k A[i][k] B[k][j] and its magnitude
inline std::vector<Dot> random_product_at(const std::vector<std::size_t>& at, int N, int K,
                                          std::uint64_t a_seed, std::uint64_t b_seed) {
  return product_at(
      at, N, K, [a_seed](std::uint64_t i) { return random_input(a_seed, i); },
      [b_seed](std::uint64_t i) { return random_input(b_seed, i); });
}

/// @brief Exact sums rounded to the float a right answer is compared with.
struct Rounded {
  std::vector<float> values;  ///< each sum, rounded to float
  double magnitude = 0;       ///< the largest Dot::magnitude among them (for lab::sum_tolerance)
};

/// @param sums exact sums and their magnitudes (lab::product_at, lab::dot_product)
/// @return their values rounded to float, and the largest magnitude
inline Rounded rounded(const std::vector<Dot>& sums) {
  Rounded r;
  r.values.reserve(sums.size());
  for (const Dot& d : sums) {
    r.values.push_back(static_cast<float>(d.value));
    r.magnitude = std::max(r.magnitude, d.magnitude);
  }
  return r;
}

/// @brief The reference of a BLAS update, alpha S + beta C0, at some places of an output: S the
/// exact sums there, C0 the output's starting values, which lab::fill_random(@p c0_seed) wrote
/// and are regenerated here (lab::random_input), read only when beta != 0 (beta == 0: the output
/// is write-only and starts as poison). Compare with lab::sum_tolerance(terms + 2, magnitude):
/// the sums' terms, alpha's rounding and the beta term.
/// @param sums the exact sums at each place (lab::random_product_at, lab::dot_product)
/// @param at the places, as indices into the output (where C0 is regenerated)
/// @param alpha the update's alpha
/// @param beta the update's beta
/// @param c0_seed the starting values' fill seed (unused when beta == 0)
/// @return each value rounded to float, and the magnitude: the largest
///         |alpha| S.magnitude + |beta C0| over the places
inline Rounded alpha_beta_at(const std::vector<Dot>& sums, const std::vector<std::size_t>& at,
                             float alpha, float beta, std::uint64_t c0_seed) {
  Rounded r;
  r.values.reserve(sums.size());
  for (std::size_t e = 0; e < sums.size(); ++e) {
    const double old =
        beta == 0.0f ? 0.0 : static_cast<double>(beta) * random_input(c0_seed, at[e]);
    r.values.push_back(static_cast<float>(alpha * sums[e].value + old));
    r.magnitude = std::max(r.magnitude, std::fabs(alpha) * sums[e].magnitude + std::fabs(old));
  }
  return r;
}

/// @brief The reference of a gemv y = alpha A x + beta y0 at some rows, for inputs that
/// lab::fill_random made: A (rows x cols, row-major) from @p a_seed, x from @p x_seed, the
/// starting y from @p y_seed (read only when beta != 0), regenerated here a row of A at a time
/// (never all of A on the host), each row's dot product exact in double (lab::dot_product).
/// A float gemv differs from it by the rounding of every addition, in whatever order it adds
/// (a loop, float4 pieces, a shuffle tree): compare with lab::sum_tolerance(cols + 2, magnitude);
/// a missing column, a missing shuffle step or a stale row is off by far more.
/// @param rows the rows of y checked (from Look::indices)
/// @param cols columns of A, elements of x
/// @param alpha the gemv's alpha
/// @param a_seed A's fill seed
/// @param x_seed x's fill seed
/// @param beta the gemv's beta (0: y is write-only, y_seed unused)
/// @param y_seed the starting y's fill seed
/// @return y at each row, rounded to float, and the magnitude: the largest
///         |alpha| sum_c |A[r][c] x[c]| + |beta y0[r]| over the rows
inline Rounded random_gemv_at(const std::vector<std::size_t>& rows, int cols, float alpha,
                              std::uint64_t a_seed, std::uint64_t x_seed, float beta = 0.0f,
                              std::uint64_t y_seed = 0) {
  std::vector<float> x(cols), a(cols);
  fill_random_host(x.data(), x.size(), x_seed);
  std::vector<Dot> ax;
  ax.reserve(rows.size());
  for (const std::size_t r : rows) {
    for (int k = 0; k < cols; ++k) a[k] = random_input(a_seed, r * cols + k);
    ax.push_back(dot_product(a.data(), x.data(), a.size()));
  }
  return alpha_beta_at(ax, rows, alpha, beta, y_seed);
}

/// @brief The reference of a transpose, out = in^T: element @p o of out (cols x rows, row-major)
/// is in[o % rows][o / rows] (in: rows x cols, row-major). A transpose moves bits and computes
/// nothing, so out must match it exactly (lab::Tolerance{0.0, 0.0}).
/// @param in in's value at a row-major index, e.g. lab::RandomInput{seed} for a lab::fill_random
///        input (regenerated, never read back: the code under test could have written into it)
/// @param rows rows of in
/// @param cols columns of in
/// @return out's value at an index, for Look::compare_each or lab::values_at
template <class In>
auto transposed(In in, std::uint64_t rows, std::uint64_t cols) {
  return [=](std::uint64_t o) { return in((o % rows) * cols + o / rows); };
}

}  // namespace lab
