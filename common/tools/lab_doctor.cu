// lab-doctor: what this GPU is and what it can do, measured now. The checker's `doctor` verb
// runs it; --probe launches one tiny kernel so the checker can ask ncu whether counters are
// readable; --device-only leaves out the ceilings (each lesson measures its own), for the main
// command, which runs every lesson next.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "lab/device.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/result.hpp"
#include "lab/tensor_roofs.hpp"

namespace {
__global__ void probe_kernel(int* out) { *out = 42; }
}  // namespace

int main(int argc, char** argv) {
  const char* json_path = nullptr;
  bool probe = false, device_only = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--probe")) {
      probe = true;
    } else if (!std::strcmp(argv[i], "--device-only")) {
      device_only = true;
    } else {
      std::fprintf(stderr, "usage: lab-doctor [--json PATH] [--probe | --device-only]\n");
      return lab::kExitUsage;
    }
  }
  const std::string why = lab::gpu_unavailable_reason();
  if (!why.empty()) {
    std::fprintf(stderr, "%s\n", why.c_str());
    return lab::kExitNoGpu;
  }
  try {
    if (probe) {
      lab::DeviceBuffer<int> out(1);
      probe_kernel<<<1, 1>>>(out.data());
      LAB_CHECK_LAUNCH();
      LAB_CHECK(cudaDeviceSynchronize());
      return lab::kExitOk;
    }
    // Reuse the result file's layout for device and ceilings, so there is one description.
    lab::Result r;
    r.lesson = "doctor";
    r.build = "doctor";
    r.device = lab::device_info();
    const lab::DeviceInfo& d = *r.device;
    std::printf("%s (compute capability %d.%d, %d SMs, %.0f MB L2, %.1f GB)\n", d.name.c_str(),
                d.cc_major, d.cc_minor, d.sms, d.l2_bytes / 1e6, d.global_bytes / 1e9);
    std::printf("driver %d, runtime %d; SM clock %d MHz, memory %d MHz x %d bit\n",
                d.driver_version, d.runtime_version, d.sm_clock_mhz, d.mem_clock_mhz,
                d.bus_width_bits);
    if (!device_only) {
      r.ceilings = lab::ceilings();
      // The tensor roofs too, which lab::ceilings() leaves to the lessons that can use them; a
      // failure there leaves them 0 and is said, the rest of the report stands.
      std::string tensor_why;
      try {
        tensor_why = lab::measure_tensor_roofs(*r.ceilings);
      } catch (const std::exception& e) {
        tensor_why = e.what();
        r.ceilings->tf32_tensor_gflops = r.ceilings->bf16_tensor_gflops = 0;
      }
      const lab::Ceilings& c = *r.ceilings;
      std::printf("memory bandwidth: %.0f GB/s theoretical, %.0f GB/s measured copy (%.0f%%)\n",
                  d.peak_bandwidth_gbs(), c.copy_gbs, 100 * c.copy_gbs / d.peak_bandwidth_gbs());
      std::printf("host transfers: pinned %.1f / %.1f GB/s, pageable %.1f / %.1f GB/s (H2D / D2H)\n",
                  c.h2d_pinned_gbs, c.d2h_pinned_gbs, c.h2d_pageable_gbs, c.d2h_pageable_gbs);
      std::printf("launch: %.2f us per back-to-back empty kernel\n", c.launch_us);
      if (tensor_why.empty())
        std::printf("compute roofs: FP32 FMA %.1f, TF32 tensor %.1f, BF16 tensor %.1f TFLOP/s "
                    "(cuBLAS at 8192^3)\n",
                    c.fp32_gflops * 1e-3, c.tf32_tensor_gflops * 1e-3, c.bf16_tensor_gflops * 1e-3);
      else
        std::printf("compute roofs: FP32 FMA %.1f TFLOP/s; tensor roofs not measured: %s\n",
                    c.fp32_gflops * 1e-3, tensor_why.c_str());
    }
    r.complete = true;
    const int others = lab::other_gpu_processes();
    const nlohmann::json doc = nlohmann::json::parse(lab::to_json_text(r));
    nlohmann::json out = {{"device", doc["device"]}, {"other_processes", others}};
    if (doc.contains("ceilings")) out["ceilings"] = doc["ceilings"];
    if (others >= 0) std::printf("other processes on this GPU: %d\n", others);
    if (json_path) lab::write_file_atomically(json_path, out.dump(2) + "\n");
    return lab::kExitOk;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lab-doctor: %s\n", e.what());
    return lab::kExitCudaError;
  }
}
