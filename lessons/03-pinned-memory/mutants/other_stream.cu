// Mutant: does its copies on a stream of its own ("so they can overlap") and never orders them
// with the harness's stream. The kernel can run before the upload has landed, the download can
// read the output before the kernel has written it, and the harness's wait on its stream does
// not wait for the download. (In a timed call the library holds the side stream until the start
// event and makes the stop event wait for it, but nothing orders the copies with the kernel.)
// Expected: wrong results (NaN from the poisoned arrays).
#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace {

class OwnStream final : public l03::RoundTrip {
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
    LAB_CHECK(cudaMemcpyAsync(device.in, in_.data(), bytes, cudaMemcpyHostToDevice, copies_));
    kernel(stream);  // the bug: nothing makes `stream` wait for `copies_`, nor the reverse
    LAB_CHECK(cudaMemcpyAsync(out_.data(), device.out, bytes, cudaMemcpyDeviceToHost, copies_));
  }

 private:
  lab::PinnedBuffer<float> in_, out_;
  lab::SideStream copies_;  // non-blocking (an exercise makes its streams this way)
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() { return std::make_unique<OwnStream>(); }
