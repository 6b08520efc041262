// The library's record of the streams a lesson program made (timing.cu), for the interposers of
// the runtime's stream calls (streams.cpp). Private to the library: not a header a lesson or an
// exercise includes.
#pragma once

#include <cuda_runtime_api.h>

namespace lab {

/// A stream the program made: from now on ordered with every sample of lab::benchmark.
void track_stream(cudaStream_t stream);
/// A stream about to be destroyed: inside a sample, the stop event first waits for its work.
void untrack_stream(cudaStream_t stream);

}  // namespace lab
