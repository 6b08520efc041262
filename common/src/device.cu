// The GPU's properties, and the ceilings every performance rule is a ratio to.
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "lab/device.hpp"
#include "lab/memory.hpp"
#include "lab/timing.hpp"
#include "roof_options.hpp"

namespace lab {

bool gpu_available() { return gpu_unavailable_reason().empty(); }

std::string gpu_unavailable_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0))
    return "No CUDA GPU is visible on this machine (check nvidia-smi and CUDA_VISIBLE_DEVICES).";
  if (err == cudaErrorInsufficientDriver)
    return "No NVIDIA driver (or one too old for CUDA " + std::to_string(CUDART_VERSION / 1000) +
           ") is loaded on this machine, so no GPU can be used.";
  if (err != cudaSuccess)
    return std::string("The GPU cannot be used: ") + cudaGetErrorString(err) + ".";
  return "";
}

const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    int dev = 0;
    LAB_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    LAB_CHECK(cudaGetDeviceProperties(&prop, dev));
    d.name = prop.name;
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.sms = prop.multiProcessorCount;
    d.l2_bytes = static_cast<std::size_t>(prop.l2CacheSize);
    d.global_bytes = prop.totalGlobalMem;
    // CUDA 13 removed cudaDeviceProp::clockRate and ::memoryClockRate: ask for the attributes.
    int khz = 0;
    LAB_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev));
    d.sm_clock_mhz = khz / 1000;
    LAB_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, dev));
    d.mem_clock_mhz = khz / 1000;
    LAB_CHECK(cudaDeviceGetAttribute(&d.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, dev));
    LAB_CHECK(cudaDriverGetVersion(&d.driver_version));
    LAB_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
    return d;
  }();
  return info;
}

int grid_for(long long items, long long per_block, int blocks_per_sm) {
  const long long want = (items + per_block - 1) / per_block;
  return static_cast<int>(std::clamp<long long>(want, 1, 1LL * blocks_per_sm * device_info().sms));
}

namespace {

// NVML, loaded at run time (linking it would stop the program from even starting on a machine
// without a driver, as in CI), and this GPU's handle in it: nullptr when either is missing.
// NVML stays loaded: unloading it is not worth the risk of a dangling handle.
void* nvml_symbol(const char* name) {
  static void* const nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  return nvml ? dlsym(nvml, name) : nullptr;
}

void* nvml_this_gpu() {
  using Init = int (*)();
  using ByPci = int (*)(const char*, void**);
  auto init = reinterpret_cast<Init>(nvml_symbol("nvmlInit_v2"));
  auto by_pci = reinterpret_cast<ByPci>(nvml_symbol("nvmlDeviceGetHandleByPciBusId_v2"));
  char pci[32] = {};
  int dev = 0;
  void* handle = nullptr;
  if (init && by_pci && init() == 0 && cudaGetDevice(&dev) == cudaSuccess &&
      cudaDeviceGetPCIBusId(pci, sizeof pci, dev) == cudaSuccess && by_pci(pci, &handle) == 0)
    return handle;
  return nullptr;
}

}  // namespace

int other_gpu_processes() {
  struct ProcessInfo {  // nvmlProcessInfo_t (v2 layout, used by the _v3 query)
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id;
    unsigned int compute_instance_id;
  };
  using Procs = int (*)(void*, unsigned int*, ProcessInfo*);
  auto procs = reinterpret_cast<Procs>(nvml_symbol("nvmlDeviceGetComputeRunningProcesses_v3"));
  void* handle = procs ? nvml_this_gpu() : nullptr;
  ProcessInfo list[64];
  unsigned int count = 64;
  // Our own context is one of them; in a container the pids may be the host's, so count.
  if (!handle || procs(handle, &count, list) != 0) return -1;
  return count > 0 ? static_cast<int>(count) - 1 : -1;
}

int persistence_mode() {
  using Mode = int (*)(void*, int*);  // nvmlDeviceGetPersistenceMode, nvmlEnableState_t
  auto mode = reinterpret_cast<Mode>(nvml_symbol("nvmlDeviceGetPersistenceMode"));
  void* handle = mode ? nvml_this_gpu() : nullptr;
  int enabled = 0;
  if (handle && mode(handle, &enabled) == 0) return enabled != 0 ? 1 : 0;
  return -1;
}

namespace {

__global__ void copy_float4(const float4* __restrict__ in, float4* __restrict__ out,
                            std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

__global__ void empty_kernel() {}

// The compute roof: every thread runs kChains independent FMA chains (enough to hide the FMA
// latency), all in registers. a and b arrive at run time so nothing folds away; the store that
// never happens keeps the result alive.
constexpr int kChains = 8, kUnroll = 16;
__global__ void fma_throughput(float* sink, int iterations, float a, float b) {
  float x[kChains];
  for (int k = 0; k < kChains; ++k) x[k] = threadIdx.x + k;
  for (int i = 0; i < iterations; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < kChains; ++k) x[k] = fmaf(x[k], a, b);
    }
  }
  float sum = 0;
  for (int k = 0; k < kChains; ++k) sum += x[k];
  if (sum == -1.0f) *sink = sum;
}

double median_gbs(double bytes, const Measurement& m) { return bytes / (m.gpu_ms.median * 1e6); }

}  // namespace

const Ceilings& ceilings() {
  static const Ceilings result = [] {
    Ceilings c;
    Stream stream;
    BenchmarkOptions quick = roof_options(Mode::Cold, 0.25);

    // Device copy: >= 256 MiB each way (and >= 4x L2) so neither side fits in cache.
    const std::size_t bytes =
        std::max<std::size_t>(256u << 20, 4 * device_info().l2_bytes) / 16 * 16;
    {
      DeviceBuffer<float4> in(bytes / 16), out(bytes / 16);
      LAB_CHECK(cudaMemsetAsync(in.data(), 1, bytes, stream));
      const int blocks = device_info().sms * 8;
      const Measurement m = benchmark(
          [&](cudaStream_t s) { copy_float4<<<blocks, 256, 0, s>>>(in.data(), out.data(), in.size()); },
          stream, quick);
      c.copy_gbs = median_gbs(2.0 * bytes, m);
    }

    // Host transfers: 64 MiB is well past the latency-bound sizes and keeps pinning cheap.
    const std::size_t host_bytes = 64u << 20;
    DeviceBuffer<char> dev(host_bytes);
    {
      PinnedBuffer<char> pinned(host_bytes);
      std::memset(pinned.data(), 1, host_bytes);
      auto h2d = benchmark([&](cudaStream_t s) {
        LAB_CHECK(cudaMemcpyAsync(dev.data(), pinned.data(), host_bytes, cudaMemcpyHostToDevice, s));
      }, stream, quick);
      auto d2h = benchmark([&](cudaStream_t s) {
        LAB_CHECK(cudaMemcpyAsync(pinned.data(), dev.data(), host_bytes, cudaMemcpyDeviceToHost, s));
      }, stream, quick);
      c.h2d_pinned_gbs = median_gbs(host_bytes, h2d);
      c.d2h_pinned_gbs = median_gbs(host_bytes, d2h);
    }
    {
      std::vector<char> pageable(host_bytes, 1);  // touched: first-touch faults are lesson 03's
      quick.stop.min_samples = 5;
      auto h2d = benchmark([&](cudaStream_t s) {
        LAB_CHECK(cudaMemcpyAsync(dev.data(), pageable.data(), host_bytes, cudaMemcpyHostToDevice, s));
      }, stream, quick);
      auto d2h = benchmark([&](cudaStream_t s) {
        LAB_CHECK(cudaMemcpyAsync(pageable.data(), dev.data(), host_bytes, cudaMemcpyDeviceToHost, s));
      }, stream, quick);
      c.h2d_pageable_gbs = median_gbs(host_bytes, h2d);
      c.d2h_pageable_gbs = median_gbs(host_bytes, d2h);
    }

    // FP32 FMA throughput: a full GPU of resident threads (8 blocks of 256 per SM); 2 FLOPs
    // per FMA. About 1 ms per launch on an H100.
    {
      DeviceBuffer<float> sink(1);
      const int blocks = device_info().sms * 8, threads = 256, iterations = 1024;
      BenchmarkOptions hot = quick;
      hot.mode = Mode::Hot;
      const Measurement m = benchmark(
          [&](cudaStream_t s) {
            fma_throughput<<<blocks, threads, 0, s>>>(sink.data(), iterations, 0.999f, 0.001f);
          },
          stream, hot);
      const double flops = 2.0 * kChains * kUnroll * iterations * double(blocks) * threads;
      c.fp32_gflops = flops / (m.gpu_ms.median * 1e6);
    }

    // Launch cost: 1000 empty kernels back to back, per launch (host-bound on fast GPUs).
    {
      constexpr int kLaunches = 1000;
      empty_kernel<<<1, 1, 0, stream>>>();
      stream.synchronize();
      Event start, stop;
      std::vector<double> per_launch;
      for (int rep = 0; rep < 5; ++rep) {
        start.record(stream);
        for (int i = 0; i < kLaunches; ++i) empty_kernel<<<1, 1, 0, stream>>>();
        stop.record(stream);
        per_launch.push_back(1e3 * elapsed_ms(start, stop) / kLaunches);
      }
      LAB_CHECK_LAUNCH();
      c.launch_us = summarize(per_launch).median;
    }
    return c;
  }();
  return result;
}

}  // namespace lab
