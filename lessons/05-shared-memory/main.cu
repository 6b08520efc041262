// Lesson 05, the harness: shared memory. When it does not help, and when it does.
//
// What it runs (see --list), in three parts:
//
//   A. gemv, y = A x, A row-major (lesson 04's warp per row):
//      gemv_global      x read from global memory, where L1 and L2 already serve it
//      gemv_smem_x      x staged through shared memory, chunk by chunk, two barriers per chunk
//   B. transpose, out = in^T (every byte read once and written once: a copy that reorders):
//      transpose_naive  reads coalesced, writes a column: every warp's store touches 32 rows
//      transpose_tiled  a 32 x 32 tile through shared memory: both global sides coalesced, but
//                       the tile is read down a column: 32-way shared-memory bank conflicts
//      exercise_transpose  your transpose (exercise.cu)
//   C. SGEMM, C = alpha A B + beta C, all row-major:
//      sgemm_naive      a thread per element of C, threadIdx.x along the rows of C
//      sgemm_coalesced  the same loop, threadIdx.x along the columns of C
//      cublas           cublasSgemm, true float32 (pedantic math: no TF32)
//      exercise_sgemm   your SGEMM (exercise.cu)
//
// Students read this file; they do not edit it. The checker compiles your exercise.cu against it.
#include "exercise.cuh"
#include "lab/cublas.hpp"
#include "lab/lesson.cuh"

namespace {

// Every output is a lab::GuardedBuffer: its guard zone is armed before every validated run and
// checked after it and after every verified timed call. The exercises' timed calls get new inputs
// and some are checked (lab/timed_calls.hpp; TimedTranspose, TimedSgemm below).

// =============================================================================================
// Part A: gemv, y = A x. Does staging x in shared memory help?

constexpr int kGemvWarps = 8;     // rows per block: a warp per row
constexpr int kGemvChunk = 2048;  // floats of x staged per step (8 KiB of shared memory)

// Lesson 04's warp per row: lane l reads columns l, l + 32, ...; x comes from global memory. After
// the first warps, every read of x hits in L1 or L2: x (cols * 4 bytes) is tiny next to A.
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_global(int rows, int cols, const float* __restrict__ A, const float* __restrict__ x,
                float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kGemvWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
#pragma unroll 4
  for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) y[row] = sum;
}

// The same, with x staged through shared memory: the block copies a chunk of x into shared
// memory, waits, the 8 warps read it from there, and wait again before the next chunk overwrites
// it. It saves L1 traffic for x, which was never the bottleneck: A streams from DRAM either way.
__global__ void __launch_bounds__(kGemvWarps * 32)
    gemv_smem_x(int rows, int cols, const float* __restrict__ A, const float* __restrict__ x,
                float* __restrict__ y) {
  __shared__ float xs[kGemvChunk];
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kGemvWarps + threadIdx.x / 32;
  const bool active = row < rows;  // no early return: every thread must reach every barrier
  const float* a = A + static_cast<std::size_t>(active ? row : 0) * cols;
  float sum = 0.0f;
  for (int c0 = 0; c0 < cols; c0 += kGemvChunk) {
    const int n = min(kGemvChunk, cols - c0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) xs[i] = x[c0 + i];
    __syncthreads();  // the chunk is complete before anyone reads it
    if (active) {
#pragma unroll 4
      for (int c = lane; c < n; c += 32) sum += a[c0 + c] * xs[c];
    }
    __syncthreads();  // nobody still reads the chunk when the next one overwrites it
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (active && lane == 0) y[row] = sum;
}

struct Gemv {
  Gemv(int rows, int cols, std::uint64_t seed, cudaStream_t s)
      : rows(rows), cols(cols), A(static_cast<std::size_t>(rows) * cols), x(cols), y(rows, "y") {
    fill(seed, s);
  }
  // Fresh random inputs from @p seed (also used after timing: new values in the same buffers).
  void fill(std::uint64_t seed, cudaStream_t s) {
    lab::fill_random(A.data(), A.size(), seed, s);
    lab::fill_random(x.data(), x.size(), seed + 1, s);
  }

  int rows = 0, cols = 0;
  lab::DeviceBuffer<float> A, x;
  lab::GuardedBuffer<float> y;
};

template <void (*Kernel)(int, int, const float*, const float*, float*)>
void launch_gemv(Gemv& g, cudaStream_t s) {
  const int blocks = (g.rows + kGemvWarps - 1) / kGemvWarps;
  Kernel<<<blocks, kGemvWarps * 32, 0, s>>>(g.rows, g.cols, g.A.data(), g.x.data(), g.y.data());
  LAB_CHECK_LAUNCH();
}

// y = A x in double on the host, with lab::sum_tolerance (lesson 04's).
void validate_gemv(lab::Lesson& l, const lab::Variant<Gemv>& v, Gemv& g,
                   const std::string& case_name) {
  cudaStream_t s = l.stream();
  const std::vector<float> A = g.A.download(s), x = g.x.download(s);
  g.y.reset(s);
  v.launch(g, s);
  std::vector<float> expected(g.rows);
  double largest = 0;
  for (int r = 0; r < g.rows; ++r) {
    const lab::Dot y =
        lab::dot_product(A.data() + static_cast<std::size_t>(r) * g.cols, x.data(), g.cols);
    expected[r] = static_cast<float>(y.value);
    largest = std::max(largest, y.magnitude);
  }
  lab::check_output(l, v.name, case_name, g.y, g.y.download(s), expected,
                    lab::sum_tolerance(g.cols + 2.0, largest), s);
}

// =============================================================================================
// Part B: transpose. A block moves one 32 x 32 tile with 32 x 8 threads, 4 elements per thread.

constexpr int kTile = 32;
constexpr int kBlockRows = 8;

// Reads a row of the tile (coalesced), writes it as a column of out: at each store the 32
// threads of a warp write 32 floats `rows` apart, 32 sectors for 128 useful bytes.
__global__ void __launch_bounds__(kTile* kBlockRows)
    transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  const int c = blockIdx.x * kTile + threadIdx.x;
  const int r0 = blockIdx.y * kTile + threadIdx.y;
  if (c >= cols) return;
#pragma unroll
  for (int j = 0; j < kTile; j += kBlockRows) {
    const int r = r0 + j;
    if (r < rows)
      out[static_cast<std::size_t>(c) * rows + r] = in[static_cast<std::size_t>(r) * cols + c];
  }
}

// Through a shared-memory tile: read tile rows from in (coalesced), wait, write tile columns as
// rows of out (coalesced). The tile is read down a column: tile[threadIdx.x][j] for 32 lanes is
// 32 floats 32 words apart, all in the same bank: 32-way bank conflict, the read is replayed 32
// times. (This is the starter in exercise.cu.)
__global__ void __launch_bounds__(kTile* kBlockRows)
    transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
  __shared__ float tile[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int c = blockIdx.x * kTile + tx;   // column of in
  const int r0 = blockIdx.y * kTile + ty;  // first row of in for this thread
#pragma unroll
  for (int j = 0; j < kTile; j += kBlockRows)
    if (r0 + j < rows && c < cols)
      tile[ty + j][tx] = in[static_cast<std::size_t>(r0 + j) * cols + c];
  __syncthreads();
  const int oc = blockIdx.y * kTile + tx;   // column of out = row of in
  const int or0 = blockIdx.x * kTile + ty;  // row of out = column of in
#pragma unroll
  for (int j = 0; j < kTile; j += kBlockRows)
    if (or0 + j < cols && oc < rows)
      out[static_cast<std::size_t>(or0 + j) * rows + oc] = tile[tx][ty + j];
}

struct Transpose {
  Transpose(int rows, int cols)
      : rows(rows), cols(cols), in(static_cast<std::size_t>(rows) * cols), out(in.size(), "out") {}

  int rows = 0, cols = 0;
  lab::DeviceBuffer<float> in;
  lab::GuardedBuffer<float> out;
};

template <void (*Kernel)(const float*, float*, int, int)>
void launch_tiles(Transpose& t, cudaStream_t s) {
  const dim3 block(kTile, kBlockRows);
  const dim3 grid((t.cols + kTile - 1) / kTile, (t.rows + kTile - 1) / kTile);
  Kernel<<<grid, block, 0, s>>>(t.in.data(), t.out.data(), t.rows, t.cols);
  LAB_CHECK_LAUNCH();
}

// Small sizes: compared on the host, exactly (a transpose moves bits, it computes nothing).
void validate_transpose_host(lab::Lesson& l, const lab::Variant<Transpose>& v, Transpose& t,
                             const std::string& case_name) {
  cudaStream_t s = l.stream();
  const std::vector<float> in = t.in.download(s);
  t.out.reset(s);
  v.launch(t, s);
  std::vector<float> expected(in.size());
  for (int r = 0; r < t.rows; ++r)
    for (int c = 0; c < t.cols; ++c)
      expected[static_cast<std::size_t>(c) * t.rows + r] =
          in[static_cast<std::size_t>(r) * t.cols + c];
  lab::check_output(l, v.name, case_name, t.out, t.out.download(s), expected,
                    lab::Tolerance{0.0, 0.0}, s);
}

// out[o] of the transpose of the input lab::fill_random(in, rows * cols, seed) made: out[o] =
// out[c][r] = in[r][c], regenerated (not read from in, which the exercise could have changed).
struct Transposed {
  std::uint64_t seed;
  std::size_t rows, cols;
  __host__ __device__ float operator()(std::uint64_t o) const {
    return lab::random_input(seed, (o % rows) * cols + o / rows);
  }
};

// The timing size: out compared exactly on the device (256 MiB is slow to compare on the host)
// with the transpose of the input made from @p seed, plus the whole guard zone. Records it and
// returns whether it passed.
bool compare_transpose(lab::Lesson& l, const std::string& variant, const Transpose& t,
                       std::uint64_t seed, const std::string& case_name, cudaStream_t s) {
  const std::size_t n = t.in.size();
  const Transposed expected{seed, static_cast<std::size_t>(t.rows),
                            static_cast<std::size_t>(t.cols)};
  const lab::Changed wrong = lab::count_changed(t.out.data(), n, expected, s);
  lab::Comparison cmp;
  cmp.count = n;
  cmp.mismatches = wrong.count;
  cmp.ok = wrong.count == 0;
  if (!cmp.ok) {
    float got = 0;
    LAB_CHECK(cudaMemcpy(&got, t.out.data() + wrong.first, sizeof got, cudaMemcpyDeviceToHost));
    cmp.first.push_back({wrong.first, got, expected(wrong.first)});
  }
  t.out.check_guard(cmp, s);
  l.check(variant, case_name, cmp);
  return cmp.ok;
}

// The timing size, after timing: one call on input made from @p seed, compared on the device.
void validate_transpose_device(lab::Lesson& l, const lab::Variant<Transpose>& v, Transpose& t,
                               std::uint64_t seed, const std::string& case_name) {
  cudaStream_t s = l.stream();
  t.out.reset(s);
  v.launch(t, s);
  compare_transpose(l, v.name, t, seed, case_name, s);
}

// How the timed calls of exercise_transpose are prepared and checked.
//  * prepare, before every timed call: new input from the call's seed (drawn by the harness where
//    the exercise cannot see it) and out poisoned (NaN). Each output element depends on one input
//    element only, so the whole input is new: 256 MiB written on the device, outside the timed
//    window, about 0.1 ms.
//  * verify, after the calls the harness picks once they are done: every element of out against
//    the transpose of the regenerated input, on the device (compare_transpose), and the guard
//    zone. About 1 ms, most of it copying the 2 MiB guard zone back.
//  * check_inputs, after timing: the input still holds what the last prepare wrote.
class TimedTranspose : public lab::TimedCalls {
 public:
  TimedTranspose(lab::Lesson& l, Transpose& t) : l_(l), t_(t) {}

  void check_inputs(cudaStream_t s) {
    if (prepared())
      lab::check_inputs_unchanged(l_, "exercise_transpose",
                                  {lab::changed_input("in", t_.in.data(), t_.in.size(), seed_, s)});
  }

 private:
  void prepare(cudaStream_t s, std::uint64_t seed) override {
    seed_ = seed;
    lab::fill_random(t_.in.data(), t_.in.size(), seed, s);
    t_.out.poison(s);
  }
  void verify(cudaStream_t s, const std::string& case_name) override {
    compare_transpose(l_, "exercise_transpose", t_, seed_, case_name, s);
  }

  lab::Lesson& l_;
  Transpose& t_;
  std::uint64_t seed_ = 0;  // the last timed call's input
};

// =============================================================================================
// Part C: SGEMM, C = alpha A B + beta C, row-major.

// One thread per element of C, threadIdx.x along the rows of C. At each k the 32 threads of a
// warp read A[row .. row + 31][k], 32 addresses K floats apart (32 sectors), and all read the same
// B[k][col]; they write a column of C. Nothing is reused except through the caches.
__global__ void sgemm_naive(int M, int N, int K, float alpha, const float* __restrict__ A,
                            const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int row = blockIdx.x * 32 + threadIdx.x;
  const int col = blockIdx.y * 32 + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + static_cast<std::size_t>(row) * K;
  float sum = 0.0f;
  for (int k = 0; k < K; ++k) sum += a[k] * B[static_cast<std::size_t>(k) * N + col];
  float* c = C + static_cast<std::size_t>(row) * N + col;
  *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
}

// The same loop with threadIdx.x along the columns of C: at each k a warp reads one A[row][k]
// (broadcast) and B[k][col .. col + 31], 128 contiguous bytes, and writes a piece of a row of C.
// Coalesced; but every element of A and B is still fetched (from L1/L2) once per use: 2K loads
// for 2K FLOPs per thread.
__global__ void sgemm_coalesced(int M, int N, int K, float alpha, const float* __restrict__ A,
                                const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int col = blockIdx.x * 32 + threadIdx.x;
  const int row = blockIdx.y * 32 + threadIdx.y;
  if (row >= M || col >= N) return;
  const float* a = A + static_cast<std::size_t>(row) * K;
  float sum = 0.0f;
  for (int k = 0; k < K; ++k) sum += a[k] * B[static_cast<std::size_t>(k) * N + col];
  float* c = C + static_cast<std::size_t>(row) * N + col;
  *c = alpha * sum + (beta == 0.0f ? 0.0f : beta * *c);
}

struct Gemm {
  Gemm(int M, int N, int K, float alpha, float beta, std::uint64_t seed, cudaStream_t s)
      : M(M),
        N(N),
        K(K),
        alpha(alpha),
        beta(beta),
        A(static_cast<std::size_t>(M) * K),
        B(static_cast<std::size_t>(K) * N),
        C(static_cast<std::size_t>(M) * N, "C") {
    fill(seed, s);
  }
  // Fresh random inputs from @p seed (also used after timing: new values in the same buffers).
  void fill(std::uint64_t seed, cudaStream_t s) {
    lab::fill_random(A.data(), A.size(), seed, s);
    lab::fill_random(B.data(), B.size(), seed + 1, s);
  }

  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  lab::DeviceBuffer<float> A, B;
  lab::GuardedBuffer<float> C;
};

// cuBLAS, on a handle set to pedantic math where it is made: true float32 FMAs, never TF32
// tensor cores, so it does the same arithmetic as the kernels it is compared with. cuBLAS is
// column-major. Our row-major C (M x N) is, to it, the column-major N x M matrix C^T; likewise A
// is A^T (K x M) and B is B^T (N x K). C^T = B^T A^T, so we ask for the column-major product of
// "B" (N x K, ld N) and "A" (K x M, ld K) into "C" (N x M, ld N).
void cublas_sgemm(const lab::CublasHandle& cublas, Gemm& g, cudaStream_t s) {
  LAB_CUBLAS_CHECK(cublasSgemm(cublas.on(s), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha,
                               g.B.data(), g.N, g.A.data(), g.K, &g.beta, g.C.data(), g.N));
}

// The TF32 tensor roof of this GPU, measured before any exercise code runs: cuBLAS's SGEMM with
// TF32 tensor ops, n^3 on random FP32 data, back to back. No FP32 product can get more out of
// the tensor cores (3xTF32 does three TF32 products for each one), so it is the checker's bound
// on a plausible SGEMM rate where a student's kernel uses them; it is not a bar.
void measure_tf32_roof(lab::Lesson& l, const lab::CublasHandle& cublas, int n) {
  cudaStream_t s = l.stream();
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  lab::DeviceBuffer<float> A(nn), B(nn), C(nn);
  lab::fill_random(A.data(), nn, l.seed() * 64 + 61, s);
  lab::fill_random(B.data(), nn, l.seed() * 64 + 62, s);
  const float one = 1.0f, zero = 0.0f;
  LAB_CUBLAS_CHECK(cublasSetMathMode(cublas.get(), CUBLAS_TF32_TENSOR_OP_MATH));
  l.measure_tensor_roof(
      lab::TensorInput::tf32,
      [&](cudaStream_t st) {
        LAB_CUBLAS_CHECK(cublasSgemm(cublas.on(st), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
                                     A.data(), n, B.data(), n, &zero, C.data(), n));
      },
      2.0 * nn * n);
  LAB_CUBLAS_CHECK(cublasSetMathMode(cublas.get(), CUBLAS_PEDANTIC_MATH));  // the reference's
}

// A kernel of part C, a thread per element of C in 32 x 32 blocks; @p x_along_rows: threadIdx.x
// runs along the rows of C (sgemm_naive), else along its columns.
template <void (*Kernel)(int, int, int, float, const float*, const float*, float, float*),
          bool x_along_rows>
void launch_elementwise(Gemm& g, cudaStream_t s) {
  const dim3 grid(((x_along_rows ? g.M : g.N) + 31) / 32, ((x_along_rows ? g.N : g.M) + 31) / 32);
  Kernel<<<grid, dim3(32, 32), 0, s>>>(g.M, g.N, g.K, g.alpha, g.A.data(), g.B.data(), g.beta,
                                       g.C.data());
  LAB_CHECK_LAUNCH();
}

// The reference: C[i][j] for a set of (i, j), in double, from the device's own inputs.
//
// Tolerance. Each C[i][j] is a float dot product of length K plus the beta term; the kernels
// differ in summation order (a loop, tiles, FMAs, cuBLAS's own order), so none can be expected to
// match bit for bit: lab::sum_tolerance with n = K + 2 terms (the products, alpha, the beta term)
// and the largest |alpha| sum_k |a_ik b_kj| + |beta c_ij| over the checked elements. For K = 4096
// and inputs in [-1, 1) this is about 1.6e-5 x 1024 = 0.016 absolute on values of order 20; a
// missing k-tile, a stale tile or a wrong element is off by about 1 or more.
struct GemmReference {
  std::vector<std::size_t> index;  // flat indices i * N + j of the checked elements
  std::vector<float> expected;     // their values
  lab::Tolerance tolerance;
  std::vector<float> c0;  // C on entry (empty: beta == 0, C is NaN on entry)
};

// Which elements to check: every one up to 1e9 multiply-adds of host work, else a sample that
// touches every row-tile and column-tile: rows 0, M-1 and two random rows in full, columns 0,
// N-1 and two random columns in full, and 8192 random elements (about 8 per 128 x 128 block at
// 4096 x 4096).
std::vector<std::size_t> gemm_sample(int M, int N, int K, std::uint64_t seed) {
  std::vector<std::size_t> idx;
  if (static_cast<double>(M) * N * K <= 1e9) {
    idx.resize(static_cast<std::size_t>(M) * N);
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    return idx;
  }
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> any_row(0, M - 1), any_col(0, N - 1);
  const int rows[] = {0, M - 1, any_row(rng), any_row(rng)};
  const int cols[] = {0, N - 1, any_col(rng), any_col(rng)};
  for (int r : rows)
    for (int j = 0; j < N; ++j) idx.push_back(static_cast<std::size_t>(r) * N + j);
  for (int c : cols)
    for (int i = 0; i < M; ++i) idx.push_back(static_cast<std::size_t>(i) * N + c);
  for (int s = 0; s < 8192; ++s)
    idx.push_back(static_cast<std::size_t>(any_row(rng)) * N + any_col(rng));
  return idx;
}

GemmReference gemm_reference(const Gemm& g, std::uint64_t seed, cudaStream_t s) {
  GemmReference ref;
  const std::vector<float> A = g.A.download(s), B = g.B.download(s);
  const std::size_t mn = static_cast<std::size_t>(g.M) * g.N;
  if (g.beta != 0.0f) {
    ref.c0.resize(mn);
    lab::fill_random_host(ref.c0.data(), mn, seed + 2);
  }
  // B^T, so that every element is a dot product of two contiguous rows.
  std::vector<float> Bt(B.size());
  for (int k = 0; k < g.K; ++k)
    for (int j = 0; j < g.N; ++j)
      Bt[static_cast<std::size_t>(j) * g.K + k] = B[static_cast<std::size_t>(k) * g.N + j];
  ref.index = gemm_sample(g.M, g.N, g.K, seed + 3);
  ref.expected.resize(ref.index.size());
  double largest = 0;
  for (std::size_t e = 0; e < ref.index.size(); ++e) {
    const std::size_t i = ref.index[e] / g.N, j = ref.index[e] % g.N;
    const lab::Dot dot = lab::dot_product(A.data() + i * g.K, Bt.data() + j * g.K, g.K);
    const double old = g.beta == 0.0f ? 0.0 : static_cast<double>(g.beta) * ref.c0[ref.index[e]];
    ref.expected[e] = static_cast<float>(g.alpha * dot.value + old);
    largest = std::max(largest, std::fabs(g.alpha) * dot.magnitude + std::fabs(old));
  }
  ref.tolerance = lab::sum_tolerance(g.K + 2.0, largest);
  return ref;
}

// Runs one variant once on C = the reference's c0 (beta != 0) or NaN (beta == 0: write-only),
// its guard zone armed, and records whether the checked elements match.
void validate_gemm(lab::Lesson& l, const lab::Variant<Gemm>& v, Gemm& g, const GemmReference& ref,
                   const std::string& case_name) {
  cudaStream_t s = l.stream();
  if (g.beta != 0.0f)
    LAB_CHECK(cudaMemcpyAsync(g.C.data(), ref.c0.data(), g.C.bytes(), cudaMemcpyHostToDevice, s));
  else
    g.C.poison(s);
  g.C.arm(s);
  v.launch(g, s);
  LAB_CHECK(cudaGetLastError());
  const std::vector<float> got = g.C.download(s);
  std::vector<float> picked(ref.index.size());
  for (std::size_t e = 0; e < ref.index.size(); ++e) picked[e] = got[ref.index[e]];
  lab::check_output(l, v.name, case_name, g.C, picked, ref.expected, ref.tolerance, s,
                    ref.index);  // mismatches name C's own index
}

// How the timed calls of exercise_sgemm are prepared and checked. The timing problem has beta ==
// 0: C is write-only.
//  * prepare, before every timed call: a new A and B from the call's seed (drawn by the harness
//    where the exercise cannot see it; a new A alone would make every earlier answer wrong, but
//    an unchanged B could be kept from call to call in another form, rounded or split for the
//    tensor cores) and C poisoned (NaN).
//  * verify, after the calls the harness picks once they are done: a 32 x 32 grid of elements,
//    32 rows and 32 columns of C picked at random only now, against a double-precision reference
//    from the rows of A and the columns of B regenerated from their seeds (never read back: the
//    exercise could have written into them), and the whole guard zone. At 4096^3 that is 262 K
//    values regenerated and 4 M multiply-adds: about 5 ms of host time.
//  * check_inputs, after timing: A and B of the last call still hold what the harness wrote.
class TimedSgemm : public lab::TimedCalls {
 public:
  TimedSgemm(lab::Lesson& l, Gemm& g) : l_(l), g_(g) {}

  void check_inputs(cudaStream_t s) {
    if (prepared())
      lab::check_inputs_unchanged(l_, "exercise_sgemm",
                                  {lab::changed_input("A", g_.A.data(), g_.A.size(), seed_, s),
                                   lab::changed_input("B", g_.B.data(), g_.B.size(), b_seed_, s)});
  }

 private:
  static constexpr int kPicks = 32;  // rows, and columns

  void prepare(cudaStream_t s, std::uint64_t seed) override {
    seed_ = seed;
    b_seed_ = seed + 1;  // as Gemm::fill makes B
    g_.fill(seed, s);
    g_.C.poison(s);
  }

  void verify(cudaStream_t s, const std::string& case_name) override {
    const std::uint64_t a_seed = seed_, b_seed = b_seed_;
    const lab::ProductSample e = lab::sample_product(
        g_.C.data(), g_.M, g_.N, g_.K,
        [a_seed](std::uint64_t i) { return lab::random_input(a_seed, i); },
        [b_seed](std::uint64_t i) { return lab::random_input(b_seed, i); }, kPicks, pick, s);
    std::vector<float> expected;
    double largest = 0;
    for (const lab::Dot& dot : e.exact) {
      expected.push_back(static_cast<float>(g_.alpha * dot.value));
      largest = std::max(largest, std::fabs(g_.alpha) * dot.magnitude);
    }
    lab::check_output(l_, "exercise_sgemm", case_name, g_.C, e.got, expected,
                      lab::sum_tolerance(g_.K + 2.0, largest), s, e.index);  // C's own index
  }

  lab::Lesson& l_;
  Gemm& g_;
  std::uint64_t seed_ = 0;    // the last timed call's A
  std::uint64_t b_seed_ = 0;  // and its B
};

std::string gemm_case(int M, int N, int K, float beta) {
  return lab::dims({M, N, K}) + (beta == 0.0f ? " beta=0" : "");
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("05-shared-memory", "Shared memory: when it does not help, and when it does");
  // Part A. bytes: A once, x once, y written. FLOPs: 2 rows cols. Intensity 0.5 FLOP/byte.
  lab::Variants<Gemv> gemvs(lesson);
  auto gemv_work = [](const Gemv& g) {
    return lab::Work{4.0 * g.rows * g.cols + 4.0 * g.cols + 4.0 * g.rows, 2.0 * g.rows * g.cols};
  };
  gemvs.add({"gemv_global", lab::Role::Baseline,
             "A: gemv, warp per row, x read from global memory (served by L1/L2)",
             launch_gemv<gemv_global>, gemv_work});
  gemvs.add({"gemv_smem_x", lab::Role::Baseline,
             "A: the same gemv with x staged through shared memory", launch_gemv<gemv_smem_x>,
             gemv_work});
  // Part B. bytes: every element read once and written once, 2 rows cols 4. No FLOPs.
  lab::Variants<Transpose> transposes(lesson);
  auto transpose_work = [](const Transpose& t) {
    return lab::Work{2.0 * 4.0 * t.rows * t.cols, 0.0};
  };
  transposes.add({"transpose_naive", lab::Role::Baseline,
                  "B: transpose, coalesced reads, a warp's store touches 32 rows",
                  launch_tiles<transpose_naive>, transpose_work});
  transposes.add({"transpose_tiled", lab::Role::Baseline,
                  "B: transpose through a 32x32 shared tile: 32-way bank conflicts",
                  launch_tiles<transpose_tiled>, transpose_work});
  transposes.add({"exercise_transpose", lab::Role::Exercise, "B: your transpose (exercise.cu)",
                  [](Transpose& t, cudaStream_t s) {
                    exercise::transpose(t.in.data(), t.out.data(), t.rows, t.cols, s);
                  },
                  transpose_work});
  // Part C. FLOPs 2 M N K; bytes: A, B read once and C written once (the least any SGEMM must
  // move; every kernel here moves more, from L2 or L1). Intensity at 4096^3: 683 FLOP/B.
  lab::Variants<Gemm> gemms(lesson);
  auto gemm_work = [](const Gemm& g) {
    const double nn = static_cast<double>(g.M) * g.N;  // M = N = K at the timing size
    return lab::Work{3.0 * 4.0 * nn, 2.0 * nn * g.K};
  };
  // About 100x slower than cuBLAS (0.3 s per launch at 4096^3 on an H100): a few samples pin
  // its median well enough for a baseline that no rule judges.
  gemms.add({"sgemm_naive", lab::Role::Baseline,
             "C: SGEMM, thread per element of C, threadIdx.x along rows: uncoalesced",
             launch_elementwise<sgemm_naive, true>, gemm_work, 0, lab::Pacing::Device,
             lab::short_run()});
  gemms.add({"sgemm_coalesced", lab::Role::Baseline,
             "C: SGEMM, thread per element of C, threadIdx.x along columns",
             launch_elementwise<sgemm_coalesced, false>, gemm_work});
  std::unique_ptr<lab::CublasHandle> cublas;  // made in run() when cublas or the SGEMM is selected
  gemms.add({"cublas", lab::Role::Reference, "C: cublasSgemm, pedantic float32 (no TF32)",
             [&cublas](Gemm& g, cudaStream_t s) { cublas_sgemm(*cublas, g, s); }, gemm_work});
  gemms.add({"exercise_sgemm", lab::Role::Exercise, "C: your SGEMM (exercise.cu)",
             [](Gemm& g, cudaStream_t s) {
               exercise::sgemm(g.M, g.N, g.K, g.alpha, g.A.data(), g.B.data(), g.beta, g.C.data(),
                               s);
             },
             gemm_work});

  long long gemv_n = 0, transpose_n = 0, sgemm_n = 0;
  lesson.option("--gemv-size", &gemv_n, "A is N x N for part A", 8192, 2048);
  lesson.option("--transpose-size", &transpose_n, "the matrix is N x N for part B", 8192, 2048);
  lesson.option("--sgemm-size", &sgemm_n, "M = N = K for part C", 4096, 1024);

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    cudaStream_t stream = l.stream();
    if (gemv_n > 32768 || transpose_n > 32768 || sgemm_n > 16384)
      throw std::invalid_argument("sizes are limited to 32768 (gemv, transpose), 16384 (sgemm)");
    const bool profiling = l.profiling();
    // First, before any exercise code: the handle (pedantic FP32, see cublas_sgemm), and with the
    // exercise's SGEMM the TF32 roof its rate is bounded by.
    if (l.selected("cublas") || l.selected("exercise_sgemm")) {
      cublas = std::make_unique<lab::CublasHandle>();
      LAB_CUBLAS_CHECK(cublasSetMathMode(cublas->get(), CUBLAS_PEDANTIC_MATH));
    }
    if (l.selected("exercise_sgemm") && !profiling)
      measure_tf32_roof(l, *cublas, l.quick() ? 2048 : 4096);
    // Each part's inputs come from seeds of its own, whatever ran before it: a run of some
    // variants only (--variant, the checker's --replay) sees the same inputs as a whole run.
    std::uint64_t seed = l.seed() * 64 + 1;

    // -------------------------------------------------------------------------------------
    // Part A: validation at odd shapes, timing, validation again with new inputs.
    if (gemvs.any_selected()) {
      if (!profiling) {
        const int cases[][2] = {{1000, 777}, {33, 4097}, {4097, 33}, {1, 1}};
        for (const auto& k : cases) {
          Gemv g(k[0], k[1], seed, stream);
          for (const auto* v : gemvs.selected()) validate_gemv(l, *v, g, lab::dims({k[0], k[1]}));
          seed += 4;
        }
      }
      const int n = static_cast<int>(gemv_n);
      Gemv g(n, n, seed, stream);
      l.size("A: gemv, A " + lab::dims({n, n}) + " float32 (" +
             lab::fixed(4.0 * n * n / (1 << 20), 0) + " MiB)");
      gemvs.measure_all(g);
      if (!profiling) {
        g.fill(seed + 2, stream);  // new inputs, same buffers: validate again after timing
        for (const auto* v : gemvs.selected())
          validate_gemv(l, *v, g, lab::dims({n, n}) + " after timing");
      }
      const lab::Measurement* global = gemvs.measurement("gemv_global");
      const lab::Measurement* smem = gemvs.measurement("gemv_smem_x");
      if (global && smem) {
        const lab::Reading r = lab::speedup(*global, *smem);
        lab::metric(l, "gemv_smem_x_over_global", r, "x");
        l.note("A: gemv with x in shared memory runs at " + lab::fixed(r.value, 2) +
               "x the speed of the plain one (1.00 = no gain): x was never the bottleneck");
      }
      seed += 4;
    }

    // -------------------------------------------------------------------------------------
    // Part B: validation on the host at odd shapes, timing (the exercise's timed calls get a new
    // input each and some are checked: TimedTranspose), validation again on the device.
    seed = l.seed() * 64 + 21;
    if (transposes.any_selected()) {
      if (!profiling) {
        const int cases[][2] = {{1000, 777}, {33, 4097}, {4097, 33}, {1, 1}};
        for (const auto& k : cases) {
          Transpose t(k[0], k[1]);
          lab::fill_random(t.in.data(), t.in.size(), seed++, stream);
          for (const auto* v : transposes.selected())
            validate_transpose_host(l, *v, t, lab::dims({k[0], k[1]}));
        }
      }
      const int n = static_cast<int>(transpose_n);
      Transpose t(n, n);
      lab::fill_random(t.in.data(), t.in.size(), seed++, stream);
      l.size("B: transpose, " + lab::dims({n, n}) + " float32 (" +
             lab::fixed(4.0 * n * n / (1 << 20), 0) + " MiB each way)");
      // The guard zone after out, armed once: the timed calls' verify checks it (the given
      // variants, timed first, write nothing there).
      t.out.arm(stream);
      TimedTranspose timed(l, t);
      transposes.measure_all(t, timed.checks());
      if (!profiling) {
        timed.check_inputs(stream);
        const std::uint64_t after = seed++;
        lab::fill_random(t.in.data(), t.in.size(), after, stream);  // new input, same buffers
        for (const auto* v : transposes.selected())
          validate_transpose_device(l, *v, t, after, lab::dims({n, n}) + " after timing");
      }
      if (!profiling) {  // (the ceilings are not measured in --profile mode)
        std::string line = "B: transpose as a fraction of the copy ceiling:";
        const double copy = l.ceilings().copy_gbs;
        for (const auto& v : transposes)
          if (const lab::Measurement* m = transposes.measurement(v.name); m && copy > 0)
            line += " " + v.name + " " +
                    lab::fixed(v.work(t).bytes / (m->gpu_ms.median * 1e6) / copy, 3);
        const lab::Measurement* tiled = transposes.measurement("transpose_tiled");
        const lab::Measurement* mine = transposes.measurement("exercise_transpose");
        if (tiled && mine)
          line += "; exercise over tiled " + lab::fixed(lab::speedup(*tiled, *mine).value, 2) + "x";
        l.note(line);
      }
    }

    // -------------------------------------------------------------------------------------
    // Part C.
    seed = l.seed() * 64 + 41;
    if (gemms.any_selected()) {
      // 1. Validation at sizes that are not multiples of any tile (nor of 4, except 300x644x260,
      //    which takes the float4 paths with partial tiles), beta == 0 (C NaN on entry) among them.
      if (!profiling) {
        struct Case {
          int M, N, K;
          float alpha, beta;
        };
        const Case cases[] = {{1000, 777, 515, 1.25f, -0.5f},
                              {129, 67, 1031, 0.75f, 0.0f},
                              {300, 644, 260, 1.0f, 0.5f},
                              {1, 1, 1, 2.0f, 0.0f}};
        for (const Case& k : cases) {
          Gemm g(k.M, k.N, k.K, k.alpha, k.beta, seed, stream);
          const GemmReference ref = gemm_reference(g, seed, stream);
          for (const auto* v : gemms.selected())
            validate_gemm(l, *v, g, ref, gemm_case(k.M, k.N, k.K, k.beta));
          seed += 4;
        }
      }

      // 2. Timing, alpha 1 and beta 0 (C write-only), the usual benchmark case (TimedSgemm).
      const int n = static_cast<int>(sgemm_n);
      Gemm g(n, n, n, 1.0f, 0.0f, seed, stream);
      g.C.arm(stream);
      TimedSgemm timed(l, g);
      l.size("C: sgemm, M = N = K = " + std::to_string(n) + " float32, alpha 1, beta 0");
      gemms.measure_all(g, timed.checks());
      if (!profiling) timed.check_inputs(stream);

      // 3. Validation again, after timing, with new inputs in the same buffers.
      if (!profiling) {
        g.fill(seed + 2, stream);
        const GemmReference ref = gemm_reference(g, seed + 2, stream);
        for (const auto* v : gemms.selected())
          validate_gemm(l, *v, g, ref, gemm_case(n, n, n, 0.0f) + " after timing");
      }

      // Each SGEMM as a fraction of cuBLAS: time of cuBLAS / time of the variant.
      if (const lab::Measurement* ref = gemms.measurement("cublas")) {
        std::string line = "C: sgemm as a fraction of cuBLAS (" +
                           lab::fixed(gemm_work(g).flops / (ref->gpu_ms.median * 1e9), 1) +
                           " TFLOP/s):";  // ms -> 1e12
        for (const auto& v : gemms) {
          const lab::Measurement* m = gemms.measurement(v.name);
          if (v.name == "cublas" || !m) continue;
          const lab::Reading r = lab::speedup(*ref, *m);
          lab::metric(l,
                      v.role == lab::Role::Exercise ? "sgemm_fraction_of_cublas"
                                                    : v.name + "_fraction_of_cublas",
                      r);
          line += " " + v.name + " " + lab::fixed(r.value, 3);
        }
        l.note(line);
      }
    }
  });
}
