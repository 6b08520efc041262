// Lesson 06, the harness: fusion. From a loop of small kernels, temporaries and syncs to one pass
// over memory, on the batched RMSE: out[b] = sqrt(mean((A[b] - B[b])^2)) for every slice b.
//
// What it runs (see --list) are the eight steps of the README's table "The steps of the lesson",
// from naive_loop (per slice: slice copies, four kernels, a read-back and a sync, cudaMalloc and
// cudaFree) through fused_per_batch (one pass per slice) to your exercise (one launch for the
// whole batch), cub_segmented (the library way) and graph_loop. Each is written below with what
// it launches and its bytes: the global-memory bytes its kernels and copies read and write, every
// one counted once, for n = rows * cols floats per slice and N = batches * n per input (the
// minimum is 8N: A and B read once).
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_transform.cuh>

#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr int kThreads = 256;

// The given kernels. Each is a reasonable kernel for what it does; the point of the lesson is how
// many of them run, and how many bytes pass between them, not how good each one is.

// Grid for an elementwise kernel over n elements: grid-stride, at most 16 blocks per SM.
int elementwise_blocks(long long n) { return lab::grid_for(n, kThreads, 16); }
// Blocks of the first pass of the two-pass sum: about 2048 elements per block, at most 2 per SM.
int reduce_blocks(long long n) { return lab::grid_for(n, 2048, 2); }

// d = a - b (one read of each input, one write of d).
__global__ void diff_kernel(const float* __restrict__ a, const float* __restrict__ b,
                            float* __restrict__ d, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    d[i] = a[i] - b[i];
}

// sq = d * d (a new temporary, as an array library would make one).
__global__ void square_kernel(const float* __restrict__ d, float* __restrict__ sq, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    sq[i] = d[i] * d[i];
}

// One pass of a two-pass sum: block k writes the sum of its grid-stride share of x to out[k].
// Run with many blocks over the data, then with one block over the partial sums.
__global__ void __launch_bounds__(kThreads)
    sum_kernel(const float* __restrict__ x, long long n, float* __restrict__ out) {
  float v = 0.0f;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    v += x[i];
  v = lab::block_sum<kThreads>(v);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

// out[i] = sqrt(sums[i] / n) for i < count: the "root" and the "mean" of RMSE.
__global__ void root_mean_kernel(const float* __restrict__ sums, float* __restrict__ out,
                                 int count, double n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = static_cast<float>(sqrt(static_cast<double>(sums[i]) / n));
}

// The map fused into the reduction, for one slice: each thread squares the differences of its
// grid-stride share as it reads them, the block adds them up, one atomicAdd per block into *sum.
// A and B are read once; nothing is written but one float per block.
__global__ void __launch_bounds__(kThreads)
    squared_diff_sum_kernel(const float* __restrict__ a, const float* __restrict__ b, long long n,
                            float* __restrict__ sum) {
  float v = 0.0f;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const float d = a[i] - b[i];
    v += d * d;
  }
  v = lab::block_sum<kThreads>(v);
  if (threadIdx.x == 0) atomicAdd(sum, v);
}

// The library's map: (a - b)^2, element by element, for cub::DeviceTransform.
struct SquaredDiff {
  __device__ float operator()(float a, float b) const {
    const float d = a - b;
    return d * d;
  }
};

// Test data: slice b of x multiplied by its own factor in [0.5, 4), drawn from the seed. With
// every slice the same distribution all RMSEs would be about equal (0.816 for uniform [-1, 1)
// inputs), and a result from the wrong slice or an earlier call could pass; now they differ by
// up to 8x between slices and between runs.
// (fmaf: one rounding, the same on the host and the device, so the harness can regenerate B.)
__host__ __device__ float slice_scale(std::uint64_t seed, int b) {
  return fmaf(3.5f, lab::uniform01(seed ^ 0x5CA1Eull, static_cast<std::uint64_t>(b)), 0.5f);
}

// A problem on the device: the inputs, the output with a guard zone after it, and what each
// variant needs besides (allocated here, outside every timed call).

// What a variant needs besides the inputs and out (lab::Variant::needs).
enum Needs : unsigned {
  kTemporaries = 1,  // d, sq, partials: the unfused loop's, allocated once
  kSums = 2,         // one sum of squares per slice
  kCub = 4,          // the segmented reduction's temporary, offsets and storage
  kWorkspace = 8,    // exercise::workspace_bytes
  kGraph = 16,       // graph_loop: the preallocated loop captured
};

struct Problem {
  int rows, cols, batches;
  long long n;      // floats per slice
  long long total;  // floats per input, batches * n
  lab::DeviceBuffer<float> A, B;
  lab::GuardedBuffer<float> out;             // a guard zone after out[batches - 1]
  lab::DeviceBuffer<float> d, sq, partials;  // the unfused loop's temporaries, for one slice
  lab::DeviceBuffer<float> sums;             // one sum of squares per slice
  lab::DeviceBuffer<float> d2;               // cub: (A - B)^2 for every slice
  lab::DeviceBuffer<long long> offsets;      // cub: slice b is [offsets[b], offsets[b + 1])
  lab::CubCall segmented_sum;                // cub: the sums of d2's slices, and its storage
  lab::DeviceBuffer<unsigned char> workspace;  // exercise::workspace_bytes of them
  lab::Graph graph;                            // graph_loop: preallocated, captured
  Problem(int r, int c, int nb, unsigned needs)
      : rows(r), cols(c), batches(nb), n(static_cast<long long>(r) * c), total(n * nb), A(total),
        B(total), out(nb, "out") {
    if (needs & kTemporaries) {
      d = lab::DeviceBuffer<float>(n);
      sq = lab::DeviceBuffer<float>(n);
      partials = lab::DeviceBuffer<float>(reduce_blocks(n) + 1);  // + 1: the final sum
    }
    if (needs & (kSums | kCub)) sums = lab::DeviceBuffer<float>(nb);
    if (needs & kCub) {
      d2 = lab::DeviceBuffer<float>(total);
      std::vector<long long> host(static_cast<std::size_t>(nb) + 1);
      for (int b = 0; b <= nb; ++b) host[b] = b * n;
      offsets = lab::DeviceBuffer<long long>(host.size());
      LAB_CHECK(cudaMemcpy(offsets.data(), host.data(), offsets.bytes(), cudaMemcpyHostToDevice));
      segmented_sum = lab::CubCall(
          "cub::DeviceSegmentedReduce::Sum",
          [in = d2.data(), sum = sums.data(), nb, at = offsets.data()](void* t, std::size_t& bytes,
                                                                       cudaStream_t s) {
            return cub::DeviceSegmentedReduce::Sum(t, bytes, in, sum, nb, at, at + 1, s);
          });
    }
    if (needs & kWorkspace) {
      const std::size_t bytes = exercise::workspace_bytes(r, c, nb);
      if (bytes > 0) workspace = lab::DeviceBuffer<unsigned char>(bytes);
    }
  }
  const float* slice_a(int b) const { return A.data() + b * n; }
  const float* slice_b(int b) const { return B.data() + b * n; }
};

// The variants. Each one leaves the RMSEs in p.out on the device; the harness reads them back
// after the timed region (the same 4 * batches bytes for every variant).

// The unfused chain for one slice, from a and b to *sum: diff, square, two-pass sum. 4 launches.
void unfused_sum(const float* a, const float* b, long long n, float* d, float* sq,
                 float* partials, cudaStream_t s) {
  const int blocks = elementwise_blocks(n), parts = reduce_blocks(n);
  diff_kernel<<<blocks, kThreads, 0, s>>>(a, b, d, n);
  LAB_CHECK_LAUNCH();
  square_kernel<<<blocks, kThreads, 0, s>>>(d, sq, n);
  LAB_CHECK_LAUNCH();
  sum_kernel<<<parts, kThreads, 0, s>>>(sq, n, partials);
  LAB_CHECK_LAUNCH();
  sum_kernel<<<1, kThreads, 0, s>>>(partials, parts, partials + parts);  // the sum: partials[parts]
  LAB_CHECK_LAUNCH();
}

// 1 and 2. The loop a first version is written as: per slice, fresh temporaries and the sum back
// to the host, which waits for it and keeps the root in a host array, uploaded at the end. With
// copy_slices the slices are copied out first (what `A[:, :, b]` does in most array libraries).
void naive_loop(const Problem& p, bool copy_slices, cudaStream_t s) {
  std::vector<float> host(p.batches);
  const std::size_t slice_bytes = static_cast<std::size_t>(p.n) * sizeof(float);
  for (int b = 0; b < p.batches; ++b) {
    const float* a = p.slice_a(b);
    const float* bb = p.slice_b(b);
    lab::DeviceBuffer<float> a_copy, b_copy;  // cudaMalloc here, cudaFree at the end of the body
    if (copy_slices) {
      a_copy = lab::DeviceBuffer<float>(p.n);
      b_copy = lab::DeviceBuffer<float>(p.n);
      LAB_CHECK(cudaMemcpyAsync(a_copy.data(), a, slice_bytes, cudaMemcpyDeviceToDevice, s));
      LAB_CHECK(cudaMemcpyAsync(b_copy.data(), bb, slice_bytes, cudaMemcpyDeviceToDevice, s));
      a = a_copy.data();
      bb = b_copy.data();
    }
    lab::DeviceBuffer<float> d(p.n), sq(p.n), partials(reduce_blocks(p.n) + 1);
    unfused_sum(a, bb, p.n, d.data(), sq.data(), partials.data(), s);
    float sum = 0.0f;
    LAB_CHECK(cudaMemcpyAsync(&sum, partials.data() + reduce_blocks(p.n), sizeof(float),
                              cudaMemcpyDeviceToHost, s));
    LAB_CHECK(cudaStreamSynchronize(s));  // the host needs the number: it waits for the GPU
    host[b] = static_cast<float>(std::sqrt(static_cast<double>(sum) / static_cast<double>(p.n)));
  }
  // From pageable memory: returns once the data is staged, so `host` may go away after it.
  LAB_CHECK(cudaMemcpyAsync(p.out.data(), host.data(), host.size() * sizeof(float),
                            cudaMemcpyHostToDevice, s));
}

// 3. The root taken on the GPU, into out[b]; the temporaries still allocated per slice.
void device_results(const Problem& p, cudaStream_t s) {
  for (int b = 0; b < p.batches; ++b) {
    lab::DeviceBuffer<float> d(p.n), sq(p.n), partials(reduce_blocks(p.n) + 1);
    unfused_sum(p.slice_a(b), p.slice_b(b), p.n, d.data(), sq.data(), partials.data(), s);
    root_mean_kernel<<<1, 32, 0, s>>>(partials.data() + reduce_blocks(p.n), p.out.data() + b, 1,
                                      static_cast<double>(p.n));
    LAB_CHECK_LAUNCH();
  }  // ~DeviceBuffer: cudaFree, which synchronizes the device
}

// 4. The temporaries allocated once (in Problem): 5 launches per slice, nothing else.
void preallocated(const Problem& p, cudaStream_t s) {
  const int parts = reduce_blocks(p.n);
  for (int b = 0; b < p.batches; ++b) {
    unfused_sum(p.slice_a(b), p.slice_b(b), p.n, p.d.data(), p.sq.data(), p.partials.data(), s);
    root_mean_kernel<<<1, 32, 0, s>>>(p.partials.data() + parts, p.out.data() + b, 1,
                                      static_cast<double>(p.n));
    LAB_CHECK_LAUNCH();
  }
}

// 5. One fused kernel per slice: a memset, `batches` kernels, one root kernel for all slices.
void fused_per_batch(const Problem& p, cudaStream_t s) {
  const int blocks = lab::grid_for(p.n, 8 * kThreads, 8);
  LAB_CHECK(cudaMemsetAsync(p.sums.data(), 0, p.sums.bytes(), s));
  for (int b = 0; b < p.batches; ++b) {
    squared_diff_sum_kernel<<<blocks, kThreads, 0, s>>>(p.slice_a(b), p.slice_b(b), p.n,
                                                        p.sums.data() + b);
    LAB_CHECK_LAUNCH();
  }
  root_mean_kernel<<<(p.batches + kThreads - 1) / kThreads, kThreads, 0, s>>>(
      p.sums.data(), p.out.data(), p.batches, static_cast<double>(p.n));
  LAB_CHECK_LAUNCH();
}

// 7. The library way: a transform for the map, a segmented reduction for the sums, the root.
void cub_segmented(const Problem& p, cudaStream_t s) {
  LAB_CHECK(cub::DeviceTransform::Transform(cuda::std::make_tuple(p.A.data(), p.B.data()),
                                            p.d2.data(), p.total, SquaredDiff{}, s));
  p.segmented_sum(s);
  root_mean_kernel<<<(p.batches + kThreads - 1) / kThreads, kThreads, 0, s>>>(
      p.sums.data(), p.out.data(), p.batches, static_cast<double>(p.n));
  LAB_CHECK_LAUNCH();
}

// A variant of this lesson: besides what every variant has, what one call launches, in words,
// for the notes.
struct Rmse : lab::Variant<Problem> {
  std::string (*calls)(int batches) = nullptr;
};

// Global-memory bytes of one call of the unfused chain on one slice: diff (read 2n, write n),
// square (read n, write n), sum pass 1 (read n, write parts), pass 2 (read parts, write 1).
// Every variant counts its small terms too (partial sums, one float per slice): exact totals.
double chain_bytes(const Problem& p) {
  const double n = static_cast<double>(p.n), f = sizeof(float);
  const double parts = reduce_blocks(p.n);
  return f * (3 * n + 2 * n + n + parts + parts + 1);
}

constexpr double kF = sizeof(float);

// Bytes as the README's table "The steps of the lesson" counts them; FLOPs: a subtract, a
// multiply and an add per element pair, whatever the variant.
lab::Work rmse_work(const Problem& p, double bytes) { return {bytes, 3.0 * p.total}; }

void add_variants(lab::Variants<Problem, Rmse>& variants) {
  // The slow loops allocate and wait inside the call: the host is part of the work, so they are
  // host-paced (no lead-in, README step 1): the events measure the loop from its first call to
  // its last result, host waits included. Few samples: they are slow and not subtle (8 samples
  // and 20 ms, the median to 2%, within 1.5 s).
  lab::BenchmarkOptions synced = lab::measure_until(8, 20.0, 0.02, 1.5);
  synced.warmup_ms = 10.0;
  const std::string waits =
      "it allocates and synchronizes, which a captured graph or back-to-back (hot) launches "
      "cannot hold";
  variants.add(
      {{"naive_loop", lab::Role::Baseline,
        "per slice: cudaMalloc'ed slice copies, diff, square, 2-pass sum, read back + sync",
        [](Problem& p, cudaStream_t s) { naive_loop(p, true, s); },
        [](const Problem& p) {  // + slice copies, read-back; upload
          return rmse_work(p, p.batches * (chain_bytes(p) + kF * 4 * p.n + kF) + kF * p.batches);
        },
        0, lab::Pacing::Host, synced, waits},
       [](int b) {
         return lab::text("%d x (5 cudaMalloc + 2 copies + 4 kernels + 1 read-back and sync + "
                          "5 cudaFree) + 1 upload", b);
       }});
  variants.add({{"views", lab::Role::Baseline, "the same, kernels read the slices in place",
                 [](Problem& p, cudaStream_t s) { naive_loop(p, false, s); },
                 [](const Problem& p) {  // + read-back; upload
                   return rmse_work(p, p.batches * (chain_bytes(p) + kF) + kF * p.batches);
                 },
                 0, lab::Pacing::Host, synced, waits},
                [](int b) {
                  return lab::text("%d x (3 cudaMalloc + 4 kernels + 1 read-back and sync + "
                                   "3 cudaFree) + 1 upload", b);
                }});
  // + root: read the sum, write out[b]
  auto chain_and_root = [](const Problem& p) {
    return rmse_work(p, p.batches * (chain_bytes(p) + 2 * kF));
  };
  variants.add(
      {{"device_results", lab::Role::Baseline,
        "sqrt on the GPU into out[b]: no read-back, but cudaMalloc/cudaFree per slice",
        [](Problem& p, cudaStream_t s) { device_results(p, s); }, chain_and_root, 0,
        lab::Pacing::Host, synced, waits},
       [](int b) { return std::to_string(b) + " x (3 cudaMalloc + 5 kernels + 3 cudaFree)"; }});
  variants.add(
      {{"preallocated", lab::Role::Baseline,
        "temporaries allocated once: 5 launches per slice, no sync",
        [](Problem& p, cudaStream_t s) { preallocated(p, s); }, chain_and_root, kTemporaries},
       [](int b) { return std::to_string(b) + " x 5 kernels"; }});
  variants.add(
      {{"fused_per_batch", lab::Role::Baseline,
        "map fused into the reduction: 1 kernel per slice (atomicAdd), 1 sqrt kernel",
        [](Problem& p, cudaStream_t s) { fused_per_batch(p, s); },
        [](const Problem& p) {
          const double nb = p.batches, blocks = lab::grid_for(p.n, 8 * kThreads, 8);
          return rmse_work(p, kF * nb  // memset of the sums
                                       // A and B once; an atomicAdd (read + write) per block
                                  + nb * (kF * 2 * static_cast<double>(p.n) + 2 * kF * blocks) +
                                  2 * kF * nb);  // root: read the sums, write out
        },
        kSums},
       [](int b) { return "1 memset + " + std::to_string(b) + " kernels + 1 kernel"; }});
  variants.add({{"exercise", lab::Role::Exercise, "your batched RMSE (exercise.cu)",
                 [](Problem& p, cudaStream_t s) {
                   exercise::batched_rmse(p.A.data(), p.B.data(), p.out.data(), p.rows, p.cols,
                                          p.batches, p.workspace.data(), s);
                 },
                 [](const Problem& p) {  // the minimum: A and B read once, out written once
                   return rmse_work(p, kF * 2 * p.total + kF * p.batches);
                 },
                 kWorkspace}});
  variants.add({{"cub_segmented", lab::Role::Reference,
                 "cub::DeviceTransform (A-B)^2, cub::DeviceSegmentedReduce::Sum, sqrt",
                 [](Problem& p, cudaStream_t s) { cub_segmented(p, s); },
                 [](const Problem& p) {
                   const double nb = p.batches;
                   return rmse_work(
                       p, kF * 3 * p.total  // transform: read A and B, write (A - B)^2
                                            // segmented sum: read (A - B)^2, offsets; write sums
                              + kF * p.total + kF * nb + 2 * 8 * nb + 2 * kF * nb);  // root
                 },
                 kCub},
                [](int) { return std::string("3 kernels (transform, segmented sum, root)"); }});
  variants.add(
      {{"graph_loop", lab::Role::Baseline, "preallocated, captured in one CUDA graph and replayed",
        [](Problem& p, cudaStream_t s) { p.graph.launch(s); }, chain_and_root,
        kTemporaries | kGraph},
       [](int b) { return "1 graph of " + std::to_string(b) + " x 5 kernels"; }});
}

// Inputs, reference, checks (lab/protocol.cuh).

// B as the harness writes it (lab::fill_with), element by element: lab::fill_random's value (range
// [-1, 1)) times slice_scale of its slice, bit for bit the same on the host and the device (each
// operation rounded once), so it is regenerated, never read back.
struct ScaledInput {
  std::uint64_t seed;
  long long n;  // floats per slice
  __host__ __device__ float operator()(std::uint64_t i) const {
    const float v = lab::random_input(seed, i);
#ifdef __CUDA_ARCH__
    return __fmul_rn(v, slice_scale(seed, static_cast<int>(i / n)));
#else
    return v * slice_scale(seed, static_cast<int>(i / n));
#endif
  }
};

// The inputs one seed makes: A uniform in [-1, 1), B from a seed of its own, each slice scaled by
// its own factor, so every slice (and every seed) has its own RMSE. Both are new for every seed:
// an unchanged A could be kept from one timed call to the next in a smaller form (8-bit integers
// stay inside the tolerance) and read at a quarter of the bytes the rate credits.
struct Inputs {
  lab::RandomInput a;
  ScaledInput b;
  Inputs(std::uint64_t seed, long long n) : a{seed}, b{lab::derive_seed(seed, 1), n} {}
};

// Tolerance. Every term (a - b)^2 is >= 0, so every rounding error is relative to the sum S of
// the slice. Each term carries up to 3 roundings (the difference, the square and the cast), 3u
// with u = 2^-24. Adding n terms in float, in any order, is off by at most (n - 1) u S in the
// worst case; Higham and Mary's probabilistic bound (SIAM J. Sci. Comput. 2019) is lambda
// sqrt(n) u S, with lambda = 4 here as a working tolerance (the theorem's probability needs a
// larger lambda at this n; errors of random sign stay far inside it): a grid-stride loop with a
// shuffle tree, atomics in any order all stay inside it. One float accumulator over a whole slice
// does not (2.3x the bound at n = 2^20: its partial sums grow with every term, so their roundings
// do too), and no design fast enough for the lesson's rules sums that way. The mean divides by n
// (one more rounding) and the square root halves a relative error: rtol = (4 sqrt(n) + 3) u / 2 +
// 2u, about 1.2e-4 at n = 2^20, 2e-6 at n = 15. A dropped element, a wrong slice or a stale
// result is off by far more: the slices' RMSEs differ by up to 8x.
lab::Tolerance rmse_tolerance(long long n) {
  const double u = 0x1p-24;
  return lab::Tolerance{(4.0 * std::sqrt(static_cast<double>(n)) + 3.0) * u / 2.0 + 2.0 * u, 0.0};
}

// The reference RMSE of slice b, in double on the host, from the inputs regenerated. About 4 ms
// at the default size (1 M elements of each input).
float reference_rmse(const Inputs& in, std::size_t b, long long n) {
  const std::uint64_t first = b * static_cast<std::uint64_t>(n);
  const float scale = slice_scale(in.b.seed, static_cast<int>(b));  // taken once, as in.b would
  double sum = 0;
  for (long long i = 0; i < n; ++i) {
    const float b_value = lab::random_input(in.b.seed, first + i) * scale;
    const double d = static_cast<double>(in.a(first + i)) - static_cast<double>(b_value);
    sum += d * d;
  }
  return static_cast<float>(std::sqrt(sum / static_cast<double>(n)));
}

// Before every call: new A and B, out poisoned with its guard zone armed, the workspace 0xFF
// bytes. The check: every slice after a validated call; after a timed call one slice picked only
// once it has finished (the calls of a run cover most slices); the whole guard zone each time.
lab::Checks<Problem> checks() {
  lab::Checks<Problem> c;
  c.fill = [](Problem& p, std::uint64_t seed, cudaStream_t s) {
    const Inputs in(seed, p.n);
    lab::fill_random(p.A.data(), p.A.size(), in.a.seed, s);
    lab::fill_with(p.B.data(), p.total, in.b, s);
  };
  c.reset = [](Problem& p, cudaStream_t s) {
    p.out.reset(s);
    if (p.workspace.size() > 0) lab::poison(p.workspace.data(), p.workspace.bytes(), s);
  };
  // The RMSEs are kept for the next variant of the same validation.
  c.check = [kept = lab::KeptReference<std::vector<float>>()](lab::Look& look,
                                                              Problem& p) mutable {
    const Inputs in(look.seed(), p.n);
    const std::vector<std::size_t> slices = look.indices(p.batches, 1);
    const std::vector<float>& want = kept.get(look.seed(), slices, [&] {
      return lab::values_at(slices, p.batches,
                            [&](std::size_t b) { return reference_rmse(in, b, p.n); });
    });
    look.compare(p.out, slices, want, rmse_tolerance(p.n));  // mismatches name out's index
  };
  c.inputs_changed = [](const Problem& p, std::uint64_t seed, cudaStream_t s) {
    const Inputs in(seed, p.n);
    return std::vector<std::string>{lab::changed_input("A", p.A.data(), p.A.size(), in.a, s),
                                    lab::changed_input("B", p.B.data(), p.B.size(), in.b, s)};
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("06-fusion", "Fusion: from a loop of small kernels to one pass over memory");
  lab::Variants<Problem, Rmse> variants(lesson);
  add_variants(variants);

  long long rows = 0, cols = 0, batches = 0;
  lesson.option("--rows", &rows, "rows of a slice at the timing size", 1024, 256, {1, 1 << 30});
  lesson.option("--cols", &cols, "columns of a slice at the timing size", 1024, 256, {1, 1 << 30});
  lesson.option("--batches", &batches, "slices at the timing size", 32, 8, {1, 1 << 24});

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    if (rows * cols * batches > (1LL << 34))
      throw std::invalid_argument("--rows x --cols x --batches: at most 2^34");
    const unsigned needs = variants.needs();  // what the selected variants need, nothing more
    // graph_loop is preallocated's enqueue, captured once per problem (outside every timed call).
    auto capture_graph = [&](Problem& p) {
      if (needs & kGraph) p.graph.capture([&p](cudaStream_t s) { preallocated(p, s); }, l.stream());
    };
    lab::Protocol<Problem, Rmse> protocol(l, variants, checks());

    // 1. Validation on shapes that are not powers of two (slices that are not a multiple of 4
    //    floats, so not all 16-byte aligned; a single element), fresh inputs for every case.
    auto make = [needs](const lab::Shape& k) { return Problem(k[0], k[1], k[2], needs); };
    protocol.validate_shapes({{1000, 777, 13}, {33, 31, 5}, {3, 5, 7}, {1, 1, 1}}, make,
                             capture_graph);

    // 2. Timing. Default 32 slices of 1024 x 1024: A and B are 128 MiB each, 256 MiB read by a
    //    fused pass, a working set well past the 50-60 MB L2 (the course's rule: >= 256 MiB).
    //    One slice (4 MiB) does fit in L2: the unfused loop's temporaries stay there (README,
    //    "Bytes in L2").
    const int R = static_cast<int>(rows), C = static_cast<int>(cols), NB = static_cast<int>(batches);
    Problem p(R, C, NB, needs);
    const double input_bytes = 4.0 * p.total;
    l.size(lab::text("A, B: %d slices of %d x %d float32 (%.0f MiB each, %.0f MiB read by one "
                     "pass)", NB, R, C, input_bytes / (1 << 20), 2 * input_bytes / (1 << 20)));
    protocol.measure(p, capture_graph);

    // 3. Validation again, after timing, in the same buffers with new contents (the graph
    //    captured on them still holds): a variant that remembers its last answer, or only works
    //    the first time, fails here.
    protocol.validate(p, lab::dims({R, C, NB}) + " after timing");

    // 4. Notes: bytes and launches per call, and what the graph and the fusion bought.
    const double minimal = variants["exercise"].work(p).bytes;
    l.note("bytes per call as a multiple of the minimum (A and B read once, " +
           lab::fixed(minimal / 1e6, 1) + " MB), and what one call launches:");
    for (const Rmse* v : variants.selected())
      l.note(lab::text("  %-16.16s%.2fx", v->name.c_str(), v->work(p).bytes / minimal) +
             (v->calls ? "   " + v->calls(NB) : ""));
    const lab::Measurement* pre = variants.measurement("preallocated");
    const lab::Measurement* graph = variants.measurement("graph_loop");
    const lab::Measurement* fused = variants.measurement("exercise");
    if (const auto r = lab::speedup(variants, "preallocated", "graph_loop")) {
      lab::metric(l, "graph_speedup_over_stream", *r);
      l.note("the same 5 x " + std::to_string(NB) + " kernels as one graph: " +
             lab::fixed(r->value, 2) + "x faster than launched one by one (" +
             lab::fixed((pre->gpu_ms.median - graph->gpu_ms.median) * 1e3 / (5.0 * NB), 2) +
             " us saved per kernel); the bytes are the same");
    }
    if (pre && fused) {
      const double per_slice_us = (pre->gpu_ms.median - fused->gpu_ms.median) * 1e3 / NB;
      l.note("the unfused loop costs " + lab::fixed(per_slice_us, 1) +
             " us more per slice than your exercise: launches, gaps between them, and " +
             lab::fixed(variants["preallocated"].work(p).bytes / minimal, 1) + "x the bytes");
    }
  });
}
