/// @file exercise.cuh
/// @brief Lesson 11: what exercise.cu must define, and how the harness (main.cu) uses it.
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
// This lesson also allows NVRTC (nvrtc*) and the C library's file calls for a cache (fopen, fread,
// fwrite, fseek, ftell, fclose, rename, remove); <fstream> and <filesystem> are refused.

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

namespace exercise {

/// @brief What to compile: CUDA C++ source text and the NVRTC options to compile it with, as a
/// library that generates kernels at run time would hand them over.
///
/// The source (the harness writes it, see main.cu) defines two kernels with C linkage:
///   map(const float* x, float* t, int n)         t[i] = f(x[i])                     for i < n
///   smooth(const float* t, float* out, int n)    out[i] = t[i-1]/4 + t[i]/2 + t[i+1]/4,
///                                                with t[-1] = t[0] and t[n] = t[n-1]
/// f is an expression the harness varies, and the options change it too (`-DALPHA=2.0f`): two
/// programs with the same source and different options are different kernels.
struct Program {
  std::string source;  ///< the CUDA C++ text; no #include
  std::vector<std::string>
      options;  ///< NVRTC options, e.g. {"-DALPHA=0.5f"}; never the architecture
};

/// @brief Threads per block the reference launches with. Every element is computed by one
/// thread on its own, so any block size gives the same bits; this one is a good choice.
inline constexpr int kBlockThreads = 256;

/// @brief A runtime-compiled operator: out = smooth(map(x)) for whatever Program it is given.
///
/// The harness calls:
///   1. the constructor, then apply() many times, with a few different programs and sizes;
///      apply() is timed with CUDA events on @p stream, from before the call to after it, with
///      nothing in front of it on the GPU, so whatever the call does on the host (compiling,
///      loading, allocating) is inside the measured time;
///   2. the destructor, at the end.
/// It also runs the program again in new processes that construct an Operator on the same
/// cache folder and time their first apply(), and it damages the files it finds in that folder
/// (cuts them short, flips bits, swaps one entry's file for another's) between processes.
class Operator {
 public:
  /// @param cache_dir an existing folder that this Operator may use as its on-disk cache; other
  ///        processes use the same folder, before, after or at the same time as this one. The
  ///        harness makes it; it holds nothing else.
  /// @param arch the GPU architecture to compile for, as NVRTC's --gpu-architecture takes it:
  ///        "sm_90" on an H100 (the harness reads it from cudaGetDeviceProperties). A cubin for
  ///        one architecture is not the cubin for another, even when both run on this GPU.
  Operator(const std::string& cache_dir, const std::string& arch);
  /// @brief Releases what the Operator holds (loaded code, memory). The harness has waited for
  ///        every call's work to finish.
  ~Operator();
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;

  /// @brief Enqueues out = smooth(map(x)) on @p stream, with the kernels @p program defines,
  /// compiled with exactly its options for this Operator's architecture (nothing else may change
  /// the code: results must be bit for bit those of the same program compiled once, ahead of
  /// time). The intermediate t (n floats) is the call's own: allocate it for the call.
  /// @param program what to compile (the harness passes the same few programs many times)
  /// @param x n floats on the device, read only
  /// @param out n floats on the device, written
  /// @param n number of elements (>= 1)
  /// @param stream the stream to enqueue on; the call need not wait for its work to finish
  void apply(const Program& program, const float* x, float* out, int n, cudaStream_t stream);

 private:
  struct State;                   ///< defined by exercise.cu: caches, pools, handles
  std::unique_ptr<State> state_;  ///< made by the constructor, released by the destructor
};

}  // namespace exercise
