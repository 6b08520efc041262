// Lesson 03: the interface between the harness (main.cu) and your file (exercise.cu).
//
// You own the HOST side of a round trip: the two host buffers and the two copies.
// The harness owns the DEVICE side: two device arrays and a trivial kernel.
//
//   host input  --upload-->  device.in  --kernel-->  device.out  --download-->  host output
//
// What is timed and what is not (the checker's rules depend on it):
//
//   make_round_trip() and setup(n)  SETUP, NOT TIMED. Allocate your host buffers here: pageable
//                                   or pinned is your choice, and so is what it costs. Called once
//                                   per object, before anything else.
//   input(), output()               NOT TIMED. The harness writes fresh random input through
//                                   input() and reads your result through output().
//   round_trip(device, kernel, s)   TIMED, many times. Enqueue the whole round trip on stream s.
//   the destructor                  TEARDOWN, NOT TIMED. Free what setup allocated.
//
// The harness checks every validated run like this, so nothing else will pass:
//   1. it writes fresh random numbers (a new seed each time) into input()[0..n),
//   2. it fills output()[0..n) and device.in/device.out with NaN, and puts guard bytes just past
//      the end of both device arrays,
//   3. it calls round_trip() once, with a kernel whose coefficients a and b are new for this run,
//   4. it waits for stream s and only for stream s (cudaStreamSynchronize(s)),
//   5. it compares output()[i] with fmaf(a, input()[i], b) for every i, and checks the guards.
// The result can only come from the GPU (you do not know a and b), every call must do the whole
// trip (the input changes between calls), and everything must have finished once stream s has.
#pragma once

// What exercise code may use, and what not (the checker refuses the latter before anything runs,
// naming the call, in `lab-check run` as in grading): the CUDA runtime for the work itself
// (kernels, copies, events, graphs, streams made with cudaStreamCreate* or lab::SideStream,
// which every timed sample waits for), CUB and Thrust, and the C and C++ libraries' containers,
// algorithms, maths and clocks. Not: files, threads, processes, the environment or leaving the
// program (no exercise needs them); device-wide settings (cudaDeviceReset, cudaDeviceSetLimit,
// cache and memory-pool settings); host callbacks (cudaLaunchHostFunc, host graph nodes: do the
// host's part in the function itself); cudaProfilerStart/Stop (run the program with --profile);
// the driver API (cu*: use the runtime's cuda* calls).

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <memory>

namespace l03 {

/// @brief The device side of the round trip, owned by the harness. Do not free these.
struct DeviceArrays {
  float* in = nullptr;         ///< n floats on the GPU: your upload writes here
  const float* out = nullptr;  ///< n floats on the GPU: the kernel writes here, your download
                               ///< reads from here
  std::size_t n = 0;           ///< number of elements in each array (the n given to setup)
};

/// @brief The harness's trivial kernel, out[i] = a * in[i] + b over all n elements of
/// DeviceArrays. Call it with the stream it should run on: kernel(stream). It only enqueues.
using Kernel = std::function<void(cudaStream_t stream)>;

/// @brief What you implement: derive from it in exercise.cu and return one from make_round_trip().
class RoundTrip {
 public:
  /// @brief TEARDOWN (not timed): free what setup() allocated.
  virtual ~RoundTrip() = default;

  /// @brief SETUP (not timed): allocate the host input and output buffers, n floats each.
  /// @param n number of elements in each buffer
  virtual void setup(std::size_t n) = 0;

  /// @return the host input buffer (n floats), valid from setup() until destruction; the harness
  ///         writes the input here before calling round_trip()
  virtual float* input() = 0;

  /// @return the host output buffer (n floats), valid from setup() until destruction; the
  ///         harness reads the result here once stream s has finished
  virtual float* output() = 0;

  /// @brief TIMED: enqueue on @p stream the upload input() -> device.in, then kernel(stream),
  /// then the download device.out -> output(). Enqueue only: no allocation, no pinning, no
  /// waiting. When stream @p stream has finished, output() must hold the result.
  /// @param device the harness's device arrays
  /// @param kernel the harness's kernel; call kernel(stream) between the two copies
  /// @param stream the stream the harness times and waits for
  virtual void round_trip(const DeviceArrays& device, const Kernel& kernel,
                          cudaStream_t stream) = 0;

 protected:
  RoundTrip() = default;
  RoundTrip(const RoundTrip&) = delete;
  RoundTrip& operator=(const RoundTrip&) = delete;
};

/// @brief SETUP (not timed): defined in exercise.cu; returns your round trip, not yet set up.
std::unique_ptr<RoundTrip> make_round_trip();

}  // namespace l03
