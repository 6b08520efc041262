// Mutant: waits for the result to appear in output() before enqueueing the download that would
// bring it: the harness filled output() with NaN, so the loop never ends. Expected: the checker
// kills it at its timeout.
#include <cmath>

#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace {

class WaitsForever final : public l03::RoundTrip {
 public:
  void setup(std::size_t n) override {
    in_ = lab::PinnedBuffer<float>(n);
    out_ = lab::PinnedBuffer<float>(n);
  }
  float* input() override { return in_.data(); }
  float* output() override { return out_.data(); }
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    const std::size_t bytes = device.n * sizeof(float);
    LAB_CHECK(cudaMemcpyAsync(device.in, in_.data(), bytes, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    // The bug: nothing writes output() until the download below is enqueued.
    const volatile float* last = out_.data() + device.n - 1;
    while (std::isnan(*last)) {
    }
    LAB_CHECK(cudaMemcpyAsync(out_.data(), device.out, bytes, cudaMemcpyDeviceToHost, stream));
  }

 private:
  lab::PinnedBuffer<float> in_, out_;
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() { return std::make_unique<WaitsForever>(); }
