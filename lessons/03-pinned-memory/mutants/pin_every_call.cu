// Mutant: pins its buffer inside the timed round trip (cudaHostRegister at the start, then
// waits and unregisters at the end), instead of once in setup(). The copies themselves run at
// the bus's speed, but every call pays for pinning twice the data. Expected: correct, fails
// the bandwidth rule.
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

class PinEveryCall final : public l03::RoundTrip {
 public:
  void setup(std::size_t n) override {
    n_ = n;
    buffer_.assign(2 * n, 0.0f);  // input, then output
  }
  float* input() override { return buffer_.data(); }
  float* output() override { return buffer_.data() + n_; }
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    const std::size_t bytes = device.n * sizeof(float);
    // The bug: pinning belongs in setup(), paid once.
    LAB_CHECK(cudaHostRegister(buffer_.data(), 2 * bytes, cudaHostRegisterDefault));
    LAB_CHECK(cudaMemcpyAsync(device.in, input(), bytes, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    LAB_CHECK(cudaMemcpyAsync(output(), device.out, bytes, cudaMemcpyDeviceToHost, stream));
    LAB_CHECK(cudaStreamSynchronize(stream));  // memory must not be unpinned under a copy
    LAB_CHECK(cudaHostUnregister(buffer_.data()));
  }

 private:
  std::size_t n_ = 0;
  std::vector<float> buffer_;
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() { return std::make_unique<PinEveryCall>(); }
