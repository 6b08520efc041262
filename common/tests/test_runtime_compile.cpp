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
