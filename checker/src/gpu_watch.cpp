#include "gpu_watch.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace lab {

namespace {

// The few NVML entry points the watch needs, declared here (stable C ABI) so that building the
// checker needs no NVML headers.
using Device = struct NvmlDevice*;
struct ProcessInfo {  // nvmlProcessInfo_t (v2/v3)
  unsigned pid;
  unsigned long long used_memory;
  unsigned gpu_instance, compute_instance;
};
constexpr unsigned long long kSlowdown = 0x8 | 0x20 | 0x40 | 0x80;  // HW, SW thermal, HW thermal,
                                                                     // power brake slowdowns

// "GPU-..." (a UUID) or an index: the first device CUDA_VISIBLE_DEVICES names, which is the
// device a lesson program uses (index 0 when unset; pin_to_one_gpu makes it the only one, and
// CUDA_DEVICE_ORDER=PCI_BUS_ID keeps CUDA's numbering equal to NVML's).
std::string visible_device() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  std::string s = v ? v : "";
  s = s.substr(0, s.find(','));
  return s.empty() ? "0" : s;
}

}  // namespace

void pin_to_one_gpu() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (v && *v == '\0') return;  // no GPU at all, on purpose
  ::setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 1);
  ::setenv("CUDA_VISIBLE_DEVICES", visible_device().c_str(), 1);
}

struct GpuWatch::Nvml {
  void* lib = nullptr;
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*by_index)(unsigned, Device*) = nullptr;
  int (*by_uuid)(const char*, Device*) = nullptr;
  int (*processes)(Device, unsigned*, ProcessInfo*) = nullptr;
  int (*reasons)(Device, unsigned long long*) = nullptr;
  int (*capability)(Device, int*, int*) = nullptr;  // optional (older drivers lack it)
  Device device = nullptr;
  std::string error;

  Nvml() {
    lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      error = "no NVIDIA driver library (libnvidia-ml.so.1)";
      return;
    }
    auto get = [&](const char* name) { return ::dlsym(lib, name); };
    init = reinterpret_cast<int (*)()>(get("nvmlInit_v2"));
    shutdown = reinterpret_cast<int (*)()>(get("nvmlShutdown"));
    by_index = reinterpret_cast<int (*)(unsigned, Device*)>(get("nvmlDeviceGetHandleByIndex_v2"));
    by_uuid = reinterpret_cast<int (*)(const char*, Device*)>(get("nvmlDeviceGetHandleByUUID"));
    processes = reinterpret_cast<int (*)(Device, unsigned*, ProcessInfo*)>(
        get("nvmlDeviceGetComputeRunningProcesses_v3"));
    void* r = get("nvmlDeviceGetCurrentClocksEventReasons");
    reasons = reinterpret_cast<int (*)(Device, unsigned long long*)>(
        r ? r : get("nvmlDeviceGetCurrentClocksThrottleReasons"));
    capability = reinterpret_cast<int (*)(Device, int*, int*)>(get("nvmlDeviceGetCudaComputeCapability"));
    if (!init || !shutdown || !by_index || !by_uuid || !processes || !reasons) {
      error = "the NVIDIA driver's NVML lacks the calls the watch needs";
      return;
    }
    if (init() != 0) {
      error = "NVML could not start (no usable driver)";
      init = nullptr;
      return;
    }
    const std::string which = visible_device();
    const int rc = which.rfind("GPU-", 0) == 0 ? by_uuid(which.c_str(), &device)
                                                : by_index(static_cast<unsigned>(std::atoi(which.c_str())), &device);
    if (rc != 0) device = nullptr;
  }
  ~Nvml() {
    if (init && shutdown) shutdown();
    if (lib) ::dlclose(lib);
  }
};

bool is_descendant_of_self(unsigned pid) {
  const auto self = static_cast<unsigned>(::getpid());
  for (int depth = 0; depth < 64 && pid > 1; ++depth) {
    if (pid == self) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');  // the name may hold spaces and parentheses
    if (close == std::string::npos) return false;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    unsigned parent = 0;
    if (!(rest >> state >> parent)) return false;
    pid = parent;
  }
  return false;
}

std::string GpuObservation::disturbance() const {
  if (!watched) return "";
  std::string why;
  if (!other_processes.empty()) {
    why = std::to_string(other_processes.size()) + " other process(es) used the GPU (PID";
    for (unsigned p : other_processes) why += " " + std::to_string(p);
    why += ")";
  }
  if (samples > 0 && throttled_samples * 10 > samples)
    why += (why.empty() ? "" : "; ") + std::string("the driver reported thermal or hardware "
                                                   "slowdown in ") +
           std::to_string(throttled_samples) + " of " + std::to_string(samples) + " samples";
  return why;
}

GpuWatch::GpuWatch(int period_ms) : nvml_(std::make_shared<Nvml>()), period_ms_(period_ms) {
  seen_.watched = nvml_->init != nullptr;
  seen_.gpu_present = nvml_->device != nullptr;
  seen_.why_not = nvml_->error;
  int major = 0, minor = 0;
  if (seen_.gpu_present && nvml_->capability &&
      nvml_->capability(nvml_->device, &major, &minor) == 0)
    seen_.cc_major = major;
  if (!seen_.gpu_present || period_ms <= 0) return;
  thread_ = std::thread([this] {
    while (running_) {
      sample();
      for (int waited = 0; running_ && waited < period_ms_; waited += 10)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
}

GpuWatch::~GpuWatch() { stop(); }

void GpuWatch::sample() {
  ++seen_.samples;
  unsigned long long reasons = 0;
  if (nvml_->reasons(nvml_->device, &reasons) == 0 && (reasons & kSlowdown)) ++seen_.throttled_samples;
  ProcessInfo infos[64];
  unsigned count = 64;
  if (nvml_->processes(nvml_->device, &count, infos) != 0) return;
  for (unsigned i = 0; i < count && i < 64; ++i) {
    const unsigned pid = infos[i].pid;
    bool known = false;
    for (unsigned p : seen_.other_processes) known = known || p == pid;
    if (!known && !is_descendant_of_self(pid)) seen_.other_processes.push_back(pid);
  }
}

GpuObservation GpuWatch::stop() {
  if (running_.exchange(false) && seen_.gpu_present) {
    if (thread_.joinable()) thread_.join();
    sample();  // the state at the end too (the only sample of a probe)
  }
  return seen_;
}

GpuObservation probe_gpu() {
  GpuWatch watch(0);
  return watch.stop();
}

}  // namespace lab
