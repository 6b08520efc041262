// Lesson 11, the harness: one-time costs. What the first call pays, and how a program keeps it
// out of its hot path.
//
// Part A, what each one-time cost is on this machine. The costs a process pays once are only
// honest when measured in a process that has not paid them yet, so this program runs itself
// again (lab::run_self, lab/child_process.hpp) --processes times per measurement and reports the
// median, with the fastest and slowest process as the range:
//   context      creating the CUDA context (the first runtime call, cudaFree(0)), then the first
//                and second launch of an empty kernel, with CUDA_MODULE_LOADING=LAZY and =EAGER;
//   compile      NVRTC compiling the lesson's small operator, cold (the process's first compile)
//                and warm; compiling it to LTO-IR and linking that with nvJitLink; loading the
//                cubin with cuModuleLoadData and with cuLibraryLoadData, and the first launch
//                from each;
//   cublas       cublasCreate, the first SGEMM (it loads kernels and sets up a workspace), and a
//                second one.
// In this process: cudaMalloc and cudaFree of a buffer the size of the operator's intermediate,
// against cudaMallocFromPoolAsync from a pool that releases its memory at every synchronization
// (release threshold 0, the default) and from one that keeps it (threshold: unlimited).
//
// Part B, the exercise: a runtime-compiled operator, out = smooth(f(x)) (exercise.cuh), where f
// is an expression and the options (-DALPHA=...) change it.
//   prebuilt           the same two kernels compiled once at startup (NVRTC, cuModuleLoadData)
//                      and launched from that module with a preallocated intermediate: the
//                      steady state a runtime-compiled operator should reach.
//   malloc_each_call   prebuilt kernels, but cudaMalloc and cudaFree of the intermediate in
//                      every call.
//   pool_no_threshold  prebuilt kernels, intermediate from a pool with release threshold 0.
//   exercise           yours: exercise::Operator::apply.
// Each call is timed with no lead-in: whatever a call does on the host is inside its time.
// Then, in new processes, each on a cache folder of its own: the first call with an empty folder
// (it must compile) against the first call that finds the folder filled; and, in rounds that
// look exactly like those, the first call after the harness damaged the folder's files (cut in
// half; bits flipped; one entry's file swapped for another's), which must still give the right
// result and replace the damaged file.
//
// Students read this file; they do not edit it. The checker compiles your exercise.cu against it.
#include <cublas_v2.h>
#include <cuda.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "exercise.cuh"
#include "lab/child_process.hpp"
#include "lab/cublas.hpp"
#include "lab/driver.hpp"
#include "lab/lesson.cuh"
#include "lab/runtime_compile.hpp"
#include "lab/write_audit.hpp"

namespace {

namespace fs = std::filesystem;

constexpr int kFirstCallN = 4096;         // the first call in a new process: small, so it is the
                                          // one-time costs that are timed, not the work
constexpr double kChildTimeoutS = 120.0;  // one child process, eager loading of every library
                                          // included

// ---------------------------------------------------------------------------------------------
// The operator's source. ARCH_TAG makes the architecture visible in the result for one test:
// an arch-specific target (sm_90a) defines __CUDA_ARCH_SPECIFIC__, the plain one (sm_90) not.

std::string operator_source(const std::string& expression) {
  return R"(// Lesson 11's operator: out = smooth(f(x)), compiled at run time.
#ifndef ALPHA
#define ALPHA 1.0f
#endif
#if defined(__CUDA_ARCH_SPECIFIC__) || defined(__CUDA_ARCH_FAMILY_SPECIFIC__)
#define ARCH_TAG (__CUDA_ARCH__ + 1)
#else
#define ARCH_TAG (__CUDA_ARCH__)
#endif

extern "C" __global__ void map(const float* __restrict__ x, float* __restrict__ t, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    t[i] = )" +
         expression + R"(;
  }
}

extern "C" __global__ void smooth(const float* __restrict__ t, float* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float left = t[i > 0 ? i - 1 : 0];
    const float right = t[i + 1 < n ? i + 1 : n - 1];
    out[i] = 0.25f * left + 0.5f * t[i] + 0.25f * right;
  }
}
)";
}

struct NamedProgram {
  std::string name;
  exercise::Program program;
};

// The programs of the validations. 0 and 1 differ only in their options: a cache keyed without
// them serves one for the other, and the results differ.
std::vector<NamedProgram> programs() {
  const std::string square = operator_source("v * v * ALPHA + v");
  return {
      {"v*v*ALPHA+v with -DALPHA=0.5f", {square, {"-DALPHA=0.5f"}}},
      {"v*v*ALPHA+v with -DALPHA=2.0f", {square, {"-DALPHA=2.0f"}}},
      {"tanhf(ALPHA*v)-v with -DALPHA=1.5f",
       {operator_source("tanhf(ALPHA * v) - v"), {"-DALPHA=1.5f"}}},
  };
}

// The architecture test's program: its result depends on the target it was compiled for.
NamedProgram arch_program() {
  return {"v+0.001f*ARCH_TAG", {operator_source("v + 0.001f * ARCH_TAG"), {}}};
}

// ---------------------------------------------------------------------------------------------
// Compiling, the harness's own way (the reference, and the timings of part A), with NVRTC and
// nvJitLink (lab/runtime_compile.hpp).

// @p lto: LTO-IR for nvJitLink instead of a cubin.
std::vector<char> compile(const exercise::Program& p, const std::string& arch, bool lto = false) {
  return lab::nvrtc_compile(p.source, p.options, arch, lto);
}

// A second target whose cubin also runs on this GPU and gives other bits for arch_program():
// the arch-specific one (sm_90a on an H100), or else an older minor version of the same major
// (sm_80 on an sm_86 GPU). Empty when there is none (an A100 runs only sm_80 cubins).
std::string second_arch(const std::string& arch) {
  auto compiles = [](const std::string& a) {
    try {
      compile(arch_program().program, a);
      return true;
    } catch (const std::runtime_error&) {
      return false;
    }
  };
  if (compiles(arch + "a")) return arch + "a";
  const int cc = std::stoi(arch.substr(3));
  for (int older = cc - 1; older >= cc / 10 * 10; --older)
    if (compiles("sm_" + std::to_string(older))) return "sm_" + std::to_string(older);
  return "";
}

int blocks_for(int n) { return (n + exercise::kBlockThreads - 1) / exercise::kBlockThreads; }

// The reference: a program compiled once and loaded with cuModuleLoadData; launched through the
// driver API (lab/driver.hpp) with an intermediate that the caller provides or that it keeps.
class Prebuilt {
 public:
  Prebuilt(const exercise::Program& p, const std::string& arch) {
    const std::vector<char> cubin = compile(p, arch);
    LAB_CU_CHECK(lab::driver().module_load_data(&module_, cubin.data()));
    LAB_CU_CHECK(lab::driver().module_get_function(&map_, module_, "map"));
    LAB_CU_CHECK(lab::driver().module_get_function(&smooth_, module_, "smooth"));
  }
  ~Prebuilt() {
    if (module_) lab::driver().module_unload(module_);
  }
  Prebuilt(const Prebuilt&) = delete;
  Prebuilt& operator=(const Prebuilt&) = delete;

  // out = smooth(map(x)) with @p t (n floats) as the intermediate.
  void launch(const float* x, float* t, float* out, int n, cudaStream_t s) const {
    const float* t_in = t;
    void* map_args[] = {&x, &t, &n};
    void* smooth_args[] = {&t_in, &out, &n};
    const unsigned blocks = static_cast<unsigned>(blocks_for(n));
    const lab::Driver& d = lab::driver();
    LAB_CU_CHECK(d.launch_kernel(map_, blocks, 1, 1, exercise::kBlockThreads, 1, 1, 0, s, map_args,
                                 nullptr));
    LAB_CU_CHECK(d.launch_kernel(smooth_, blocks, 1, 1, exercise::kBlockThreads, 1, 1, 0, s,
                                 smooth_args, nullptr));
  }
  // The same with an intermediate of its own, grown when needed (outside any timed call).
  void launch(const float* x, float* out, int n, cudaStream_t s) {
    if (t_.size() < static_cast<std::size_t>(n)) {
      LAB_CHECK(cudaStreamSynchronize(s));
      t_ = lab::DeviceBuffer<float>(static_cast<std::size_t>(n));
    }
    launch(x, t_.data(), out, n, s);
  }

 private:
  CUmodule module_ = nullptr;
  CUfunction map_ = nullptr;
  CUfunction smooth_ = nullptr;
  lab::DeviceBuffer<float> t_;
};

// A memory pool on this GPU that keeps @p release_threshold bytes at a synchronization and gives
// the rest back to the system (0, the default: everything).
class Pool {
 public:
  explicit Pool(std::uint64_t release_threshold) {
    int dev = 0;
    LAB_CHECK(cudaGetDevice(&dev));
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    LAB_CHECK(cudaMemPoolCreate(&pool_, &props));
    LAB_CHECK(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &release_threshold));
  }
  ~Pool() { cudaMemPoolDestroy(pool_); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  cudaMemPool_t get() const { return pool_; }

 private:
  cudaMemPool_t pool_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// One call's problem, and its check: bit for bit against the reference, compared on the device
// (n up to 2^26: copying both to the host would cost more than the calls being checked).

// The input x, the output with a 2 MiB guard zone after it, the reference's input (x made again
// from its seed, never read back) and output; and what the variants run with.
struct Problem {
  int n;
  lab::DeviceBuffer<float> x, x_again, want;
  lab::GuardedBuffer<float> out;
  Prebuilt* prebuilt = nullptr;                // the program compiled once: the reference
  float* t = nullptr;                          // prebuilt's intermediate, at least n floats
  cudaMemPool_t releasing = nullptr;           // pool_no_threshold's: release threshold 0
  exercise::Operator* op = nullptr;            // yours
  const exercise::Program* program = nullptr;  // what yours is asked to run
  explicit Problem(int count)
      : n(count),
        x(static_cast<std::size_t>(count)),
        x_again(static_cast<std::size_t>(count)),
        want(static_cast<std::size_t>(count)),
        out(static_cast<std::size_t>(count), "out") {}
};

// x as fill() writes it from @p seed.
void fill_x(float* x, int n, std::uint64_t seed, cudaStream_t s) {
  lab::fill_random(x, static_cast<std::size_t>(n), seed, s, -2.0f, 2.0f);
}

// New inputs from @p seed; the output poisoned, its guard zone armed.
void fill(Problem& p, std::uint64_t seed, cudaStream_t s) {
  fill_x(p.x.data(), p.n, seed, s);
  p.out.reset(s);
}

// The values of a device array, as lab::count_changed expects them: compares two arrays.
struct ValuesOf {
  const float* p;
  __host__ __device__ float operator()(std::uint64_t i) const { return p[i]; }
};

__global__ void empty_kernel() {}

float element(const float* p, std::size_t i, cudaStream_t s) {
  float v = 0;
  LAB_CHECK(cudaMemcpyAsync(&v, p + i, sizeof v, cudaMemcpyDeviceToHost, s));
  LAB_CHECK(cudaStreamSynchronize(s));
  return v;
}

// "" when out == want bit for bit and out's guard zone is untouched; otherwise what differs, in
// words.
std::string compare(const lab::GuardedBuffer<float>& out, const float* want, cudaStream_t s) {
  const lab::Changed c = lab::count_changed(out.data(), out.size(), ValuesOf{want}, s);
  if (c.count > 0)
    return std::to_string(c.count) + " of " + std::to_string(out.size()) + " differ; first at [" +
           std::to_string(c.first) + "]: got " + std::to_string(element(out.data(), c.first, s)) +
           ", expected " + std::to_string(element(want, c.first, s)) + " (bit for bit)";
  return out.damage(s);
}

// What a call left against the reference run on x made again from @p seed: "" when right.
std::string wrong_in(Problem& p, std::uint64_t seed, cudaStream_t s) {
  fill_x(p.x_again.data(), p.n, seed, s);
  p.prebuilt->launch(p.x_again.data(), p.want.data(), p.n, s);
  return compare(p.out, p.want.data(), s);
}

// Whether @p a and @p b give different bits on the same fresh inputs (else a test meant to tell
// them apart shows nothing).
bool differ(Prebuilt& a, Prebuilt& b, std::uint64_t seed, cudaStream_t s) {
  Problem t(4096);
  fill(t, seed, s);
  a.launch(t.x.data(), t.want.data(), t.n, s);
  b.launch(t.x.data(), t.out.data(), t.n, s);
  return lab::count_changed(t.out.data(), t.out.size(), ValuesOf{t.want.data()}, s).count > 0;
}

// The protocol's view of the problem (lab/protocol.cuh): every call, validated or timed, is
// compared whole with the reference.
lab::Checks<Problem> checks() {
  lab::Checks<Problem> c;
  c.fill = fill;
  c.reset = [](Problem& p, cudaStream_t s) { p.out.reset(s); };
  c.check = [](lab::Look& look, Problem& p) {
    const std::string wrong = wrong_in(p, look.seed(), look.stream());
    look.check(wrong.empty(), wrong);
  };
  c.inputs_changed = [](const Problem& p, std::uint64_t seed, cudaStream_t s) {
    return std::vector<std::string>{
        lab::changed_input("x", p.x.data(), p.x.size(), lab::RandomInput{seed, -2.0f, 2.0f}, s)};
  };
  return c;
}

// ---------------------------------------------------------------------------------------------
// The roles of the new processes (lab/child_process.hpp): each reports its readings with
// lab::report.

// Child: context creation and the first launches, in whatever CUDA_MODULE_LOADING the parent set.
void child_context() {
  lab::HostTimer t;
  LAB_CHECK(cudaFree(nullptr));
  lab::report("context_ms", t.elapsed_ms());
  CUmoduleLoadingMode mode{};
  LAB_CU_CHECK(lab::driver().module_get_loading_mode(&mode));
  lab::report("loading_mode", mode == CU_MODULE_LAZY_LOADING ? "lazy" : "eager");
  for (const char* name : {"first_launch_us", "second_launch_us"}) {
    t.start();
    empty_kernel<<<1, 1>>>();
    LAB_CHECK_LAUNCH();
    LAB_CHECK(cudaDeviceSynchronize());
    lab::report(name, t.elapsed_ms() * 1e3);
  }
}

// Child: compiling and loading the operator, each step timed on its own.
void child_compile(const std::string& arch) {
  LAB_CHECK(cudaFree(nullptr));  // the context first: not part of what is timed here
  const lab::Driver& d = lab::driver();
  const exercise::Program p = programs()[0].program;
  lab::HostTimer t;
  const std::vector<char> cubin = compile(p, arch);
  lab::report("nvrtc_cold_ms", t.elapsed_ms());
  t.start();
  compile(p, arch);
  lab::report("nvrtc_warm_ms", t.elapsed_ms());
  t.start();
  const std::vector<char> ltoir = compile(p, arch, true);
  lab::report("nvrtc_lto_ms", t.elapsed_ms());
  t.start();
  const std::vector<char> linked = lab::nvjitlink(ltoir, arch);
  lab::report("nvjitlink_ms", t.elapsed_ms());

  lab::DeviceBuffer<float> x(kFirstCallN), y(kFirstCallN);
  int n = kFirstCallN;
  const float* xp = x.data();
  float* yp = y.data();
  void* args[] = {&xp, &yp, &n};
  auto launch_and_wait = [&](CUfunction f) {
    LAB_CU_CHECK(d.launch_kernel(f, static_cast<unsigned>(blocks_for(n)), 1, 1,
                                 exercise::kBlockThreads, 1, 1, 0, nullptr, args, nullptr));
    LAB_CHECK(cudaDeviceSynchronize());
  };
  LAB_CHECK(cudaDeviceSynchronize());

  CUmodule module = nullptr;
  t.start();
  LAB_CU_CHECK(d.module_load_data(&module, cubin.data()));
  lab::report("module_load_us", t.elapsed_ms() * 1e3);
  CUfunction f = nullptr;
  t.start();
  LAB_CU_CHECK(d.module_get_function(&f, module, "map"));
  launch_and_wait(f);
  lab::report("module_first_launch_us", t.elapsed_ms() * 1e3);
  t.start();
  launch_and_wait(f);
  lab::report("module_second_launch_us", t.elapsed_ms() * 1e3);
  LAB_CU_CHECK(d.module_unload(module));

  CUlibrary library = nullptr;
  t.start();
  LAB_CU_CHECK(
      d.library_load_data(&library, linked.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  lab::report("library_load_us", t.elapsed_ms() * 1e3);
  CUkernel kernel = nullptr;
  t.start();
  LAB_CU_CHECK(d.library_get_kernel(&kernel, library, "map"));
  LAB_CU_CHECK(d.kernel_get_function(&f, kernel));
  launch_and_wait(f);
  lab::report("library_first_launch_us", t.elapsed_ms() * 1e3);
  LAB_CU_CHECK(d.library_unload(library));
}

// Child: a cuBLAS handle and its first calls.
void child_cublas() {
  LAB_CHECK(cudaFree(nullptr));
  constexpr int kN = 512;
  lab::DeviceBuffer<float> a(kN * kN), b(kN * kN), c(kN * kN);
  lab::fill_random(a.data(), a.size(), 1, nullptr);
  lab::fill_random(b.data(), b.size(), 2, nullptr);
  LAB_CHECK(cudaDeviceSynchronize());
  cublasHandle_t handle = nullptr;
  lab::HostTimer t;
  LAB_CUBLAS_CHECK(cublasCreate(&handle));
  lab::report("cublas_create_ms", t.elapsed_ms());
  const float one = 1.0f, zero = 0.0f;
  for (const char* name : {"cublas_first_sgemm_ms", "cublas_second_sgemm_ms"}) {
    t.start();
    LAB_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a.data(), kN,
                                 b.data(), kN, &zero, c.data(), kN));
    LAB_CHECK(cudaDeviceSynchronize());
    lab::report(name, t.elapsed_ms());
  }
  t.start();
  LAB_CUBLAS_CHECK(cublasDestroy(handle));
  lab::report("cublas_destroy_ms", t.elapsed_ms());
}

// A cache test's program: the operator with the drawn @p expression, compiled with
// -DALPHA=@p alpha (see draw_cache_tests).
exercise::Program cache_test_program(const std::string& expression, const std::string& alpha) {
  return {operator_source(expression), {"-DALPHA=" + alpha}};
}

// Child: the harness's own first call in a new process, compiled as Prebuilt does (NVRTC, load,
// launch): what a first call costs without a cache, the disk cache rule's reference. Timed like
// child_first_call's, so the two differ only in whose code ran.
void child_compile_first_call(const std::string& arch, const std::string& expression,
                              std::uint64_t seed, const std::string& alpha) {
  LAB_CHECK(cudaFree(nullptr));
  const exercise::Program p = cache_test_program(expression, alpha);
  lab::Stream stream;
  Problem b(kFirstCallN);
  fill(b, seed, stream);
  empty_kernel<<<1, 1, 0, stream>>>();  // the harness's own module is loaded before the timing
  LAB_CHECK_LAUNCH();
  LAB_CHECK(cudaStreamSynchronize(stream));
  lab::HostTimer t;
  Prebuilt compiled(p, arch);
  compiled.launch(b.x.data(), b.out.data(), kFirstCallN, stream);
  LAB_CHECK(cudaStreamSynchronize(stream));
  lab::report("first_call_ms", t.elapsed_ms());
}

// Child: the exercise's first call in a new process on cache folder @p dir, then a check of its
// result against the reference (compiled only after the timed call, on x made again from
// @p seed).
void child_first_call(const std::string& dir, const std::string& arch,
                      const std::string& expression, std::uint64_t seed, const std::string& alpha) {
  LAB_CHECK(cudaFree(nullptr));
  const exercise::Program p = cache_test_program(expression, alpha);
  lab::Stream stream;
  Problem b(kFirstCallN);
  fill(b, seed, stream);
  empty_kernel<<<1, 1, 0, stream>>>();  // the harness's own module is loaded before the timing
  LAB_CHECK_LAUNCH();
  LAB_CHECK(cudaStreamSynchronize(stream));
  double first_call_ms = 0;
  {
    lab::HostTimer t;
    exercise::Operator op(dir, arch);
    op.apply(p, b.x.data(), b.out.data(), kFirstCallN, stream);
    LAB_CHECK(cudaStreamSynchronize(stream));
    first_call_ms = t.elapsed_ms();
  }
  LAB_CHECK(cudaGetLastError());
  Prebuilt ref(p, arch);
  b.prebuilt = &ref;
  const std::string wrong = wrong_in(b, seed, stream);
  lab::report("first_call_ms", first_call_ms);
  lab::report("correct", wrong.empty() ? "1" : "0");
  if (!wrong.empty()) lab::report("wrong", wrong);
}

void child_role(const std::vector<std::string>& a) {
  const std::string role = a.empty() ? "" : a[0];
  if (role == "context" && a.size() == 1)
    child_context();
  else if (role == "compile" && a.size() == 2)
    child_compile(a[1]);
  else if (role == "cublas" && a.size() == 1)
    child_cublas();
  else if (role == "first-call" && a.size() == 6)
    child_first_call(a[1], a[2], a[3], std::stoull(a[4]), a[5]);
  else if (role == "compile-first-call" && a.size() == 5)
    child_compile_first_call(a[1], a[2], std::stoull(a[3]), a[4]);
  else
    throw std::invalid_argument("unknown child role (this flag is the harness's own)");
}

// ---------------------------------------------------------------------------------------------
// Part A in the parent: run each child role `processes` times, record median and range.

// Records @p values as metric @p name (value: the median; range: the fastest and slowest process
// or call) and returns the line for the notes: @p label, then median (fastest .. slowest).
std::string record(lab::Lesson& l, const std::string& label, const std::string& name,
                   const std::vector<double>& values, const std::string& unit) {
  const lab::Stats st = lab::summarize(values);
  const lab::Reading r{st.median, st.min, st.max};
  lab::metric(l, name, r, " " + unit);
  const int digits = r.value < 10 ? 2 : r.value < 100 ? 1 : 0;
  return "  " + label + std::string(label.size() < 52 ? 52 - label.size() : 1, ' ') +
         lab::fixed(r.value, digits) + " " + unit + "  (" + lab::fixed(r.low, digits) + " .. " +
         lab::fixed(r.high, digits) + ")";
}

void one_time_costs(lab::Lesson& l, int processes, const std::string& arch, std::size_t big_bytes) {
  struct Row {
    std::string label, metric, key, unit;
  };
  auto run_role = [&](const std::vector<std::string>& args, const lab::Environment& env,
                      const std::vector<Row>& rows, const std::string& what) {
    std::map<std::string, std::vector<double>> values;
    std::string mode;
    for (int i = 0; i < processes; ++i) {
      const lab::ChildRun c = lab::run_self(args, env, kChildTimeoutS);
      if (!c.ok) {  // the harness's own measurement: say so, and go on with the others
        l.note("  " + what + " failed: " + c.why());
        return mode;
      }
      for (const Row& row : rows) values[row.key].push_back(c.number(row.key));
      mode = c.text("loading_mode");
    }
    for (const Row& row : rows) l.note(record(l, row.label, row.metric, values[row.key], row.unit));
    return mode;
  };

  l.note("one-time costs, each in " + std::to_string(processes) +
         " new processes: median (fastest .. slowest process)");
  for (const char* loading : {"LAZY", "EAGER"}) {
    const std::string m = std::string(loading) == "LAZY" ? "lazy" : "eager";
    const std::string got =
        run_role({"context"}, {{"CUDA_MODULE_LOADING", loading}},
                 {{"context creation, cudaFree(0), CUDA_MODULE_LOADING=" + std::string(loading),
                   "context_ms_" + m, "context_ms", "ms"},
                  {"  first launch of an empty kernel + sync", "first_launch_us_" + m,
                   "first_launch_us", "us"},
                  {"  second launch + sync", "second_launch_us_" + m, "second_launch_us", "us"}},
                 "measuring context creation");
    if (!got.empty() && got != m)
      l.note("  (the driver reported loading mode '" + got + "', not " + m + ")");
  }
  run_role(
      {"compile", arch}, {},
      {{"NVRTC compile, the process's first (" + arch + " cubin)", "nvrtc_cold_ms", "nvrtc_cold_ms",
        "ms"},
       {"NVRTC compile, the same program again", "nvrtc_warm_ms", "nvrtc_warm_ms", "ms"},
       {"NVRTC compile to LTO-IR (-dlto)", "nvrtc_lto_ms", "nvrtc_lto_ms", "ms"},
       {"nvJitLink: LTO-IR -> cubin", "nvjitlink_ms", "nvjitlink_ms", "ms"},
       {"cuModuleLoadData (the cubin)", "module_load_us", "module_load_us", "us"},
       {"  its first launch + sync", "module_first_launch_us", "module_first_launch_us", "us"},
       {"  its second launch + sync", "module_second_launch_us", "module_second_launch_us", "us"},
       {"cuLibraryLoadData (nvJitLink's cubin)", "library_load_us", "library_load_us", "us"},
       {"  its first launch + sync", "library_first_launch_us", "library_first_launch_us", "us"}},
      "measuring compilation");
  run_role(
      {"cublas"}, {},
      {{"cublasCreate", "cublas_create_ms", "cublas_create_ms", "ms"},
       {"  first cublasSgemm 512^3 + sync", "cublas_first_sgemm_ms", "cublas_first_sgemm_ms", "ms"},
       {"  second cublasSgemm 512^3 + sync", "cublas_second_sgemm_ms", "cublas_second_sgemm_ms",
        "ms"},
       {"cublasDestroy", "cublas_destroy_ms", "cublas_destroy_ms", "ms"}},
      "measuring cuBLAS");

  // Allocation, in this process: repeated, so its median and range are over calls.
  constexpr int kRepeats = 10;
  cudaStream_t s = l.stream();
  std::vector<double> malloc_us, free_us, pool0_us, pool_keep_us;
  for (int i = 0; i < kRepeats; ++i) {
    LAB_CHECK(cudaDeviceSynchronize());
    void* p = nullptr;
    lab::HostTimer t;
    LAB_CHECK(cudaMalloc(&p, big_bytes));
    malloc_us.push_back(t.elapsed_ms() * 1e3);
    t.start();
    LAB_CHECK(cudaFree(p));
    free_us.push_back(t.elapsed_ms() * 1e3);
  }
  for (const bool keep : {false, true}) {
    const Pool pool(keep ? std::numeric_limits<std::uint64_t>::max() : 0);
    for (int i = -1; i < kRepeats; ++i) {  // i = -1: the pool's first growth, not recorded
      void* p = nullptr;
      lab::HostTimer t;
      LAB_CHECK(cudaMallocFromPoolAsync(&p, big_bytes, pool.get(), s));
      const double us = t.elapsed_ms() * 1e3;
      LAB_CHECK(cudaFreeAsync(p, s));
      LAB_CHECK(cudaStreamSynchronize(s));  // where a pool with threshold 0 gives its memory back
      if (i >= 0) (keep ? pool_keep_us : pool0_us).push_back(us);
    }
  }
  l.note("allocating " + lab::fixed(big_bytes / 1048576.0, 0) + " MiB in this process, " +
         std::to_string(kRepeats) + " times: median (fastest .. slowest call)");
  l.note(record(l, "cudaMalloc", "malloc_us", malloc_us, "us"));
  l.note(record(l, "cudaFree", "free_us", free_us, "us"));
  l.note(record(l, "cudaMallocFromPoolAsync, release threshold 0", "pool_release_alloc_us",
                pool0_us, "us"));
  l.note(record(l, "cudaMallocFromPoolAsync, threshold unlimited", "pool_keep_alloc_us",
                pool_keep_us, "us"));
}

// ---------------------------------------------------------------------------------------------
// Part B's cache tests in new processes.

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Every regular file under @p dir, with its bytes.
std::map<fs::path, std::string> files_in(const fs::path& dir) {
  std::map<fs::path, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[e.path()] = read_bytes(e.path());
  return out;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

// Writes @p bytes over the file @p p in place and gives it back its time of change: a damaged
// folder looks like one an earlier process filled.
void plant(const fs::path& p, const std::string& bytes) {
  const fs::file_time_type when = fs::last_write_time(p);
  write_bytes(p, bytes);
  fs::last_write_time(p, when);
}

// The largest regular file under @p dir (the compiled code, whatever else the cache keeps).
fs::path largest_file(const fs::path& dir) {
  fs::path best;
  std::uintmax_t size = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.file_size() >= size) {
      size = e.file_size();
      best = e.path();
    }
  return best;
}

// What a round does to the folder between its two calls of the exercise.
enum class Damage { none, truncated, flipped, stale };

// The cache tests. Every round is the same three new processes: the harness's own that compiles
// program 0 (the disk cache rule's yardstick), then the exercise's first call of program 0 on an
// empty folder, then on the folder that call filled, as it was left or damaged in place (files
// cut in half, bits flipped, the entry swapped for program 1's), each damaged file keeping its
// time of change. The damaged rounds are shuffled in among the others, every folder has a name
// drawn at random, the seeds are drawn too, and each process finds only its own folder beside it
// (a folder is removed once its round is over): nothing a process is handed tells a damaged
// round from another, and there is no undamaged copy of the entry left to read.
class CacheTests {
 public:
  // Draws the programs from entropy of the moment, once no exercise code is left in this
  // process: the expression nests five steps, each one of ten forms with constants of its own
  // (10^5 shapes), so no code written or compiled before the draw can answer them. Only a process
  // of the test that compiled the program can leave something for the next one, in its folder
  // (checked: lab::WriteAudit). Every value stays finite for x in [-2, 2), fill_x's range (below
  // about 1e13: an exp of at most four steps that each scale by less than 1.75 and add 1).
  CacheTests(lab::Lesson& l, lab::WriteAudit& audit, fs::path root, std::string arch, bool keep)
      : l_(l), audit_(audit), root_(std::move(root)), arch_(std::move(arch)), keep_(keep) {
    auto constant = [&](double low, double high) {
      return lab::text("%.4ff", low + (high - low) * std::uniform_real_distribution<>(0, 1)(rng_));
    };
    expression_ = "v";
    for (int step = 0; step < 5; ++step) {
      const std::string v = "(" + expression_ + ")";
      switch (rng_() % 10) {
        case 0: expression_ = v + " * " + constant(0.5, 1.5) + " + " + constant(-0.5, 0.5); break;
        case 1: expression_ = "sinf(" + constant(0.5, 2) + " * " + v + ")"; break;
        case 2: expression_ = "tanhf(ALPHA * " + v + ")"; break;
        case 3: expression_ = "expf(-" + constant(0.1, 1) + " * " + v + ")"; break;
        case 4: expression_ = "fmaxf(" + v + ", " + constant(-0.5, 0.5) + ")"; break;
        case 5: expression_ = "sqrtf(fabsf" + v + " + " + constant(0.1, 1) + ")"; break;
        case 6: expression_ = "cosf(" + v + " + " + constant(-1, 1) + ")"; break;
        case 7: expression_ = v + " * ALPHA - " + constant(0, 1); break;
        case 8: expression_ = "rsqrtf(fabsf" + v + " + " + constant(0.1, 1) + ")"; break;
        default: expression_ = "fminf(" + v + " * ALPHA, " + constant(0, 1) + ")"; break;
      }
    }
    expression_ = "ALPHA * " + expression_ + " + v";  // ALPHA always counts
    for (int k = 0; k < 2; ++k)  // in [0.25, 0.75) and [1.25, 1.75): never the same
      alpha_[k] = constant(k + 0.25, k + 0.75);
  }

  void run(int processes) {
    l_.note("the cache tests' programs, drawn for this run: f(v) = " + expression_ +
            " with -DALPHA=" + alpha_[0] + " and with -DALPHA=" + alpha_[1]);
    before_ = audit_.list();
    // Program 1's entry, for the stale-entry round, from a process of its own; kept here, its
    // folder removed.
    {
      const fs::path dir = new_folder();
      const lab::ChildRun setup = first_call(dir, 1);
      if (record_call("new process, program 1, empty cache folder", setup)) {
        const fs::path entry = largest_file(dir);
        if (!entry.empty()) {
          other_name_ = fs::relative(entry, dir);
          other_entry_ = read_bytes(entry);
        }
      }
      leave(dir);
    }
    std::vector<Damage> rounds(static_cast<std::size_t>(processes), Damage::none);
    rounds.insert(rounds.end(), {Damage::truncated, Damage::flipped, Damage::stale});
    std::shuffle(rounds.begin(), rounds.end(), rng_);
    // The rule's ratio: the harness's own first call, which compiles, over the exercise's first
    // call on a folder an earlier process filled. Not over the exercise's own empty-folder call:
    // that time is the student's to make as long as they like (a wait where the folder is
    // empty), and only the filled side is theirs to make short. Each round in a row: paired in
    // time, so a machine that slows for a while slows both sides of the ratio.
    std::vector<double> compiled, cold, warm;
    int k = 0;
    bool on_disk = false, looked = false;  // the first plain round's folder held a file
    for (const Damage d : rounds) {
      const lab::ChildRun ref = compile_first_call();
      if (!ref.ok)  // no code of the student's runs there: the machine's or the course's problem
        throw std::runtime_error("the harness's own first call in a new process failed: " +
                                 ref.why());
      const std::string label = d == Damage::none ? " (" + std::to_string(++k) + ")"
                                                  : " (a round of the test: " + describe(d) + ")";
      const fs::path dir = new_folder();
      const lab::ChildRun empty = first_call(dir, 0);
      record_call("new process, empty cache folder" + label, empty);
      const std::map<fs::path, std::string> damaged = damage(d, dir);
      const lab::ChildRun filled = first_call(dir, 0);
      if (d == Damage::none || damaged.empty()) {
        record_call("new process, cache folder filled by an earlier one" + label, filled);
      } else {
        judge(d, filled, damaged);
      }
      if (d == Damage::none) {
        compiled.push_back(ref.number("first_call_ms"));
        if (empty.ok) cold.push_back(empty.number("first_call_ms"));
        if (filled.ok) warm.push_back(filled.number("first_call_ms"));
        if (!looked) on_disk = !files_in(dir).empty();
        looked = true;
      }
      leave(dir);
    }
    l_.check("exercise", "new processes wrote only in their cache folder", written_.empty(),
             "written outside the cache folder it was given: " + written_ +
                 " (keep the cache in that folder: the harness tests what it finds there)");
    if (warm.empty()) {  // every filled-folder child failed: checked above
      l_.metric("first_call_speedup", 0, 0, 0, "x");
      return;
    }
    const lab::Stats a = lab::summarize(compiled), b = lab::summarize(warm);
    l_.metric("first_call_compiled_ms", a.median, a.min, a.max, " ms");
    std::string empty_folder = "-";
    if (!cold.empty()) {
      const lab::Stats c = lab::summarize(cold);
      l_.metric("first_call_cold_ms", c.median, c.min, c.max, " ms");
      empty_folder = lab::fixed(c.median, 2);
    }
    l_.metric("first_call_filled_ms", b.median, b.min, b.max, " ms");
    l_.note("first call in a new process, n = " + std::to_string(kFirstCallN) + ", median of " +
            std::to_string(processes) + ": compiled by the harness " + lab::fixed(a.median, 2) +
            " ms, yours on an empty cache folder " + empty_folder + " ms, on the filled folder " +
            lab::fixed(b.median, 2) + " ms: " + lab::fixed(a.median / b.median, 1) +
            "x faster than compiling (the bar: disk_cache in check.toml)");
    // A speed-up earns the rule only from a cache in the folder: that is what the damage tests
    // reach. With no file there it reads 0.
    if (!on_disk) {
      l_.metric("first_call_speedup", 0, 0, 0, "x");
      l_.note(
          "the cache folder holds no file after a first call: no disk cache there, so the "
          "speed-up counts as 0");
      return;
    }
    const lab::MedianRatio r = lab::ratio_of_medians(a, b);  // lab::speedup's interval, for Stats
    l_.metric("first_call_speedup", r.value, r.low, r.high, "x");
  }

 private:
  static std::string describe(Damage d) {
    switch (d) {
      case Damage::truncated: return "cache files cut to half their size";
      case Damage::flipped: return "cache files with 7 bits flipped";
      default: return "program 0's cache file replaced by program 1's";
    }
  }
  static std::string check_name(Damage d) { return "new process, " + describe(d); }

  // A folder of its own for the next process, named at random, and allowed by the write audit.
  fs::path new_folder() {
    const fs::path dir = root_ / lab::text("%016llx", static_cast<unsigned long long>(rng_()));
    fs::create_directories(dir);
    audit_.allow(dir);
    return dir;
  }

  // Done with @p dir: removed, so that no later process finds it (kept with --keep-cache 1).
  void leave(const fs::path& dir) {
    std::error_code ec;
    if (!keep_) fs::remove_all(dir, ec);
  }

  // A new process's first call of program @p program on cache folder @p dir (child_first_call);
  // then the places a graded run can write are listed again.
  lab::ChildRun first_call(const fs::path& dir, int program) {
    const lab::ChildRun c = lab::run_self(
        {"first-call", dir.string(), arch_, expression_, std::to_string(rng_()), alpha_[program]},
        {}, kChildTimeoutS);
    if (written_.empty()) written_ = lab::WriteAudit::written(before_, audit_.list());
    return c;
  }

  // The harness's own first call of program 0 in a new process (child_compile_first_call).
  lab::ChildRun compile_first_call() {
    return lab::run_self(
        {"compile-first-call", arch_, expression_, std::to_string(rng_()), alpha_[0]}, {},
        kChildTimeoutS);
  }

  // Records whether @p c gave the right result; returns it.
  bool record_call(const std::string& name, const lab::ChildRun& c) {
    if (!c.ok) {
      l_.check("exercise", name, false, c.why());
      return false;
    }
    l_.check("exercise", name, c.text("correct") == "1", c.text("wrong"));
    return c.text("correct") == "1";
  }

  // Damages the files of @p dir in place as @p d says; returns each damaged file with the bytes
  // the harness left in it (nothing when there was nothing to damage, with a note).
  std::map<fs::path, std::string> damage(Damage d, const fs::path& dir) {
    std::map<fs::path, std::string> damaged;
    if (d == Damage::none) return damaged;
    if (d == Damage::stale) {  // a whole, well-formed entry for program 1, under program 0's name
      const fs::path to = largest_file(dir);
      if (to.empty() || other_entry_.empty()) {
        l_.note("the stale-entry test was skipped: no cache file to swap");
      } else if (fs::relative(to, dir) == other_name_) {
        l_.note(
            "the stale-entry test was skipped: the cache keeps both programs in a file of "
            "the same name, so there is no other entry's file to swap in");
      } else {
        plant(to, other_entry_);
        damaged[to] = other_entry_;
      }
      return damaged;
    }
    for (const auto& [path, bytes] : files_in(dir)) {
      std::string out = bytes;
      if (d == Damage::truncated) out = bytes.substr(0, bytes.size() / 2);
      for (int k = 1; d == Damage::flipped && k <= 7 && !out.empty(); ++k)
        out[out.size() * k / 8] ^= 0x10;
      plant(path, out);
      damaged[path] = out;
    }
    if (damaged.empty())
      l_.note("the test of " + describe(d) + " was skipped: the folder held no file");
    return damaged;
  }

  // The first call after the damage: right, and no damaged file left as the harness left it (it
  // was detected and replaced, or removed).
  void judge(Damage d, const lab::ChildRun& c, const std::map<fs::path, std::string>& damaged) {
    const std::string name = check_name(d);
    const bool stale = d == Damage::stale;
    if (!c.ok) {
      l_.check("exercise", name, false,
               c.why() + (stale ? "" : ": a damaged cache entry must be detected, not used"));
      return;
    }
    if (c.text("correct") != "1") {
      l_.check("exercise", name, false,
               c.text("wrong") + (stale ? ": the entry was another program's, and was used: "
                                          "store the key in the entry and compare it"
                                        : ": a damaged cache entry was used"));
      return;
    }
    for (const auto& [path, bytes] : damaged) {
      std::error_code ec;
      if (!fs::exists(path, ec) || read_bytes(path) != bytes) continue;
      l_.check("exercise", name, false,
               stale ? "the right result, but the other program's entry still sits under this "
                       "one's name: write the entry again when its key does not match"
                     : "the right result, but the damaged file " + path.filename().string() +
                           " is still there as the harness left it: detect the damage and write "
                           "the entry again");
      return;
    }
    l_.check("exercise", name, true, "");
  }

  lab::Lesson& l_;
  lab::WriteAudit& audit_;
  fs::path root_;
  std::string arch_;
  bool keep_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::string expression_;
  std::string alpha_[2];
  fs::path other_name_;      // program 1's entry: its file's name in its folder
  std::string other_entry_;  // and its bytes
  lab::FileStamps before_;   // the places a graded run can write, before the first process
  std::string written_;      // what a process wrote outside its folder (the first one found)
};

// ---------------------------------------------------------------------------------------------
// The variants of the table.

void add_variants(lab::Variants<Problem>& variants) {
  // Host-paced (no lead-in): whatever a call does on the host is inside its time. 20 samples and
  // 30 ms, the median to 1%, within 6 s.
  const lab::BenchmarkOptions o = lab::measure_until(20, 30.0, 0.01, 6.0);
  const auto work = [](const Problem& p) { return lab::Work{16.0 * p.n, 0}; };  // x, t twice, out
  const std::string host_work =
      "a captured call hides the host work this lesson measures (and cannot hold cudaMalloc, a "
      "compile or a synchronization)";
  variants.add({"prebuilt", lab::Role::Reference,
                "the kernels compiled once, launched from their module, intermediate preallocated",
                [](Problem& p, cudaStream_t s) {
                  p.prebuilt->launch(p.x.data(), p.t, p.out.data(), p.n, s);
                },
                work, 0, lab::Pacing::Host, o});
  variants.add({"malloc_each_call", lab::Role::Baseline,
                "prebuilt kernels, cudaMalloc + cudaFree of the intermediate in every call",
                [](Problem& p, cudaStream_t s) {
                  float* t = nullptr;
                  LAB_CHECK(cudaMalloc(&t, sizeof(float) * static_cast<std::size_t>(p.n)));
                  p.prebuilt->launch(p.x.data(), t, p.out.data(), p.n, s);
                  LAB_CHECK(cudaFree(t));
                },
                work, 0, lab::Pacing::Host, o, "", host_work});
  variants.add({"pool_no_threshold", lab::Role::Baseline,
                "prebuilt kernels, intermediate from a pool with release threshold 0",
                [](Problem& p, cudaStream_t s) {
                  float* t = nullptr;
                  LAB_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&t),
                                                    sizeof(float) * static_cast<std::size_t>(p.n),
                                                    p.releasing, s));
                  p.prebuilt->launch(p.x.data(), t, p.out.data(), p.n, s);
                  LAB_CHECK(cudaFreeAsync(t, s));
                },
                work, 0, lab::Pacing::Host, o, "", host_work});
  variants.add({"exercise", lab::Role::Exercise, "your Operator::apply (exercise.cu)",
                [](Problem& p, cudaStream_t s) {
                  p.op->apply(*p.program, p.x.data(), p.out.data(), p.n, s);
                },
                work, 0, lab::Pacing::Host, o, "", host_work});
}

}  // namespace

int main(int argc, char** argv) {
  if (lab::is_child(argc, argv)) return lab::child_main(argc, argv, child_role);
  lab::WriteAudit
      audit;  // notes the files the checker handed this process, before any exercise code

  lab::Lesson lesson("11-one-time-costs",
                     "One-time costs: context, module loading, runtime compilation, allocation");
  lab::Variants<Problem> variants(lesson);
  add_variants(variants);

  long long n_opt = 0, processes_opt = 0, one_time_opt = 1, keep_opt = 0;
  lesson.option("--n", &n_opt,
                "floats per call at the timing size (0: 2^26, or 2^20 with --quick)");
  lesson.option(
      "--processes", &processes_opt,
      "new processes per one-time measurement and per cache test (0: 5, or 2 with --quick)");
  lesson.option("--one-time-costs", &one_time_opt,
                "1: measure part A, the one-time costs of context, loading, NVRTC, nvJitLink, "
                "cuBLAS and allocation; 0: only the exercise (the checker passes 0)");
  lesson.option("--keep-cache", &keep_opt,
                "1: keep this run's cache folders (under lab11-cache/ in the working directory) "
                "to look at; 0: remove them at the end, and each cache test's once it is over");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    cudaStream_t s = l.stream();
    const long long n_ll = n_opt > 0 ? n_opt : (l.quick() ? 1 << 20 : 1 << 26);
    const long long processes_ll = processes_opt > 0 ? processes_opt : (l.quick() ? 2 : 5);
    if (n_ll > (1ll << 28) || processes_ll > 50)
      throw std::invalid_argument("--n at most 2^28, --processes at most 50");
    const int N = static_cast<int>(n_ll), P = static_cast<int>(processes_ll);
    const std::string arch = lab::nvrtc_arch();
    const bool keep = keep_opt != 0;

    // This run's cache folders: under the working directory (the checker's work folder is the
    // one place a graded program may write), one per run, removed at the end.
    std::mt19937_64 name_rng(std::random_device{}());
    const fs::path root =
        fs::absolute("lab11-cache") / ("run-" + std::to_string(name_rng() % 1000000000));
    fs::create_directories(root);
    struct Cleanup {
      fs::path root;
      bool keep;
      ~Cleanup() {
        std::error_code ec;
        if (!keep) fs::remove_all(root, ec);
        if (!keep) fs::remove(root.parent_path(), ec);  // only if empty: other runs may share it
      }
    } cleanup{root, keep};

    const std::vector<NamedProgram> progs = programs();
    std::vector<std::unique_ptr<Prebuilt>> refs;
    for (const NamedProgram& p : progs) refs.push_back(std::make_unique<Prebuilt>(p.program, arch));

    lab::DeviceBuffer<float> t_prebuilt(static_cast<std::size_t>(N));
    const Pool releasing(0);
    std::unique_ptr<exercise::Operator> op;
    fs::create_directories(root / "main");
    if (l.selected("exercise"))
      op = std::make_unique<exercise::Operator>((root / "main").string(), arch);
    // What a problem's variants run: @p program, with @p ref as the reference, and @p o as yours.
    auto wire = [&](Problem& p, Prebuilt& ref, const exercise::Program& program,
                    exercise::Operator* o) {
      p.prebuilt = &ref;
      p.t = t_prebuilt.data();
      p.releasing = releasing.get();
      p.op = o;
      p.program = &program;
    };
    lab::Protocol<Problem> protocol(l, variants, checks());
    Problem big(N);

    // 1. Validation in this process, every variant on every case: several programs (two
    //    differing only in their options), odd sizes, fresh inputs, outputs poisoned; a second
    //    Operator on the same folder (its memory is empty, the disk is not); and two
    //    architectures on one folder.
    if (!l.profiling()) {
      // The test programs must differ, or keying without the options would go unnoticed.
      if (!differ(*refs[0], *refs[1], protocol.next_seed(), s))
        throw std::logic_error(
            "programs 0 and 1 give the same bits: the options test shows nothing");
      struct Case {
        int program, n;
      };
      const Case cases[] = {{0, 1000}, {1, 1000},  {2, 4097}, {0, 1},
                            {0, 4097}, {1, 65537}, {2, 257},  {0, N}};
      auto validate_cases = [&](exercise::Operator* o, const std::string& label) {
        for (const Case& k : cases) {
          if (k.n > N) continue;
          std::optional<Problem> own;  // its own buffers: the guard zone right after out[n - 1]
          Problem& p = k.n == N ? big : own.emplace(k.n);
          wire(p, *refs[k.program], progs[k.program].program, o);
          protocol.validate(p, progs[k.program].name + ", n=" + std::to_string(k.n) + label);
        }
      };
      validate_cases(op.get(), "");
      if (op) {
        {
          exercise::Operator second((root / "main").string(), arch);
          validate_cases(&second, ", a second Operator on the same folder");
          LAB_CHECK(cudaDeviceSynchronize());
        }

        const std::string other = second_arch(arch);
        if (other.empty()) {
          l.note("this GPU runs the cubins of one target only: the architecture test was skipped");
        } else {
          const NamedProgram ap = arch_program();
          Prebuilt ref_a(ap.program, arch), ref_b(ap.program, other);
          if (!differ(ref_a, ref_b, protocol.next_seed(), s))
            throw std::logic_error(arch + " and " + other +
                                   " give the same bits: the test shows nothing");
          const fs::path dir = root / "two-targets";
          fs::create_directories(dir);
          for (const auto& [target, ref] :
               {std::pair<std::string, Prebuilt*>{arch, &ref_a}, {other, &ref_b}}) {
            exercise::Operator o(dir.string(), target);
            Problem p(4097);
            wire(p, *ref, ap.program, &o);
            protocol.validate(p,
                              ap.name + " for " + target + " (one cache folder for both targets)");
            LAB_CHECK(cudaDeviceSynchronize());
          }
        }
      }
    }

    // 2. Timing: one call each, host-paced. Every timed call of the exercise gets new inputs and
    //    a poisoned output, and is checked whole once it has finished (lab::Protocol); then x
    //    must still hold what the last call was given, and every variant is validated again.
    l.size("n = " + std::to_string(N) + " floats per call (" + lab::fixed(N * 4.0 / 1048576, 0) +
           " MiB each for x, the intermediate and out); program: " + progs[0].name);
    wire(big, *refs[0], progs[0].program, op.get());
    protocol.measure(big);
    protocol.validate(big, progs[0].name + ", n=" + std::to_string(N) + " after timing");
    if (const lab::Measurement* pre = variants.measurement("prebuilt"))
      for (const auto& v : variants) {
        const lab::Measurement* m = variants.measurement(v.name);
        if (m && m != pre)
          l.note(v.name + " costs " + lab::fixed(lab::speedup(*m, *pre).value, 2) +
                 "x the prebuilt call" +
                 (v.role == lab::Role::Exercise ? " (the checker wants <= 1.15x)" : ""));
      }

    // 3. The disk cache across processes, and damaged entries.
    LAB_CHECK(cudaDeviceSynchronize());
    op.reset();  // this process's Operator is done; children use folders of their own
    LAB_CHECK(cudaDeviceSynchronize());  // nothing it left running may slow the children's calls
    if (!l.profiling() && l.selected("exercise")) {
      std::error_code ec;
      if (!keep)  // nothing but its own folder beside a new process's
        for (const char* done : {"main", "two-targets"}) fs::remove_all(root / done, ec);
      CacheTests(l, audit, root, arch, keep).run(P);
    }

    // 4. Part A: the one-time costs themselves.
    if (!l.profiling() && one_time_opt != 0) one_time_costs(l, P, arch, big.x.bytes());
  });
}
