// Mutant: never runs the work and guesses. The harness poisons the output before calling the
// timer, so the missing work shows up as wrong output.
#include "exercise.cuh"

double time_one_execution_ms(const Work&, cudaStream_t) { return 0.5; }
