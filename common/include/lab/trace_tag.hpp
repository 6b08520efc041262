/// @file trace_tag.hpp
/// @brief How lab::benchmark hands its samples to the checker's tracer (checker/tracer): right
/// after launching the kernel that opens a sample on its stream, and right before launching the
/// one that closes it, it gives the tracer the sample's TraceTag and the stream; the tracer
/// records an event of its own there. The tracer's events then time the same interval as the
/// program's, by a second instrument (docs/grading-security.md, "Trust in results"). The kernels
/// still take the tag as their first argument, from when the tracer read it at their launch; they
/// do not use it. Host only, no CUDA.
#pragma once

#include <cstdint>

namespace lab {

/// Which kernel of a sample a TraceTag travels with. A sample with a lead-in is opened by the
/// lead-in and closed by the clock probe; one without (BenchmarkOptions::lead_in_us = 0) by a
/// mark launched before the stream is waited for, and a mark after the stop event.
enum TraceEdge : std::int32_t {
  kTraceLeadIn = 0,      ///< opens: the lead-in ends right before the start event
  kTraceClockProbe = 1,  ///< closes: the clock probe starts right after the stop event
  kTraceOpenMark = 2,    ///< opens a sample without a lead-in (before the host waits)
  kTraceCloseMark = 3,   ///< closes a sample without a lead-in
};

/// The first argument of every kernel named in kTraceKernels. Plain data: the tracer copies it.
struct TraceTag {
  std::int32_t measurement;  ///< the lab::benchmark call's number in this process (0, 1, ...)
  std::int32_t variant;      ///< the variant's place in the result file; -1: no variant (ceilings)
  std::int32_t sample;       ///< the sample's index; -1: warm-up
  std::int32_t batch;        ///< launches of the measured work in the sample
  std::int32_t edge;         ///< a TraceEdge
};
static_assert(sizeof(TraceTag) == 20, "the tracer reads TraceTag as five 32-bit integers");

/// What the tracer registers: called with a sample's tag and its stream (a cudaStream_t).
using TraceEdgeFunction = void (*)(const TraceTag* tag, void* stream);
/// The version of this handshake; lab_trace_register refuses any other.
inline constexpr int kTraceAbi = 2;

}  // namespace lab

/// @brief Exported by every lesson program (lab's CMake links it with
/// --export-dynamic-symbol=lab_trace_register). The tracer, which the CUDA driver loads inside
/// cuInit (the program's first CUDA call, before any exercise code), calls it to hand over its
/// entry point; the last registration wins.
/// @param abi the tracer's kTraceAbi
/// @param edge called at each opening and closing edge of a sample
/// @return 1 if accepted, 0 if the ABI differs
extern "C" int lab_trace_register(int abi, lab::TraceEdgeFunction edge);
