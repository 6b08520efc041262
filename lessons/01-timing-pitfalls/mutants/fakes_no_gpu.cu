// Mutant: the "no GPU" exit. On its first call it ends the program with exit code 77, the code the
// harness uses when there is no usable GPU, hoping the checker calls that the environment's fault
// (no points lost, a re-run) rather than the student's.
// Expected: verdict "error", reason "exit": the checker asks the driver itself (NVML) and sees a
// GPU, so the code 77 is the program's own doing. (Without a GPU it is `environment`, rightly.)
#include <cstdlib>

#include "exercise.cuh"

double time_one_execution_ms(const Work& work, cudaStream_t stream) {
  work(stream);
  std::exit(77);
}
