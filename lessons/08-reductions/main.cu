// Lesson 08, the harness: reductions. From a tree in shared memory to the speed of CUB, on the
// plainest reduction there is: the sum of n floats (and the mean, which is the sum over n).
//
// What it runs (see --list), in the order the lesson takes them, each written below with its step's
// comment: interleaved (a tree in shared memory, divergent warps, one pass per level: 4 at 2^28),
// sequential (sequential addressing), first_add (two elements per thread while loading), shuffle (a
// grid-stride loop and warp shuffles, one scalar load at a time), cub (cub::DeviceReduce::Sum) and
// your exercise (the goal: at least 0.9x cub's speed in the same run). Every variant reads x once,
// so "bytes" is 4n for all of them (the partial sums they write and read back are under 0.5% of
// it).
#include <cub/device/device_reduce.cuh>

#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr int kThreads = 256;

// The classic ladder (Harris, "Optimizing Parallel Reduction in CUDA", steps 1, 3 and 4). Each
// kernel writes one partial sum per block to out[blockIdx.x]; tree_sum() runs it again on the
// partials until a single number is left.

// Step 1: interleaved addressing. At step s only threads whose index is a multiple of 2s add, so
// every warp stays busy (diverged) until s reaches 32, and the % is an integer division.
__global__ void __launch_bounds__(kThreads)
    interleaved_kernel(const float* __restrict__ x, long long n, float* __restrict__ out) {
  __shared__ float s[kThreads];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = 1; stride < kThreads; stride *= 2) {
    if (t % (2 * stride) == 0) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// Step 2: sequential addressing. At step s the first s threads add s[t + s]: the active threads
// are contiguous, so warps retire whole and neighbouring threads touch neighbouring words.
__global__ void __launch_bounds__(kThreads)
    sequential_kernel(const float* __restrict__ x, long long n, float* __restrict__ out) {
  __shared__ float s[kThreads];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * kThreads + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// Step 3: the first add during the load. A block covers 2 * kThreads elements; each thread adds
// its two before the tree starts, so half the threads are no longer idle after one step.
__global__ void __launch_bounds__(kThreads)
    first_add_kernel(const float* __restrict__ x, long long n, float* __restrict__ out) {
  __shared__ float s[kThreads];
  const unsigned t = threadIdx.x;
  const long long i = static_cast<long long>(blockIdx.x) * (2 * kThreads) + t;
  float v = i < n ? x[i] : 0.0f;
  if (i + kThreads < n) v += x[i + kThreads];
  s[t] = v;
  __syncthreads();
  for (unsigned stride = kThreads / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

using TreeKernel = void (*)(const float*, long long, float*);

// Runs a one-partial-per-block kernel pass after pass (each pass reads the previous one's
// partials) until one number is left, which the last pass writes to *result. Partials alternate
// between a (large enough for the first pass) and b (for the second; later passes are smaller).
void tree_sum(TreeKernel kernel, long long per_block, const float* x, long long n, float* result,
              float* a, float* b, cudaStream_t s) {
  const float* in = x;
  long long count = n;
  bool into_a = true;
  for (;;) {
    const long long blocks = (count + per_block - 1) / per_block;
    float* out = blocks == 1 ? result : (into_a ? a : b);
    kernel<<<static_cast<unsigned>(blocks), kThreads, 0, s>>>(in, count, out);
    LAB_CHECK_LAUNCH();
    if (blocks == 1) return;
    in = out;
    count = blocks;
    into_a = !into_a;
  }
}

// Step 4: warp shuffles and a grid-stride loop, in two kernels. The loads stay scalar and the
// loop is not unrolled: each thread has one 4-byte load in flight at a time. The exercise is
// what comes after this. The block size is a template parameter only for the occupancy note
// under the table (occupancy_note); the variant runs it at kThreads.

template <int Threads>
__global__ void __launch_bounds__(Threads)
    shuffle_kernel(const float* __restrict__ x, long long n, float* __restrict__ out) {
  float v = 0.0f;
#pragma unroll 1
  for (long long i = static_cast<long long>(blockIdx.x) * Threads + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * Threads)
    v += x[i];
  v = lab::block_sum<Threads>(v);  // lab/reduce.cuh: warp shuffles, then one warp
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

int shuffle_blocks(long long n) { return lab::grid_for(n, kThreads, 8); }

void shuffle_sum(const float* x, long long n, float* result, float* partials, cudaStream_t s) {
  const int blocks = shuffle_blocks(n);
  shuffle_kernel<kThreads><<<blocks, kThreads, 0, s>>>(x, n, partials);
  LAB_CHECK_LAUNCH();
  shuffle_kernel<kThreads><<<1, kThreads, 0, s>>>(partials, blocks, result);
  LAB_CHECK_LAUNCH();
}

// Test data (README, "Accuracy"). Two kinds, for two kinds of mistakes:
//  * integer-valued: each x[i] is one of -4..-1, 1..4 (never 0), from the seed. Every partial sum
//    is then an integer far below 2^24, which float adds exactly: any order of addition gives the
//    exact sum, and the check is equality (a dropped, doubled or stale element cannot hide in the
//    rounding error). The data of the timing runs (an addition takes as long whatever the value).
//  * uniform in [0, 1) (lab::random_input's values): for an accuracy check against the bound below.

// Element i of the integer-valued data of `seed`: the same on host and device.
__host__ __device__ inline int integer_value(std::uint64_t seed, long long i) {
  const int k = static_cast<int>(lab::uniform01(seed, static_cast<std::uint64_t>(i)) * 8.0f);
  return k < 4 ? k - 4 : k - 3;  // 0..7 -> -4..-1, 1..4
}

enum class Data { Integers, Uniform01 };

// x[i] as a fill of one kind from one seed writes it: the same on host and device.
struct Input {
  std::uint64_t seed = 0;
  Data data = Data::Integers;
  __host__ __device__ float operator()(std::uint64_t i) const {
    return data == Data::Integers ? static_cast<float>(integer_value(seed, static_cast<long long>(i)))
                                  : lab::random_input(seed, i, 0.0f, 1.0f);
  }
};

// What a variant needs besides x and the result (lab::Variant::needs).
enum Needs : unsigned {
  kPartials = 1,   // a, b: the tree and shuffle variants' partial sums
  kCub = 2,        // cub's temporary storage
  kWorkspace = 4,  // exercise::sum_workspace_bytes
};

// The reference: the sum in double on the host of the data regenerated from its seed (never read
// back from x), exact to far better than the float result can be; on data in [0, 1) a float sum
// in any order must be within (8 sqrt(n) + 1) 2^-24 sum|x_i| of it (README, "Accuracy: the bound
// the checker uses"; lab/sum_reference.cuh), and on integer data exactly right.
struct Reference : lab::SumReference {  // exact, magnitude, sequential (one float accumulator)
  bool integers = false;
  double bound = 0;  // |got - exact| allowed (0 for integer data: exact)
};

Reference reference(const Input& in, long long n) {
  const lab::SumReference sum = lab::sum_reference(n, in);
  const bool integers = in.data == Data::Integers;
  return {sum, integers, integers ? 0.0 : lab::sum_bound(n, sum.magnitude)};
}

struct Problem {
  long long n;
  Data data = Data::Integers;  // what the next fill writes
  lab::DeviceBuffer<float> x;
  // The sum goes to result[0]; the 63 floats after it are a guard zone, and so are the 256 bytes
  // after the workspace the exercise asked for: a write into either is a wrong result.
  lab::GuardedBuffer<float> result{1, "result", 63 * sizeof(float)};
  lab::DeviceBuffer<float> a, b;  // partial sums of the tree variants
  lab::CubCall cub;               // cub::DeviceReduce::Sum on x, with its temporary storage
  lab::GuardedBuffer<unsigned char> workspace;  // exercise::sum_workspace_bytes of them
  bool has_workspace = false;                   // (it may be 0 bytes, and guarded all the same)
  lab::SparseChanges<Input> changes;  // what x holds: the fill, and a timed call's changes
  long long delta = 0;                // the sum of x minus the fill's (the changes')
  Reference filled;                   // the fill's sum, added up on the host from the generator
  std::vector<std::pair<std::string, float>> sums;  // each variant's sum since the fill (notes)

  Problem(long long count, unsigned needs) : n(count), x(static_cast<std::size_t>(count)) {
    if (needs & kPartials) {
      const long long first = (n + kThreads - 1) / kThreads;  // the most any first pass writes
      a = lab::DeviceBuffer<float>(static_cast<std::size_t>(
          std::max<long long>(first, shuffle_blocks(n))));
      b = lab::DeviceBuffer<float>(static_cast<std::size_t>((first + kThreads - 1) / kThreads));
    }
    if (needs & kCub)
      cub = lab::CubCall("cub::DeviceReduce::Sum", [x = x.data(), sum = result.data(), n = n](
                                                       void* t, std::size_t& b, cudaStream_t s) {
        return cub::DeviceReduce::Sum(t, b, x, sum, n, s);
      });
    if (needs & kWorkspace) {
      workspace = lab::GuardedBuffer<unsigned char>(
          exercise::sum_workspace_bytes(static_cast<std::size_t>(n)), "workspace", 256);
      has_workspace = true;
    }
  }
};

// The variants, in the order the lesson takes them. Each leaves the sum in p.result[0] on the
// device; each reads x once: 4n bytes, and n additions (the partial sums they write and read
// back are under 0.5% of it).

void add_variants(lab::Variants<Problem>& variants) {
  auto work = [](const Problem& p) { return lab::Work{4.0 * p.n, static_cast<double>(p.n)}; };
  auto tree = [](TreeKernel kernel, long long per_block) {  // tree_sum of a ladder kernel
    return [kernel, per_block](Problem& p, cudaStream_t s) {
      tree_sum(kernel, per_block, p.x.data(), p.n, p.result.data(), p.a.data(), p.b.data(), s);
    };
  };
  variants.add({"interleaved", lab::Role::Baseline,
                "shared-memory tree, interleaved addressing (tid % 2s): divergent, multi-pass",
                tree(interleaved_kernel, kThreads), work, kPartials});
  variants.add({"sequential", lab::Role::Baseline,
                "shared-memory tree, sequential addressing (tid < s), multi-pass",
                tree(sequential_kernel, kThreads), work, kPartials});
  variants.add({"first_add", lab::Role::Baseline,
                "sequential tree, two elements added during the load, multi-pass",
                tree(first_add_kernel, 2 * kThreads), work, kPartials});
  variants.add({"shuffle", lab::Role::Baseline,
                "grid-stride scalar loads, warp shuffles, 2 kernels",
                [](Problem& p, cudaStream_t s) {
                  shuffle_sum(p.x.data(), p.n, p.result.data(), p.a.data(), s);
                },
                work, kPartials});
  variants.add({"cub", lab::Role::Reference, "cub::DeviceReduce::Sum",
                [](Problem& p, cudaStream_t s) { p.cub(s); }, work, kCub});
  variants.add({"exercise", lab::Role::Exercise, "your sum (exercise.cu)",
                [](Problem& p, cudaStream_t s) {
                  exercise::sum(p.x.data(), static_cast<std::size_t>(p.n), p.result.data(),
                                p.workspace.size() > 0 ? p.workspace.data() : nullptr, s);
                },
                work, kWorkspace});
}

// Before a run (enqueued, not waited for): result and the workspace poisoned, guard zones armed.
void poison_outputs(Problem& p, cudaStream_t s) {
  p.result.reset(s);
  if (p.has_workspace) p.workspace.reset(s);
}

// Inputs and checks (lab/protocol.cuh). A validated call gets x filled anew (integers or [0,1),
// p.data). x is 1 GiB at the timing size, so a timed call gets instead new values at 64 places of
// x drawn from its seed (lab::SparseChanges), spread over all of x (a fingerprint of a few
// elements misses them), integers never 0, picked so that the sum differs from the last call's: a
// replay is wrong. Every call is checked with its guard zones against the exact sum, known on the
// host: the fill's (added up once per fill from the generator) plus the changes. After timing, x
// must hold exactly the fill with the last call's changes: a sum that keeps partials in its
// read-only input is right once, then wrong on the next call.
lab::Checks<Problem> checks() {
  lab::Checks<Problem> c;
  c.fill = [](Problem& p, std::uint64_t seed, cudaStream_t s) {
    const Input in{seed, p.data};
    lab::fill_with(p.x.data(), p.n, in, s);
    p.changes.filled(static_cast<std::size_t>(p.n), in);
    p.filled = reference(in, p.n);  // on the host while the device fills x
    p.delta = 0;
    p.sums.clear();
  };
  c.reset = poison_outputs;
  c.change = [](Problem& p, std::uint64_t seed, cudaStream_t s) {
    p.changes.draw(seed, [](std::mt19937_64& g) {
      const int k = static_cast<int>(g() % 8);
      return static_cast<float>(k < 4 ? k - 4 : k - 3);
    });
    const std::vector<std::size_t>& at = p.changes.changed();
    long long delta = 0;
    for (std::size_t k = 0; k < at.size(); ++k)
      delta += static_cast<long long>(p.changes.new_values()[k] - p.changes.base()(at[k]));
    if (delta == p.delta) {  // the same sum as the last call: change one value (never to 0)
      const int was = static_cast<int>(p.changes.new_values().back());
      const int v = was == 4 ? 3 : was == -1 ? 1 : was + 1;
      p.changes.set(at.size() - 1, static_cast<float>(v));
      delta += v - was;
    }
    p.delta = delta;
    p.changes.write_device(p.x.data(), s);
    poison_outputs(p, s);
  };
  c.check = [](lab::Look& look, Problem& p) {  // the sum, result's and the workspace's guards
    const float got = lab::check_sum(
        look, p.result, p.filled.exact + static_cast<double>(p.delta), p.filled.bound,
        p.filled.integers ? "integer-valued data: every order of addition is exact" : "",
        p.has_workspace ? &p.workspace : nullptr);
    p.sums.emplace_back(look.variant(), got);
  };
  c.inputs_changed = [](const Problem& p, std::uint64_t, cudaStream_t s) {
    return std::vector<std::string>{p.changes.changed_device("x", p.x.data(), s)};
  };
  return c;
}

std::string size_name(long long n) {
  for (int k = 10; k < 40; ++k) {
    if (n == (1LL << k)) return "2^" + std::to_string(k);
    if (n > (1LL << k) && n - (1LL << k) < 64) return "2^" + std::to_string(k) + "+" +
                                                       std::to_string(n - (1LL << k));
  }
  return std::to_string(n);
}

std::string data_name(Data data) { return data == Data::Integers ? " integers" : " in [0,1)"; }

// Occupancy (README, "Occupancy: how many warps an SM can hold"): how many blocks of shuffle's
// first pass fit on an SM at one block size, by the occupancy API, and that pass timed over a
// grid of exactly that many blocks per SM (one full wave; the grid-stride loop does the rest).
// Each thread has one 4-byte load in flight, so the bytes in flight, and with them the read
// speed, should follow the warps an SM holds. Occupancy is a ceiling on that latency hiding, not
// a speed: cub reads faster at full occupancy with more loads in flight per thread.
// Returns the kernel's registers per thread.
template <int Threads>
int occupancy_row(lab::Lesson& l, const float* x, long long n, int max_warps) {
  int per_sm = 0;
  LAB_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, shuffle_kernel<Threads>, Threads, 0));
  cudaFuncAttributes attributes{};
  LAB_CHECK(cudaFuncGetAttributes(&attributes, shuffle_kernel<Threads>));
  const int blocks = lab::grid_for(n, Threads, std::max(per_sm, 1));
  lab::DeviceBuffer<float> partials(static_cast<std::size_t>(blocks));
  auto pass = [&](cudaStream_t s) {
    shuffle_kernel<Threads><<<blocks, Threads, 0, s>>>(x, n, partials.data());
    LAB_CHECK_LAUNCH();
  };
  const double ms = lab::benchmark(pass, l.stream(), lab::short_run(2.0, 10)).gpu_ms.median;
  const double gbs = 4.0 * n / (ms * 1e6), copy = l.ceilings().copy_gbs;
  const int warps = per_sm * Threads / 32;
  // The read speed first after the label, so that a text can quote it ("32 threads:").
  l.note(lab::text("  %4d threads: %7.1f GB/s", Threads, gbs) +
         (copy > 0 ? lab::text(" (%.2f of copy)", gbs / copy) : "") +
         lab::text(" | %2d blocks/SM, %2d of %d warps (%.0f%%) | %d registers", per_sm, warps,
                   max_warps, 100.0 * warps / max_warps, attributes.numRegs));
  return attributes.numRegs;
}

// The occupancy note: the SM's limits, one row per block size, and what registers allow.
void occupancy_note(lab::Lesson& l, const float* x, long long n) {
  int device = 0, threads = 0, blocks = 0, registers = 0;
  LAB_CHECK(cudaGetDevice(&device));
  LAB_CHECK(cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  LAB_CHECK(cudaDeviceGetAttribute(&blocks, cudaDevAttrMaxBlocksPerMultiprocessor, device));
  LAB_CHECK(cudaDeviceGetAttribute(&registers, cudaDevAttrMaxRegistersPerMultiprocessor, device));
  l.note(lab::text("occupancy: an SM here holds %d threads (%d warps), %d blocks, %d registers;",
                   threads, threads / 32, blocks, registers));
  l.note(
      "  shuffle's first pass over one full wave of blocks (not a judged variant), read speed"
      " | blocks per SM, warps per SM (occupancy) | registers per thread:");
  occupancy_row<32>(l, x, n, threads / 32);  // 1 warp a block: the block limit binds
  occupancy_row<128>(l, x, n, threads / 32);
  const int used = occupancy_row<256>(l, x, n, threads / 32);  // the shuffle variant's block
  occupancy_row<1024>(l, x, n, threads / 32);
  // __launch_bounds__(256, B) asks the compiler for at most registers / (256 B) per thread, so
  // that B blocks fit; a kernel that already uses fewer compiles the same.
  const int cap = registers / (256 * (threads / 256));
  l.note(lab::text("  __launch_bounds__(256, %d) caps a thread at %d registers; shuffle uses %d: ",
                   threads / 256, cap, used) +
         (used <= cap ? "no change, registers do not limit it"
                      : "fewer registers, spilling if it must"));
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("08-reductions",
                     "Reductions: from a tree in shared memory to the speed of CUB");
  lab::Variants<Problem> variants(lesson);
  add_variants(variants);

  long long n = 0;
  lesson.option("--n", &n, "floats to add at the timing size", 1LL << 28, 1LL << 22, {1, 1LL << 30});

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    const unsigned needs = variants.needs();
    lab::Protocol<Problem> protocol(l, variants, checks());

    // 1. Validation at sizes that are not powers of two, nor multiples of 4 or of a block: exact
    //    on integer-valued data, within the bound on data in [0, 1). Fresh inputs every case.
    std::vector<long long> sizes = {1, 3, 1000003, (1LL << 24) + 7};
    if (l.quick()) sizes = {1, 3, 65543, 1000003};
    for (const long long size : sizes) {
      Problem p(size, needs);
      for (const Data data : {Data::Integers, Data::Uniform01}) {
        p.data = data;
        protocol.validate(p, size_name(size) + data_name(data));
      }
    }

    // 2. Timing: 2^28 floats, 1 GiB, far past the 50-60 MB L2 (and the harness flushes L2 before
    //    every cold sample), integer data. The exercise's timed calls are each checked.
    Problem p(n, needs);
    l.size("x: " + size_name(n) + " float32 (" + lab::text("%.0f", 4.0 * n / (1 << 20)) + " MiB)");
    p.data = Data::Integers;
    protocol.measure(p);
    if (l.profiling()) return;

    // 3. Validation again, after timing, in the same buffers with new contents: a variant that
    //    remembers its last answer, or only works the first time, fails here.
    for (const Data data : {Data::Integers, Data::Uniform01}) {
      p.data = data;
      protocol.validate(p, size_name(n) + data_name(data) + " after timing");
    }

    // 4. Notes: the mean, the float error of each variant, and the single accumulator.
    const Reference& ref = p.filled;
    l.note("the mean of " + size_name(n) + " values in [0,1): " + lab::text("%.9f", ref.exact / n) +
           " (double); accuracy bound on the sum " + lab::text("%.2g", ref.bound / ref.exact) +
           " relative");
    for (const auto& [name, got] : p.sums)
      l.note(lab::text("  %-12.12s sum %.8g, relative error %+.2e", name.c_str(), got,
                       (got - ref.exact) / ref.exact));
    l.note(lab::text("  one float accumulator, in order (host): %.8g, relative error %+.2e",
                     ref.sequential, (ref.sequential - ref.exact) / ref.exact));

    // Each variant's speed as a fraction of cub's (the exercise's rule: >= 0.9).
    if (const lab::Measurement* cub = variants.measurement("cub")) {
      std::string line = "speed as a fraction of cub's:";
      for (const auto& v : variants)
        if (const lab::Measurement* m = variants.measurement(v.name); m && v.name != "cub")
          line += " " + v.name + lab::text(" %.2f", cub->gpu_ms.median / m->gpu_ms.median);
      l.note(line);
    }

    // 5. Occupancy, outside every judged measurement; not with --quick, nor when shuffle is
    //    skipped (as grading does: its run stays as long as it was).
    if (!l.quick() && variants.measurement("shuffle")) occupancy_note(l, p.x.data(), n);
  });
}
