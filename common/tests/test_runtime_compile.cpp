// Runtime compilation without a GPU (lab/runtime_compile.hpp): NVRTC compiles for any target it
// knows, so the search for a second target runs anywhere.
#include <doctest/doctest.h>

#include <string>

#include "lab/runtime_compile.hpp"

namespace {

const char* kKernel = R"(extern "C" __global__ void k(float* p) { p[threadIdx.x] = 1.0f; })";

}  // namespace

TEST_CASE("a second target: the arch-specific one, else an older minor of the same major") {
  CHECK(lab::second_arch("sm_90", kKernel) == "sm_90a");
  CHECK(lab::second_arch("sm_86", kKernel) == "sm_80");  // no sm_86a, no sm_81 .. sm_85
  CHECK(lab::second_arch("sm_80", kKernel).empty());     // the first of its major
  CHECK(lab::second_arch("sm_90", "this is not CUDA").empty());
  CHECK_FALSE(lab::nvrtc_compile(kKernel, {}, "sm_90a").empty());
}

TEST_CASE("PTX for the architecture's virtual target, the text the driver JIT-compiles") {
  const std::string ptx = lab::nvrtc_ptx(kKernel, {}, "sm_90a");
  CHECK(ptx.find(".target sm_90a") != std::string::npos);
  CHECK(ptx.find(".entry k(") != std::string::npos);
  CHECK(ptx.find('\0') == std::string::npos);  // cuModuleLoadData reads up to the first zero
  CHECK(lab::nvrtc_ptx(kKernel, {}, "sm_80").find(".target sm_80") != std::string::npos);
  CHECK_THROWS(lab::nvrtc_ptx("this is not CUDA", {}, "sm_90"));
}
