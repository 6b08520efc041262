// NVRTC and nvJitLink, the course's own way (lab/runtime_compile.hpp).
#include "lab/runtime_compile.hpp"

#include <nvJitLink.h>
#include <nvrtc.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lab/device.hpp"

namespace lab {

namespace {

void nvrtc_check(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + ": " + nvrtcGetErrorString(r));
}
#define LAB_NVRTC_CHECK(call) nvrtc_check((call), #call)

std::string program_log(nvrtcProgram prog) {
  std::size_t size = 0;
  nvrtcGetProgramLogSize(prog, &size);
  std::string log(size, '\0');
  if (size > 0) nvrtcGetProgramLog(prog, &log[0]);
  return log;
}

// @p source compiled with @p options for "--gpu-architecture=@p target"; the caller destroys it.
nvrtcProgram compiled(const std::string& source, std::vector<std::string> options,
                      const std::string& target) {
  nvrtcProgram prog = nullptr;
  LAB_NVRTC_CHECK(nvrtcCreateProgram(&prog, source.c_str(), "operator.cu", 0, nullptr, nullptr));
  options.push_back("--gpu-architecture=" + target);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  if (r != NVRTC_SUCCESS) {
    const std::string log = program_log(prog);
    nvrtcDestroyProgram(&prog);
    throw std::runtime_error("NVRTC could not compile the operator for " + target + " (" +
                             nvrtcGetErrorString(r) + "):\n" + log);
  }
  return prog;
}

}  // namespace

std::vector<char> nvrtc_compile(const std::string& source, const std::vector<std::string>& options,
                                const std::string& arch, bool lto) {
  std::vector<std::string> all = options;
  if (lto) all.push_back("-dlto");
  nvrtcProgram prog = compiled(source, all, arch);
  std::size_t size = 0;
  std::vector<char> out;
  if (lto) {
    LAB_NVRTC_CHECK(nvrtcGetLTOIRSize(prog, &size));
    out.resize(size);
    LAB_NVRTC_CHECK(nvrtcGetLTOIR(prog, out.data()));
  } else {
    LAB_NVRTC_CHECK(nvrtcGetCUBINSize(prog, &size));
    out.resize(size);
    LAB_NVRTC_CHECK(nvrtcGetCUBIN(prog, out.data()));
  }
  LAB_NVRTC_CHECK(nvrtcDestroyProgram(&prog));
  return out;
}

std::string nvrtc_ptx(const std::string& source, const std::vector<std::string>& options,
                      const std::string& arch) {
  // The virtual architecture of the same number: NVRTC then stops at PTX ("sm_90a" -> "compute_90a").
  nvrtcProgram prog = compiled(source, options, "compute_" + arch.substr(3));
  std::size_t size = 0;
  LAB_NVRTC_CHECK(nvrtcGetPTXSize(prog, &size));
  std::string ptx(size, '\0');  // size counts the terminating zero
  LAB_NVRTC_CHECK(nvrtcGetPTX(prog, &ptx[0]));
  LAB_NVRTC_CHECK(nvrtcDestroyProgram(&prog));
  ptx.resize(size > 0 ? size - 1 : 0);
  return ptx;
}

std::vector<char> nvjitlink(const std::vector<char>& ltoir, const std::string& arch) {
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

std::string second_arch(const std::string& arch, const std::string& source) {
  auto compiles = [&](const std::string& a) {
    try {
      nvrtc_compile(source, {}, a);
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

std::string nvrtc_arch() {
  const DeviceInfo& d = device_info();
  const int cc = d.cc_major * 10 + d.cc_minor;
  int count = 0;
  LAB_NVRTC_CHECK(nvrtcGetNumSupportedArchs(&count));
  std::vector<int> archs(count);
  LAB_NVRTC_CHECK(nvrtcGetSupportedArchs(archs.data()));
  if (std::find(archs.begin(), archs.end(), cc) == archs.end())
    throw std::runtime_error("this NVRTC cannot compile for this GPU (compute capability " +
                             std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) +
                             "): use the toolkit that supports it");
  return "sm_" + std::to_string(cc);
}

}  // namespace lab
