// The lesson template's harness: y = a x on n floats (8n bytes, n FLOPs). Variants (--list):
// per_element, the given kernel; exercise, yours. docs/writing-a-lesson.md walks through it.
#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr int kThreads = 256;
__global__ void scale_per_element(const float* __restrict__ x, float* __restrict__ y, float a,
                                  std::size_t n) {
  const std::size_t i = blockIdx.x * std::size_t(kThreads) + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

struct Problem {  // the input; the output, with a guard zone after it (lab/guard.hpp)
  std::size_t n;
  float a = 1.5f;
  lab::DeviceBuffer<float> x;
  lab::GuardedBuffer<float> y;
  explicit Problem(std::size_t count) : n(count), x(count), y(count, "y") {}
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

// Inputs, outputs, the one reference (lab/declared.cuh): x regenerated from its seed, never read
// back; y = a x is one float multiply on both sides, so it must match exactly.
lab::Checks<Problem> checks() {
  auto check = [](lab::Look& look, Problem& p) {  // every element, or 4096 after a timed call
    look.compare_each(p.y, 4096, lab::Tolerance{0.0, 0.0},
                      [&](std::size_t i) { return p.a * lab::random_input(look.seed(), i); });
  };
  return lab::declared_checks<Problem>({{"x", &Problem::x}}, {&Problem::y}, check);
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("_template", "The lesson template: y = a x at the copy bandwidth");
  lab::Variants<Problem> variants(lesson);
  add_variants(variants);
  long long n = 0;
  lesson.option("--n", &n, "floats at the timing size", 1LL << 26, 1LL << 22, {1, 1LL << 31});
  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    lab::Protocol<Problem> protocol(l, variants, checks());
    for (const long long size : {1LL, 3LL, 1000003LL}) {  // not multiples of the block size
      Problem p(size);
      protocol.validate(p, std::to_string(size) + " floats");
    }  // then 256 MiB each way (far past L2), and once more after timing
    Problem p(n);
    l.size("x, y: " + std::to_string(n) + " floats (" + lab::fixed(4.0 * n / (1 << 20), 0) +
           " MiB each)");
    protocol.measure(p);
    protocol.validate(p, std::to_string(n) + " floats, after timing");
  });
}
