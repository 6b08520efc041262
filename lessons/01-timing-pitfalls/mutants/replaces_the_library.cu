// Mutant: replaces a function the harness calls. The harness and the lab library time the
// reference measurements with cudaEventElapsedTime, which the CUDA runtime provides; a definition
// in exercise.cu is linked in its place (a program's own symbol wins over a shared library's) and
// can report whatever it likes: here, every event pair reads exactly what the exercise reported,
// so the exercise's timer always "agrees". (Replacing a lab:: function outright does not even
// link: the pristine objects are linked as objects, and the definitions clash.)
// Expected: verdict "error", reason "forbidden" (the checker names cudaEventElapsedTime); it is
// never run.
#include <cuda_runtime.h>

#include "exercise.cuh"

namespace {
float last_reported = 1.0f;
}  // namespace

extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) {
  *ms = last_reported;
  return cudaSuccess;
}

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  work(stream);
  return last_reported;
}
