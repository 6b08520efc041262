// Mutant: does not compile (a missing semicolon). The checker must report the compiler's error
// for this lesson and grade the others.
#include "exercise.cuh"

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  work(stream)
  return 1.0;
}
