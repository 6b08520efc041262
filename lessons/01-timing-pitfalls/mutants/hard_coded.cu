// Mutant: runs the work (so its output is right) but reports a constant. Sizes differ by 100x,
// so no constant can be within 10% of all of them.
#include "exercise.cuh"

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  work(stream);
  return 1.0;
}
