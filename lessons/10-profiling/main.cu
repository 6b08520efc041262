// Lesson 10, the harness: the profiling workflow. A small application (column statistics, then
// a score per row) is handed to you; you annotate it, profile it, and fix what the profile says,
// in that order.
//
// What it runs (see --list):
//   given_app          the application as handed out (a copy of the starter, kept here so your
//                      speedup is measured against it in the same run)
//   given_stats        its phase 1 alone: column mean and 1/std, one block per column
//   given_standardize  its phase 2 alone: z = (x - mean) * inv_std into a temporary table
//   given_scores       its phase 3 alone: one thread per row sums the squares of its row of z
//   read_twice         the floor: x read twice with wide coalesced loads, nothing else. Any
//                      correct app must read x twice (the scores need the column statistics,
//                      which need every row, and x is several times larger than L2), so this is
//                      what the app's time can approach
//   exercise           yours (exercise.cu)
// The three phases add up (nearly) to given_app: the table is the breakdown `nsys stats` gives.
//
// Bytes: given_app moves 5 S (S = rows x cols x 4): stats reads x twice, standardize reads x and
// writes z, scores reads z. The exercise is credited with the 2 S it must move, whatever it
// actually moves, so its fraction of copy says how close it is to its floor.
#include <nvtx3/nvtx3.hpp>

#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr int kThreads = 256;

// The application as handed out (the starter's code, unchanged).
namespace given {

__device__ float block_sum(float v) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < kThreads / 32 ? partial[threadIdx.x] : 0.0f;
  if (threadIdx.x < 32)
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  __syncthreads();
  return v;
}

__global__ void column_stats(const float* x, int rows, int cols, float* mean, float* inv_std) {
  const int c = blockIdx.x;
  float sum = 0.0f;
  for (int r = threadIdx.x; r < rows; r += kThreads) sum += x[static_cast<long long>(r) * cols + c];
  sum = block_sum(sum);
  __shared__ float m;
  if (threadIdx.x == 0) m = sum / rows;
  __syncthreads();
  float squares = 0.0f;
  for (int r = threadIdx.x; r < rows; r += kThreads) {
    const float d = x[static_cast<long long>(r) * cols + c] - m;
    squares += d * d;
  }
  squares = block_sum(squares);
  if (threadIdx.x == 0) {
    mean[c] = m;
    inv_std[c] = rsqrtf(squares / rows);
  }
}

__global__ void standardize(const float* x, long long n, int cols, const float* mean,
                            const float* inv_std, float* z) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % cols);
    z[i] = (x[i] - mean[c]) * inv_std[c];
  }
}

__global__ void row_scores(const float* z, int rows, int cols, float* score) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) {
    const float v = z[static_cast<long long>(r) * cols + c];
    s += v * v;
  }
  score[r] = s;
}

}  // namespace given

// The floor: x read twice, float4 loads (x from cudaMalloc is 16-byte aligned; a tail of n % 4
// is read as floats), one float per block written so the reads cannot be optimized away.
__global__ void __launch_bounds__(kThreads) read_once(const float* __restrict__ x, long long n, float* out) {
  const long long n4 = n / 4;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float s = 0.0f;
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < n4;
       i += static_cast<long long>(gridDim.x) * kThreads) {
    const float4 v = __ldg(&x4[i]);
    s += (v.x + v.y) + (v.z + v.w);
  }
  if (blockIdx.x == 0 && threadIdx.x < n - 4 * n4) s += x[4 * n4 + threadIdx.x];
  s = lab::warp_sum(s);
  if (threadIdx.x % 32 == 0) atomicAdd(&out[blockIdx.x % 64], s);
}

// Test data: column c holds offset(c) + scale(c) * u with u uniform in [0, 1), so every column
// has its own mean and spread (a mixed-up column index cannot pass). x[i] of the table made from
// `seed` is one fmaf, a single rounding, the same on the host and the device: the fill, the
// reference and lab::changed_input regenerate any element instead of reading it back.
struct Table {
  std::uint64_t seed;
  int cols;
  __host__ __device__ float operator()(std::uint64_t i) const {
    const int c = static_cast<int>(i % cols);
    return fmaf(1.0f + 0.5f * static_cast<float>(c % 7), lab::uniform01(seed, i),
                static_cast<float>(c % 5) - 2.0f);
  }
};

// Every output and the workspace are lab::GuardedBuffers, their guard zones checked after every
// validated run and every verified timed call.
struct Problem {
  int rows, cols;
  lab::DeviceBuffer<float> x;
  lab::GuardedBuffer<float> mean, inv_std, score;
  lab::DeviceBuffer<float> z;                   // given app: the temporary table
  lab::DeviceBuffer<float> sink;                // read_once
  lab::GuardedBuffer<unsigned char> workspace;  // exercise::workspace_bytes of them

  Problem(int r, int c)
      : rows(r),
        cols(c),
        x(static_cast<std::size_t>(r) * c),
        mean(c, "mean"),
        inv_std(c, "inv_std"),
        score(r, "score"),
        z(static_cast<std::size_t>(r) * c),
        sink(64),
        workspace(exercise::workspace_bytes(r, c), "workspace") {}
  long long elements() const { return static_cast<long long>(rows) * cols; }
};

// The bytes each phase moves (see the top of this file): its variant's declared work, and the
// payload of its NVTX range.
double table_bytes(const Problem& p) { return 4.0 * p.elements(); }  // S
double stats_bytes(const Problem& p) { return 2 * table_bytes(p) + 8.0 * p.cols; }
double standardize_bytes(const Problem& p) { return 2 * table_bytes(p); }
double scores_bytes(const Problem& p) { return table_bytes(p) + 4.0 * p.rows; }

// The given app annotated as a library would be. Its own NVTX domain gives its ranges a row of
// their own in nsys, apart from the harness's (one per variant, in the default domain, around
// these) and from any library's, and lets ncu pick them by domain: given@standardize. Each range
// carries a name, a colour and a payload, a number the profiler shows with the range: here the
// bytes the phase moves. Without a profiler attached an NVTX call returns at once (nanoseconds,
// on the host), so the timed launches are the same as without them.
struct given_domain {
  static constexpr char const* name{"given"};
};
using given_range = nvtx3::scoped_range_in<given_domain>;  // pushed here, popped at the }

void given_stats(Problem& p, cudaStream_t s) {
  given_range range{"stats", nvtx3::rgb{230, 80, 0}, nvtx3::payload{stats_bytes(p)}};
  given::column_stats<<<p.cols, kThreads, 0, s>>>(p.x.data(), p.rows, p.cols, p.mean.data(), p.inv_std.data());
  LAB_CHECK_LAUNCH();
}
void given_standardize(Problem& p, cudaStream_t s) {
  given_range range{"standardize", nvtx3::rgb{0, 110, 220}, nvtx3::payload{standardize_bytes(p)}};
  given::standardize<<<1024, kThreads, 0, s>>>(p.x.data(), p.elements(), p.cols, p.mean.data(),
                                               p.inv_std.data(), p.z.data());
  LAB_CHECK_LAUNCH();
}
void given_scores(Problem& p, cudaStream_t s) {
  given_range range{"scores", nvtx3::rgb{40, 160, 60}, nvtx3::payload{scores_bytes(p)}};
  given::row_scores<<<(p.rows + kThreads - 1) / kThreads, kThreads, 0, s>>>(p.z.data(), p.rows, p.cols,
                                                                           p.score.data());
  LAB_CHECK_LAUNCH();
}
void given_app(Problem& p, cudaStream_t s) {
  given_stats(p, s);
  // A mark is an instant, not a span: where the statistics are handed to the phases that use
  // them (on the host's timeline, like every NVTX event: when enqueued, not when run).
  nvtx3::mark_in<given_domain>("statistics handed over");
  given_standardize(p, s);
  given_scores(p, s);
}
void read_twice(Problem& p, cudaStream_t s) {
  const int blocks = 8 * lab::device_info().sms;
  for (int pass = 0; pass < 2; ++pass) {
    read_once<<<blocks, kThreads, 0, s>>>(p.x.data(), p.elements(), p.sink.data());
    LAB_CHECK_LAUNCH();
  }
}
void run_exercise(Problem& p, cudaStream_t s) {
  exercise::anomaly_scores(p.x.data(), p.rows, p.cols, p.mean.data(), p.inv_std.data(),
                           p.score.data(), p.workspace.size() > 0 ? p.workspace.data() : nullptr,
                           s);
}

// The reference, in double from the table regenerated (never read back from x: the exercise could
// have written into it): mean and inv_std of every column from the library's column sums on the
// device (the host would take too long over 67 M elements at every timed call); the scores of the
// rows a check looks at, from those rows on the host.
struct Expected {
  std::vector<float> mean, inv_std, score;  // score: of the rows asked for, in their order
  double sum_of_x = 0;
};
Expected reference(const Problem& p, std::uint64_t seed, const std::vector<std::size_t>& rows,
                   cudaStream_t s) {
  const Table x{seed, p.cols};
  const lab::ColumnSums sums = lab::column_sums(p.rows, p.cols, x, s);
  const lab::ColumnStats st = lab::column_stats(sums, p.rows);
  const std::vector<double> score = lab::standardized_square_sums(rows, p.cols, x, st);
  return {{st.mean.begin(), st.mean.end()}, {st.inv_std.begin(), st.inv_std.end()},
          {score.begin(), score.end()}, std::accumulate(sums.sum.begin(), sums.sum.end(), 0.0)};
}

// Each call gets a new table x and poisoned outputs, then is checked (lab/declared.cuh says how).
// Judged: given_app and the exercise on all three outputs and the guard zones; phase 1 on mean
// and inv_std; phases 2 and 3, which need phase 1's outputs, run again after it, on the scores;
// the floor on its 64 partial sums, which must total twice the sum of x.
lab::Checks<Problem> checks() {
  const lab::Tolerance tol{1e-4, 1e-4};
  auto check = [tol, kept = lab::KeptReference<Expected>()](lab::Look& look, Problem& p) mutable {
    cudaStream_t s = look.stream();
    const std::string& v = look.variant();
    const std::vector<std::size_t> rows = look.indices(p.rows, 256);
    const Expected& e =
        kept.get(look.seed(), rows, [&] { return reference(p, look.seed(), rows, s); });
    if (v == "read_twice") {  // its partial sums, totalled in double
      const std::vector<float> parts = p.sink.download(s);
      const float total = static_cast<float>(std::accumulate(parts.begin(), parts.end(), 0.0));
      look.compare_host(&total, {}, {static_cast<float>(2 * e.sum_of_x)}, {1e-4, 1e-2});
      return;
    }
    const bool stats = v != "given_standardize" && v != "given_scores";
    const bool scores = v != "given_stats";
    if (!stats) given_app(p, s);  // phases 1, 2 and 3 in order, as given_app runs them
    // The statistics, then the scores (read at `rows` only); the first that differs decides.
    lab::OutputsCheck o(look);
    if (stats) o.compare(p.mean, e.mean, tol).compare(p.inv_std, e.inv_std, tol);
    if (scores) o.compare(p.score, e.score, tol, rows);
    if (stats && scores) o.guard(p.mean).guard(p.inv_std).guard(p.score).guard(p.workspace);
    o.record();
  };
  auto table = [](const Problem& p, std::uint64_t seed) { return Table{seed, p.cols}; };
  return lab::declared_checks<Problem>(
      {{"x", &Problem::x, table}},
      {&Problem::mean, &Problem::inv_std, &Problem::score, &Problem::workspace, &Problem::sink},
      check);
}

std::string ms(double v) { return lab::text("%.3f ms", v); }

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("10-profiling", "The profiling workflow: find the bottleneck, then fix it");
  // Bytes in S = rows x cols x 4 (see the top of this file); FLOPs per element: stats 3 (add;
  // multiply-add), scores 4 (subtract, multiply; multiply-add).
  lab::Variants<Problem> variants(lesson);
  auto S = table_bytes;
  auto outputs = [](const Problem& p) { return 4.0 * (p.rows + 2.0 * p.cols); };
  variants.add({"given_app", lab::Role::Baseline, "the application as handed out (the starter)",
                given_app, [=](const Problem& p) {
                  return lab::Work{5 * S(p) + outputs(p), 7.0 * p.elements()};
                }});
  variants.add({"given_stats", lab::Role::Baseline,
                "its phase 1: column statistics, one block per column", given_stats,
                [=](const Problem& p) {
                  return lab::Work{stats_bytes(p), 3.0 * p.elements()};
                }});
  variants.add({"given_standardize", lab::Role::Baseline,
                "its phase 2: z = (x - mean) * inv_std, a temporary table", given_standardize,
                [=](const Problem& p) {
                  return lab::Work{standardize_bytes(p), 2.0 * p.elements()};
                }});
  variants.add({"given_scores", lab::Role::Baseline,
                "its phase 3: one thread per row sums its row of z squared", given_scores,
                [=](const Problem& p) {
                  return lab::Work{scores_bytes(p), 2.0 * p.elements()};
                }});
  variants.add({"read_twice", lab::Role::Reference,
                "the floor: x read twice, float4 loads, nothing else", read_twice,
                [=](const Problem& p) {
                  return lab::Work{2 * S(p), 2.0 * p.elements()};
                }});
  // Credited with the 2 S it must move, whatever it moves (see the top of this file).
  variants.add({"exercise", lab::Role::Exercise, "your application (exercise.cu)", run_exercise,
                [=](const Problem& p) {
                  return lab::Work{2 * S(p) + outputs(p), 7.0 * p.elements()};
                }});
  long long rows = 262147, cols = 256;
  lesson.option("--rows", &rows, "Rows of the timed table", {2, 1 << 30});
  lesson.option("--cols", &cols, "Columns of the timed table", {1, 1 << 30});

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    if (l.quick()) rows = std::min<long long>(rows, 16411);
    if (rows * cols > (1LL << 31)) throw std::runtime_error("--rows x --cols: at most 2^31");
    lab::Protocol<Problem> protocol(l, variants, checks());

    // Validation: odd shapes (no multiple of 32 in both), tall and wide, then the timed one.
    protocol.validate_shapes({{2, 1}, {1000, 77}, {4099, 256}, {37, 1000}, {65537, 33}},
                             [](const lab::Shape& d) { return Problem(d[0], d[1]); });
    Problem p(static_cast<int>(rows), static_cast<int>(cols));
    const double S = table_bytes(p);
    l.size("x: " + std::to_string(p.rows) + " x " + std::to_string(p.cols) + " floats (" +
           std::to_string(static_cast<long long>(S / (1 << 20))) + " MiB), row-major");
    protocol.validate(p, lab::dims({p.rows, p.cols}));

    // Timing: the phases alone need the previous phases' outputs, so the given app runs once
    // first. Then the outputs must still be right after timing (the timed calls reused the
    // buffers), on a new table.
    protocol.measure(p, [&](Problem& q) { given_app(q, l.stream()); });
    protocol.validate(p, "after timing");

    const lab::Measurement* app = variants.measurement("given_app");
    const lab::Measurement* stats = variants.measurement("given_stats");
    const lab::Measurement* stdz = variants.measurement("given_standardize");
    const lab::Measurement* scores = variants.measurement("given_scores");
    const lab::Measurement* floor = variants.measurement("read_twice");
    const lab::Measurement* mine = variants.measurement("exercise");
    if (app && stats && stdz && scores) {
      const double a = app->gpu_ms.median, p1 = stats->gpu_ms.median, p2 = stdz->gpu_ms.median,
                   p3 = scores->gpu_ms.median;
      l.note(
          lab::text("given app %s = stats %s (%.0f%%) + standardize %s (%.0f%%) + scores %s "
                    "(%.0f%%)",
                    ms(a).c_str(), ms(p1).c_str(), 100 * p1 / a, ms(p2).c_str(), 100 * p2 / a,
                    ms(p3).c_str(), 100 * p3 / a));
    }
    if (mine && floor)
      l.note("your app takes " + ms(mine->gpu_ms.median) + ", " +
             std::to_string(mine->gpu_ms.median / floor->gpu_ms.median).substr(0, 4) +
             "x the floor (x read twice: " + ms(floor->gpu_ms.median) + ")");
  });
}

