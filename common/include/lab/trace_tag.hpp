/// @file trace_tag.hpp
/// @brief How lab::benchmark marks its samples for the checker's tracer (checker/tracer): the
/// kernel that opens a sample on its stream and the one that closes it take a TraceTag as their
/// first argument, and the tracer reads it when they are launched. The GPU's own timestamps of
/// those two kernels then time the same interval as the events, by a second instrument
/// (docs/grading-security.md, "Trust in results"). Host only, no CUDA.
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

/// The kernels that carry a TraceTag, by their device names (extern "C": nothing to demangle).
inline constexpr const char* kTraceKernels[] = {"lab_lead_in_kernel", "lab_clock_probe_kernel",
                                                "lab_trace_mark_kernel"};

}  // namespace lab
