// Lesson 01 exercise: measure how long one execution of a kernel takes.
//
// This starter makes three classic mistakes. Run it and compare its number with the library's.
//   1. It reads a host clock around an asynchronous launch: it measures the launch call, not the
//      kernel, because the launch returns before the GPU has even started.
//   2. It times the very first call, which includes loading the kernel's code (lazy loading).
//   3. It takes one sample, so one unlucky run decides the answer.
#include <chrono>

#include "exercise.cuh"

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  // TODO: warm up first (run the work a couple of times, untimed).
  // TODO: time on the GPU's clock: cudaEventRecord before and after the work on `stream`,
  //       then cudaEventSynchronize and cudaEventElapsedTime (or synchronize before reading a
  //       host clock, and know that you then also measure the launch and the sync).
  // TODO: take many samples and return their median.
  const auto start = std::chrono::steady_clock::now();
  work(stream);
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(stop - start).count();
}
