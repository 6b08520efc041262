// Mutant: calls cudaMallocHost as if it were malloc. CUDA's allocators return an error code and
// write the pointer through their first argument. Expected: does not compile.
#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

class MallocStyle final : public l03::RoundTrip {
 public:
  ~MallocStyle() override {
    cudaFreeHost(in_);
    cudaFreeHost(out_);
  }
  void setup(std::size_t n) override {
    in_ = cudaMallocHost(n * sizeof(float));  // the bug: returns cudaError_t, takes void**
    out_ = cudaMallocHost(n * sizeof(float));
  }
  float* input() override { return in_; }
  float* output() override { return out_; }
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    const std::size_t bytes = device.n * sizeof(float);
    LAB_CHECK(cudaMemcpyAsync(device.in, in_, bytes, cudaMemcpyHostToDevice, stream));
    kernel(stream);
    LAB_CHECK(cudaMemcpyAsync(out_, device.out, bytes, cudaMemcpyDeviceToHost, stream));
  }

 private:
  float* in_ = nullptr;
  float* out_ = nullptr;
};

}  // namespace

std::unique_ptr<l03::RoundTrip> l03::make_round_trip() { return std::make_unique<MallocStyle>(); }
