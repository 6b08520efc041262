// Lesson 07 exercise: hide the transfers behind the kernel.
//
// This schedule is correct, but everything runs on one stream: chunk after chunk, copy in, then
// compute, then copy out. At any moment only one of the three engines (host-to-device copy,
// SMs, device-to-host copy) has work, so the time is the sum of the three stages.
// Goal (what the checker tests): overlap_efficiency = (stage sum - your time) / (stage sum -
// longest stage) of [at least 0.75](check.toml#overlap) with the 16 chunks the harness asks for,
// [at least 1.5x faster](check.toml#speedup) than the serial version, and output bitwise
// identical to it. Read exercise.cuh first: it says
// what "fork" and "join" mean for `main`.
#include <algorithm>

#include "exercise.cuh"
#include "lab/check.hpp"

void l07::pipelined(const Stages& stages, int chunks, const std::vector<cudaStream_t>& streams,
                    cudaStream_t main) {
  (void)streams;  // TODO: use them.
  const std::size_t n = stages.n;
  const std::size_t chunk = (n + chunks - 1) / chunks;  // the last chunk may be shorter
  // TODO: put chunk c on its own stream (streams[c % streams.size()]), keeping its three stages
  // in order on that stream. Two things then need events (cudaEventRecord, cudaStreamWaitEvent):
  //   fork: the streams must not start before the work already on `main` (it writes the input);
  //   join: `main` must wait for every stream you used before this function returns.
  for (std::size_t offset = 0; offset < n; offset += chunk) {
    const std::size_t count = std::min(chunk, n - offset);
    stages.copy_in(offset, count, main);
    stages.compute(offset, count, main);
    stages.copy_out(offset, count, main);
  }
}
