// A legitimately different correct solution that the seal must not refuse: the streams given
// ordered with events made without timing, an NVTX range per chunk for nsys (nvtx3 C++), names
// built with std::to_string. Judged on its correctness.
#include "exercise.cuh"

#include <nvtx3/nvtx3.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace l07 {
void pipelined(const Stages& stages, int chunks, const std::vector<cudaStream_t>& streams,
               cudaStream_t main) {
  nvtx3::scoped_range whole{"pipelined"};
  const std::size_t per = (stages.n + chunks - 1) / chunks;
  cudaEvent_t start;
  cudaEventCreateWithFlags(&start, cudaEventDisableTiming);
  cudaEventRecord(start, main);
  std::vector<cudaEvent_t> done(streams.size());
  for (std::size_t s = 0; s < streams.size(); ++s) {
    cudaStreamWaitEvent(streams[s], start, 0);
    cudaEventCreateWithFlags(&done[s], cudaEventDisableTiming);
  }
  for (int c = 0; c < chunks; ++c) {
    const std::size_t offset = std::min(stages.n, c * per);
    const std::size_t count = std::min(per, stages.n - offset);
    if (count == 0) break;
    nvtx3::scoped_range chunk{"chunk " + std::to_string(c)};
    cudaStream_t s = streams[c % streams.size()];
    stages.copy_in(offset, count, s);
    stages.compute(offset, count, s);
    stages.copy_out(offset, count, s);
  }
  for (std::size_t s = 0; s < streams.size(); ++s) {
    cudaEventRecord(done[s], streams[s]);
    cudaStreamWaitEvent(main, done[s], 0);
    cudaEventDestroy(done[s]);
  }
  cudaEventDestroy(start);
}
}  // namespace l07
