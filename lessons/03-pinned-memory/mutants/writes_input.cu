// Mutant: the reference solution, but the download lands in the input buffer, then a host-to-
// host copy on the stream moves it to output(): output() is right after every call, and the
// input() the harness wrote is gone. Each validated call writes a new input first, so this
// passed; now the timed calls keep the input (a few elements change between them), the next
// call uploads the last output, and after timing the harness checks the input is unchanged.
// Expected: rule "correct" fails.
// Lesson 03 reference solution: pinned host buffers, allocated once in setup, and three
// operations queued on one stream.
#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace {

class PinnedRoundTrip final : public l03::RoundTrip {
 public:
  // Pinning 2 x 256 MiB costs on the order of 100 ms: a hundred round trips' worth of
  // transfers. Pay it once, here, outside the timed region, and reuse the buffers.
  void setup(std::size_t n) override {
    in_ = lab::PinnedBuffer<float>(n);
    out_ = lab::PinnedBuffer<float>(n);
  }

  float* input() override { return in_.data(); }
  float* output() override { return out_.data(); }

  // Page-locked memory has fixed physical addresses, so the copy engine reads and writes it
  // directly (DMA): no staging copy on the CPU, and cudaMemcpyAsync returns at once. Stream
  // order does the rest: the kernel starts after the upload, the download after the kernel,
  // and the harness's wait on the stream covers all three.
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    const std::size_t bytes = device.n * sizeof(float);
    LAB_CHECK(cudaMemcpyAsync(device.in, in_.data(), bytes, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    LAB_CHECK(cudaMemcpyAsync(in_.data(), device.out, bytes, cudaMemcpyDeviceToHost, stream));
    // BUG: the line above overwrote the input
    LAB_CHECK(cudaMemcpyAsync(out_.data(), in_.data(), bytes, cudaMemcpyHostToHost, stream));
  }

 private:
  lab::PinnedBuffer<float> in_, out_;  // freed with cudaFreeHost by their destructors
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() {
  return std::make_unique<PinnedRoundTrip>();
}
