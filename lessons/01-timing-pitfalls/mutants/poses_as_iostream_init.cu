// Mutant: code before main, dressed as the one initializer the seal lets through. g++ before 13
// emits, in every file that includes <iostream>, an initializer `_GLOBAL__sub_I_<file>` that
// constructs std::ios_base::Init and nothing else, and the seal does not count that one as the
// exercise's code before main. This file names a constructor of its own like it, constructs
// Init in it as that one does, and then tail-calls a helper placed in the same section (a jump
// with no relocation), which starts a kernel that keeps one SM busy for a second: the harness
// measures its ceilings before any exercise code is meant to run, and a busy GPU would make them
// low and every fraction of them high. The seal checks that every call and jump in such an
// initializer is relocated to Init's constructor, its destructor or __cxa_atexit, and that it
// ends there; this one does not.
// Expected: verdict "error", reason "forbidden" (code before main); it is never run.
#include <iostream>
#include <new>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

__global__ void busy(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__attribute__((noinline, section(".text.startup"))) void start_busy() { busy<<<1, 1>>>(2'000'000'000LL); }

}  // namespace

// Where g++ keeps its Init object: file-static storage, reached as .bss like g++'s own.
alignas(std::ios_base::Init) static char init_storage[sizeof(std::ios_base::Init)];

// A local symbol with g++'s own name for such an initializer.
__attribute__((constructor)) static void pose() __asm__("_GLOBAL__sub_I_poses_as_iostream_init");
static void pose() {
  new (init_storage) std::ios_base::Init;
  start_busy();
}

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  cudaEvent_t start = nullptr, stop = nullptr;
  LAB_CHECK(cudaEventCreate(&start));
  LAB_CHECK(cudaEventCreate(&stop));
  LAB_CHECK(cudaEventRecord(start, stream));
  work(stream);
  LAB_CHECK(cudaEventRecord(stop, stream));
  LAB_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  LAB_CHECK(cudaEventElapsedTime(&ms, start, stop));
  LAB_CHECK(cudaEventDestroy(start));
  LAB_CHECK(cudaEventDestroy(stop));
  return ms;
}
