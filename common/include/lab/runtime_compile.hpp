/// @file runtime_compile.hpp
/// @brief CUDA C++ compiled while the program runs, the course's own way: NVRTC to a cubin or
/// to LTO-IR, nvJitLink from LTO-IR to a cubin, and this GPU's architecture as NVRTC names it.
/// In the library target lab_runtime_compile (NVRTC and nvJitLink linked by their files, not
/// through the driver: a program linked to libcuda does not even start on a machine without
/// one, where every lesson must say "no GPU").
///
/// @code
/// const std::string arch = lab::nvrtc_arch();                       // "sm_90" on an H100
/// const std::vector<char> cubin = lab::nvrtc_compile(source, {"-DALPHA=2.0f"}, arch);
/// LAB_CU_CHECK(lab::driver().module_load_data(&module, cubin.data()));  // lab/driver.hpp
/// @endcode
#pragma once

#include <string>
#include <vector>

namespace lab {

/// @brief Compiles @p source with NVRTC for @p arch.
/// @param source CUDA C++
/// @param options NVRTC's options, e.g. "-DALPHA=2.0f" (the architecture is added)
/// @param arch e.g. "sm_90" or "sm_90a"
/// @param lto true: LTO-IR for nvjitlink() (-dlto) instead of a cubin
/// @return the cubin, or the LTO-IR
/// @throws std::runtime_error with NVRTC's log when it cannot compile
std::vector<char> nvrtc_compile(const std::string& source, const std::vector<std::string>& options,
                                const std::string& arch, bool lto = false);

/// @brief Compiles @p source with NVRTC to PTX for @p arch's virtual architecture (compute_90 for
/// sm_90): text that the driver compiles for the GPU when it is loaded (cuModuleLoadData), the
/// driver's JIT, which keeps what it compiled in its own disk cache (lesson 11).
/// @param source CUDA C++
/// @param options NVRTC's options (the architecture is added)
/// @param arch e.g. "sm_90" or "sm_90a"
/// @return the PTX, without a terminating zero (c_str() is what cuModuleLoadData takes)
/// @throws std::runtime_error with NVRTC's log when it cannot compile
std::string nvrtc_ptx(const std::string& source, const std::vector<std::string>& options,
                      const std::string& arch);

/// @brief Links LTO-IR into a cubin with nvJitLink (what a library does when it links
/// runtime-compiled code with code it ships as LTO-IR).
/// @param ltoir from nvrtc_compile(..., true)
/// @param arch the target, as for nvrtc_compile
/// @return the cubin
/// @throws std::runtime_error with nvJitLink's log
std::vector<char> nvjitlink(const std::vector<char>& ltoir, const std::string& arch);

/// @brief Another target whose cubin of @p source also runs on this GPU: the arch-specific one
/// (sm_90a on an H100), or else an older minor version of the same major (sm_80 on an sm_86
/// GPU): a cache that keys its entries without the target serves one for the other.
/// @param arch this GPU's, from nvrtc_arch()
/// @param source CUDA C++ that NVRTC must compile for the other target (with no options)
/// @return the target, or "" when there is none (an A100 runs only sm_80 cubins)
std::string second_arch(const std::string& arch, const std::string& source);

/// @return this GPU's architecture as NVRTC names it ("sm_90")
/// @throws std::runtime_error when this NVRTC cannot compile for it (an older toolkit)
std::string nvrtc_arch();

}  // namespace lab
