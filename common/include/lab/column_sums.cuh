/// @file column_sums.cuh
/// @brief lab::column_sums: a reference's column sums and sums of squares, in double, over a
/// row-major table regenerated on the device from its generator (never read back: the code under
/// test could have written into it), for a check of column statistics (mean, spread) at every
/// call of a table far too large to add up on the host each time; lab::standardized_square_sums,
/// the scores of a standardization at the rows a check looks at. Device code: include it from a
/// .cu file.
///
/// @code
/// const Table table{seed, cols};  // the generator the fill used
/// const lab::ColumnSums sums = lab::column_sums(rows, cols, table, stream);
/// const double mean0 = sums.sum[0] / rows;
/// const lab::ColumnStats stats = lab::column_stats(sums, rows);  // mean and 1/std per column
/// const std::vector<double> score = lab::standardized_square_sums(at, cols, table, stats);
/// @endcode
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace lab {

/// @brief Each column's sum and sum of squares, in double.
struct ColumnSums {
  std::vector<double> sum;      ///< sum over the rows of x[r][c], per column c
  std::vector<double> squares;  ///< sum over the rows of x[r][c]^2, per column c
};

/// @brief sum[c] and squares[c] += the sum of x[r][c] and of x[r][c]^2 over rows t / cols,
/// t / cols + row_step, ... for thread t's column t % cols. Launched by lab::column_sums.
/// @param rows rows of the table
/// @param cols columns of the table
/// @param row_step rows apart that one thread adds up
/// @param value x at a row-major index r * cols + c
/// @param sum cols doubles, zero on entry
/// @param squares cols doubles, zero on entry
template <class Value>
__global__ void column_sums_kernel(int rows, int cols, int row_step, Value value, double* sum,
                                   double* squares) {
  const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (t >= static_cast<long long>(row_step) * cols) return;
  const int c = static_cast<int>(t % cols);
  double s = 0, q = 0;
  for (long long r = t / cols; r < rows; r += row_step) {
    const double v = value(static_cast<std::uint64_t>(r * cols + c));
    s += v;
    q += v * v;
  }
  atomicAdd(&sum[c], s);
  atomicAdd(&squares[c], q);
}

/// @brief The column sums of a table made by @p value, computed on the device (waits for
/// @p stream): about 2^17 threads, each adding up one column over every row_step-th row.
/// @param rows rows of the table (>= 1)
/// @param cols columns of the table (>= 1)
/// @param value a functor with a __host__ __device__ operator()(std::uint64_t) const returning
///        the table's element at a row-major index (the generator its fill used)
/// @param stream where to run it
/// @return each column's sum and sum of squares
template <class Value>
ColumnSums column_sums(int rows, int cols, const Value& value, cudaStream_t stream) {
  constexpr int kThreads = 256;
  DeviceBuffer<double> sums(2 * static_cast<std::size_t>(cols));
  LAB_CHECK(cudaMemsetAsync(sums.data(), 0, sums.bytes(), stream));
  const int row_step = std::max(1, std::min(rows, (1 << 17) / cols));
  const long long threads = static_cast<long long>(row_step) * cols;
  column_sums_kernel<<<static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0,
                       stream>>>(rows, cols, row_step, value, sums.data(), sums.data() + cols);
  LAB_CHECK_LAUNCH();
  const std::vector<double> both = sums.download(stream);
  return {std::vector<double>(both.begin(), both.begin() + cols),
          std::vector<double>(both.begin() + cols, both.end())};
}

/// @brief Each column's mean and 1 / standard deviation, in double: what a standardization
/// z = (x - mean) * inv_std of the columns uses.
struct ColumnStats {
  std::vector<double> mean;     ///< sum[c] / rows, per column c
  std::vector<double> inv_std;  ///< 1 / sqrt(squares[c] / rows - mean[c]^2), per column c
};

/// @brief The columns' statistics from their sums: the population spread (divided by rows, not
/// rows - 1), each 1 / std in double from sums of squares in double.
/// @param sums what lab::column_sums gave
/// @param rows the rows it added up (>= 1)
/// @return each column's mean and 1 / std (infinite for a constant column)
inline ColumnStats column_stats(const ColumnSums& sums, int rows) {
  ColumnStats stats;
  for (std::size_t c = 0; c < sums.sum.size(); ++c) {
    const double mean = sums.sum[c] / rows;
    stats.mean.push_back(mean);
    stats.inv_std.push_back(1.0 / std::sqrt(sums.squares[c] / rows - mean * mean));
  }
  return stats;
}

/// @brief Each listed row's sum of squared standardized values, in double, from the table's
/// generator on the host (a row's score after a standardization z = (x - mean) * inv_std of the
/// columns): the reference at the rows a check looks at, where the whole table is too large.
/// @param rows the rows (from Look::indices)
/// @param cols columns of the table
/// @param value x at a row-major index r * cols + c (the generator its fill used)
/// @param stats each column's mean and 1 / std (lab::column_stats)
/// @return for each listed row r, in order, the sum over c of ((x[r][c] - mean[c]) inv_std[c])^2
template <class Value>
std::vector<double> standardized_square_sums(const std::vector<std::size_t>& rows, int cols,
                                             const Value& value, const ColumnStats& stats) {
  std::vector<double> out;
  out.reserve(rows.size());
  for (const std::size_t r : rows) {
    double sum = 0;
    for (int c = 0; c < cols; ++c) {
      const double z = (value(r * cols + c) - stats.mean[c]) * stats.inv_std[c];
      sum += z * z;
    }
    out.push_back(sum);
  }
  return out;
}

}  // namespace lab
