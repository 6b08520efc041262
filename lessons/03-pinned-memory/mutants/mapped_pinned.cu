// A legitimately different correct solution that the seal must not refuse: pinned buffers from
// cudaHostAlloc (portable, mapped) and cudaMallocHost, the mapped buffer's device view queried
// and printed, an exception with cudaGetErrorString's words on failure. Judged on correctness.
#include "exercise.cuh"

#include <cstdio>
#include <stdexcept>

namespace {
class Pinned : public l03::RoundTrip {
 public:
  ~Pinned() override {
    if (in_) cudaFreeHost(in_);
    if (out_) cudaFreeHost(out_);
  }
  void setup(std::size_t n) override {
    if (cudaHostAlloc(reinterpret_cast<void**>(&in_), n * sizeof(float),
                      cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess ||
        cudaMallocHost(reinterpret_cast<void**>(&out_), n * sizeof(float)) != cudaSuccess)
      throw std::runtime_error(std::string("pinned allocation failed: ") +
                               cudaGetErrorString(cudaGetLastError()));
    void* device_view = nullptr;
    cudaHostGetDevicePointer(&device_view, in_, 0);
    unsigned flags = 0;
    cudaHostGetFlags(&flags, in_);
    std::printf("input mapped at %p (flags %u)\n", device_view, flags);
    n_ = n;
  }
  float* input() override { return in_; }
  float* output() override { return out_; }
  void round_trip(const l03::DeviceArrays& d, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    cudaMemcpyAsync(d.in, in_, n_ * sizeof(float), cudaMemcpyHostToDevice, stream);
    kernel(stream);
    cudaMemcpyAsync(out_, d.out, n_ * sizeof(float), cudaMemcpyDeviceToHost, stream);
  }

 private:
  float* in_ = nullptr;
  float* out_ = nullptr;
  std::size_t n_ = 0;
};
}  // namespace

namespace l03 {
std::unique_ptr<RoundTrip> make_round_trip() { return std::make_unique<Pinned>(); }
}  // namespace l03
