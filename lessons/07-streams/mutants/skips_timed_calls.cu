// Mutant: the reference solution, but it recognises the timed calls. The harness's validations
// put a 2 ms spin and the input's copy on `main` right before calling pipelined(); the timing
// loop's lead-in is far shorter (at most 1 ms). So when the previous call had the same n and
// `main` drains within 1.5 ms, it enqueues nothing: "the same input as last time, the output is
// already there". Before, that was true of every timed call, so this passed, timed at next to
// nothing; now the harness changes the input at 64 random positions and poisons the output at
// those and 256 more before every timed call, and checks some of them.
// Expected: rule "correct" fails.
// Lesson 07 reference solution: fork, one chunk per stream in turn, join.
//
// Three engines work at the same time: a copy engine for host-to-device, the SMs, and another
// copy engine for device-to-host (PCIe carries both directions at once). Cut the array into k
// chunks and give each chunk its own stream: while chunk c computes, chunk c+1 uploads and
// chunk c-1 downloads. With balanced stages of S each, the time falls from 3S to about
// S (1 + 2/k): the first chunk's upload and the last chunk's download are the only parts that
// nothing hides.
#include <algorithm>
#include <chrono>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

// Events used only for ordering: no timestamps, cheaper to record and to wait on.
cudaEvent_t ordering_event() {
  cudaEvent_t e = nullptr;
  LAB_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

}  // namespace

void l07::pipelined(const Stages& stages, int chunks, const std::vector<cudaStream_t>& streams,
                    cudaStream_t main) {
  static std::size_t last_n = 0;
  const bool same_n = stages.n == last_n;
  last_n = stages.n;
  if (same_n) {  // BUG: a quiet `main` says nothing about the input
    cudaEvent_t probe = ordering_event();
    LAB_CHECK(cudaEventRecord(probe, main));
    const auto t0 = std::chrono::steady_clock::now();
    cudaError_t q = cudaEventQuery(probe);
    while (q == cudaErrorNotReady &&
           std::chrono::steady_clock::now() - t0 < std::chrono::microseconds(1500))
      q = cudaEventQuery(probe);
    LAB_CHECK(cudaEventDestroy(probe));
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) LAB_CHECK(q);
  }

  const std::size_t n = stages.n;
  const std::size_t chunk = (n + chunks - 1) / chunks;
  const std::size_t used = std::min(streams.size(), static_cast<std::size_t>(chunks));

  // Fork: every stream starts after what is already on main (the input being written).
  cudaEvent_t fork = ordering_event();
  LAB_CHECK(cudaEventRecord(fork, main));
  for (std::size_t i = 0; i < used; ++i) LAB_CHECK(cudaStreamWaitEvent(streams[i], fork, 0));

  // Depth-first issue: chunk c's three stages in order on stream c % used. Within a stream the
  // order is the data dependency; across streams nothing waits, so the copy engines and the SMs
  // each pick up the next chunk as soon as they are free. (Breadth-first issue, all copy_ins,
  // then all computes, then all copy_outs, works as well on GPUs with separate copy engines per
  // direction and one stream per chunk; on older GPUs with one copy engine the order mattered.)
  for (int c = 0; c < chunks; ++c) {
    const std::size_t offset = std::min(n, c * chunk);
    const std::size_t count = std::min(chunk, n - offset);  // the last chunk may be shorter
    const cudaStream_t s = streams[c % used];
    stages.copy_in(offset, count, s);
    stages.compute(offset, count, s);
    stages.copy_out(offset, count, s);
  }

  // Join: main waits for every stream, so the harness's stop event (and anything else put on
  // main later) comes after the last download.
  for (std::size_t i = 0; i < used; ++i) {
    cudaEvent_t done = ordering_event();
    LAB_CHECK(cudaEventRecord(done, streams[i]));
    LAB_CHECK(cudaStreamWaitEvent(main, done, 0));
    LAB_CHECK(cudaEventDestroy(done));  // safe: released once the GPU has passed it
  }
  LAB_CHECK(cudaEventDestroy(fork));
}
