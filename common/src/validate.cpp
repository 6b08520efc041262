#include "lab/validate.hpp"

#include <cmath>
#include <sstream>

namespace lab {
namespace {

template <class T>
Comparison compare(const T* got, const T* expected, std::size_t n, Tolerance tol,
                   std::size_t max_report) {
  Comparison c;
  c.count = n;
  double diff_sq = 0, ref_sq = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]);
    const double e = static_cast<double>(expected[i]);
    bool close;
    if (std::isnan(g) || std::isnan(e)) {
      close = false;  // NaN never passes, not even against a NaN reference
    } else if (std::isinf(g) || std::isinf(e)) {
      close = (g == e);  // an infinity matches only the same infinity
    } else {
      const double err = std::fabs(g - e);
      close = err <= tol.atol + tol.rtol * std::fabs(e);
      c.max_abs_error = std::max(c.max_abs_error, err);
      if (e != 0) c.max_rel_error = std::max(c.max_rel_error, err / std::fabs(e));
      diff_sq += (g - e) * (g - e);
      ref_sq += e * e;
    }
    if (!close) {
      ++c.mismatches;
      if (c.first.size() < max_report) c.first.push_back({i, g, e});
    }
  }
  c.rel_l2_error = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : std::sqrt(diff_sq);
  c.ok = c.mismatches == 0;
  return c;
}

}  // namespace

Comparison allclose(const float* got, const float* expected, std::size_t n, Tolerance tol,
                    std::size_t max_report) {
  return compare(got, expected, n, tol, max_report);
}

Comparison allclose(const double* got, const double* expected, std::size_t n, Tolerance tol,
                    std::size_t max_report) {
  return compare(got, expected, n, tol, max_report);
}

std::string Comparison::summary() const {
  if (!note.empty()) return note;
  if (ok) return "ok";
  std::ostringstream out;
  out << mismatches << " of " << count << " elements differ";
  const char* sep = "; first at ";
  for (const Mismatch& m : first) {
    out << sep << "[" << m.index << "]: got " << m.got << ", expected " << m.expected;
    sep = ", ";
  }
  return out.str();
}

Dot dot_product(const float* a, const float* b, std::size_t n) {
  double sum[4] = {0, 0, 0, 0}, magnitude[4] = {0, 0, 0, 0};
  std::size_t k = 0;
  for (; k + 4 <= n; k += 4)
    for (int u = 0; u < 4; ++u) {
      const double t = static_cast<double>(a[k + u]) * b[k + u];
      sum[u] += t;
      magnitude[u] += std::fabs(t);
    }
  for (; k < n; ++k) {
    const double t = static_cast<double>(a[k]) * b[k];
    sum[0] += t;
    magnitude[0] += std::fabs(t);
  }
  return {(sum[0] + sum[1]) + (sum[2] + sum[3]),
          (magnitude[0] + magnitude[1]) + (magnitude[2] + magnitude[3])};
}

void fill_random_host(float* values, std::size_t n, std::uint64_t seed, float lo, float hi) {
  // The same expression as lab::random_input on the host (data.hpp).
  for (std::size_t i = 0; i < n; ++i) values[i] = lo + (hi - lo) * uniform01(seed, i);
}

}  // namespace lab
