// Lesson 11, the harness: one-time costs. What the first call pays, and how a program keeps it
// out of its hot path.
//
// Part A, what each one-time cost is on this machine, measured in processes that have not paid it
// yet: this program runs itself again (lab::run_self, lab/child_process.hpp) --processes times
// per measurement and reports the median with the fastest and slowest process (the child roles
// below say what each times: the context and first launches, compiling and loading the operator,
// the driver compiling its PTX with and without its JIT cache, cuBLAS); and, in this process,
// cudaMalloc and cudaFree against a stream-ordered pool that gives its memory back at every
// synchronization (release threshold 0) and one that keeps it.
//
// Part B, the exercise: a runtime-compiled operator, out = smooth(f(x)) (exercise.cuh), where f
// is an expression and the options (-DALPHA=...) change it, against prebuilt (the same kernels
// compiled once at startup and launched from that module with a preallocated intermediate: the
// steady state to reach), malloc_each_call and pool_no_threshold (add_variants says each). Each
// call is timed with no lead-in: whatever a call does on the host is inside its time. Then the
// cache tests, in new processes on folders of their own (lab/cache_tests.hpp): the first call on
// an empty folder against the first call on the folder it filled and, in rounds that look exactly
// like those, the first call after the harness damaged the folder's files (cut in half; bits
// flipped; one entry's file swapped for another's), which must still give the right result and
// replace the damaged file.
#include <cublas_v2.h>
#include <cuda.h>

#include <filesystem>

#include "exercise.cuh"
#include "lab/cache_tests.hpp"
#include "lab/child_process.hpp"
#include "lab/cublas.hpp"
#include "lab/driver.hpp"
#include "lab/lesson.cuh"
#include "lab/runtime_compile.hpp"
#include "lab/same_bits.cuh"
#include "lab/write_audit.hpp"

namespace {

namespace fs = std::filesystem;

constexpr int kFirstCallN = 4096;  // a new process's first call: small, so the one-time costs are timed

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

// Compiling, the harness's own way (the reference, and the timings of part A), with NVRTC and
// nvJitLink (lab/runtime_compile.hpp).

// @p lto: LTO-IR for nvJitLink instead of a cubin.
std::vector<char> compile(const exercise::Program& p, const std::string& arch, bool lto = false) {
  return lab::nvrtc_compile(p.source, p.options, arch, lto);
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

// One call's problem, and its check: bit for bit against the reference, compared on the device
// (n = 2^26 by default: copying both to the host would cost more than the calls being checked).

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

__global__ void empty_kernel() {}

// What a call left against the reference run on x made again from @p seed: "" when right.
std::string wrong_in(Problem& p, std::uint64_t seed, cudaStream_t s) {
  fill_x(p.x_again.data(), p.n, seed, s);
  p.prebuilt->launch(p.x_again.data(), p.want.data(), p.n, s);
  return lab::compare_bits(p.out, p.want.data(), s);  // bit for bit, on the device
}

// Whether @p a and @p b give different bits on the same fresh inputs (else a test meant to tell
// them apart shows nothing).
bool differ(Prebuilt& a, Prebuilt& b, std::uint64_t seed, cudaStream_t s) {
  Problem t(4096);
  fill(t, seed, s);
  a.launch(t.x.data(), t.want.data(), t.n, s);
  b.launch(t.x.data(), t.out.data(), t.n, s);
  return lab::count_changed(t.out.data(), t.out.size(), lab::ValuesIn<float>{t.want.data()}, s)
             .count > 0;
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

// Child: the driver compiling PTX (its JIT), under the CUDA_CACHE_* variables the parent set:
// program 0 as PTX for this GPU's virtual architecture, loaded with cuModuleLoadData. Under
// CUDA_MODULE_LOADING=EAGER (the parent sets it) the load compiles every kernel, so the call timed
// holds the whole JIT, or the cache's lookup instead of it.
void child_ptx_jit(const std::string& arch) {
  LAB_CHECK(cudaFree(nullptr));
  const exercise::Program p = programs()[0].program;
  const std::string ptx = lab::nvrtc_ptx(p.source, p.options, arch);  // not timed
  CUmodule module = nullptr;
  lab::HostTimer t;
  LAB_CU_CHECK(lab::driver().module_load_data(&module, ptx.c_str()));
  lab::report("ptx_load_ms", t.elapsed_ms());
  LAB_CU_CHECK(lab::driver().module_unload(module));
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

// Child: a first call in a new process of the cache tests' program (the operator with the drawn
// @p expression, compiled with -DALPHA=@p alpha), timed from before anything of it runs until its
// result is ready: the exercise's, an Operator on cache folder @p dir; or, with @p dir "", the
// harness's own, compiled as Prebuilt does (NVRTC, load, launch): what a first call costs without
// a cache, the disk cache rule's yardstick. Timed alike, the two differ only in whose code ran.
// The exercise's result is then checked against the reference (compiled only after the timed
// call, on x made again from @p seed).
void child_first_call(const std::string& dir, const std::string& arch,
                      const std::string& expression, std::uint64_t seed, const std::string& alpha) {
  LAB_CHECK(cudaFree(nullptr));
  const exercise::Program p = {operator_source(expression), {"-DALPHA=" + alpha}};
  lab::Stream stream;
  Problem b(kFirstCallN);
  fill(b, seed, stream);
  empty_kernel<<<1, 1, 0, stream>>>();  // the harness's own module is loaded before the timing
  LAB_CHECK_LAUNCH();
  LAB_CHECK(cudaStreamSynchronize(stream));
  lab::HostTimer t;
  if (dir.empty()) {  // the harness's own
    Prebuilt compiled(p, arch);
    compiled.launch(b.x.data(), b.out.data(), kFirstCallN, stream);
    LAB_CHECK(cudaStreamSynchronize(stream));
    return lab::report_first_call(t.elapsed_ms());
  }
  double first_call_ms = 0;
  {
    exercise::Operator op(dir, arch);
    op.apply(p, b.x.data(), b.out.data(), kFirstCallN, stream);
    LAB_CHECK(cudaStreamSynchronize(stream));
    first_call_ms = t.elapsed_ms();
  }
  LAB_CHECK(cudaGetLastError());
  Prebuilt ref(p, arch);
  b.prebuilt = &ref;
  lab::report_first_call(first_call_ms, wrong_in(b, seed, stream));
}

// The driver's JIT cache, three rows: the same PTX loaded in new processes with the cache off,
// in an empty folder (the driver compiles and writes its entry) and in the folder the last of those
// filled (it reads the entry). The cache's key holds the PTX, the driver's version, the GPU's
// architecture and the JIT options: any of them new, and the driver compiles again. A program
// built with a cubin for this GPU (the course's builds: CMAKE_CUDA_ARCHITECTURES 90 or native)
// never gets here: the driver takes the matching cubin over any PTX beside it, unless
// CUDA_FORCE_PTX_JIT=1. The folder is this run's own (@p dir), never the default
// ~/.nv/ComputeCache: an entry an earlier run left there would make the empty-folder row a warm
// one, and the harness would add to (and evict from) the cache of every program of the user's.
void driver_jit_cache(lab::Lesson& l, int processes, const std::string& arch, const fs::path& dir) {
  const lab::ChildArgs role = {"ptx-jit", arch};
  const lab::Environment eager = {{"CUDA_MODULE_LOADING", "EAGER"}, {"CUDA_CACHE_DISABLE", "1"}};
  const lab::Environment cached = {{"CUDA_MODULE_LOADING", "EAGER"},
                                   {"CUDA_CACHE_DISABLE", "0"},
                                   {"CUDA_CACHE_PATH", dir.string()}};
  auto row = [](const std::string& label, const std::string& metric) {
    return std::vector<lab::ProcessReading>{{label, metric, "ptx_load_ms", "ms"}};
  };
  const std::string what = "measuring the driver's JIT";
  lab::measure_in_processes(
      l, processes, role, eager,
      row("cuModuleLoadData (PTX for " + arch + ": the driver JITs), cache off", "ptx_jit_off_ms"),
      what);
  lab::measure_in_processes(
      l, processes,
      [&] {  // an empty folder for every process
        fs::remove_all(dir);
        fs::create_directories(dir);
        return lab::run_self(role, cached);
      },
      row("  its cache in an empty folder (compiles, writes)", "ptx_jit_cold_ms"), what);
  lab::measure_in_processes(l, processes, role, cached,
                            row("  its cache in the folder filled (reads)", "ptx_jit_warm_ms"),
                            what);
  std::size_t files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
    files += e.is_regular_file() ? 1 : 0;
  l.note("  (the driver's cache folder holds " + std::to_string(files) + " files)");
}

// Part A in the parent: each child role in `processes` new processes, each reading recorded as its
// median with the fastest and slowest process as its range (lab::measure_in_processes).

void one_time_costs(lab::Lesson& l, int processes, const std::string& arch, std::size_t big_bytes,
                    const fs::path& jit_dir) {
  l.note("one-time costs, each in " + std::to_string(processes) +
         " new processes: median (fastest .. slowest process)");
  // Persistence mode on: the driver keeps the GPU set up between processes, so no context pays
  // for that (README, "Persistence mode"). An administrator's setting: only read here.
  const int persistence = lab::persistence_mode();
  const char* mode = persistence < 0 ? "unknown (NVML cannot say)" : persistence ? "on" : "off";
  l.note(std::string("persistence mode: ") + mode);
  for (const char* loading : {"LAZY", "EAGER"}) {
    const std::string m = std::string(loading) == "LAZY" ? "lazy" : "eager";
    const lab::ChildRun last = lab::measure_in_processes(
        l, processes, {"context"}, {{"CUDA_MODULE_LOADING", loading}},
        {{"context creation, cudaFree(0), CUDA_MODULE_LOADING=" + std::string(loading),
          "context_ms_" + m, "context_ms", "ms"},
         {"  first launch of an empty kernel + sync", "first_launch_us_" + m, "first_launch_us",
          "us"},
         {"  second launch + sync", "second_launch_us_" + m, "second_launch_us", "us"}},
        "measuring context creation");
    const std::string got = last.text("loading_mode");
    if (!got.empty() && got != m)
      l.note("  (the driver reported loading mode '" + got + "', not " + m + ")");
  }
  lab::measure_in_processes(
      l, processes, {"compile", arch}, {},
      {{"NVRTC compile, the process's first (" + arch + " cubin)", "nvrtc_cold_ms", "ms"},
       {"NVRTC compile, the same program again", "nvrtc_warm_ms", "ms"},
       {"NVRTC compile to LTO-IR (-dlto)", "nvrtc_lto_ms", "ms"},
       {"nvJitLink: LTO-IR -> cubin", "nvjitlink_ms", "ms"},
       {"cuModuleLoadData (the cubin)", "module_load_us", "us"},
       {"  its first launch + sync", "module_first_launch_us", "us"},
       {"  its second launch + sync", "module_second_launch_us", "us"},
       {"cuLibraryLoadData (nvJitLink's cubin)", "library_load_us", "us"},
       {"  its first launch + sync", "library_first_launch_us", "us"}},
      "measuring compilation");
  driver_jit_cache(l, processes, arch, jit_dir);
  lab::measure_in_processes(l, processes, {"cublas"}, {},
                            {{"cublasCreate", "cublas_create_ms", "ms"},
                             {"  first cublasSgemm 512^3 + sync", "cublas_first_sgemm_ms", "ms"},
                             {"  second cublasSgemm 512^3 + sync", "cublas_second_sgemm_ms", "ms"},
                             {"cublasDestroy", "cublas_destroy_ms", "ms"}},
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
  l.note(lab::record_spread(l, "cudaMalloc", "malloc_us", malloc_us, "us"));
  l.note(lab::record_spread(l, "cudaFree", "free_us", free_us, "us"));
  l.note(lab::record_spread(l, "cudaMallocFromPoolAsync, release threshold 0",
                            "pool_release_alloc_us", pool0_us, "us"));
  l.note(lab::record_spread(l, "cudaMallocFromPoolAsync, threshold unlimited", "pool_keep_alloc_us",
                            pool_keep_us, "us"));
}

// Part B's cache tests in new processes (lab/cache_tests.hpp): rounds of three processes, the
// harness's own first call that compiles program 0 (the disk cache rule's yardstick), then the
// exercise's on an empty folder and on the folder it filled, as it was left or damaged in place;
// the damaged rounds shuffled in among the others, folder names and seeds drawn, each folder
// removed once its round is over (child_first_call is each process). Then the rule's metric.
void cache_tests(lab::Lesson& l, lab::WriteAudit& audit, const fs::path& root,
                 const std::string& arch, bool keep, int processes) {
  lab::CacheTests tests(l, audit, root, keep);
  // The programs, drawn from entropy of the moment once no exercise code is left in this
  // process: f of 10^5 shapes (lab::draw_expression), finite for x in [-2, 2), fill_x's range,
  // and two values of ALPHA, in [0.25, 0.75) and [1.25, 1.75): never the same. Only a process of
  // the test that compiled the program can leave something for the next one, in its folder.
  std::mt19937_64& rng = tests.rng();
  const std::string expression = lab::draw_expression(rng, "ALPHA");
  std::string alpha[2];
  for (int k = 0; k < 2; ++k)
    alpha[k] = lab::text("%.4ff", k + 0.25 + 0.5 * std::uniform_real_distribution<>(0, 1)(rng));
  l.note("the cache tests' programs, drawn for this run: f(v) = " + expression +
         " with -DALPHA=" + alpha[0] + " and with -DALPHA=" + alpha[1]);
  const lab::FirstCallTimes t = tests.run(
      processes,
      [&](const fs::path& dir, int program) {
        return lab::run_self(
            {"first-call", dir.string(), arch, expression, std::to_string(rng()), alpha[program]});
      },
      [&] {
        return lab::run_self(
            {"compile-first-call", arch, expression, std::to_string(rng()), alpha[0]});
      });
  // The rule's ratio: the harness's own first call, which compiles, over yours on a filled folder
  // (not over your empty-folder call: its time is yours to make as long as you like).
  lab::record_first_calls(l, t, processes, "n = " + std::to_string(kFirstCallN));
}

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
  using lab::ChildArgs;  // a child role's arguments, after its name (lab/child_process.hpp)
  if (lab::is_child(argc, argv))
    return lab::child_main(
        argc, argv,
        {{"context", 0, [](const ChildArgs&) { child_context(); }},
         {"compile", 1, [](const ChildArgs& a) { child_compile(a[0]); }},
         {"ptx-jit", 1, [](const ChildArgs& a) { child_ptx_jit(a[0]); }},
         {"cublas", 0, [](const ChildArgs&) { child_cublas(); }},
         {"first-call", 5,
          [](const ChildArgs& a) { child_first_call(a[0], a[1], a[2], std::stoull(a[3]), a[4]); }},
         {"compile-first-call", 4,
          [](const ChildArgs& a) { child_first_call("", a[0], a[1], std::stoull(a[2]), a[3]); }}});
  // Notes the files the checker handed this process, before any exercise code.
  lab::WriteAudit audit;

  lab::Lesson lesson("11-one-time-costs",
                     "One-time costs: context, module loading, runtime compilation, allocation");
  lab::Variants<Problem> variants(lesson);
  add_variants(variants);

  long long n_ll = 0, processes_ll = 0, one_time_opt = 1, keep_opt = 0;
  lesson.option("--n", &n_ll, "floats per call at the timing size", 1 << 26, 1 << 20, {1, 1ll << 28});
  lesson.option("--processes", &processes_ll,
                "new processes per one-time measurement and per cache test", 5, 2, {1, 50});
  lesson.option("--one-time-costs", &one_time_opt,
                "1: measure part A, the one-time costs of context, loading, NVRTC, nvJitLink, "
                "the driver's JIT and its cache, cuBLAS and allocation; 0: only the exercise "
                "(the checker passes 0)");
  lesson.option("--keep-cache", &keep_opt,
                "1: keep this run's cache folders (under lab11-cache/ in the working directory) "
                "to look at; 0: remove them at the end, and each cache test's once it is over");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    cudaStream_t s = l.stream();
    const int N = static_cast<int>(n_ll), P = static_cast<int>(processes_ll);
    const std::string arch = lab::nvrtc_arch();
    const bool keep = keep_opt != 0;

    // This run's cache folders: under the working directory (the checker's work folder is the
    // one place a graded program may write), one per run, removed at the end.
    const lab::ScratchFolder scratch("lab11-cache", keep);
    const fs::path& root = scratch.path();

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

        // Another target whose cubin runs here and gives other bits for arch_program().
        const std::string other = lab::second_arch(arch, arch_program().program.source);
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
    for (const auto& v : variants)
      if (const auto r = lab::speedup(variants, v.name, "prebuilt"); r && v.name != "prebuilt")
        l.note(v.name + " costs " + lab::fixed(r->value, 2) + "x the prebuilt call" +
               (v.role == lab::Role::Exercise ? " (the checker wants <= 1.15x)" : ""));

    // 3. The disk cache across processes, and damaged entries.
    LAB_CHECK(cudaDeviceSynchronize());
    op.reset();  // this process's Operator is done; children use folders of their own
    LAB_CHECK(cudaDeviceSynchronize());  // nothing it left running may slow the children's calls
    if (!l.profiling() && l.selected("exercise")) {
      std::error_code ec;
      if (!keep)  // nothing but its own folder beside a new process's
        for (const char* done : {"main", "two-targets"}) fs::remove_all(root / done, ec);
      cache_tests(l, audit, root, arch, keep, P);
    }

    // 4. Part A: the one-time costs themselves.
    if (!l.profiling() && one_time_opt != 0) one_time_costs(l, P, arch, big.x.bytes(), root / "driver-jit");
  });
}
