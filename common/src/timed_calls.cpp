// lab::crossings, lab::lines_and_elements and lab::product_at: the elements of a matrix product
// a check looks at, and their exact values (lab/timed_calls.hpp).
#include "lab/timed_calls.hpp"

#include <algorithm>

namespace lab {

std::vector<std::size_t> crossings(const std::vector<std::size_t>& rows,
                                   const std::vector<std::size_t>& cols, std::size_t N) {
  std::vector<std::size_t> at;
  at.reserve(rows.size() * cols.size());
  for (const std::size_t i : rows)
    for (const std::size_t j : cols) at.push_back(i * N + j);
  return at;
}

std::vector<std::size_t> lines_and_elements(std::uint64_t seed, std::size_t M, std::size_t N,
                                            int random_lines, int random_elements) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> any_row(0, M - 1), any_col(0, N - 1);
  std::vector<std::size_t> rows = {0, M - 1}, cols = {0, N - 1};
  for (int l = 0; l < random_lines; ++l) rows.push_back(any_row(rng));
  for (int l = 0; l < random_lines; ++l) cols.push_back(any_col(rng));
  std::vector<std::size_t> at;
  at.reserve((rows.size() * N) + (cols.size() * M) + random_elements);
  for (const std::size_t i : rows)
    for (std::size_t j = 0; j < N; ++j) at.push_back(i * N + j);
  for (const std::size_t j : cols)
    for (std::size_t i = 0; i < M; ++i) at.push_back(i * N + j);
  for (int e = 0; e < random_elements; ++e) {
    const std::size_t i = any_row(rng);  // the row first: two draws in a known order
    at.push_back(i * N + any_col(rng));
  }
  return at;
}

std::vector<Dot> product_at(const std::vector<std::size_t>& at, int N, int K,
                            const std::function<float(std::uint64_t)>& a_at,
                            const std::function<float(std::uint64_t)>& b_at) {
  const std::size_t n = N, k_len = K;
  std::vector<std::size_t> rows, cols;  // the distinct ones, sorted
  for (const std::size_t e : at) {
    rows.push_back(e / n);
    cols.push_back(e % n);
  }
  for (std::vector<std::size_t>* v : {&rows, &cols}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  // Rows of A, and columns of B stored as rows, so that each element is one contiguous dot.
  std::vector<float> a(rows.size() * k_len), bt(cols.size() * k_len);
  for (std::size_t p = 0; p < rows.size(); ++p)
    for (std::size_t k = 0; k < k_len; ++k) a[p * k_len + k] = a_at(rows[p] * k_len + k);
  for (std::size_t q = 0; q < cols.size(); ++q)
    for (std::size_t k = 0; k < k_len; ++k) bt[q * k_len + k] = b_at(k * n + cols[q]);
  auto slot = [](const std::vector<std::size_t>& v, std::size_t x) {
    return static_cast<std::size_t>(std::lower_bound(v.begin(), v.end(), x) - v.begin());
  };
  std::vector<Dot> out;
  out.reserve(at.size());
  for (const std::size_t e : at)
    out.push_back(dot_product(a.data() + slot(rows, e / n) * k_len,
                              bt.data() + slot(cols, e % n) * k_len, k_len));
  return out;
}

}  // namespace lab
