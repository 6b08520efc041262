/// @file device.hpp
/// @brief The GPU's properties and the ceilings measured on it in this process.
#pragma once

#include <cstddef>
#include <string>

namespace lab {

/// @brief Properties of the current device, read once per process.
struct DeviceInfo {
  std::string name;              ///< e.g. "NVIDIA H100 80GB HBM3"
  int cc_major = 0;              ///< compute capability, major
  int cc_minor = 0;              ///< compute capability, minor
  int sms = 0;                   ///< streaming multiprocessors
  std::size_t l2_bytes = 0;      ///< L2 cache size
  std::size_t global_bytes = 0;  ///< device memory
  int sm_clock_mhz = 0;          ///< default (boost) SM clock
  int mem_clock_mhz = 0;         ///< peak memory clock
  int bus_width_bits = 0;        ///< memory bus width
  int driver_version = 0;        ///< e.g. 13000 for CUDA 13.0
  int runtime_version = 0;       ///< the runtime this program was built with
  /// @return theoretical DRAM bandwidth 2 * clock * bus / 8 in GB/s (10^9 B/s); the achievable
  ///         copy bandwidth is typically 85-90% of it
  double peak_bandwidth_gbs() const;
};

/// @return true if a CUDA device can be used (a driver is loaded and at least one GPU is visible)
bool gpu_available();

/// @return one sentence saying why no GPU can be used (empty if one can)
std::string gpu_unavailable_reason();

/// @return the current device's properties (read on first call, then cached)
const DeviceInfo& device_info();

/// @brief Blocks for a grid-stride kernel: enough for @p items at @p per_block each, at least
/// one, and at most @p blocks_per_sm on every SM (more would only wait for a free SM).
/// @param items elements (or rows...) to cover
/// @param per_block how many one block takes on in one pass
/// @param blocks_per_sm the most blocks per SM worth launching
/// @return the grid size
int grid_for(long long items, long long per_block, int blocks_per_sm);

/// @return the number of other processes with a context on this GPU (through NVML, loaded at run
///         time if the driver provides it), or -1 when that cannot be known
int other_gpu_processes();

/// @brief This GPU's persistence mode (an administrator's setting: `nvidia-smi -pm`): when on,
/// the driver keeps the GPU initialized with no process using it, so a new process's first
/// context does not pay for bringing it up again.
/// @return 1 on, 0 off, -1 when NVML cannot say (no driver, or not supported: it is Linux only)
int persistence_mode();

/// @brief Speeds measured on this GPU in this process: every performance threshold is a ratio to
/// one of these (or to another variant), so it means the same on any GPU.
struct Ceilings {
  double copy_gbs = 0;          ///< cold float4 device-to-device copy, >= 256 MiB each way
  double h2d_pinned_gbs = 0;    ///< host-to-device cudaMemcpyAsync from pinned memory
  double d2h_pinned_gbs = 0;    ///< device-to-host into pinned memory
  double h2d_pageable_gbs = 0;  ///< host-to-device from ordinary (pageable, touched) memory
  double d2h_pageable_gbs = 0;  ///< device-to-host into ordinary (pageable, touched) memory
  double launch_us = 0;         ///< per-launch cost of back-to-back empty kernels on one stream
  double fp32_gflops = 0;       ///< FP32 fused multiply-add throughput (the roofline's compute roof)
  /// BF16 tensor-core matrix-multiply throughput with FP32 accumulation (the tensor roof); 0
  /// unless the lesson measured it (Lesson::measure_tensor_roof: lesson 12)
  double bf16_tensor_gflops = 0;
  /// TF32 tensor-core throughput on FP32 data (the most an FP32 product can get from the tensor
  /// cores, 3xTF32 and the like included); 0 unless the lesson measured it (lesson 05)
  double tf32_tensor_gflops = 0;
};

/// @return the ceilings, measured on first call (well under a second) and then cached
const Ceilings& ceilings();

}  // namespace lab
