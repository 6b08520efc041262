// Mutant: the reference solution, plus a memory: when the device arrays are the same as last
// call's and 8 input elements spread from input()[0] to input()[n-1] hold what they held then,
// it enqueues nothing: "same input, so output() already holds the answer". The validated calls
// always have a new input, so they are computed; before, every timed call had the same input and
// the same kernel, so this passed, timed at nothing. Now the harness gives the kernel new
// coefficients and changes the input at 64 random positions (which the fingerprint almost never
// sees) before every timed call, and checks some of them. Expected: rule "correct" fails.
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
    bool same = device.in == last_in_ && device.n == last_n_;
    for (int k = 0; k < kPrints; ++k) {
      const float v = in_[k * (device.n - 1) / (kPrints - 1)];
      same = same && v == print_[k];
      print_[k] = v;
    }
    last_in_ = device.in;
    last_n_ = device.n;
    if (same) return;  // BUG: 8 elements do not say the other n - 8 are the same
    const std::size_t bytes = device.n * sizeof(float);
    LAB_CHECK(cudaMemcpyAsync(device.in, in_.data(), bytes, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    LAB_CHECK(cudaMemcpyAsync(out_.data(), device.out, bytes, cudaMemcpyDeviceToHost, stream));
  }

 private:
  lab::PinnedBuffer<float> in_, out_;  // freed with cudaFreeHost by their destructors
  static constexpr int kPrints = 8;
  float print_[kPrints] = {};  // the input's fingerprint at the last call
  float* last_in_ = nullptr;
  std::size_t last_n_ = 0;
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() {
  return std::make_unique<PinnedRoundTrip>();
}
