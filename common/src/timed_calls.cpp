// lab::sample_product: the spot check of a matrix product's timed call (lab/timed_calls.hpp).
#include "lab/timed_calls.hpp"

#include "lab/check.hpp"

namespace lab {

ProductSample sample_product(const float* C, int M, int N, int K,
                             const std::function<float(std::uint64_t)>& a_at,
                             const std::function<float(std::uint64_t)>& b_at, int picks,
                             std::mt19937_64& pick, cudaStream_t stream) {
  std::uniform_int_distribution<int> any_row(0, M - 1), any_col(0, N - 1);
  std::vector<int> rows(picks), cols(picks);
  for (int& r : rows) r = any_row(pick);
  for (int& c : cols) c = any_col(pick);
  const std::size_t n = N, k_len = K;
  std::vector<float> got_rows(picks * n);
  for (int p = 0; p < picks; ++p)
    LAB_CHECK(cudaMemcpyAsync(got_rows.data() + p * n, C + rows[p] * n, n * sizeof(float),
                              cudaMemcpyDeviceToHost, stream));
  LAB_CHECK(cudaStreamSynchronize(stream));
  // Rows of A, and columns of B stored as rows, so that each element is one contiguous dot.
  std::vector<float> a(picks * k_len), bt(picks * k_len);
  for (int p = 0; p < picks; ++p)
    for (std::size_t k = 0; k < k_len; ++k) {
      a[p * k_len + k] = a_at(static_cast<std::uint64_t>(rows[p]) * K + k);
      bt[p * k_len + k] = b_at(static_cast<std::uint64_t>(k) * N + cols[p]);
    }
  ProductSample out;
  for (int p = 0; p < picks; ++p)
    for (int q = 0; q < picks; ++q) {
      out.index.push_back(rows[p] * n + cols[q]);
      out.got.push_back(got_rows[p * n + cols[q]]);
      out.exact.push_back(dot_product(a.data() + p * k_len, bt.data() + q * k_len, k_len));
    }
  return out;
}

}  // namespace lab
