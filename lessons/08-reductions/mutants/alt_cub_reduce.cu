// Alternative solution: the library instead of a hand-written kernel. exercise::sum hands the whole
// reduction to cub::DeviceReduce::Sum, the same call the harness times as `cub`, and the one the
// lesson's title says it ends at. Nothing in the contract asks for a kernel of one's own: the
// contract is the sum of n floats, enqueued on the stream, in a workspace sized in advance, and
// "use the library when it is already at the memory's speed" is a lesson the course teaches
// itself (lesson 06, "Why the library loses", is the counter-example).
//
// How it keeps the contract:
//   * The workspace is CUB's temporary storage. sum_workspace_bytes(n) asks CUB for it the usual
//     way, with a null temporary pointer, for that very n: CUB's size depends on n (the number of
//     blocks of its first pass, one partial each; a single-tile problem asks for 1 byte), and the
//     harness asks once per size and passes that workspace to every call of that size.
//   * sum() needs the byte count to pass back to CUB (CUB checks that its storage is large
//     enough), so it asks again, for the same n: a host-side computation, no allocation, no
//     synchronization, no device work. Then one call to DeviceReduce::Sum enqueues CUB's kernels
//     on the stream given. The 0xFF bytes the harness leaves in the workspace do not matter: CUB
//     writes its per-block partials before reading them and relies on no zeros.
//   * The count goes to CUB as a long long, as in the harness's own `cub` variant: the same
//     64-bit offset type, so the same kernels, tuning and grid as the `cub` it is compared with
//     (only the input pointer differs, const float* here, float* there: CUB only reads it).
//   * A null workspace would turn the second call into another size query and compute nothing,
//     so sum_workspace_bytes never answers 0 (CUB's own answer is at least 1 anyway).
//
// Accuracy: CUB adds in a tree of per-thread and per-block partials, far inside the README's
// bound; on integer-valued data every order of addition is exact.
// Expected: passes every rule (over_cub reads about 1.0, bandwidth about 1.06 of copy on the H100).
#include <cub/cub.cuh>

#include <algorithm>
#include <cstddef>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace {

// CUB's temporary-storage size for a sum of n floats into one float (a size query: with a null
// storage pointer DeviceReduce::Sum only computes the size and enqueues nothing).
std::size_t cub_storage_bytes(const float* x, std::size_t n, float* result) {
  std::size_t bytes = 0;
  LAB_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, x, result, static_cast<long long>(n)));
  return bytes;
}

}  // namespace

namespace exercise {

std::size_t sum_workspace_bytes(std::size_t n) {
  // The size does not depend on the pointers, only on n and the device.
  return std::max<std::size_t>(cub_storage_bytes(nullptr, n, nullptr), 1);
}

void sum(const float* x, std::size_t n, float* result, void* workspace, cudaStream_t stream) {
  std::size_t bytes = cub_storage_bytes(x, n, result);  // what CUB will check: <= the workspace
  LAB_CHECK(
      cub::DeviceReduce::Sum(workspace, bytes, x, result, static_cast<long long>(n), stream));
}

}  // namespace exercise
