// Lesson 03 exercise: move the data at the speed of the bus.
//
// This round trip is correct, but its host buffers are ordinary (pageable) memory, so every copy
// goes through the driver's staging buffer and runs at a fraction of the bus's speed.
// Goal (what the checker tests): the round trip's effective bandwidth, 2 * n * 4 bytes over its
// GPU time, reaches [at least 80%](check.toml#bandwidth) of the pinned link's, measured between
// your timed calls, and the round trip is [at least 2x](check.toml#speedup) faster than the pageable
// baseline. Read exercise.cuh first: it says what is timed.
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

class MyRoundTrip final : public l03::RoundTrip {
 public:
  // SETUP, not timed.
  // TODO: this allocates pageable memory. Allocate page-locked (pinned) buffers instead:
  // cudaMallocHost, or lab::PinnedBuffer<float> from lab/memory.hpp. Pinning takes time, and
  // this is the place to pay for it.
  void setup(std::size_t n) override {
    in_.assign(n, 0.0f);
    out_.assign(n, 0.0f);
  }

  float* input() override { return in_.data(); }
  float* output() override { return out_.data(); }

  // TIMED. Every call must do the whole trip: the harness changes the input between calls.
  // TODO: from pageable memory these "async" copies are not asynchronous: the call returns only
  // after the data has passed through a staging buffer. With pinned buffers they are true DMA
  // transfers, queued on the stream behind each other and the kernel.
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    const std::size_t bytes = device.n * sizeof(float);
    LAB_CHECK(cudaMemcpyAsync(device.in, in_.data(), bytes, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    LAB_CHECK(cudaMemcpyAsync(out_.data(), device.out, bytes, cudaMemcpyDeviceToHost, stream));
  }

  // TEARDOWN is the destructor: std::vector frees itself. (Pinned memory must be freed with
  // cudaFreeHost; lab::PinnedBuffer does that for you.)

 private:
  std::vector<float> in_, out_;
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() { return std::make_unique<MyRoundTrip>(); }
