// Mutant: pins the input buffer but leaves the output buffer pageable. The upload runs at the
// bus's speed, the download still goes through the staging buffer, so the round trip stays far
// below the pinned ceiling. Expected: correct, fails the bandwidth rule.
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace {

class HalfPinned final : public l03::RoundTrip {
 public:
  void setup(std::size_t n) override {
    in_ = lab::PinnedBuffer<float>(n);
    out_.assign(n, 0.0f);  // the bug: pageable
  }
  float* input() override { return in_.data(); }
  float* output() override { return out_.data(); }
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    const std::size_t bytes = device.n * sizeof(float);
    LAB_CHECK(cudaMemcpyAsync(device.in, in_.data(), bytes, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    LAB_CHECK(cudaMemcpyAsync(out_.data(), device.out, bytes, cudaMemcpyDeviceToHost, stream));
  }

 private:
  lab::PinnedBuffer<float> in_;
  std::vector<float> out_;
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() { return std::make_unique<HalfPinned>(); }
