// Lesson 04, the harness: coalescing. Neighbouring threads should read neighbouring addresses.
//
// What it runs (see --list):
//   row_per_thread  the slow gemv: one thread per row of a row-major A. At each step the 32
//                   threads of a warp read 32 addresses one row (cols floats) apart.
//   col_major       fix 1, change the layout: the same thread-per-row loop over a column-major
//                   copy of A, so at each step a warp reads 32 neighbouring floats.
//   cublas          the library: cublasSgemv on the same row-major A.
//   exercise        your gemv (exercise.cu). Fix 2, change the mapping, is yours to write.
//   stride_1..32    the same read-modify-write of 2^26 floats, neighbouring threads `stride`
//                   floats apart; every element is touched exactly once whatever the stride.
//   offset_1        stride 1, but the whole array shifted by one float (misaligned by 4 bytes).
//
// Students read this file; they do not edit it. The checker compiles your exercise.cu against it.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/data.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/validate.hpp"

namespace {

// ---------------------------------------------------------------------------------------------
// The given kernels.

constexpr int kThreadsPerRowBlock = 128;  // thread-per-row kernels: 16384 rows = 128 blocks

// One thread per row of a row-major A. Thread r walks along row r; its neighbour in the warp walks
// row r + 1, cols floats further on. One warp-wide load touches 32 rows: 32 different sectors.
__global__ void gemv_row_per_thread(int rows, int cols, float alpha, const float* __restrict__ A,
                                    const float* __restrict__ x, float beta,
                                    float* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += a[c] * x[c];
  y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

// The same loop over a column-major A (At[c * rows + r] is element (r, c)): at each step the
// threads of a warp read 32 consecutive floats of one column, 128 bytes, four sectors. Nothing
// else changes: same threads, same loop, same arithmetic; only the address of element (r, c).
__global__ void gemv_col_major(int rows, int cols, float alpha, const float* __restrict__ At,
                               const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int c = 0; c < cols; ++c) sum += At[static_cast<std::size_t>(c) * rows + row] * x[c];
  y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

// Setup only (never timed): out = the transpose of the rows x cols row-major matrix in, that is,
// the column-major copy of it.
__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int rows,
                          int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols)
    out[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
}

// The stride sweep. View the n floats as a matrix of n / stride rows and `stride` columns, and let
// thread i take row i % rows_, column i / rows_: neighbouring threads are `stride` floats apart,
// and over the whole grid every element is read and written exactly once, so every stride does
// the same work on the same bytes. Only the order changes. (stride 1 is a plain a[i] update.)
// n and stride are powers of two, so % and / are a mask and a shift.
__global__ void strided_update(float* __restrict__ a, unsigned n, unsigned log2_stride,
                               unsigned log2_rows) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned row = i & ((1u << log2_rows) - 1);
  const unsigned col = i >> log2_rows;
  const unsigned j = (row << log2_stride) | col;
  a[j] = a[j] * 0.5f + 1.0f;
}

void launch_strided(float* a, unsigned log2_n, unsigned log2_stride, cudaStream_t s) {
  const unsigned n = 1u << log2_n;
  strided_update<<<(n + 255) / 256, 256, 0, s>>>(a, n, log2_stride, log2_n - log2_stride);
  LAB_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------------
// cuBLAS: it is column-major, so it sees our row-major rows x cols A as the column-major
// cols x rows matrix A^T (leading dimension cols), and y = alpha * (A^T)^T x + beta * y.

void cublas_check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + ": " + cublasGetStatusString(status));
}

class Cublas {
 public:
  Cublas() { cublas_check(cublasCreate(&handle_), "cublasCreate"); }
  ~Cublas() { cublasDestroy(handle_); }
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// A gemv problem on the device.

// y is allocated with a guard zone of kGuard extra floats (one 2 MiB page) after its end, filled
// with a canary value and checked to its last element after every validated or verified call: a
// write past y[rows - 1] is reported as a wrong result (an out-of-bounds write inside the
// allocation would never crash, so it must be looked for, and a stray index can land far past
// the end, so the whole zone is checked, not its first few floats).
constexpr std::size_t kGuard = (std::size_t{2} << 20) / sizeof(float);
constexpr float kCanary = -12345.5f;

struct Gemv {
  int rows = 0, cols = 0;
  float alpha = 1.0f, beta = 0.0f;
  lab::DeviceBuffer<float> A, At, x, y;  // At: the column-major copy, only when col_major runs
};

using Launch = std::function<void(const Gemv&, cudaStream_t)>;

Gemv make_gemv(int rows, int cols, float alpha, float beta, bool with_col_major) {
  Gemv g;
  g.rows = rows;
  g.cols = cols;
  g.alpha = alpha;
  g.beta = beta;
  g.A = lab::DeviceBuffer<float>(static_cast<std::size_t>(rows) * cols);
  if (with_col_major) g.At = lab::DeviceBuffer<float>(g.A.size());
  g.x = lab::DeviceBuffer<float>(cols);
  g.y = lab::DeviceBuffer<float>(static_cast<std::size_t>(rows) + kGuard);
  return g;
}

// Fresh inputs: A and x random from `seed`, and the column-major copy of A when there is one.
void fill_inputs(Gemv& g, std::uint64_t seed, cudaStream_t s) {
  lab::fill_random(g.A.data(), g.A.size(), seed, s);
  lab::fill_random(g.x.data(), g.x.size(), seed + 1, s);
  if (g.At.size() > 0) {
    const dim3 block(32, 8);
    const dim3 grid((g.cols + 31) / 32, (g.rows + 7) / 8);
    transpose<<<grid, block, 0, s>>>(g.A.data(), g.At.data(), g.rows, g.cols);
    LAB_CHECK_LAUNCH();
  }
}

// The starting y: random values when beta != 0; when beta == 0, NaN (y must not be read, and an
// element that is never written stays NaN and fails). The guard zone after it holds the canary.
std::vector<float> initial_y(const Gemv& g, std::uint64_t seed) {
  std::vector<float> y(static_cast<std::size_t>(g.rows) + kGuard, kCanary);
  if (g.beta != 0.0f) {
    lab::fill_random_host(y.data(), g.rows, seed + 2);
  } else {
    for (int r = 0; r < g.rows; ++r) y[r] = std::nanf("");
  }
  return y;
}

struct Reference {
  std::vector<float> y;     // alpha * A x + beta * y, computed in double, rounded once
  lab::Tolerance tolerance;
};

// The reference on the host, in double, from the device's own inputs (copied back).
//
// Tolerance: the float result of a sum of n products differs from the exact one by the rounding
// of every addition. The worst case grows like n * 2^-24 * sum|terms|, far too loose for n = 16384;
// the probabilistic bound (Higham and Mary, SIAM J. Sci. Comput. 2019) is
// lambda * sqrt(n) * 2^-24 * sum|terms|, and holds with overwhelming probability for lambda = 4
// whatever the summation order (a loop, float4 pieces, a shuffle tree). We use it with
// sum|terms| = |alpha| sum|a_rc x_c| + |beta y_r|, the largest over the rows, plus a few units
// in the last place of the result itself (rtol 1e-6). A missing column, a missing shuffle step or
// a stale row is off by far more than this.
lab::Tolerance gemv_tolerance(int cols, double largest) {
  return lab::Tolerance{1e-6, 4.0 * std::sqrt(static_cast<double>(cols) + 2.0) * 0x1p-24 * largest};
}

Reference reference(const Gemv& g, const std::vector<float>& y0, cudaStream_t s) {
  std::vector<float> A(g.A.size()), x(g.x.size());
  LAB_CHECK(cudaMemcpyAsync(A.data(), g.A.data(), g.A.bytes(), cudaMemcpyDeviceToHost, s));
  LAB_CHECK(cudaMemcpyAsync(x.data(), g.x.data(), g.x.bytes(), cudaMemcpyDeviceToHost, s));
  LAB_CHECK(cudaStreamSynchronize(s));
  Reference ref;
  ref.y.resize(g.rows);
  double largest = 0;
  for (int r = 0; r < g.rows; ++r) {
    const float* a = A.data() + static_cast<std::size_t>(r) * g.cols;
    double sum = 0, magnitude = 0;
    for (int c = 0; c < g.cols; ++c) {
      const double term = static_cast<double>(a[c]) * x[c];
      sum += term;
      magnitude += std::fabs(term);
    }
    const double old = g.beta == 0.0f ? 0.0 : static_cast<double>(g.beta) * y0[r];
    ref.y[r] = static_cast<float>(g.alpha * sum + old);
    largest = std::max(largest, std::fabs(g.alpha) * magnitude + std::fabs(old));
  }
  ref.tolerance = gemv_tolerance(g.cols, largest);
  return ref;
}

// Adds the guard zone's verdict to @p c: @p guard holds the kGuard floats after y[rows - 1].
void check_guard(lab::Comparison& c, const float* guard, int rows) {
  std::size_t hits = 0, first = 0;
  for (std::size_t i = 0; i < kGuard; ++i)
    if (std::memcmp(&guard[i], &kCanary, sizeof(float)) != 0 && hits++ == 0) first = i;
  if (hits == 0) return;
  const std::string values = c.ok ? "" : "; also " + c.summary();
  c.ok = false;
  c.mismatches += hits;
  c.note = "wrote past the end of y: y[" + std::to_string(rows + first) + "] and " +
           std::to_string(hits - 1) + " more past y[rows - 1] were changed" + values;
}

// Runs one variant once on freshly uploaded y and records whether it got the reference.
void validate(lab::Lesson& l, const std::string& name, const Launch& launch, const Gemv& g,
              const std::vector<float>& y0, const Reference& ref, const std::string& case_name) {
  cudaStream_t s = l.stream();
  LAB_CHECK(cudaMemcpyAsync(g.y.data(), y0.data(), g.y.bytes(), cudaMemcpyHostToDevice, s));
  launch(g, s);
  LAB_CHECK(cudaGetLastError());
  std::vector<float> got(g.y.size());
  LAB_CHECK(cudaMemcpyAsync(got.data(), g.y.data(), g.y.bytes(), cudaMemcpyDeviceToHost, s));
  LAB_CHECK(cudaStreamSynchronize(s));
  lab::Comparison c = lab::allclose(got.data(), ref.y.data(), ref.y.size(), ref.tolerance);
  check_guard(c, got.data() + g.rows, g.rows);
  l.check(name, case_name, c);
}

// ---------------------------------------------------------------------------------------------
// The exercise's timed calls. A gemv that recognised them (same pointers, same sizes, same A as
// the call before) could skip the work there and still pass every validated call; so every timed
// call gets new inputs and a poisoned output, and a random sample of them is checked like a
// validated call (lab::TimedCallChecks).

// The value lab::fill_random(p, n, seed) writes at p[i] (its default range, [-1, 1)). On the
// device bit for bit (the fill kernel rounds each operation separately, and so does this); on the
// host up to the host compiler's rounding choices, far inside every tolerance.
__host__ __device__ inline float random_input(std::uint64_t seed, std::uint64_t i) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(-1.0f, __fmul_rn(2.0f, lab::uniform01(seed, i)));
#else
  return -1.0f + 2.0f * lab::uniform01(seed, i);
#endif
}

// stats[0] += the number of elements of p[0 .. n) that are not, bit for bit, what
// lab::fill_random(p, n, seed) wrote there; stats[1] = the smallest such index.
__global__ void count_changed(const float* __restrict__ p, std::size_t n, std::uint64_t seed,
                              unsigned long long* stats) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    if (__float_as_uint(p[i]) != __float_as_uint(random_input(seed, i))) {
      atomicAdd(&stats[0], 1ull);
      atomicMin(&stats[1], static_cast<unsigned long long>(i));
    }
}

// "" if the read-only input p[0 .. n) still holds what lab::fill_random(p, n, seed) wrote, else
// what changed. The expected values are regenerated from the seed, so nothing the exercise could
// have written is trusted.
std::string changed_input(const char* name, const float* p, std::size_t n, std::uint64_t seed,
                          cudaStream_t s) {
  lab::DeviceBuffer<unsigned long long> stats(2);
  const unsigned long long init[2] = {0ull, ~0ull};
  LAB_CHECK(cudaMemcpyAsync(stats.data(), init, sizeof init, cudaMemcpyHostToDevice, s));
  count_changed<<<1024, 256, 0, s>>>(p, n, seed, stats.data());
  LAB_CHECK_LAUNCH();
  unsigned long long found[2];
  LAB_CHECK(cudaMemcpyAsync(found, stats.data(), sizeof found, cudaMemcpyDeviceToHost, s));
  LAB_CHECK(cudaStreamSynchronize(s));
  if (found[0] == 0) return "";
  return std::string(name) + " was written: " + std::to_string(found[0]) + " of its " +
         std::to_string(n) + " elements changed, the first at [" + std::to_string(found[1]) + "]";
}

// How the exercise's timed calls are prepared and checked.
//  * prepare, before every timed call: a fresh x (every y[r] depends on all of x, so no earlier
//    answer can be right) and a fresh starting y (NaN when beta == 0), both made from the call's
//    seed, which the harness draws where the exercise cannot see it. A stays as it is: it is
//    1 GiB, and a new x already changes every answer.
//  * verify, after the calls the harness picks once they are done: 128 rows picked at random
//    only now, against a double-precision reference made from A, x and y regenerated from their
//    seeds (never read back: the exercise could have written into them), and the whole guard
//    zone. About 5 ms of host time at 16384 columns: 2 M values of A, 2 M multiply-adds.
//  * check_inputs, after timing: A and the last call's x are still what the harness wrote.
class TimedCalls {
 public:
  TimedCalls(lab::Lesson& l, Gemv& g, std::uint64_t a_seed) : l_(l), g_(g), a_seed_(a_seed) {}

  lab::TimedCallChecks checks() {
    return {[this](cudaStream_t s, std::uint64_t seed) { prepare(s, seed); },
            [this](cudaStream_t s, const std::string& name) { verify(s, name); }};
  }

  void check_inputs(cudaStream_t s) {
    if (!prepared_) return;  // the exercise was not timed
    std::string a = changed_input("A", g_.A.data(), g_.A.size(), a_seed_, s);
    const std::string x = changed_input("x", g_.x.data(), g_.x.size(), seed_, s);
    if (!x.empty()) a += (a.empty() ? "" : "; ") + x;
    l_.check("exercise", "inputs unchanged after timing", a.empty(),
             a + " (A and x are read-only: see exercise.cuh)");
  }

 private:
  static constexpr int kRows = 128;

  void prepare(cudaStream_t s, std::uint64_t seed) {
    prepared_ = true;
    seed_ = seed;
    lab::fill_random(g_.x.data(), g_.x.size(), seed, s);
    if (g_.beta != 0.0f)
      lab::fill_random(g_.y.data(), g_.rows, seed + 1, s);
    else
      lab::poison(g_.y.data(), g_.rows * sizeof(float), s);
  }

  void verify(cudaStream_t s, const std::string& case_name) {
    if (failed_) return;  // one wrong call fails the rule; more would only repeat it in the table
    std::vector<float> got(g_.y.size());
    LAB_CHECK(cudaMemcpyAsync(got.data(), g_.y.data(), g_.y.bytes(), cudaMemcpyDeviceToHost, s));
    LAB_CHECK(cudaStreamSynchronize(s));
    std::vector<float> x(g_.cols);
    for (int c = 0; c < g_.cols; ++c) x[c] = random_input(seed_, c);
    std::uniform_int_distribution<int> any_row(0, g_.rows - 1);
    std::vector<std::size_t> rows(kRows);
    std::vector<float> picked(kRows), expected(kRows);
    double largest = 0;
    for (int k = 0; k < kRows; ++k) {
      const int r = any_row(pick_);
      const std::uint64_t first = static_cast<std::uint64_t>(r) * g_.cols;
      double sum = 0, magnitude = 0;
      for (int c = 0; c < g_.cols; ++c) {
        const double term = static_cast<double>(random_input(a_seed_, first + c)) * x[c];
        sum += term;
        magnitude += std::fabs(term);
      }
      const double old = g_.beta == 0.0f ? 0.0 : static_cast<double>(g_.beta) * random_input(seed_ + 1, r);
      rows[k] = r;
      picked[k] = got[r];
      expected[k] = static_cast<float>(g_.alpha * sum + old);
      largest = std::max(largest, std::fabs(g_.alpha) * magnitude + std::fabs(old));
    }
    lab::Comparison c = lab::allclose(picked.data(), expected.data(), kRows,
                                      gemv_tolerance(g_.cols, largest));
    for (lab::Mismatch& m : c.first) m.index = rows[m.index];  // report y's own index
    check_guard(c, got.data() + g_.rows, g_.rows);
    l_.check("exercise", case_name, c);
    failed_ = !c.ok;
  }

  lab::Lesson& l_;
  Gemv& g_;
  const std::uint64_t a_seed_;  // A as fill_inputs made it
  std::uint64_t seed_ = 0;      // the last timed call's: x from it, the starting y from seed_ + 1
  bool prepared_ = false;
  bool failed_ = false;
  std::mt19937_64 pick_{std::random_device{}()};  // the harness's own: which rows to check
};

std::string dims(int rows, int cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("04-coalescing", "Coalescing: neighbouring threads, neighbouring addresses");
  lesson.declare("row_per_thread", lab::Role::Baseline,
                 "one thread per row of row-major A: a warp reads 32 addresses a row apart");
  lesson.declare("col_major", lab::Role::Baseline,
                 "fix 1, the layout: thread per row over a column-major copy of A");
  lesson.declare("cublas", lab::Role::Reference, "cublasSgemv on the row-major A (CUBLAS_OP_T)");
  lesson.declare("exercise", lab::Role::Exercise, "your gemv (exercise.cu)");
  const int strides[] = {1, 2, 4, 8, 16, 32};
  for (int s : strides)
    lesson.declare("stride_" + std::to_string(s), lab::Role::Baseline,
                   "read-modify-write of every float once, neighbouring threads " +
                       std::to_string(s) + (s == 1 ? " float" : " floats") + " apart");
  lesson.declare("offset_1", lab::Role::Baseline,
                 "stride 1 on an array that starts 4 bytes past a 32-byte sector boundary");

  long long rows = 0, cols = 0;
  lesson.option("--rows", &rows, "rows of A at the timing size (0: 16384, or 2048 with --quick)");
  lesson.option("--cols", &cols, "columns of A at the timing size (0: 16384, or 2048 with --quick)");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    cudaStream_t stream = l.stream();
    if (rows <= 0) rows = l.quick() ? 2048 : 16384;
    if (cols <= 0) cols = l.quick() ? 2048 : 16384;
    if (rows > (1 << 30) || cols > (1 << 30)) throw std::invalid_argument("--rows/--cols too large");

    // The gemv variants and how each one is launched.
    std::unique_ptr<Cublas> cublas;
    if (l.selected("cublas")) cublas = std::make_unique<Cublas>();
    std::vector<std::pair<std::string, Launch>> variants;
    variants.emplace_back("row_per_thread", [](const Gemv& g, cudaStream_t s) {
      gemv_row_per_thread<<<(g.rows + kThreadsPerRowBlock - 1) / kThreadsPerRowBlock,
                            kThreadsPerRowBlock, 0, s>>>(g.rows, g.cols, g.alpha, g.A.data(),
                                                         g.x.data(), g.beta, g.y.data());
      LAB_CHECK_LAUNCH();
    });
    variants.emplace_back("col_major", [](const Gemv& g, cudaStream_t s) {
      gemv_col_major<<<(g.rows + kThreadsPerRowBlock - 1) / kThreadsPerRowBlock,
                       kThreadsPerRowBlock, 0, s>>>(g.rows, g.cols, g.alpha, g.At.data(),
                                                    g.x.data(), g.beta, g.y.data());
      LAB_CHECK_LAUNCH();
    });
    variants.emplace_back("cublas", [&cublas](const Gemv& g, cudaStream_t s) {
      cublas_check(cublasSetStream(cublas->get(), s), "cublasSetStream");
      cublas_check(cublasSgemv(cublas->get(), CUBLAS_OP_T, g.cols, g.rows, &g.alpha, g.A.data(),
                               g.cols, g.x.data(), 1, &g.beta, g.y.data(), 1),
                   "cublasSgemv");
    });
    variants.emplace_back("exercise", [](const Gemv& g, cudaStream_t s) {
      exercise::gemv(g.rows, g.cols, g.alpha, g.A.data(), g.x.data(), g.beta, g.y.data(), s);
    });
    const bool col_major = l.selected("col_major");

    // 1. Validation at sizes that are not multiples of 32 (nor of 4, for float4 code), with fresh
    //    inputs for every case, beta == 0 (y write-only, NaN on entry) among them.
    struct Case { int rows, cols; float alpha, beta; };
    const Case cases[] = {{1000, 777, 1.25f, -0.5f}, {33, 4097, 0.75f, 0.0f},
                          {4097, 33, -1.5f, 0.25f}, {1, 1, 2.0f, 0.0f}};
    if (!l.profiling()) {
      std::uint64_t seed = l.seed() * 8 + 1;
      for (const Case& k : cases) {
        Gemv g = make_gemv(k.rows, k.cols, k.alpha, k.beta, col_major);
        fill_inputs(g, seed, stream);
        const std::vector<float> y0 = initial_y(g, seed);
        const Reference ref = reference(g, y0, stream);
        const std::string name = dims(k.rows, k.cols) + (k.beta == 0.0f ? " beta=0" : "");
        for (const auto& [variant, launch] : variants)
          if (l.selected(variant)) validate(l, variant, launch, g, y0, ref, name);
        seed += 4;
      }
    }

    // 2. Timing at the big size. bytes: A once, x once, y read (beta != 0) and written.
    //    Cold mode flushes L2 before every launch, so x really comes from DRAM once. The
    //    exercise's timed calls are checked too (TimedCalls above): each gets a new x and y, some
    //    are compared with a reference, and afterwards A and x must be as the harness wrote them.
    const int R = static_cast<int>(rows), C = static_cast<int>(cols);
    bool any_gemv = false;
    for (const auto& v : variants) any_gemv = any_gemv || l.selected(v.first);
    if (any_gemv) {
      // Hot and graph modes launch several calls per sample with no prepare() between them: with
      // beta != 0 each would update y once more. There the timing problem has beta == 0 (y
      // write-only), so that every call leaves the same y; cold mode (the default and the
      // checker's, one call per sample) times beta == 0.5.
      const float beta = l.result().mode == lab::Mode::Cold ? 0.5f : 0.0f;
      Gemv g = make_gemv(R, C, 1.5f, beta, col_major);
      const double a_bytes = 4.0 * R * C;
      l.size("A " + dims(R, C) + " float32 row-major (" + fixed(a_bytes / (1 << 30), 2) +
             " GiB), x " + std::to_string(C) + ", y " + std::to_string(R));
      fill_inputs(g, l.seed() * 8 + 100, stream);
      const std::vector<float> y0 = initial_y(g, l.seed() * 8 + 100);
      LAB_CHECK(cudaMemcpyAsync(g.y.data(), y0.data(), g.y.bytes(), cudaMemcpyHostToDevice, stream));
      const lab::Work work{a_bytes + 4.0 * C + (beta != 0.0f ? 2 : 1) * 4.0 * R, 2.0 * R * C};
      TimedCalls timed(l, g, l.seed() * 8 + 100);
      for (const auto& [variant, launch] : variants) {
        const Launch& run = launch;
        const Gemv& problem = g;
        l.measure(variant, work, [&run, &problem](cudaStream_t s) { run(problem, s); }, {},
                  variant == "exercise" ? timed.checks() : lab::TimedCallChecks{});
      }
      if (!l.profiling()) timed.check_inputs(stream);

      // 3. Validation again, after timing, on the same buffers with new contents: a variant
      //    that remembers its last answer, or only works the first time, fails here.
      if (!l.profiling()) {
        g.beta = 0.0f;  // y write-only: NaN on entry
        fill_inputs(g, l.seed() * 8 + 200, stream);
        const std::vector<float> y1 = initial_y(g, l.seed() * 8 + 200);
        const Reference ref = reference(g, y1, stream);
        for (const auto& [variant, launch] : variants)
          if (l.selected(variant))
            validate(l, variant, launch, g, y1, ref, dims(R, C) + " after timing");
      }
    }

    // 4. The stride sweep: 2^26 floats (256 MiB) read and written in place, 2^22 with --quick.
    const unsigned log2_n = l.quick() ? 22 : 26;
    const std::size_t n = std::size_t{1} << log2_n;
    bool any_sweep = l.selected("offset_1");
    for (int s : strides) any_sweep = any_sweep || l.selected("stride_" + std::to_string(s));
    if (!any_sweep) return;

    // Correctness of the sweep kernel itself: every element updated exactly once.
    if (!l.profiling()) {
      const unsigned log2_small = 16;
      const std::size_t small = std::size_t{1} << log2_small;
      lab::DeviceBuffer<float> buf(small + 32);
      std::vector<float> in(small + 32), out(small + 32);
      lab::fill_random_host(in.data(), in.size(), l.seed() + 7);
      auto check_sweep = [&](const std::string& name, int offset, unsigned log2_stride) {
        if (!l.selected(name)) return;
        LAB_CHECK(cudaMemcpyAsync(buf.data(), in.data(), buf.bytes(), cudaMemcpyHostToDevice, stream));
        launch_strided(buf.data() + offset, log2_small, log2_stride, stream);
        LAB_CHECK(cudaMemcpyAsync(out.data(), buf.data(), buf.bytes(), cudaMemcpyDeviceToHost, stream));
        LAB_CHECK(cudaStreamSynchronize(stream));
        std::vector<float> expected(in);
        for (std::size_t i = 0; i < small; ++i) expected[offset + i] = in[offset + i] * 0.5f + 1.0f;
        l.check(name, "2^16 floats", lab::allclose(out, expected, lab::Tolerance{0, 0}));
      };
      for (int s : strides) check_sweep("stride_" + std::to_string(s), 0, __builtin_ctz(s));
      check_sweep("offset_1", 1, 0);
    }

    lab::DeviceBuffer<float> sweep(n + 32);
    lab::fill_random(sweep.data(), sweep.size(), l.seed() + 300, stream);
    l.size("stride sweep: " + std::to_string(n) + " floats (" + std::to_string(4 * n >> 20) +
           " MiB), each read and written once");
    const lab::Work sweep_work{2.0 * 4.0 * n, 0.0};
    std::vector<std::pair<std::string, const lab::Measurement*>> sweep_times;
    for (int s : strides) {
      const std::string name = "stride_" + std::to_string(s);
      const unsigned log2_stride = __builtin_ctz(s);
      sweep_times.emplace_back(name, l.measure(name, sweep_work, [&](cudaStream_t st) {
        launch_strided(sweep.data(), log2_n, log2_stride, st);
      }));
    }
    sweep_times.emplace_back("offset_1", l.measure("offset_1", sweep_work, [&](cudaStream_t st) {
      launch_strided(sweep.data() + 1, log2_n, 0, st);
    }));

    // Each stride as a fraction of stride 1 (time of stride 1 / time of stride s).
    const lab::Measurement* unit = sweep_times.front().second;
    if (unit) {
      std::string line = "stride sweep, speed as a fraction of stride 1:";
      for (const auto& [name, m] : sweep_times) {
        if (!m || name == "stride_1") continue;
        const lab::Stats& a = unit->gpu_ms;
        const lab::Stats& b = m->gpu_ms;
        l.metric(name + "_vs_stride_1", a.median / b.median, a.q1 / b.q3, a.q3 / b.q1);
        line += " " + name.substr(name.find('_') + 1) + (name[0] == 'o' ? " (offset)" : "") +
                ": " + fixed(a.median / b.median, 2);
      }
      l.note(line);
    }
  });
}
