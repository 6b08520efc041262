// Mutant: does the round trip once, then assumes the output is still good and skips the work on
// every later call. Timed, it looks infinitely fast; validated again with new input and a new
// kernel, it returns the old result. Expected: wrong results (the second validated call).
#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace {

class Cached final : public l03::RoundTrip {
 public:
  void setup(std::size_t n) override {
    in_ = lab::PinnedBuffer<float>(n);
    out_ = lab::PinnedBuffer<float>(n);
  }
  float* input() override { return in_.data(); }
  float* output() override { return out_.data(); }
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    if (done_) return;  // the bug: the input and the kernel change between calls
    const std::size_t bytes = device.n * sizeof(float);
    LAB_CHECK(cudaMemcpyAsync(device.in, in_.data(), bytes, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    LAB_CHECK(cudaMemcpyAsync(out_.data(), device.out, bytes, cudaMemcpyDeviceToHost, stream));
    done_ = true;
  }

 private:
  lab::PinnedBuffer<float> in_, out_;
  bool done_ = false;
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() { return std::make_unique<Cached>(); }
