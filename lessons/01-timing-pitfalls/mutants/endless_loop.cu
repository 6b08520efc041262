// Mutant: never returns. The checker must kill it at the lesson's time limit and go on.
#include "exercise.cuh"

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  volatile bool forever = true;
  while (forever) work(stream);
  return 0;
}
