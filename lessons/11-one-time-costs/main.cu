// Lesson 11, the harness: one-time costs. What the first call pays, and how a program keeps it
// out of its hot path.
//
// Part A, what each one-time cost is on this machine. The costs a process pays once are only
// honest when measured in a process that has not paid them yet, so this program runs itself
// again (/proc/self/exe --one-time-child ROLE ...) --processes times per measurement and reports
// the median, with the fastest and slowest process as the range:
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
// Then, in new processes on the same cache folder: the first call with an empty folder (it must
// compile) against the first call that finds the folder filled; and the first call after the
// harness damaged the folder's files (cut in half; bits flipped; one entry's file swapped for
// another's), which must still give the right result and replace the damaged file.
//
// Students read this file; they do not edit it. The checker compiles your exercise.cu against it.
#include <cublas_v2.h>
#include <cuda.h>
#include <nvJitLink.h>
#include <nvrtc.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <type_traits>

#include "exercise.cuh"
#include "lab/cublas.hpp"
#include "lab/lesson.cuh"

extern char** environ;

namespace {

namespace fs = std::filesystem;

constexpr const char* kChildFlag = "--one-time-child";
constexpr int kFirstCallN = 4096;         // the first call in a new process: small, so it is the
                                          // one-time costs that are timed, not the work
constexpr double kChildTimeoutS = 120.0;  // one child process, eager loading of every library
                                          // included

// ---------------------------------------------------------------------------------------------
// Errors of the libraries besides the runtime: each says which call failed and why.

// The driver API, reached through the runtime (cudaGetDriverEntryPointByVersion) rather than by
// linking libcuda: a program linked to the driver does not even start on a machine without one
// (CI), where this one must say "no GPU" like every lesson. Looked up on first use, after the
// context exists, so that no measurement of part A includes it.
struct Driver {
  decltype(&cuGetErrorName) get_error_name;
  decltype(&cuGetErrorString) get_error_string;
  decltype(&cuModuleLoadData) module_load_data;
  decltype(&cuModuleGetFunction) module_get_function;
  decltype(&cuModuleUnload) module_unload;
  decltype(&cuModuleGetLoadingMode) module_get_loading_mode;
  decltype(&cuLibraryLoadData) library_load_data;
  decltype(&cuLibraryGetKernel) library_get_kernel;
  decltype(&cuLibraryUnload) library_unload;
  decltype(&cuKernelGetFunction) kernel_get_function;
  decltype(&cuLaunchKernel) launch_kernel;
};

const Driver& driver() {
  static const Driver d = [] {
    Driver found{};
    auto get = [](const char* name, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult status{};
      // 12000: every function here has had its current form since CUDA 12.0.
      LAB_CHECK(cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &status));
      if (!p || status != cudaDriverEntryPointSuccess)
        throw std::runtime_error(std::string("the driver has no ") + name + " (driver too old?)");
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
    };
    get("cuGetErrorName", found.get_error_name);
    get("cuGetErrorString", found.get_error_string);
    get("cuModuleLoadData", found.module_load_data);
    get("cuModuleGetFunction", found.module_get_function);
    get("cuModuleUnload", found.module_unload);
    get("cuModuleGetLoadingMode", found.module_get_loading_mode);
    get("cuLibraryLoadData", found.library_load_data);
    get("cuLibraryGetKernel", found.library_get_kernel);
    get("cuLibraryUnload", found.library_unload);
    get("cuKernelGetFunction", found.kernel_get_function);
    get("cuLaunchKernel", found.launch_kernel);
    return found;
  }();
  return d;
}

void cu_check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  driver().get_error_name(r, &name);
  driver().get_error_string(r, &text);
  throw std::runtime_error(std::string(call) + ": " + (name ? name : "?") + " (" +
                           (text ? text : "unknown error") + ")");
}
#define CU_CHECK(call) cu_check((call), #call)

void nvrtc_check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + ": " + nvrtcGetErrorString(r));
}
#define NVRTC_CHECK(call) nvrtc_check((call), #call)

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
// Compiling, the harness's own way (the reference, and the timings of part A).

std::string program_log(nvrtcProgram prog) {
  std::size_t size = 0;
  nvrtcGetProgramLogSize(prog, &size);
  std::string log(size, '\0');
  if (size > 0) nvrtcGetProgramLog(prog, &log[0]);
  return log;
}

// @p lto: LTO-IR for nvJitLink instead of a cubin.
std::vector<char> compile(const exercise::Program& p, const std::string& arch, bool lto = false) {
  nvrtcProgram prog = nullptr;
  NVRTC_CHECK(nvrtcCreateProgram(&prog, p.source.c_str(), "operator.cu", 0, nullptr, nullptr));
  std::vector<std::string> options = p.options;
  options.push_back("--gpu-architecture=" + arch);
  if (lto) options.push_back("-dlto");
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  if (r != NVRTC_SUCCESS) {
    const std::string log = program_log(prog);
    nvrtcDestroyProgram(&prog);
    throw std::runtime_error("NVRTC could not compile the operator for " + arch + " (" +
                             nvrtcGetErrorString(r) + "):\n" + log);
  }
  std::size_t size = 0;
  std::vector<char> out;
  if (lto) {
    NVRTC_CHECK(nvrtcGetLTOIRSize(prog, &size));
    out.resize(size);
    NVRTC_CHECK(nvrtcGetLTOIR(prog, out.data()));
  } else {
    NVRTC_CHECK(nvrtcGetCUBINSize(prog, &size));
    out.resize(size);
    NVRTC_CHECK(nvrtcGetCUBIN(prog, out.data()));
  }
  NVRTC_CHECK(nvrtcDestroyProgram(&prog));
  return out;
}

// LTO-IR -> cubin with nvJitLink (what a library does when it links runtime-compiled code with
// code it ships as LTO-IR).
std::vector<char> jit_link(const std::vector<char>& ltoir, const std::string& arch) {
  const std::string arch_option = "-arch=" + arch;
  const char* options[] = {arch_option.c_str(), "-lto"};
  nvJitLinkHandle h = nullptr;
  if (nvJitLinkCreate(&h, 2, options) != NVJITLINK_SUCCESS)
    throw std::runtime_error("nvJitLinkCreate failed for " + arch_option);
  auto fail = [&](const char* call) {
    std::size_t size = 0;
    nvJitLinkGetErrorLogSize(h, &size);
    std::string log(size, '\0');
    if (size > 0) nvJitLinkGetErrorLog(h, &log[0]);
    nvJitLinkDestroy(&h);
    throw std::runtime_error(std::string(call) + " failed:\n" + log);
  };
  if (nvJitLinkAddData(h, NVJITLINK_INPUT_LTOIR, ltoir.data(), ltoir.size(), "operator") !=
      NVJITLINK_SUCCESS)
    fail("nvJitLinkAddData");
  if (nvJitLinkComplete(h) != NVJITLINK_SUCCESS) fail("nvJitLinkComplete");
  std::size_t size = 0;
  if (nvJitLinkGetLinkedCubinSize(h, &size) != NVJITLINK_SUCCESS)
    fail("nvJitLinkGetLinkedCubinSize");
  std::vector<char> cubin(size);
  if (nvJitLinkGetLinkedCubin(h, cubin.data()) != NVJITLINK_SUCCESS)
    fail("nvJitLinkGetLinkedCubin");
  nvJitLinkDestroy(&h);
  return cubin;
}

// This GPU's architecture as NVRTC names it ("sm_90"), checked against what NVRTC can target.
std::string device_arch() {
  const lab::DeviceInfo& d = lab::device_info();
  const int cc = d.cc_major * 10 + d.cc_minor;
  int count = 0;
  NVRTC_CHECK(nvrtcGetNumSupportedArchs(&count));
  std::vector<int> archs(count);
  NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
  if (std::find(archs.begin(), archs.end(), cc) == archs.end())
    throw std::runtime_error("this NVRTC cannot compile for this GPU (compute capability " +
                             std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) +
                             "): use the toolkit that supports it");
  return "sm_" + std::to_string(cc);
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
// driver API with an intermediate that the caller provides or that it keeps.
class Prebuilt {
 public:
  Prebuilt(const exercise::Program& p, const std::string& arch) {
    const std::vector<char> cubin = compile(p, arch);
    CU_CHECK(driver().module_load_data(&module_, cubin.data()));
    CU_CHECK(driver().module_get_function(&map_, module_, "map"));
    CU_CHECK(driver().module_get_function(&smooth_, module_, "smooth"));
  }
  ~Prebuilt() {
    if (module_) driver().module_unload(module_);
  }
  Prebuilt(const Prebuilt&) = delete;
  Prebuilt& operator=(const Prebuilt&) = delete;

  // out = smooth(map(x)) with @p t (n floats) as the intermediate.
  void launch(const float* x, float* t, float* out, int n, cudaStream_t s) const {
    const float* t_in = t;
    void* map_args[] = {&x, &t, &n};
    void* smooth_args[] = {&t_in, &out, &n};
    const unsigned blocks = static_cast<unsigned>(blocks_for(n));
    const Driver& d = driver();
    CU_CHECK(d.launch_kernel(map_, blocks, 1, 1, exercise::kBlockThreads, 1, 1, 0, s, map_args,
                             nullptr));
    CU_CHECK(d.launch_kernel(smooth_, blocks, 1, 1, exercise::kBlockThreads, 1, 1, 0, s,
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
// Comparing on the device, bit for bit (n up to 2^26: copying both to the host would cost more
// than the calls being checked), with lab::count_changed.

// The values of a device array, as lab::count_changed expects them: compares two arrays.
struct ValuesOf {
  const float* p;
  __host__ __device__ float operator()(std::uint64_t i) const { return p[i]; }
};

// An x as lab::fill_random(x, n, seed, s, -2, 2) wrote it, regenerated on the device.
struct InputX {
  std::uint64_t seed;
  __host__ __device__ float operator()(std::uint64_t i) const {
    return lab::random_input(seed, i, -2.0f, 2.0f);
  }
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

// An input x, an output with a 2 MiB guard zone after it, and the reference's output.
struct Buffers {
  std::size_t n;
  lab::DeviceBuffer<float> x, want;
  lab::GuardedBuffer<float> out;
  explicit Buffers(std::size_t n_) : n(n_), x(n_), want(n_), out(n_, "out") {}
  // New inputs from @p seed; the output poisoned, its guard zone armed.
  void fresh(std::uint64_t seed, cudaStream_t s) {
    lab::fill_random(x.data(), n, seed, s, -2.0f, 2.0f);
    out.poison(s);
    out.arm(s);
  }
};

// Whether @p a and @p b give different bits on the same fresh inputs (else a test meant to tell
// them apart shows nothing).
bool differ(Prebuilt& a, Prebuilt& b, std::uint64_t seed, cudaStream_t s) {
  constexpr int kN = 4096;
  Buffers t(kN);
  t.fresh(seed, s);
  a.launch(t.x.data(), t.want.data(), kN, s);
  b.launch(t.x.data(), t.out.data(), kN, s);
  return lab::count_changed(t.out.data(), kN, ValuesOf{t.want.data()}, s).count > 0;
}

// ---------------------------------------------------------------------------------------------
// Child processes: this program run again with kChildFlag. A child writes its readings as lines
// "@ name value" to a pipe of their own, file descriptor kReadingsFd, not to its output: the
// exercise runs in the child too and may print, and a line it printed (or a line it left
// unfinished, onto which the harness's next one would have been glued) must not read as the
// harness's. The exercise cannot write to that descriptor: it may print only to the standard
// streams, and it cannot open /proc/self/fd/3 (the process is non-dumpable, see main).

struct Child {
  bool ok = false;                            // exited 0
  std::string failure;                        // why not, in words
  std::map<std::string, std::string> values;  // the "@ name value" lines
  std::string output;                         // everything it printed (the tail, for messages)

  double number(const std::string& name) const {
    const auto it = values.find(name);
    if (it == values.end())
      throw std::runtime_error("a child process did not report '" + name + "'");
    return std::strtod(it->second.c_str(), nullptr);
  }
  std::string text(const std::string& name) const {
    const auto it = values.find(name);
    return it == values.end() ? "" : it->second;
  }
  // The failure and the last lines of the output, for a message.
  std::string why() const {
    std::string tail = output.size() > 600 ? "..." + output.substr(output.size() - 600) : output;
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    return failure + (tail.empty() ? "" : "; its output ends with: " + tail);
  }
};

std::string self_path;  // this program, as the parent runs it again

constexpr int kReadingsFd = 3;  // a child's readings (see above)

// Reads @p fd to its end (the writer has exited).
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t got = read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return out;
    out.append(buf, static_cast<std::size_t>(got));
  }
}

// Runs this program with kChildFlag and @p args, @p env_set added to (or replacing in) the
// environment; kills it after kChildTimeoutS. What it prints goes to a pipe, not to this
// program's output.
Child run_child(const std::vector<std::string>& args,
                const std::vector<std::pair<std::string, std::string>>& env_set = {}) {
  std::vector<std::string> argv_s = {self_path, kChildFlag};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  // The checker's tracer (CUDA_INJECTION64_PATH with LAB_TRACE_FILE) follows this process only:
  // a child would load it too, and open (so empty) the parent's trace file.
  std::vector<std::string> drop;
  for (const auto& [k, v] : env_set) drop.push_back(k + "=");
  if (std::getenv("LAB_TRACE_FILE"))
    drop.insert(drop.end(), {"LAB_TRACE_FILE=", "CUDA_INJECTION64_PATH="});
  std::vector<std::string> env_s;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool dropped = false;
    for (const std::string& prefix : drop) dropped = dropped || entry.rfind(prefix, 0) == 0;
    if (!dropped) env_s.push_back(entry);
  }
  for (const auto& [k, v] : env_set) env_s.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (std::string& a : argv_s) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  for (std::string& e : env_s) envp.push_back(&e[0]);
  envp.push_back(nullptr);

  int fds[2], readings[2];  // its output; its readings (kReadingsFd in the child)
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (pipe(readings) != 0) {
    const int e = errno;
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(e));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  posix_spawn_file_actions_addclose(&actions, readings[0]);
  posix_spawn_file_actions_adddup2(&actions, readings[1], kReadingsFd);
  if (readings[1] != kReadingsFd) posix_spawn_file_actions_addclose(&actions, readings[1]);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, self_path.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  close(readings[1]);
  if (spawned != 0) {
    close(fds[0]);
    close(readings[0]);
    throw std::runtime_error("cannot run " + self_path + " again: " + std::strerror(spawned));
  }

  Child c;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(kChildTimeoutS);
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const double left =
        std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min(left, 1000.0)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t got = read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end of output: the child is exiting
    c.output.append(buf, static_cast<std::size_t>(got));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string said = read_all(readings[0]);  // a few lines: the pipe held them all
  close(readings[0]);
  if (timed_out)
    c.failure =
        "the process did not finish within " + lab::fixed(kChildTimeoutS, 0) + " s (killed)";
  else if (WIFSIGNALED(status))
    c.failure = "the process was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                strsignal(WTERMSIG(status)) + ")";
  else if (WEXITSTATUS(status) != 0)
    c.failure = "the process exited with code " + std::to_string(WEXITSTATUS(status));

  std::size_t start = 0;
  while (start < said.size()) {
    std::size_t end = said.find('\n', start);
    if (end == std::string::npos) end = said.size();
    const std::string line = said.substr(start, end - start);
    if (line.rfind("@ ", 0) == 0) {
      const std::size_t space = line.find(' ', 2);
      if (space != std::string::npos) c.values[line.substr(2, space - 2)] = line.substr(space + 1);
    }
    start = end + 1;
  }
  if (!c.text("error").empty())
    c.failure = (c.failure.empty() ? "" : c.failure + ": ") + c.text("error");
  c.ok = c.failure.empty();
  return c;
}

// The child's readings pipe (kReadingsFd), as a stream.
std::FILE* readings() {
  static std::FILE* f = fdopen(kReadingsFd, "w");
  if (!f) throw std::runtime_error("no readings pipe (the child flag is the harness's own)");
  return f;
}

void report(const std::string& name, double value) {
  std::fprintf(readings(), "@ %s %.6f\n", name.c_str(), value);
}

// Child: context creation and the first launches, in whatever CUDA_MODULE_LOADING the parent set.
void child_context() {
  lab::HostTimer t;
  LAB_CHECK(cudaFree(nullptr));
  report("context_ms", t.elapsed_ms());
  CUmoduleLoadingMode mode{};
  CU_CHECK(driver().module_get_loading_mode(&mode));
  std::fprintf(readings(), "@ loading_mode %s\n", mode == CU_MODULE_LAZY_LOADING ? "lazy" : "eager");
  for (const char* name : {"first_launch_us", "second_launch_us"}) {
    t.start();
    empty_kernel<<<1, 1>>>();
    LAB_CHECK_LAUNCH();
    LAB_CHECK(cudaDeviceSynchronize());
    report(name, t.elapsed_ms() * 1e3);
  }
}

// Child: compiling and loading the operator, each step timed on its own.
void child_compile(const std::string& arch) {
  LAB_CHECK(cudaFree(nullptr));  // the context first: not part of what is timed here
  const Driver& d = driver();
  const exercise::Program p = programs()[0].program;
  lab::HostTimer t;
  const std::vector<char> cubin = compile(p, arch);
  report("nvrtc_cold_ms", t.elapsed_ms());
  t.start();
  compile(p, arch);
  report("nvrtc_warm_ms", t.elapsed_ms());
  t.start();
  const std::vector<char> ltoir = compile(p, arch, true);
  report("nvrtc_lto_ms", t.elapsed_ms());
  t.start();
  const std::vector<char> linked = jit_link(ltoir, arch);
  report("nvjitlink_ms", t.elapsed_ms());

  lab::DeviceBuffer<float> x(kFirstCallN), y(kFirstCallN);
  int n = kFirstCallN;
  const float* xp = x.data();
  float* yp = y.data();
  void* args[] = {&xp, &yp, &n};
  auto launch_and_wait = [&](CUfunction f) {
    CU_CHECK(d.launch_kernel(f, static_cast<unsigned>(blocks_for(n)), 1, 1, exercise::kBlockThreads,
                             1, 1, 0, nullptr, args, nullptr));
    LAB_CHECK(cudaDeviceSynchronize());
  };
  LAB_CHECK(cudaDeviceSynchronize());

  CUmodule module = nullptr;
  t.start();
  CU_CHECK(d.module_load_data(&module, cubin.data()));
  report("module_load_us", t.elapsed_ms() * 1e3);
  CUfunction f = nullptr;
  t.start();
  CU_CHECK(d.module_get_function(&f, module, "map"));
  launch_and_wait(f);
  report("module_first_launch_us", t.elapsed_ms() * 1e3);
  t.start();
  launch_and_wait(f);
  report("module_second_launch_us", t.elapsed_ms() * 1e3);
  CU_CHECK(d.module_unload(module));

  CUlibrary library = nullptr;
  t.start();
  CU_CHECK(d.library_load_data(&library, linked.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  report("library_load_us", t.elapsed_ms() * 1e3);
  CUkernel kernel = nullptr;
  t.start();
  CU_CHECK(d.library_get_kernel(&kernel, library, "map"));
  CU_CHECK(d.kernel_get_function(&f, kernel));
  launch_and_wait(f);
  report("library_first_launch_us", t.elapsed_ms() * 1e3);
  CU_CHECK(d.library_unload(library));
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
  report("cublas_create_ms", t.elapsed_ms());
  const float one = 1.0f, zero = 0.0f;
  for (const char* name : {"cublas_first_sgemm_ms", "cublas_second_sgemm_ms"}) {
    t.start();
    LAB_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, kN, kN, kN, &one, a.data(), kN,
                             b.data(), kN, &zero, c.data(), kN));
    LAB_CHECK(cudaDeviceSynchronize());
    report(name, t.elapsed_ms());
  }
  t.start();
  LAB_CUBLAS_CHECK(cublasDestroy(handle));
  report("cublas_destroy_ms", t.elapsed_ms());
}

// A cache test's program: the operator with the drawn @p expression, compiled with
// -DALPHA=@p alpha (see cache_tests_for).
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
  Buffers b(kFirstCallN);
  b.fresh(seed, stream);
  empty_kernel<<<1, 1, 0, stream>>>();  // the harness's own module is loaded before the timing
  LAB_CHECK_LAUNCH();
  LAB_CHECK(cudaStreamSynchronize(stream));
  lab::HostTimer t;
  Prebuilt compiled(p, arch);
  compiled.launch(b.x.data(), b.out.data(), kFirstCallN, stream);
  LAB_CHECK(cudaStreamSynchronize(stream));
  report("first_call_ms", t.elapsed_ms());
}

// Child: the exercise's first call in a new process on cache folder @p dir, then a check of its
// result against the reference (compiled only after the timed call).
void child_first_call(const std::string& dir, const std::string& arch,
                      const std::string& expression, std::uint64_t seed, const std::string& alpha) {
  LAB_CHECK(cudaFree(nullptr));
  const exercise::Program p = cache_test_program(expression, alpha);
  lab::Stream stream;
  Buffers b(kFirstCallN);
  b.fresh(seed, stream);
  lab::DeviceBuffer<float> x_copy(kFirstCallN);  // the reference's input, out of the call's reach
  LAB_CHECK(
      cudaMemcpyAsync(x_copy.data(), b.x.data(), b.x.bytes(), cudaMemcpyDeviceToDevice, stream));
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
  ref.launch(x_copy.data(), b.want.data(), kFirstCallN, stream);
  const std::string wrong = compare(b.out, b.want.data(), stream);
  report("first_call_ms", first_call_ms);
  std::fprintf(readings(), "@ correct %d\n", wrong.empty() ? 1 : 0);
  if (!wrong.empty()) std::fprintf(readings(), "@ wrong %s\n", wrong.c_str());
}

int child_main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 2, argv + argc);
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
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    try {
      std::fprintf(readings(), "@ error %s\n", what.c_str());
    } catch (const std::exception&) {  // no readings pipe: the error was that
    }
    std::fflush(nullptr);
    return 3;
  }
  std::fflush(nullptr);
  return 0;
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
  auto run_role = [&](const std::vector<std::string>& args,
                      const std::vector<std::pair<std::string, std::string>>& env,
                      const std::vector<Row>& rows, const std::string& what) {
    std::map<std::string, std::vector<double>> values;
    std::string mode;
    for (int i = 0; i < processes; ++i) {
      const Child c = run_child(args, env);
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

// The cache tests' two programs: one expression, drawn for this run, with two ALPHAs (the same
// source with other options, as programs 0 and 1 of programs() are).
struct CacheTests {
  std::string arch;
  std::string expression;
  std::string alpha[2];
};

// Draws the cache tests' programs from entropy of the moment, once no exercise code is left in
// this process: the expression nests five steps, each one of ten forms with constants of its own
// (10^5 shapes), so no code written or compiled before the draw can answer them. Only a process
// of the test that compiled the program can leave something for the next one, in its folder (see
// files_outside). Every value stays finite and small for x in [-1, 1).
CacheTests cache_tests_for(const std::string& arch) {
  std::mt19937_64 rng(std::random_device{}());
  auto constant = [&](double low, double high) {
    return lab::text("%.4ff", low + (high - low) * std::uniform_real_distribution<>(0, 1)(rng));
  };
  CacheTests t{arch, "v", {}};
  for (int step = 0; step < 5; ++step) {
    const std::string v = "(" + t.expression + ")";
    switch (rng() % 10) {
      case 0: t.expression = v + " * " + constant(0.5, 1.5) + " + " + constant(-0.5, 0.5); break;
      case 1: t.expression = "sinf(" + constant(0.5, 2) + " * " + v + ")"; break;
      case 2: t.expression = "tanhf(ALPHA * " + v + ")"; break;
      case 3: t.expression = "expf(-" + constant(0.1, 1) + " * " + v + ")"; break;
      case 4: t.expression = "fmaxf(" + v + ", " + constant(-0.5, 0.5) + ")"; break;
      case 5: t.expression = "sqrtf(fabsf" + v + " + " + constant(0.1, 1) + ")"; break;
      case 6: t.expression = "cosf(" + v + " + " + constant(-1, 1) + ")"; break;
      case 7: t.expression = v + " * ALPHA - " + constant(0, 1); break;
      case 8: t.expression = "rsqrtf(fabsf" + v + " + " + constant(0.1, 1) + ")"; break;
      default: t.expression = "fminf(" + v + " * ALPHA, " + constant(0, 1) + ")"; break;
    }
  }
  t.expression = "ALPHA * " + t.expression + " + v";  // ALPHA always counts
  for (int k = 0; k < 2; ++k)  // in [0.25, 0.75) and [1.25, 1.75): never the same
    t.alpha[k] = constant(k + 0.25, k + 0.75);
  return t;
}

// Every cache folder handed to a new process: the one place a cache test's files may be written
// (files_outside leaves them out).
std::set<fs::path> handed_out;

// A new process's first call of program @p program on cache folder @p dir (child_first_call).
Child first_call(const fs::path& dir, const CacheTests& t, int program, std::uint64_t seed) {
  handed_out.insert(dir);
  return run_child({"first-call", dir.string(), t.arch, t.expression, std::to_string(seed),
                    t.alpha[program]});
}

// The harness's own first call of program 0 in a new process (child_compile_first_call).
Child compile_first_call(const CacheTests& t, std::uint64_t seed) {
  return run_child({"compile-first-call", t.arch, t.expression, std::to_string(seed), t.alpha[0]});
}

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

// Damages every file of a copy of @p filled, runs a first call on it, and checks that the call
// was right and that no damaged file was left as it was (it was detected and replaced, or
// removed).
void corruption_test(lab::Lesson& l, const fs::path& filled, const fs::path& dir,
                     const CacheTests& t, std::uint64_t seed, const std::string& what,
                     const std::function<std::string(const std::string&)>& damage) {
  fs::remove_all(dir);
  fs::copy(filled, dir, fs::copy_options::recursive);
  std::map<fs::path, std::string> damaged;
  for (const auto& [path, bytes] : files_in(dir)) {
    damaged[path] = damage(bytes);
    write_bytes(path, damaged[path]);
  }
  const std::string name = "new process, cache files " + what;
  const Child c = first_call(dir, t, 0, seed);
  if (!c.ok) {
    l.check("exercise", name, false,
            c.why() + ": a damaged cache entry must be detected, not used");
    return;
  }
  if (c.text("correct") != "1") {
    l.check("exercise", name, false, c.text("wrong") + ": a damaged cache entry was used");
    return;
  }
  for (const auto& [path, bytes] : damaged) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    if (read_bytes(path) == bytes) {
      l.check("exercise", name, false,
              "the right result, but the damaged file " + path.filename().string() +
                  " is still there as the harness left it: detect the damage and write the "
                  "entry again");
      return;
    }
  }
  l.check("exercise", name, true, "");
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

// Files this process held before any exercise code ran (what the checker handed it: its output
// and its record), by device and inode: they change while it runs, by the harness's own hand.
std::set<std::pair<dev_t, ino_t>> harness_files;

void note_harness_files() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/self/fd", ec)) {
    struct stat st {};
    if (stat(e.path().c_str(), &st) == 0) harness_files.insert({st.st_dev, st.st_ino});
  }
}

// Every regular file of this program's user where a graded run can write (the work folder, and
// /tmp, /dev/shm, /var/tmp and /run/lock, which every machine lets it write), with its size and
// time of change. Left out: the folders handed to new processes, the checker's trace file, the
// harness's own files and the CUDA driver's compute cache (the driver writes it in every
// process). The damage tests reach only the handed-out folders: a cache kept anywhere else (next
// to them included) would escape them.
using FileStamps = std::map<fs::path, std::pair<off_t, long long>>;
FileStamps files_outside() {
  FileStamps out;
  const char* trace = std::getenv("LAB_TRACE_FILE");
  const char* home = std::getenv("HOME");
  const char* driver_cache = std::getenv("CUDA_CACHE_PATH");
  std::error_code canonical;
  const fs::path driver = fs::weakly_canonical(
      driver_cache ? fs::path(driver_cache)
      : home       ? fs::path(home) / ".nv" / "ComputeCache"
                   : fs::path(),
      canonical);
  for (const fs::path& top : {fs::current_path(), fs::path("/tmp"), fs::path("/dev/shm"),
                             fs::path("/var/tmp"), fs::path("/run/lock")}) {
    std::error_code ec;
    fs::recursive_directory_iterator it(top, fs::directory_options::skip_permission_denied, ec);
    for (int seen = 0; !ec && it != fs::recursive_directory_iterator(); it.increment(ec), ++seen) {
      if (seen == 200000) {  // more than any cache needs: a list that cannot end is a failure
        out[top / "(more than 200000 entries: not all were read)"] = {-1, 0};
        break;
      }
      const fs::path& p = it->path();
      if (handed_out.count(p) || p == driver) {
        it.disable_recursion_pending();
        continue;
      }
      struct stat st {};
      if (lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) continue;
      if ((trace && p == trace) || harness_files.count({st.st_dev, st.st_ino})) continue;
      out[p] = {st.st_size, st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec};
    }
  }
  return out;
}

// The cache tests' processes wrote nothing outside their cache folders.
void check_writes_outside(lab::Lesson& l, const FileStamps& before, const FileStamps& after) {
  std::string written;
  for (const auto& [path, stamp] : after) {
    const auto it = before.find(path);
    const bool unread = stamp.first < 0;  // a listing cut short
    if ((unread || it == before.end() || it->second != stamp) && written.size() < 400)
      written += (written.empty() ? "" : ", ") + path.string();
  }
  l.check("exercise", "new processes wrote only in their cache folder", written.empty(),
          "written outside the cache folder it was given: " + written +
              " (keep the cache in that folder: the harness tests what it finds there)");
}

void cache_tests(lab::Lesson& l, const fs::path& root, const std::string& arch, int processes) {
  std::uint64_t seed = l.seed() * 64 + 1000;
  const CacheTests t = cache_tests_for(arch);
  l.note("the cache tests' programs, drawn for this run: f(v) = " + t.expression +
         " with -DALPHA=" + t.alpha[0] + " and with -DALPHA=" + t.alpha[1]);
  // The rule's ratio: the harness's own first call, which compiles, over the exercise's first
  // call on a folder an earlier process filled. Not over the exercise's own empty-folder call:
  // that time is the student's to make as long as they like (a wait where the folder is empty),
  // and only the filled side is theirs to make short.
  std::vector<double> compiled, cold, warm;
  // Each round in a row (the harness compiling, the exercise on an empty folder, then on the
  // folder that call filled): paired in time, so a machine that slows for a while slows both
  // sides of the ratio.
  for (int k = 0; k < processes; ++k) {
    const Child ref = compile_first_call(t, ++seed);
    if (!ref.ok)  // no code of the student's runs there: the machine's or the course's problem
      throw std::runtime_error("the harness's own first call in a new process failed: " + ref.why());
    compiled.push_back(ref.number("first_call_ms"));
    for (const bool filled : {false, true}) {
      const fs::path dir = root / ("first-call-" + std::to_string(k));
      if (!filled) fs::create_directories(dir);
      const std::string name =
          std::string("new process, ") +
          (filled ? "cache folder filled by an earlier one" : "empty cache folder") + " (" +
          std::to_string(k + 1) + ")";
      const Child c = first_call(dir, t, 0, ++seed);
      if (!c.ok) {
        l.check("exercise", name, false, c.why());
        continue;
      }
      l.check("exercise", name, c.text("correct") == "1", c.text("wrong"));
      (filled ? warm : cold).push_back(c.number("first_call_ms"));
    }
  }
  if (warm.empty()) {  // every filled-folder child failed: checked above
    l.metric("first_call_speedup", 0, 0, 0, "x");
    return;
  }
  const lab::Stats a = lab::summarize(compiled), b = lab::summarize(warm);
  l.metric("first_call_compiled_ms", a.median, a.min, a.max, " ms");
  std::string empty_folder = "-";
  if (!cold.empty()) {
    const lab::Stats c = lab::summarize(cold);
    l.metric("first_call_cold_ms", c.median, c.min, c.max, " ms");
    empty_folder = lab::fixed(c.median, 2);
  }
  l.metric("first_call_filled_ms", b.median, b.min, b.max, " ms");
  l.note("first call in a new process, n = " + std::to_string(kFirstCallN) + ", median of " +
         std::to_string(processes) + ": compiled by the harness " + lab::fixed(a.median, 2) +
         " ms, yours on an empty cache folder " + empty_folder + " ms, on the filled folder " +
         lab::fixed(b.median, 2) + " ms: " + lab::fixed(a.median / b.median, 1) +
         "x faster than compiling (the bar: disk_cache in check.toml)");
  // A speed-up earns the rule only from a cache in the folder: that is what the damage tests
  // below reach. With no file there it reads 0.
  const fs::path filled = root / "first-call-0";
  if (files_in(filled).empty()) {
    l.metric("first_call_speedup", 0, 0, 0, "x");
    l.note(
        "the cache folder holds no file after a first call: no disk cache there, so the "
        "speed-up counts as 0, and the tests of damaged entries were skipped");
    return;
  }
  const lab::MedianRatio r = lab::ratio_of_medians(a, b);  // lab::speedup's interval, for Stats
  l.metric("first_call_speedup", r.value, r.low, r.high, "x");
  corruption_test(l, filled, root / "truncated", t, ++seed, "cut to half their size",
                  [](const std::string& bytes) { return bytes.substr(0, bytes.size() / 2); });
  corruption_test(l, filled, root / "flipped", t, ++seed, "with 7 bits flipped",
                  [](const std::string& bytes) {
                    std::string out = bytes;
                    for (int k = 1; k <= 7 && !out.empty(); ++k) out[out.size() * k / 8] ^= 0x10;
                    return out;
                  });

  // A stale entry: a whole, well-formed entry for program 0, under the name program 1's entry has.
  const fs::path stale = root / "stale";
  fs::create_directories(stale);
  const Child setup = first_call(stale, t, 1, ++seed);
  l.check("exercise", "new process, program 1, empty cache folder",
          setup.ok && setup.text("correct") == "1", setup.ok ? setup.text("wrong") : setup.why());
  if (!setup.ok) return;
  const fs::path from = largest_file(filled), to = largest_file(stale);
  if (from.empty() || to.empty() || fs::relative(from, filled) == fs::relative(to, stale)) {
    l.note(
        "the stale-entry test was skipped: the cache keeps both programs in a file of the same "
        "name, so there is no other entry's file to swap in");
    return;
  }
  const std::string planted = read_bytes(from);
  write_bytes(to, planted);
  const std::string name = "new process, program 1's cache file replaced by program 0's";
  const Child c = first_call(stale, t, 1, ++seed);
  if (!c.ok)
    l.check("exercise", name, false, c.why());
  else if (c.text("correct") != "1")
    l.check("exercise", name, false,
            c.text("wrong") +
                ": the entry was another program's, and was used: store the key "
                "in the entry and compare it");
  else {
    l.check("exercise", name, read_bytes(to) != planted,
            "the right result, but the other program's entry still sits under this one's name: "
            "write the entry again when its key does not match");
  }
}

// ---------------------------------------------------------------------------------------------
// The variants of the table.

// One call of a variant, out = smooth(f(x)) on n floats, and what the variants call it with
// (made in run(), once the GPU's architecture is known).
struct Call {
  const float* x = nullptr;
  float* out = nullptr;
  int n = 0;
  Prebuilt* prebuilt = nullptr;                // program 0, compiled once
  float* t = nullptr;                          // prebuilt's intermediate, at least n floats
  cudaMemPool_t releasing = nullptr;           // pool_no_threshold's: release threshold 0
  exercise::Operator* op = nullptr;            // yours
  const exercise::Program* program = nullptr;  // what yours is asked to run
};

void add_variants(lab::Variants<Call>& variants) {
  // Host-paced (no lead-in): whatever a call does on the host is inside its time. 20 samples and
  // 30 ms, the median to 1%, within 6 s.
  const lab::BenchmarkOptions o = lab::measure_until(20, 30.0, 0.01, 6.0);
  const auto work = [](const Call& c) { return lab::Work{16.0 * c.n, 0}; };  // x, t twice, out
  const std::string host_work =
      "a captured call hides the host work this lesson measures (and cannot hold cudaMalloc, a "
      "compile or a synchronization)";
  variants.add({"prebuilt", lab::Role::Reference,
                "the kernels compiled once, launched from their module, intermediate preallocated",
                [](Call& c, cudaStream_t s) { c.prebuilt->launch(c.x, c.t, c.out, c.n, s); }, work,
                0, lab::Pacing::Host, o});
  variants.add({"malloc_each_call", lab::Role::Baseline,
                "prebuilt kernels, cudaMalloc + cudaFree of the intermediate in every call",
                [](Call& c, cudaStream_t s) {
                  float* t = nullptr;
                  LAB_CHECK(cudaMalloc(&t, sizeof(float) * static_cast<std::size_t>(c.n)));
                  c.prebuilt->launch(c.x, t, c.out, c.n, s);
                  LAB_CHECK(cudaFree(t));
                },
                work, 0, lab::Pacing::Host, o, "", host_work});
  variants.add({"pool_no_threshold", lab::Role::Baseline,
                "prebuilt kernels, intermediate from a pool with release threshold 0",
                [](Call& c, cudaStream_t s) {
                  float* t = nullptr;
                  LAB_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&t),
                                                    sizeof(float) * static_cast<std::size_t>(c.n),
                                                    c.releasing, s));
                  c.prebuilt->launch(c.x, t, c.out, c.n, s);
                  LAB_CHECK(cudaFreeAsync(t, s));
                },
                work, 0, lab::Pacing::Host, o, "", host_work});
  variants.add({"exercise", lab::Role::Exercise, "your Operator::apply (exercise.cu)",
                [](Call& c, cudaStream_t s) { c.op->apply(*c.program, c.x, c.out, c.n, s); }, work,
                0, lab::Pacing::Host, o, "", host_work});
}

// Validates one call of @p v on @p n fresh inputs against @p ref, bit for bit: on @p big at the
// timing size, else on buffers of its own (so that the guard zone starts right after out[n - 1]).
void validate(lab::Lesson& l, const lab::Variant<Call>& v, const std::string& case_name, Call c,
              int n, Buffers& big, std::uint64_t seed, Prebuilt& ref) {
  cudaStream_t s = l.stream();
  std::optional<Buffers> own;
  Buffers& b = static_cast<std::size_t>(n) == big.n ? big : own.emplace(n);
  b.fresh(seed, s);
  ref.launch(b.x.data(), b.want.data(), n, s);  // first: the call cannot change its inputs
  LAB_CHECK(cudaStreamSynchronize(s));
  c.x = b.x.data();
  c.out = b.out.data();
  c.n = n;
  v.launch(c, s);
  LAB_CHECK(cudaStreamSynchronize(s));
  LAB_CHECK(cudaGetLastError());
  const std::string wrong = compare(b.out, b.want.data(), s);
  l.check(v.name, case_name, wrong.empty(), wrong);
}

}  // namespace

int main(int argc, char** argv) {
  lab::close_process_memory();  // before the children's exercise code, which runs without a Lesson
  char exe[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  self_path = len > 0 ? std::string(exe, static_cast<std::size_t>(len)) : std::string(argv[0]);
  if (argc >= 2 && std::strcmp(argv[1], kChildFlag) == 0) return child_main(argc, argv);
  note_harness_files();

  lab::Lesson lesson("11-one-time-costs",
                     "One-time costs: context, module loading, runtime compilation, allocation");
  lab::Variants<Call> variants(lesson);
  add_variants(variants);
  const lab::Variant<Call>& mine = variants["exercise"];

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
                "to look at; 0: remove them at the end");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    cudaStream_t s = l.stream();
    const long long n_ll = n_opt > 0 ? n_opt : (l.quick() ? 1 << 20 : 1 << 26);
    const long long processes_ll = processes_opt > 0 ? processes_opt : (l.quick() ? 2 : 5);
    if (n_ll > (1ll << 28) || processes_ll > 50)
      throw std::invalid_argument("--n at most 2^28, --processes at most 50");
    const int N = static_cast<int>(n_ll), P = static_cast<int>(processes_ll);
    const std::string arch = device_arch();

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
    } cleanup{root, keep_opt != 0};

    const std::vector<NamedProgram> progs = programs();
    std::vector<std::unique_ptr<Prebuilt>> refs;
    for (const NamedProgram& p : progs) refs.push_back(std::make_unique<Prebuilt>(p.program, arch));
    Prebuilt& ref0 = *refs[0];

    Buffers b(static_cast<std::size_t>(N));
    lab::DeviceBuffer<float> t_prebuilt(static_cast<std::size_t>(N));
    const Pool releasing(0);
    std::unique_ptr<exercise::Operator> op;
    fs::create_directories(root / "main");
    if (l.selected("exercise"))
      op = std::make_unique<exercise::Operator>((root / "main").string(), arch);
    // What the variants run with, on program 0 (x, out and n: set for each call).
    const exercise::Program* p0 = &progs[0].program;
    const Call call{nullptr, nullptr, 0, &ref0, t_prebuilt.data(), releasing.get(), op.get(), p0};

    // 1. Validation in this process: several programs (two differing only in their options),
    //    odd sizes, fresh inputs, outputs poisoned; a second Operator on the same folder (its
    //    memory is empty, the disk is not); and two architectures on one folder.
    if (!l.profiling()) {
      std::uint64_t seed = l.seed() * 64 + 1;
      // The test programs must differ, or keying without the options would go unnoticed.
      if (!differ(*refs[0], *refs[1], seed, s))
        throw std::logic_error(
            "programs 0 and 1 give the same bits: the options test shows nothing");

      for (const auto* v : variants.selected()) {
        if (v->role == lab::Role::Exercise) continue;
        for (const int n : {1000, 4097, 1})
          validate(l, *v, progs[0].name + ", n=" + std::to_string(n), call, n, b, ++seed, ref0);
      }
      if (op) {
        struct Case {
          int program, n;
        };
        const Case cases[] = {{0, 1000},  {1, 1000}, {2, 4097}, {0, 1},
                              {1, 65537}, {2, 257},  {0, N}};
        auto run_cases = [&](exercise::Operator& o, const std::string& label) {
          for (const Case& k : cases) {
            if (k.n > N) continue;
            Call c = call;
            c.op = &o;
            c.program = &progs[k.program].program;
            validate(l, mine, progs[k.program].name + ", n=" + std::to_string(k.n) + label, c, k.n,
                     b, ++seed, *refs[k.program]);
          }
        };
        run_cases(*op, "");
        {
          exercise::Operator second((root / "main").string(), arch);
          run_cases(second, ", a second Operator on the same folder");
          LAB_CHECK(cudaDeviceSynchronize());
        }

        const std::string other = second_arch(arch);
        if (other.empty()) {
          l.note("this GPU runs the cubins of one target only: the architecture test was skipped");
        } else {
          const NamedProgram ap = arch_program();
          Prebuilt ref_a(ap.program, arch), ref_b(ap.program, other);
          if (!differ(ref_a, ref_b, ++seed, s))
            throw std::logic_error(arch + " and " + other +
                                   " give the same bits: the test shows nothing");
          const fs::path dir = root / "two-targets";
          fs::create_directories(dir);
          for (const auto& [target, ref] :
               {std::pair<std::string, Prebuilt*>{arch, &ref_a}, {other, &ref_b}}) {
            exercise::Operator o(dir.string(), target);
            Call c = call;
            c.op = &o;
            c.program = &ap.program;
            validate(l, mine, ap.name + " for " + target + " (one cache folder for both targets)",
                     c, 4097, b, ++seed, *ref);
            LAB_CHECK(cudaDeviceSynchronize());
          }
        }
      }
    }

    // 2. Timing: one call each, host-paced. The exercise's timed calls get new inputs and a
    //    poisoned output each; some are checked.
    l.size("n = " + std::to_string(N) + " floats per call (" + lab::fixed(N * 4.0 / 1048576, 0) +
           " MiB each for x, the intermediate and out); program: " + progs[0].name);
    b.fresh(l.seed() * 64 + 500, s);
    Call timed = call;
    timed.x = b.x.data();
    timed.out = b.out.data();
    timed.n = N;
    lab::DeviceBuffer<float> x_check(b.n);
    std::uint64_t timed_seed = 0;
    lab::TimedCallChecks checks;
    checks.prepare = [&](cudaStream_t st, std::uint64_t call_seed) {
      timed_seed = call_seed;
      b.fresh(timed_seed, st);
    };
    checks.verify = [&](cudaStream_t st, const std::string& case_name, std::uint64_t) {
      // The reference from inputs regenerated from the call's seed, never read back.
      lab::fill_random(x_check.data(), x_check.size(), timed_seed, st, -2.0f, 2.0f);
      ref0.launch(x_check.data(), b.want.data(), N, st);
      const std::string wrong = compare(b.out, b.want.data(), st);
      l.check("exercise", "n=" + std::to_string(N) + " " + case_name, wrong.empty(), wrong);
    };
    variants.measure_all(timed, checks);

    // 3. After timing: new inputs, every variant again; and x must be as the harness wrote it.
    if (!l.profiling()) {
      const std::uint64_t seed = l.seed() * 64 + 900;
      for (const auto* v : variants.selected())
        validate(l, *v, progs[0].name + ", n=" + std::to_string(N) + " after timing", call, N, b,
                 seed, ref0);
      if (l.selected("exercise")) {
        const std::string changed = lab::changed_input("x", b.x.data(), b.n, InputX{seed}, s);
        l.check("exercise", "x unchanged after timing", changed.empty(),
                changed + " (it is read only)");
      }
    }
    if (const lab::Measurement* pre = variants.measurement("prebuilt"))
      for (const auto& v : variants) {
        const lab::Measurement* m = variants.measurement(v.name);
        if (m && m != pre)
          l.note(v.name + " costs " + lab::fixed(lab::speedup(*m, *pre).value, 2) +
                 "x the prebuilt call" +
                 (v.role == lab::Role::Exercise ? " (the checker wants <= 1.15x)" : ""));
      }

    // 4. The disk cache across processes, and damaged entries.
    LAB_CHECK(cudaDeviceSynchronize());
    op.reset();  // this process's Operator is done; children use folders of their own
    LAB_CHECK(cudaDeviceSynchronize());  // nothing it left running may slow the children's calls
    if (!l.profiling() && l.selected("exercise")) {
      const FileStamps before = files_outside();
      cache_tests(l, root, arch, P);
      check_writes_outside(l, before, files_outside());
    }

    // 5. Part A: the one-time costs themselves.
    if (!l.profiling() && one_time_opt != 0) one_time_costs(l, P, arch, b.x.bytes());
  });
}
