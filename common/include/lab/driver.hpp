/// @file driver.hpp
/// @brief The CUDA driver API entry points a lesson uses, reached through the runtime
/// (cudaGetDriverEntryPointByVersion) rather than by linking libcuda: a program linked to the
/// driver does not even start on a machine without one (CI), where every lesson must say
/// "no GPU" and exit 77.
///
/// @code
/// CUmodule module = nullptr;
/// LAB_CU_CHECK(lab::driver().module_load_data(&module, cubin.data()));
/// @endcode
#pragma once

#include <cuda.h>

namespace lab {

/// @brief The driver's functions, each as the driver exports it (CUDA 12.0 forms).
struct Driver {
  decltype(&cuGetErrorName) get_error_name;                   ///< cuGetErrorName
  decltype(&cuGetErrorString) get_error_string;               ///< cuGetErrorString
  decltype(&cuModuleLoadData) module_load_data;               ///< cuModuleLoadData
  decltype(&cuModuleGetFunction) module_get_function;         ///< cuModuleGetFunction
  decltype(&cuModuleUnload) module_unload;                    ///< cuModuleUnload
  decltype(&cuModuleGetLoadingMode) module_get_loading_mode;  ///< cuModuleGetLoadingMode
  decltype(&cuLibraryLoadData) library_load_data;             ///< cuLibraryLoadData
  decltype(&cuLibraryGetKernel) library_get_kernel;           ///< cuLibraryGetKernel
  decltype(&cuLibraryUnload) library_unload;                  ///< cuLibraryUnload
  decltype(&cuKernelGetFunction) kernel_get_function;         ///< cuKernelGetFunction
  decltype(&cuLaunchKernel) launch_kernel;                    ///< cuLaunchKernel
  decltype(&cuTensorMapEncodeTiled) tensor_map_encode_tiled;  ///< cuTensorMapEncodeTiled
};

/// @brief The driver's functions, looked up once, on first use: call it after the context
/// exists (the first runtime call), so that no measurement of a first call includes the look-up.
/// @return every entry point of Driver
/// @throws lab::CudaError when the runtime cannot look one up, std::runtime_error when the
///         driver lacks one (too old)
const Driver& driver();

/// @brief Throws std::runtime_error naming @p call and the driver's error unless @p result is
/// CUDA_SUCCESS.
/// @param result what the driver returned
/// @param call the call's source text
void check_driver(CUresult result, const char* call);

}  // namespace lab

/// Checks a driver API call made through lab::driver(); throws with the call's text and the
/// driver's error name and description.
#define LAB_CU_CHECK(call) ::lab::check_driver((call), #call)
