// Mutant: uploads whole 4 KiB pages ("DMA likes pages"), rounding the size up. When n is not a
// multiple of 1024 floats the upload writes past the end of device.in, whose guard zone reaches
// the end of its allocation: the copy fails with a CUDA error that stops the program.
// Expected: verdict "error", reason "exit".
#include "exercise.cuh"
#include "lab/check.hpp"
#include "lab/memory.hpp"

namespace {

class WholePages final : public l03::RoundTrip {
 public:
  void setup(std::size_t n) override {
    in_ = lab::PinnedBuffer<float>(n);
    out_ = lab::PinnedBuffer<float>(n);
  }
  float* input() override { return in_.data(); }
  float* output() override { return out_.data(); }
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    constexpr std::size_t kPage = 4096;
    const std::size_t bytes = device.n * sizeof(float);
    const std::size_t pages = (bytes + kPage - 1) / kPage * kPage;  // the bug: past the end
    LAB_CHECK(cudaMemcpyAsync(device.in, in_.data(), pages, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    LAB_CHECK(cudaMemcpyAsync(out_.data(), device.out, bytes, cudaMemcpyDeviceToHost, stream));
  }

 private:
  lab::PinnedBuffer<float> in_, out_;
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() { return std::make_unique<WholePages>(); }
