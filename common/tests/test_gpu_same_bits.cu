// lab::compare_bits on a GPU (lab/same_bits.cuh): equal bits pass, one flipped bit or a -0 for a
// +0 does not, and a write past the output's end is found after the comparison.
#include <doctest/doctest.h>

#include <cstddef>
#include <string>

#include "lab/data.hpp"
#include "lab/guard.hpp"
#include "lab/memory.hpp"
#include "lab/same_bits.cuh"
#include "lab/timing.hpp"

namespace {

__global__ void set_at(float* p, std::size_t i, float v) { p[i] = v; }

}  // namespace

TEST_CASE("an output with the reference's bits passes; one other bit, or past its end, does not") {
  lab::Stream s;
  constexpr std::size_t n = 5000;
  lab::DeviceBuffer<float> want(n);
  lab::GuardedBuffer<float> out(n, "out");
  lab::fill_random(want.data(), n, 3, s);
  out.reset(s);
  CHECK(lab::compare_bits(out, want.data(), s).find("5000 of 5000 differ; first at [0]: got ") ==
        0);  // poisoned
  lab::fill_random(out.data(), n, 3, s);
  CHECK(lab::compare_bits(out, want.data(), s).empty());
  set_at<<<1, 1, 0, s>>>(want.data(), 4321, 0.0f);
  set_at<<<1, 1, 0, s>>>(out.data(), 4321, -0.0f);  // equal as floats, not as bits
  LAB_CHECK_LAUNCH();
  CHECK(lab::compare_bits(out, want.data(), s).find("1 of 5000 differ; first at [4321]") == 0);
  set_at<<<1, 1, 0, s>>>(out.data(), 4321, 0.0f);
  set_at<<<1, 1, 0, s>>>(out.data(), n, 1.0f);  // the first element of the guard zone
  LAB_CHECK_LAUNCH();
  CHECK(lab::compare_bits(out, want.data(), s).find("wrote past the end of out") == 0);
}
