// Lesson 09, the harness: launch overhead and CUDA graphs, when the CPU is the bottleneck.
//
// The work is a chain of K tiny dependent kernels (K = 1000 by default): step i computes
//   y[j] = fmaf(a[i], src[j], b[i])   for j < n (n = 4096 floats),   src = x for step 0, else y,
// so every step reads what the previous one wrote, and the order matters (a and b differ per
// step). Each kernel does almost nothing; what the loop costs is how fast kernels can be started.
//
// What it runs (see --list), each timed as ONE call that enqueues all K steps, with no lead-in
// (nothing holds the GPU before the start event), so the time the host takes to launch is
// inside the measurement; the per-kernel time is the median over K.
//   sync_each     launch, cudaStreamSynchronize, launch, ...: every launch pays the full round
//                 trip (host -> GPU -> host) and the GPU idles while the host launches.
//   stream        the K launches back to back: the host launches while the GPU runs. When one
//                 launch costs the host more than one kernel costs the GPU, the GPU waits.
//   exercise      yours (exercise.cu): the goal is the chain captured once into a CUDA graph in
//                 setup() and replayed with one cudaGraphLaunch per call.
//   fused         the better fix when you own the kernels: one kernel does all K steps, each
//                 element kept in a register. One launch, one read of x, one write of y.
//   kernel_floor  what the GPU needs per kernel when the host is not in the way: the first
//                 min(K, 256) steps launched behind a 4 ms lead-in, so all of them are queued
//                 before the first one starts. Not a way to run the chain, a yardstick.
#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kFloorSteps = 256;       // kernel_floor: few enough to sit in the launch queue
constexpr double kFloorLeadInUs = 4000;  // ... behind a spin long enough to launch them all
constexpr int kChunk = 1024;           // fused: coefficients staged in shared memory per chunk

// The kernels.

// One step: dst[j] = a[i] * src[j] + b[i], one fused multiply-add (fmaf: one rounding, the same
// bits on the host). src and dst may be the same array (every step after the first): each
// thread reads and writes only its own element, so that is safe.
__global__ void step_kernel(const float* src, float* dst, int n, const float* a, const float* b,
                            int i) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < n) dst[j] = fmaf(a[i], src[j], b[i]);
}

// All the steps in one kernel: each thread keeps its element in a register and applies the K
// multiply-adds in order; the block stages the coefficients in shared memory, kChunk at a time.
__global__ void __launch_bounds__(kThreads)
    fused_kernel(const float* __restrict__ x, float* __restrict__ y, int n,
                 const float* __restrict__ a, const float* __restrict__ b, int steps) {
  __shared__ float sa[kChunk], sb[kChunk];
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  float v = j < n ? x[j] : 0.0f;  // threads past n still help to stage the coefficients
  for (int base = 0; base < steps; base += kChunk) {
    const int count = min(kChunk, steps - base);
    __syncthreads();  // the previous chunk is no longer read
    for (int k = threadIdx.x; k < count; k += blockDim.x) {
      sa[k] = a[base + k];
      sb[k] = b[base + k];
    }
    __syncthreads();
#pragma unroll 8
    for (int k = 0; k < count; ++k) v = fmaf(sa[k], v, sb[k]);
  }
  if (j < n) y[j] = v;
}

int blocks_for(int n) { return (n + kThreads - 1) / kThreads; }

const lab::Tolerance kExact{0.0, 0.0};  // fmaf is correctly rounded on both sides: bit for bit

// A problem on the device. The pointers never change for its lifetime (a graph captured from
// `step` stays valid); the values behind them are refilled between validated calls.

struct Problem {
  int n, steps;
  lab::DeviceBuffer<float> x, a, b;
  lab::GuardedBuffer<float> y;
  exercise::Step step;
  std::unique_ptr<exercise::Chain> chain;  // only when the exercise is selected

  Problem(int n_, int steps_) : n(n_), steps(steps_), x(n_), a(steps_), b(steps_), y(n_, "y") {
    const int grid = blocks_for(n);
    step = [x = x.data(), y = y.data(), a = a.data(), b = b.data(), n = n, steps = steps,
            grid](int i, cudaStream_t s) {
      if (i < 0 || i >= steps)
        throw std::out_of_range("step(" + std::to_string(i) + "): the chain has steps 0.." +
                                std::to_string(steps - 1));
      step_kernel<<<grid, kThreads, 0, s>>>(i == 0 ? x : y, y, n, a, b, i);
      LAB_CHECK_LAUNCH();
    };
  }
};

// The inputs one seed makes (lab::fill_random's values): x uniform in [-1, 1) from the seed
// itself; a close to 1 and b small, each from a seed of its own, so that after 1000 steps y
// still depends on x (a product of a's near 1) and on every step's coefficients.
struct Inputs {
  lab::RandomInput x, a, b;
  explicit Inputs(std::uint64_t seed)
      : x{seed},
        a{lab::derive_seed(seed, 1), 0.99f, 1.01f},
        b{lab::derive_seed(seed, 2), -0.1f, 0.1f} {}
};

// The variants. Each enqueues one whole call on s and leaves its answer in p.y.

void sync_each(Problem& p, cudaStream_t s) {
  for (int i = 0; i < p.steps; ++i) {
    p.step(i, s);
    LAB_CHECK(cudaStreamSynchronize(s));  // what a loop that checks each step's result does
  }
}

void stream_launches(Problem& p, cudaStream_t s) {
  for (int i = 0; i < p.steps; ++i) p.step(i, s);
}

void fused(Problem& p, cudaStream_t s) {
  fused_kernel<<<blocks_for(p.n), kThreads, 0, s>>>(p.x.data(), p.y.data(), p.n, p.a.data(),
                                                    p.b.data(), p.steps);
  LAB_CHECK_LAUNCH();
}

int floor_steps(const Problem& p) { return std::min(p.steps, kFloorSteps); }

void kernel_floor(Problem& p, cudaStream_t s) {
  for (int i = 0; i < floor_steps(p); ++i) p.step(i, s);
}

// A variant of this lesson: besides what every variant has, how many steps of the chain one call
// computes (its reference) and how many kernels it runs for them (what its time is divided by for
// the time per kernel).
struct Chain : lab::Variant<Problem> {
  int (*steps)(const Problem&) = nullptr;
  int (*kernels)(const Problem&) = nullptr;
};

int all_steps(const Problem& p) { return p.steps; }
int one(const Problem&) { return 1; }

// Global-memory bytes of one call: every step reads n floats and two coefficients and writes n
// floats; the fused kernel reads x once, writes y once, and each block reads the coefficients.
// FLOPs: a multiply-add per element per step, 2 n K, whatever the variant.
lab::Work chain_work(const Problem& p, int kernels) {
  const double f = sizeof(float), n = p.n;
  return {kernels * f * (2 * n + 2), 2.0 * p.n * p.steps};
}

void add_variants(lab::Variants<Problem, Chain>& variants) {
  // One call = the whole chain. The host's launches are what is measured: host-paced, no lead-in
  // may hide them. 20 samples and 30 ms, the median to 1%, within 3 s.
  const lab::BenchmarkOptions chain_options = lab::measure_until(20, 30.0, 0.01, 3.0);
  lab::BenchmarkOptions floor_options = chain_options;
  floor_options.lead_in_us = kFloorLeadInUs;  // every launch queued before the first kernel runs
  auto steps_work = [](const Problem& p) { return chain_work(p, p.steps); };
  variants.add(
      {{"sync_each", lab::Role::Baseline, "K launches, cudaStreamSynchronize after each one",
        sync_each, steps_work, 0, lab::Pacing::Host, chain_options, "it synchronizes"},
       all_steps,
       all_steps});
  variants.add({{"stream", lab::Role::Baseline, "K launches back to back on the stream",
                 stream_launches, steps_work, 0, lab::Pacing::Host, chain_options},
                all_steps,
                all_steps});
  variants.add(
      {{"exercise", lab::Role::Exercise, "your Chain::run (exercise.cu): K steps, one graph",
        [](Problem& p, cudaStream_t s) { p.chain->run(s); }, steps_work, 0, lab::Pacing::Host,
        chain_options, "", "it would be a graph launched inside a graph"},
       all_steps,
       all_steps});
  variants.add(
      {{"fused", lab::Role::Reference, "one kernel does all K steps: the better fix", fused,
        [](const Problem& p) {
          const double f = sizeof(float), n = p.n;
          return lab::Work{f * 2 * n + f * 2.0 * p.steps * blocks_for(p.n), 2.0 * p.n * p.steps};
        },
        0, lab::Pacing::Host, chain_options},
       all_steps,
       one});
  variants.add({{"kernel_floor", lab::Role::Baseline,
                 "min(K, 256) launches queued behind a 4 ms lead-in: the GPU's own cost per kernel",
                 kernel_floor, [](const Problem& p) { return chain_work(p, floor_steps(p)); }, 0,
                 lab::Pacing::Device, floor_options, "it needs its own lead-in"},
                floor_steps,
                floor_steps});
}

// How inputs are made, y reset and results checked (lab/declared.cuh). Before every call,
// validated or timed: new x, a and b from the seed (for a timed call one the exercise cannot
// see), y poisoned (NaN) and its guard zone armed. The reference replays the chain on the host
// with the same fmaf's in the same order, from the inputs regenerated (never read back), for as
// many steps as the variant computes: fmaf is correctly rounded on both sides, so the answer is
// exact, bit for bit. After a validated call every element; after a timed call up to
// kSpotChecks elements picked only then (all of them when n is no more), at most 2e6 host fmaf
// (512 x 1000 by default: about a millisecond).
constexpr int kSpotChecks = 512;

lab::Checks<Problem> checks(const lab::Variants<Problem, Chain>& variants) {
  auto check = [&variants](lab::Look& look, Problem& p) {
    const Inputs in(look.seed());
    const int steps = variants[look.variant()].steps(p);
    std::vector<float> a(steps), b(steps);
    for (int i = 0; i < steps; ++i) {
      a[i] = in.a(i);
      b[i] = in.b(i);
    }
    const int count = std::clamp(2'000'000 / p.steps, 16, kSpotChecks);
    std::vector<std::size_t> at;
    if (look.everything() || p.n > count)
      at = look.indices(p.n, count);
    else
      for (int j = 0; j < p.n; ++j) at.push_back(j);
    std::vector<float> want;
    for (const std::size_t j : at) {
      float v = in.x(j);
      for (int i = 0; i < steps; ++i) v = std::fmaf(a[i], v, b[i]);
      want.push_back(v);
    }
    look.compare(p.y, at, want, kExact);
  };
  return lab::declared_checks<Problem>({{"x", &Problem::x, &Inputs::x},
                                        {"a", &Problem::a, &Inputs::a},
                                        {"b", &Problem::b, &Inputs::b}},
                                       {&Problem::y}, check);
}

// What stream capture does with calls that a graph cannot hold. Each experiment runs on a
// stream of its own (the lesson's stream is never put in capture mode), checks every return
// code instead of throwing, ends the capture and clears the error, so nothing leaks out.
std::vector<std::string> capture_demo(Problem& p) {
  std::vector<std::string> lines;
  lab::Stream side;
  auto name = [](cudaError_t e) { return std::string(cudaGetErrorName(e)); };
  auto status_name = [](cudaStream_t s) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    const cudaError_t e = cudaStreamIsCapturing(s, &st);
    if (e != cudaSuccess) return std::string(cudaGetErrorName(e));
    return std::string(st == cudaStreamCaptureStatusActive       ? "active"
                       : st == cudaStreamCaptureStatusInvalidated ? "invalidated"
                                                                  : "none");
  };
  // One experiment: begin capturing, enqueue step 0, make the offending call, end the capture.
  auto experiment = [&](const std::string& what, const std::function<cudaError_t()>& call) {
    LAB_CHECK(cudaStreamSynchronize(side));
    LAB_CHECK(cudaStreamBeginCapture(side, cudaStreamCaptureModeThreadLocal));
    p.step(0, side);
    const cudaError_t during = call();
    const std::string after_call = status_name(side);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(side, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();  // capture errors are not sticky: clear the last error and go on
    lines.push_back("  " + what + ": the call returns " + name(during) + ", capture then " +
                    after_call + ", cudaStreamEndCapture returns " + name(end) +
                    (graph ? " with a graph" : " and no graph"));
  };
  experiment("cudaStreamSynchronize inside a capture",
             [&] { return cudaStreamSynchronize(side); });
  std::vector<float> host(p.n);
  experiment("cudaMemcpy (synchronous) to the host inside a capture", [&] {
    return cudaMemcpy(host.data(), p.y.data(), p.y.bytes(), cudaMemcpyDeviceToHost);
  });
  experiment("cudaMalloc inside a capture", [&] {
    void* ptr = nullptr;
    const cudaError_t e = cudaMalloc(&ptr, 1 << 20);
    if (ptr) cudaFree(ptr);
    return e;
  });
  LAB_CHECK(cudaStreamSynchronize(side));
  LAB_CHECK(cudaGetLastError());
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("09-graphs", "Launch overhead and CUDA graphs: when the CPU is the bottleneck");
  lab::Variants<Problem, Chain> variants(lesson);
  add_variants(variants);

  long long n_opt = 4096, steps_opt = 0, demo = 1;
  lesson.option("--n", &n_opt, "floats per step", {1, 1 << 26});
  lesson.option("--steps", &steps_opt, "kernels in the chain, K", 1000, 200, {1, 100000});
  lesson.option("--capture-demo", &demo,
                "1: show what a sync, a synchronous copy and cudaMalloc do inside a stream "
                "capture (never with --quick or --profile); 0: skip it");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    cudaStream_t stream = l.stream();
    const int N = static_cast<int>(n_opt), K = static_cast<int>(steps_opt);
    auto make = [&](int n, int steps) {
      auto p = std::make_unique<Problem>(n, steps);
      if (l.selected("exercise")) {
        p->chain = std::make_unique<exercise::Chain>();
        p->chain->setup(p->step, p->steps, stream);  // untimed: a graph is built once
        LAB_CHECK(cudaStreamSynchronize(stream));
        LAB_CHECK(cudaGetLastError());
      }
      return p;
    };

    // 1. Validation: sizes that are not a multiple of the block size, short and long chains,
    //    each chain called twice with new inputs in the same buffers.
    struct Case { int n, steps; };
    const Case cases[] = {{1000, 37}, {4097, 3}, {257, 300}, {1, 1}, {N, K}};
    lab::Protocol<Problem, Chain> protocol(l, variants, checks(variants));
    for (const Case& c : cases) {
      auto p = make(c.n, c.steps);
      const std::string name = "n=" + std::to_string(c.n) + " K=" + std::to_string(c.steps);
      protocol.validate(*p, name);
      protocol.validate(*p, name + " again");
    }

    // 2. Timing: one call = the whole chain; no lead-in, so launch gaps are part of the time.
    auto p = make(N, K);
    l.size("K = " + std::to_string(K) + " dependent kernels, each on n = " + std::to_string(N) +
           " floats (" + lab::fixed(N * 4.0 / 1024, 1) + " KiB); time per call = the whole chain");
    protocol.measure(*p);  // the exercise's timed calls: new inputs, each call checked

    // 3. Validation after timing, new inputs in the same buffers: a chain that only computes
    //    the first time, or replays a stale answer, fails here.
    protocol.validate(*p, "n=" + std::to_string(N) + " K=" + std::to_string(K) + " after timing");

    // 4. Per-kernel times (median / kernels per call) and what the graph bought.
    bool first = true;
    for (const Chain& v : variants) {
      const lab::Measurement* m = variants.measurement(v.name);
      if (!m) continue;
      if (first) l.note("time per kernel = median time of one call / kernels it runs:");
      first = false;
      const double k = v.kernels(*p);
      const lab::Stats& t = m->gpu_ms;
      l.metric("us_per_kernel_" + v.name, t.median * 1e3 / k, t.q1 * 1e3 / k, t.q3 * 1e3 / k, "us");
      std::string label = v.name;
      label.resize(14, ' ');
      l.note("  " + label + lab::fixed(t.median * 1e3 / k, 2) + " us per kernel (" +
             std::to_string(static_cast<int>(k)) + (k == 1 ? " kernel" : " kernels") +
             ", launch call " + lab::fixed(m->enqueue_us, 0) + " us of host time)");
    }
    const lab::Measurement* st = variants.measurement("stream");
    const lab::Measurement* ex = variants.measurement("exercise");
    const lab::Measurement* fu = variants.measurement("fused");
    const lab::Measurement* fl = variants.measurement("kernel_floor");
    if (st && ex) {
      const lab::Reading r = lab::speedup(*ex, *st);  // exercise time / stream time
      lab::metric(l, "exercise_time_over_stream", r);
      l.note("exercise per-kernel time = " + lab::fixed(r.value, 2) +
             "x the stream-launched time (the checker wants <= 0.75x)");
    }
    if (ex) {
      // The host's share of a call: how long run() kept the CPU busy (the launch calls) per
      // unit of the call's GPU time. Near 1 the CPU sets the pace; a graph launched once keeps
      // it well below 1 whatever the CPU, so this says "the CPU is no longer the bottleneck" on any machine.
      const lab::Stats& a = ex->gpu_ms;
      // Its interval: the GPU time's 95% interval (the host time is a median of its own).
      l.metric("exercise_host_share", ex->enqueue_us / (a.median * 1e3),
               ex->enqueue_us / (a.median_high * 1e3), ex->enqueue_us / (a.median_low * 1e3));
      l.note("exercise keeps the host busy " + lab::fixed(ex->enqueue_us, 0) + " us per call, " +
             lab::fixed(ex->enqueue_us / (a.median * 1e3), 2) + " of its GPU time (the checker wants <= 0.5)");
    }
    if (st && fl) {
      const double floor_us = fl->gpu_ms.median * 1e3 / variants["kernel_floor"].kernels(*p);
      const double stream_us = st->gpu_ms.median * 1e3 / K;
      l.note("stream launches leave the GPU idle " + lab::fixed(stream_us - floor_us, 2) +
             " us per kernel beyond its own " + lab::fixed(floor_us, 2) +
             " us: the host is the bottleneck");
    }
    if (fu && st)
      l.note("fused: all " + std::to_string(K) + " steps in one kernel, " +
             lab::fixed(st->gpu_ms.median / fu->gpu_ms.median, 0) +
             "x faster than the stream loop");

    // 5. What a capture cannot hold, shown on a side stream (skipped for tests and profiling).
    if (demo != 0 && !l.quick() && !l.profiling()) {
      l.note("inside a stream capture (cudaStreamCaptureModeThreadLocal), on a stream of its own:");
      for (const std::string& line : capture_demo(*p)) l.note(line);
    }
  });
}
