// The lesson template, the harness: y = a x on n floats. Copy this folder (and
// solutions/_template) to NN-topic, then replace the work; docs/writing-a-lesson.md walks through
// every part of this file.
//
// What it runs (see --list):
//   per_element  the given kernel: one thread per element
//   exercise     yours (exercise.cu)
// Bytes: x read once, y written once: 8n. FLOPs: one multiply per element.
//
// Students read this file; they do not edit it. The checker compiles your exercise.cu against it.
#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr int kThreads = 256;

// The given kernel: one thread per element.
__global__ void scale_per_element(const float* __restrict__ x, float* __restrict__ y, float a,
                                  std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

// A problem on the device: the input, and the output with a guard zone after it.
struct Problem {
  std::size_t n;
  float a;
  lab::DeviceBuffer<float> x;
  lab::GuardedBuffer<float> y;
  Problem(std::size_t count, float factor) : n(count), a(factor), x(count), y(count, "y") {}
};

void add_variants(lab::Variants<Problem>& variants) {
  auto work = [](const Problem& p) { return lab::Work{8.0 * p.n, 1.0 * p.n}; };
  variants.add({"per_element", lab::Role::Baseline, "the given kernel: one thread per element",
                [](Problem& p, cudaStream_t s) {
                  const unsigned blocks = static_cast<unsigned>((p.n + kThreads - 1) / kThreads);
                  scale_per_element<<<blocks, kThreads, 0, s>>>(p.x.data(), p.y.data(), p.a, p.n);
                  LAB_CHECK_LAUNCH();
                },
                work});
  variants.add({"exercise", lab::Role::Exercise, "your scale (exercise.cu)",
                [](Problem& p, cudaStream_t s) {
                  exercise::scale(p.x.data(), p.y.data(), p.a, p.n, s);
                },
                work});
}

// y = a x from the input lab::fill_random(x, n, seed) made, element i, regenerated (never read
// back from x, which the code under test could have written).
float expected(const Problem& p, std::uint64_t seed, std::size_t i) {
  return p.a * lab::random_input(seed, i);
}

// Runs one variant once on y poisoned (NaN) and guarded, and records whether every element of y
// is a x (one float multiply on both sides: exact).
void validate(lab::Lesson& l, const lab::Variant<Problem>& v, Problem& p, std::uint64_t seed,
              const std::string& case_name) {
  cudaStream_t s = l.stream();
  p.y.reset(s);
  v.launch(p, s);
  LAB_CHECK(cudaGetLastError());
  std::vector<float> want(p.n);
  for (std::size_t i = 0; i < p.n; ++i) want[i] = expected(p, seed, i);
  lab::check_output(l, v.name, case_name, p.y, p.y.download(s), want, lab::Tolerance{0.0, 0.0}, s);
}

// How the exercise's timed calls are prepared and checked (lab::TimedCalls).
//  * prepare, before every timed call: a new x from the call's seed, y poisoned.
//  * verify, after the calls the harness picks once they are done: 4096 elements of y picked only
//    then, against x regenerated from the call's seed, and the whole guard zone.
//  * check_inputs, after timing: x still holds what the last prepare wrote.
class TimedScale : public lab::TimedCalls {
 public:
  TimedScale(lab::Lesson& l, Problem& p) : l_(l), p_(p) {}

  void check_inputs(cudaStream_t s) {
    if (prepared())
      lab::check_inputs_unchanged(l_, "exercise",
                                  {lab::changed_input("x", p_.x.data(), p_.n, seed_, s)});
  }

 private:
  void prepare(cudaStream_t s, std::uint64_t seed) override {
    seed_ = seed;
    lab::fill_random(p_.x.data(), p_.n, seed, s);
    p_.y.poison(s);
  }

  void verify(cudaStream_t s, const std::string& case_name) override {
    const std::vector<float> y = p_.y.download(s);
    std::vector<float> got, want;
    std::vector<std::size_t> at;
    for (int k = 0; k < 4096; ++k) {
      at.push_back(pick() % p_.n);
      got.push_back(y[at.back()]);
      want.push_back(expected(p_, seed_, at.back()));
    }
    lab::check_output(l_, "exercise", case_name, p_.y, got, want, lab::Tolerance{0.0, 0.0}, s, at);
  }

  lab::Lesson& l_;
  Problem& p_;
  std::uint64_t seed_ = 0;  // the last timed call's x
};

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("_template", "The lesson template: y = a x at the copy bandwidth");
  lab::Variants<Problem> variants(lesson);
  add_variants(variants);
  long long n = 0;
  lesson.option("--n", &n, "floats at the timing size", 1LL << 26, 1LL << 22);

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    cudaStream_t stream = l.stream();
    if (n > (1LL << 31)) throw std::invalid_argument("--n: at most 2^31");

    // 1. Validation at sizes that are not multiples of the block size, fresh inputs every case.
    std::uint64_t seed = l.seed() * 8 + 1;
    if (!l.profiling())
      for (const long long size : {1LL, 3LL, 1000003LL}) {
        Problem p(size, 1.5f);
        lab::fill_random(p.x.data(), p.n, seed, stream);
        for (const auto* v : variants.selected())
          validate(l, *v, p, seed, std::to_string(size) + " floats");
        ++seed;
      }

    // 2. Timing: 2^26 floats, 256 MiB each way, far past L2. The exercise's timed calls get a new
    //    x each and some are checked (TimedScale); afterwards x must be as they left it.
    Problem p(n, 1.5f);
    l.size("x, y: " + std::to_string(n) + " floats (" + lab::fixed(4.0 * n / (1 << 20), 0) +
           " MiB each)");
    lab::fill_random(p.x.data(), p.n, seed, stream);
    p.y.arm(stream);  // once: the timed calls' verify checks it
    TimedScale timed(l, p);
    variants.measure_all(p, timed.checks());
    if (l.profiling()) return;
    timed.check_inputs(stream);

    // 3. Validation again, after timing, with new inputs in the same buffers.
    lab::fill_random(p.x.data(), p.n, ++seed, stream);
    for (const auto* v : variants.selected())
      validate(l, *v, p, seed, std::to_string(n) + " floats, after timing");
  });
}
