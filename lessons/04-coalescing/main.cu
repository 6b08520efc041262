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
#include "exercise.cuh"
#include "lab/cublas.hpp"
#include "lab/lesson.cuh"

namespace {

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

// The sweep's problem: 2^log2_n floats updated in place, and 32 more after them (the offset
// variant's shift; whatever a variant does not update must come back as it was), then a guard
// zone. The array is input and output at once: written again from the seed before every call.
struct Sweep {
  unsigned log2_n;
  lab::GuardedBuffer<float> a;
  explicit Sweep(unsigned log2) : log2_n(log2), a((std::size_t{1} << log2) + 32, "a") {}
};

// A sweep variant: neighbouring threads 2^log2_stride floats apart, the array shifted by offset.
struct Stride : lab::Variant<Sweep> {
  int offset = 0;
  unsigned log2_stride = 0;
};

void launch_strided(float* a, unsigned log2_n, unsigned log2_stride, cudaStream_t s) {
  const unsigned n = 1u << log2_n;
  strided_update<<<(n + 255) / 256, 256, 0, s>>>(a, n, log2_stride, log2_n - log2_stride);
  LAB_CHECK_LAUNCH();
}

// The sweep kernel itself must update every element exactly once: each one is compared, bit for
// bit, with its start value (regenerated from the seed, in [-1, 1)) updated once, or left alone.
lab::Checks<Sweep> sweep_checks(const lab::Variants<Sweep, Stride>& sweeps) {
  auto check = [&sweeps](lab::Look& look, Sweep& w) {
    const std::size_t first = sweeps[look.variant()].offset, n = std::size_t{1} << w.log2_n;
    look.compare_each(w.a, 0, lab::Tolerance{0.0, 0.0}, [&](std::size_t i) {  // no exercise: all
      const float v = lab::random_input(look.seed(), i);
      return i >= first && i < first + n ? v * 0.5f + 1.0f : v;
    });
  };
  auto start = [](const Sweep&, std::uint64_t seed) { return lab::RandomInput{seed}; };
  return lab::declared_checks<Sweep>({}, {{&Sweep::a, start}}, check);
}

// A gemv problem on the device.

// y is a lab::GuardedBuffer: its guard zone is checked after every validated or verified call.
struct Gemv {
  int rows, cols;
  float alpha, beta;
  lab::DeviceBuffer<float> A, At, x;  // At: the column-major copy, only when col_major runs
  lab::GuardedBuffer<float> y;
  Gemv(int r, int c, float a, float b, bool with_col_major)
      : rows(r), cols(c), alpha(a), beta(b), A(static_cast<std::size_t>(r) * c),
        At(with_col_major ? A.size() : 0), x(c), y(r, "y") {}
};

// What a variant needs besides A, x and y (lab::Variant::needs).
constexpr unsigned kColumnMajor = 1;  // At

// The inputs one seed makes (lab::fill_random's values, in [-1, 1)): A from the seed itself, x
// and the starting y from seeds of their own.
struct Inputs {
  lab::RandomInput A, x, y;
  explicit Inputs(std::uint64_t seed)
      : A{seed}, x{lab::derive_seed(seed, 1)}, y{lab::derive_seed(seed, 2)} {}
};

// How inputs are made, y reset and results checked (lab/protocol.cuh). Every call, timed ones too,
// gets a new A and x (and the column-major copy of A when there is one): a new x alone would change
// every answer, but an unchanged A could be kept from one call to the next in a smaller form (FP16
// stays inside the tolerance) and read at half the bytes the rate credits (writing A's 1 GiB costs
// about 0.4 ms, outside the timed window). y starts random when beta != 0; when beta == 0, NaN (y
// must not be read, and an element never written stays NaN). The check: every row after a validated
// call, 128 rows picked only once a timed call has finished, against A x in double from A and x
// regenerated (about 5 ms for 128 rows at 16384 columns), and the whole guard zone.
lab::Checks<Gemv> gemv_checks() {
  // The reference is kept for the next variant of the same validation (at 16384 x 16384, about
  // a second of host time); lab::random_gemv_at says why its tolerance holds.
  auto check = [kept = lab::KeptReference<lab::Rounded>()](lab::Look& look, Gemv& g) mutable {
    const Inputs in(look.seed());
    const std::vector<std::size_t> rows = look.indices(g.rows, 128);
    const lab::Rounded& y = kept.get(look.seed(), rows, [&] {
      return lab::random_gemv_at(rows, g.cols, g.alpha, in.A.seed, in.x.seed, g.beta, in.y.seed);
    });
    look.compare(g.y, rows, y.values, lab::sum_tolerance(g.cols + 2.0, y.magnitude));
  };
  auto start_y = [](const Gemv& g, std::uint64_t seed) {  // read only when beta != 0
    return g.beta != 0.0f ? std::optional(Inputs(seed).y) : std::nullopt;
  };
  lab::Checks<Gemv> c = lab::declared_checks<Gemv>(
      {{"A", &Gemv::A, &Inputs::A}, {"x", &Gemv::x, &Inputs::x}}, {{&Gemv::y, start_y}}, check);
  c.fill = [fill = c.fill](Gemv& g, std::uint64_t seed, cudaStream_t s) {
    fill(g, seed, s);  // A and x, then the column-major copy of this A
    if (g.At.size() == 0) return;
    const dim3 block(32, 8), grid((g.cols + 31) / 32, (g.rows + 7) / 8);
    transpose<<<grid, block, 0, s>>>(g.A.data(), g.At.data(), g.rows, g.cols);
    LAB_CHECK_LAUNCH();
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("04-coalescing", "Coalescing: neighbouring threads, neighbouring addresses");
  // The gemv variants. bytes: A once, x once, y read (beta != 0) and written.
  lab::Variants<Gemv> gemvs(lesson);
  auto gemv_work = [](const Gemv& g) {
    return lab::Work{4.0 * g.rows * g.cols + 4.0 * g.cols + (g.beta != 0.0f ? 2 : 1) * 4.0 * g.rows,
                     2.0 * g.rows * g.cols};
  };
  gemvs.add({"row_per_thread", lab::Role::Baseline,
             "one thread per row of row-major A: a warp reads 32 addresses a row apart",
             [](Gemv& g, cudaStream_t s) {
               gemv_row_per_thread<<<(g.rows + kThreadsPerRowBlock - 1) / kThreadsPerRowBlock,
                                     kThreadsPerRowBlock, 0, s>>>(
                   g.rows, g.cols, g.alpha, g.A.data(), g.x.data(), g.beta, g.y.data());
               LAB_CHECK_LAUNCH();
             },
             gemv_work});
  gemvs.add({"col_major", lab::Role::Baseline,
             "fix 1, the layout: thread per row over a column-major copy of A",
             [](Gemv& g, cudaStream_t s) {
               gemv_col_major<<<(g.rows + kThreadsPerRowBlock - 1) / kThreadsPerRowBlock,
                                kThreadsPerRowBlock, 0, s>>>(g.rows, g.cols, g.alpha, g.At.data(),
                                                             g.x.data(), g.beta, g.y.data());
               LAB_CHECK_LAUNCH();
             },
             gemv_work, kColumnMajor});
  // cuBLAS is column-major: it sees our row-major rows x cols A as the column-major cols x rows
  // matrix A^T (leading dimension cols), and y = alpha * (A^T)^T x + beta * y.
  std::unique_ptr<lab::CublasHandle> cublas;  // made in run() when cublas is selected
  gemvs.add({"cublas", lab::Role::Reference, "cublasSgemv on the row-major A (CUBLAS_OP_T)",
             [&cublas](Gemv& g, cudaStream_t s) {
               LAB_CUBLAS_CHECK(cublasSgemv(cublas->on(s), CUBLAS_OP_T, g.cols, g.rows, &g.alpha,
                                            g.A.data(), g.cols, g.x.data(), 1, &g.beta,
                                            g.y.data(), 1));
             },
             gemv_work});
  gemvs.add({"exercise", lab::Role::Exercise, "your gemv (exercise.cu)",
             [](Gemv& g, cudaStream_t s) {
               exercise::gemv(g.rows, g.cols, g.alpha, g.A.data(), g.x.data(), g.beta, g.y.data(),
                              s);
             },
             gemv_work});
  // The stride sweep: every float read and written once, whatever the stride.
  lab::Variants<Sweep, Stride> sweeps(lesson);
  auto sweep_variant = [&](const std::string& name, const std::string& description, int offset,
                           unsigned log2_stride) {
    sweeps.add(
        {{name, lab::Role::Baseline, description,
          [offset, log2_stride](Sweep& w, cudaStream_t s) {
            launch_strided(w.a.data() + offset, w.log2_n, log2_stride, s);
          },
          [](const Sweep& w) {
            return lab::Work{2.0 * 4.0 * static_cast<double>(std::size_t{1} << w.log2_n), 0.0};
          }},
         offset,
         log2_stride});
  };
  for (int s : {1, 2, 4, 8, 16, 32})
    sweep_variant("stride_" + std::to_string(s),
                  "read-modify-write of every float once, neighbouring threads " +
                      std::to_string(s) + (s == 1 ? " float" : " floats") + " apart",
                  0, __builtin_ctz(s));
  sweep_variant("offset_1",
                "stride 1 on an array that starts 4 bytes past a 32-byte sector boundary", 1, 0);

  long long rows = 0, cols = 0;
  lesson.option("--rows", &rows, "rows of A at the timing size", 16384, 2048, {1, 1 << 30});
  lesson.option("--cols", &cols, "columns of A at the timing size", 16384, 2048, {1, 1 << 30});

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    if (l.selected("cublas")) cublas = std::make_unique<lab::CublasHandle>();
    const bool col_major = gemvs.needs() & kColumnMajor;
    lab::Protocol<Gemv> protocol(l, gemvs, gemv_checks());

    // 1. Validation at sizes that are not multiples of 32 (nor of 4, for float4 code), with fresh
    //    inputs for every case, beta == 0 (y write-only, NaN on entry) among them.
    struct Case { int rows, cols; float alpha, beta; };
    const Case cases[] = {{1000, 777, 1.25f, -0.5f}, {33, 4097, 0.75f, 0.0f},
                          {4097, 33, -1.5f, 0.25f}, {1, 1, 2.0f, 0.0f}};
    if (gemvs.any_selected())
      for (const Case& k : cases) {
        Gemv g(k.rows, k.cols, k.alpha, k.beta, col_major);
        protocol.validate(g, lab::dims({k.rows, k.cols}) + (k.beta == 0.0f ? " beta=0" : ""));
      }

    // 2. Timing at the big size. Cold mode flushes L2 before every launch, so x really comes from
    //    DRAM once. The exercise's timed calls are checked too (gemv_checks): each gets a new A, x
    //    and y and is compared with a reference, and afterwards A and x must be as the harness
    //    wrote them.
    const int R = static_cast<int>(rows), C = static_cast<int>(cols);
    if (gemvs.any_selected()) {
      // Hot and graph modes launch several calls per sample with no reset between them: with
      // beta != 0 each would update y once more. There the timing problem has beta == 0 (y
      // write-only), so that every call leaves the same y; cold mode (the default and the
      // checker's, one call per sample) times beta == 0.5.
      const float beta = l.result().mode == lab::Mode::Cold ? 0.5f : 0.0f;
      Gemv g(R, C, 1.5f, beta, col_major);
      l.size("A " + lab::dims({R, C}) + " float32 row-major (" +
             lab::fixed(4.0 * R * C / (1 << 30), 2) + " GiB), x " + std::to_string(C) + ", y " +
             std::to_string(R));
      protocol.measure(g);

      // 3. Validation again, after timing, on the same buffers with new contents: a variant
      //    that remembers its last answer, or only works the first time, fails here.
      g.beta = 0.0f;  // y write-only: NaN on entry
      protocol.validate(g, lab::dims({R, C}) + " after timing");
    }

    // 4. The stride sweep: 2^26 floats (256 MiB) read and written in place, 2^22 with --quick,
    //    after a check of the sweep kernel itself at 2^16.
    if (!sweeps.any_selected()) return;
    lab::Protocol<Sweep, Stride> sweep_protocol(l, sweeps, sweep_checks(sweeps));
    Sweep small(16);
    sweep_protocol.validate(small, "2^16 floats");
    Sweep sweep(l.quick() ? 22 : 26);
    const std::size_t n = std::size_t{1} << sweep.log2_n;
    l.size("stride sweep: " + std::to_string(n) + " floats (" + std::to_string(4 * n >> 20) +
           " MiB), each read and written once");
    sweep_protocol.measure(sweep);

    // Each stride as a fraction of stride 1 (time of stride 1 / time of stride s).
    if (const lab::Measurement* unit = sweeps.measurement("stride_1")) {
      std::string line = "stride sweep, speed as a fraction of stride 1:";
      for (const Stride& v : sweeps) {
        const lab::Measurement* m = sweeps.measurement(v.name);
        if (!m || v.name == "stride_1") continue;
        const lab::Reading r = lab::speedup(*unit, *m);
        lab::metric(l, v.name + "_vs_stride_1", r);
        line += " " + v.name.substr(v.name.find('_') + 1) + (v.offset ? " (offset)" : "") + ": " +
                lab::fixed(r.value, 2);
      }
      l.note(line);
    }
  });
}
