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
#include "exercise.cuh"
#include "lab/cublas.hpp"
#include "lab/cublas_roof.cuh"
#include "lab/lesson.cuh"

namespace {

// Each part has its checks (lab::Checks: one reference) and a lab::Protocol, so seeds, of its own:
// a run of some variants only (--variant, the checker's --replay) sees the same inputs.

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
  Gemv(int rows, int cols)
      : rows(rows), cols(cols), A(static_cast<std::size_t>(rows) * cols), x(cols), y(rows, "y") {}
  int rows = 0, cols = 0;
  lab::DeviceBuffer<float> A, x;  // A from the inputs' seed, x from the next one
  lab::GuardedBuffer<float> y;
};

template <void (*Kernel)(int, int, const float*, const float*, float*)>
void launch_gemv(Gemv& g, cudaStream_t s) {
  const int blocks = (g.rows + kGemvWarps - 1) / kGemvWarps;
  Kernel<<<blocks, kGemvWarps * 32, 0, s>>>(g.rows, g.cols, g.A.data(), g.x.data(), g.y.data());
  LAB_CHECK_LAUNCH();
}

// y = A x in double on the host from A and x regenerated, with lab::sum_tolerance (lesson 04's):
// y is the product of A and the one-column matrix x.
lab::Checks<Gemv> gemv_checks() {
  lab::Checks<Gemv> c;
  c.fill = [](Gemv& g, std::uint64_t seed, cudaStream_t s) {
    lab::fill_random(g.A.data(), g.A.size(), seed, s);
    lab::fill_random(g.x.data(), g.x.size(), seed + 1, s);
  };
  c.reset = [](Gemv& g, cudaStream_t s) { g.y.reset(s); };
  c.check = [](lab::Look& look, Gemv& g) {
    const std::vector<std::size_t> at = look.indices(g.rows, 4096);
    const lab::Rounded y =
        lab::rounded(lab::random_product_at(at, 1, g.cols, look.seed(), look.seed() + 1));
    look.compare(g.y, at, y.values, lab::sum_tolerance(g.cols + 2.0, y.magnitude));
  };
  return c;
}

// =============================================================================================
// Part B: transpose. A block moves one 32 x 32 tile with 32 x 8 threads, 4 elements per thread.

constexpr int kTile = 32, kBlockRows = 8;

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

// A transpose moves bits, it computes nothing: out must match exactly (lab::transposed) the
// input regenerated (never read back: the exercise could have changed it). Each output element
// depends on one input element only, so every call gets a whole new input (256 MiB written at
// the timing size, outside the timed window, about 0.1 ms).
lab::Checks<Transpose> transpose_checks() {
  auto check = [](lab::Look& look, Transpose& t) {
    look.compare_each(t.out, 1 << 16, lab::Tolerance{0.0, 0.0},
                      lab::transposed(lab::RandomInput{look.seed()}, t.rows, t.cols));
  };
  return lab::declared_checks<Transpose>({{"in", &Transpose::in}}, {&Transpose::out}, check);
}

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
  Gemm(int M, int N, int K, float alpha, float beta)
      : M(M), N(N), K(K), alpha(alpha), beta(beta), A(static_cast<std::size_t>(M) * K),
        B(static_cast<std::size_t>(K) * N), C(static_cast<std::size_t>(M) * N, "C") {}
  int M = 0, N = 0, K = 0;
  float alpha = 1.0f, beta = 0.0f;
  lab::DeviceBuffer<float> A, B;  // A from the inputs' seed, B from the next one
  lab::GuardedBuffer<float> C;    // on entry: NaN (beta == 0: write-only), else from the third
  std::uint64_t c_seed = 0;       // the seed of C on entry (beta != 0), drawn with A and B
};

// cuBLAS, on a handle set to pedantic math where it is made: true float32 FMAs, never TF32
// tensor cores, so it does the same arithmetic as the kernels it is compared with. cuBLAS is
// column-major: our row-major C (M x N) is, to it, C^T (N x M), A is A^T and B is B^T; C^T =
// B^T A^T, so we ask for the product of "B" (N x K, ld N) and "A" (K x M, ld K) into "C" (ld N).
void cublas_sgemm(const lab::CublasHandle& cublas, Gemm& g, cudaStream_t s) {
  LAB_CUBLAS_CHECK(cublasSgemm(cublas.on(s), CUBLAS_OP_N, CUBLAS_OP_N, g.N, g.M, g.K, &g.alpha,
                               g.B.data(), g.N, g.A.data(), g.K, &g.beta, g.C.data(), g.N));
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

// The reference: C[i][j] in double, from the inputs regenerated. The kernels differ in summation
// order (a loop, tiles, FMAs, cuBLAS's own), so none can match bit for bit: lab::sum_tolerance
// with K + 2 terms (the products, alpha, the beta term) and the largest |alpha| sum_k |a_ik b_kj|
// + |beta c_ij| checked (about 0.016 at K = 4096, on values of order 20; a missing k-tile, a stale
// tile or a wrong element is off by 1 or more). Checked: after a timed call, where 32 rows and 32
// columns picked only then cross (about 5 ms of host time at 4096^3); after a validated call,
// every element up to 1e9 multiply-adds of host work, else four rows and four columns in full
// (two random) and 8192 random elements, from the inputs' seed (lab::product_elements).
// Every call gets a new A and B (a new A alone would make every earlier answer wrong, but an
// unchanged B could be kept from call to call in another form, rounded or split for the tensor
// cores) and C as on entry. After timing, A and B still hold what the last call was given.
lab::Checks<Gemm> gemm_checks() {
  lab::Checks<Gemm> c;
  c.fill = [](Gemm& g, std::uint64_t seed, cudaStream_t s) {
    lab::fill_random(g.A.data(), g.A.size(), seed, s);
    lab::fill_random(g.B.data(), g.B.size(), seed + 1, s);
    g.c_seed = seed + 2;
  };
  c.reset = [](Gemm& g, cudaStream_t s) {
    if (g.beta != 0.0f)
      lab::fill_random(g.C.data(), g.C.size(), g.c_seed, s);
    else
      g.C.poison(s);
    g.C.arm(s);
  };
  // The products are kept for the next variant of the same validation.
  c.check = [kept = lab::KeptReference<std::vector<lab::Dot>>()](lab::Look& look, Gemm& g) mutable {
    const std::uint64_t seed = look.seed();
    const std::vector<std::size_t> at = lab::product_elements(look, g.M, g.N, g.K);
    const std::vector<lab::Dot>& dots =
        kept.get(seed, at, [&] { return lab::random_product_at(at, g.N, g.K, seed, seed + 1); });
    const lab::Rounded want = lab::alpha_beta_at(dots, at, g.alpha, g.beta, seed + 2);
    look.compare(g.C, at, want.values, lab::sum_tolerance(g.K + 2.0, want.magnitude));
  };
  c.inputs_changed = [](const Gemm& g, std::uint64_t seed, cudaStream_t s) {
    return std::vector<std::string>{lab::changed_input("A", g.A.data(), g.A.size(), seed, s),
                                    lab::changed_input("B", g.B.data(), g.B.size(), seed + 1, s)};
  };
  return c;
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
  lesson.option("--gemv-size", &gemv_n, "A is N x N for part A", 8192, 2048, {1, 32768});
  lesson.option("--transpose-size", &transpose_n, "the matrix is N x N for part B", 8192, 2048,
                {1, 32768});
  lesson.option("--sgemm-size", &sgemm_n, "M = N = K for part C", 4096, 1024, {1, 16384});

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    // First, before any exercise code: the handle (pedantic FP32, see cublas_sgemm), and with the
    // exercise's SGEMM the TF32 roof (no FP32 product gets more from the tensor cores: 3xTF32
    // does three TF32 products for each one): a bound on a plausible SGEMM rate, not a bar.
    if (l.selected("cublas") || l.selected("exercise_sgemm")) {
      cublas = std::make_unique<lab::CublasHandle>();
      LAB_CUBLAS_CHECK(cublasSetMathMode(cublas->get(), CUBLAS_PEDANTIC_MATH));
    }
    if (l.selected("exercise_sgemm") && !l.profiling())
      lab::measure_cublas_roof(l, *cublas, lab::TensorInput::tf32, l.quick() ? 2048 : 4096);

    // Part A: validation at odd shapes, timing, validation again with new inputs.
    if (gemvs.any_selected()) {
      lab::Protocol<Gemv> protocol(l, gemvs, gemv_checks());
      protocol.validate_shapes({{1000, 777}, {33, 4097}, {4097, 33}, {1, 1}},
                               [](const lab::Shape& k) { return Gemv(k[0], k[1]); });
      const int n = static_cast<int>(gemv_n);
      Gemv g(n, n);
      l.size("A: gemv, A " + lab::dims({n, n}) + " float32 (" +
             lab::fixed(4.0 * n * n / (1 << 20), 0) + " MiB)");
      protocol.measure(g);
      protocol.validate(g, lab::dims({n, n}) + " after timing");
      if (const auto r = lab::speedup(gemvs, "gemv_global", "gemv_smem_x")) {
        lab::metric(l, "gemv_smem_x_over_global", *r, "x");
        l.note("A: gemv with x in shared memory runs at " + lab::fixed(r->value, 2) +
               "x the speed of the plain one (1.00 = no gain): x was never the bottleneck");
      }
    }

    // Part B: validation at odd shapes, timing, validation again with new input.
    if (transposes.any_selected()) {
      lab::Protocol<Transpose> protocol(l, transposes, transpose_checks());
      protocol.validate_shapes({{1000, 777}, {33, 4097}, {4097, 33}, {1, 1}},
                               [](const lab::Shape& k) { return Transpose(k[0], k[1]); });
      const int n = static_cast<int>(transpose_n);
      Transpose t(n, n);
      l.size("B: transpose, " + lab::dims({n, n}) + " float32 (" +
             lab::fixed(4.0 * n * n / (1 << 20), 0) + " MiB each way)");
      protocol.measure(t);
      protocol.validate(t, lab::dims({n, n}) + " after timing");
      if (!l.profiling()) {  // (the ceilings are not measured in --profile mode)
        std::string line = "B: transpose as a fraction of the copy ceiling:";
        const double copy = l.ceilings().copy_gbs;
        for (const auto& v : transposes)
          if (const lab::Measurement* m = transposes.measurement(v.name); m && copy > 0)
            line += " " + v.name + " " +
                    lab::fixed(v.work(t).bytes / (m->gpu_ms.median * 1e6) / copy, 3);
        if (const auto r = lab::speedup(transposes, "transpose_tiled", "exercise_transpose"))
          line += "; exercise over tiled " + lab::fixed(r->value, 2) + "x";
        l.note(line);
      }
    }

    // Part C.
    if (gemms.any_selected()) {
      lab::Protocol<Gemm> protocol(l, gemms, gemm_checks());
      // 1. Validation at sizes that are not multiples of any tile (nor of 4, except 300x644x260,
      //    which takes the float4 paths with partial tiles), beta == 0 (C NaN on entry) among them.
      struct Case { int M, N, K; float alpha, beta; };
      const Case cases[] = {{1000, 777, 515, 1.25f, -0.5f}, {129, 67, 1031, 0.75f, 0.0f},
                            {300, 644, 260, 1.0f, 0.5f}, {1, 1, 1, 2.0f, 0.0f}};
      for (const Case& k : cases) {
        Gemm g(k.M, k.N, k.K, k.alpha, k.beta);
        protocol.validate(g, lab::dims({k.M, k.N, k.K}) + (k.beta == 0.0f ? " beta=0" : ""));
      }
      // 2. Timing, alpha 1 and beta 0 (C write-only), the usual benchmark case; 3. validation
      //    again, after timing, with new inputs in the same buffers.
      const int n = static_cast<int>(sgemm_n);
      Gemm g(n, n, n, 1.0f, 0.0f);
      l.size("C: sgemm, M = N = K = " + std::to_string(n) + " float32, alpha 1, beta 0");
      protocol.measure(g);
      protocol.validate(g, lab::dims({n, n, n}) + " beta=0 after timing");
      // Each SGEMM as a fraction of cuBLAS: time of cuBLAS / time of the variant.
      if (const lab::Measurement* ref = gemms.measurement("cublas")) {
        std::string line = "C: sgemm as a fraction of cuBLAS (" +
                           lab::fixed(gemm_work(g).flops / (ref->gpu_ms.median * 1e9), 1) +
                           " TFLOP/s):";  // ms -> 1e12
        for (const auto& [v, r] : lab::speedups(gemms, "cublas")) {
          const std::string name = v->role == lab::Role::Exercise ? "sgemm" : v->name;
          lab::metric(l, name + "_fraction_of_cublas", r);
          line += " " + v->name + " " + lab::fixed(r.value, 3);
        }
        l.note(line);
      }
    }
  });
}
