// Every stream a lesson program makes through the CUDA runtime (an exercise's own, for a capture in
// setup(), say) is a side stream: lab::benchmark orders it with every sample, so work put on it is
// timed however the code orders it, and an exercise may make streams the ordinary way. Only the
// harness's own streams (lab::Stream, through lab::make_harness_stream) are not tracked.
//
// How: these definitions in the program take the place of the runtime's (a definition in an
// object the program links wins over a shared library's), and call the runtime's own, found with
// dlsym(RTLD_NEXT). A plain C++ file: in a .cu file the runtime's device-side headers define some
// of these names already.
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

#include "lab/check.hpp"
#include "lab/memory.hpp"
#include "side_streams.hpp"

namespace lab {
namespace {

// The next definition of a call after the program's: libcudart's, or a tracer's in between.
template <class F>
F next_definition(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) throw std::runtime_error(std::string("lab: the CUDA runtime has no ") + name);
  return reinterpret_cast<F>(f);
}

using Create = cudaError_t (*)(cudaStream_t*);
using CreateWithFlags = cudaError_t (*)(cudaStream_t*, unsigned);
using CreateWithPriority = cudaError_t (*)(cudaStream_t*, unsigned, int);
using Destroy = cudaError_t (*)(cudaStream_t);

Create runtime_create() {
  static const auto f = next_definition<Create>("cudaStreamCreate");
  return f;
}

cudaError_t tracked(cudaError_t created, const cudaStream_t* stream) {
  if (created == cudaSuccess && stream) track_stream(*stream);
  return created;
}

}  // namespace

cudaStream_t make_harness_stream() {
  cudaStream_t stream = nullptr;
  LAB_CHECK(runtime_create()(&stream));  // blocking, and not tracked
  return stream;
}

}  // namespace lab

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return lab::tracked(lab::runtime_create()(stream), stream);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  static const auto create = lab::next_definition<lab::CreateWithFlags>("cudaStreamCreateWithFlags");
  return lab::tracked(create(stream, flags), stream);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int flags, int priority) {
  static const auto create =
      lab::next_definition<lab::CreateWithPriority>("cudaStreamCreateWithPriority");
  return lab::tracked(create(stream, flags, priority), stream);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  static const auto destroy = lab::next_definition<lab::Destroy>("cudaStreamDestroy");
  lab::untrack_stream(stream);
  return destroy(stream);
}

}  // extern "C"
