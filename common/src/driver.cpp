// The driver API through the runtime's entry-point look-up (lab/driver.hpp).
#include "lab/driver.hpp"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "lab/check.hpp"

namespace lab {

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
    get("cuTensorMapEncodeTiled", found.tensor_map_encode_tiled);
    return found;
  }();
  return d;
}

void check_driver(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  driver().get_error_name(result, &name);
  driver().get_error_string(result, &text);
  throw std::runtime_error(std::string(call) + ": " + (name ? name : "?") + " (" +
                           (text ? text : "unknown error") + ")");
}

}  // namespace lab
