// Corroboration: every time a lesson program reports is checked against an instrument its code
// does not control. The checker's tracer (checker/tracer), loaded into the program by the CUDA
// driver, times each of lab::benchmark's samples with events of its own, recorded on the stream
// right after the kernel that opens the sample and right before the one that closes it (the
// kernels of lab/trace_tag.hpp); a variant's reported median must agree with the median of those
// spans within the tolerance below, in both directions. docs/grading-security.md says why and
// what it still does not cover.
#pragma once

#include <cstddef>
#include <filesystem>
#include <istream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// The tracer library this checker was built with, or empty (none was built).
fs::path built_tracer();

/// One measured sample as the tracer saw it.
struct TracedSample {
  int measurement = 0;  ///< the lab::benchmark call it belongs to (TraceTag::measurement)
  int variant = -1;     ///< the variant's place in the result file; -1: not a variant
  int sample = 0;       ///< its index in that measurement
  int batch = 1;        ///< launches it timed
  bool lead_in = true;  ///< opened by the lead-in (else by a mark launched before the host waited)
  double span_ms = 0;   ///< from the end of the kernel that opened it to the start of the one that
                        ///< closed it, on one stream (the tracer's events): the interval the
                        ///< program's events measure, and a little
};

/// A trace file, read (the format is at the top of checker/tracer/tracer.cpp).
struct Trace {
  bool loaded = false;  ///< it starts with the header: the tracer was loaded and set up
  std::string unusable;  ///< why it cannot be used: the tracer could not set up (not the
                         ///< program's doing), or the file is damaged or ends early (then it is)
  bool set_up = false;   ///< loaded and set up (no "F" line; a header this checker reads)
  bool ended = false;    ///< the end line: the program exited through exit() and all was flushed
  std::size_t lost = 0;        ///< samples whose events the tracer could not read
  std::size_t launches = 0;    ///< tagged launches ("T")
  std::size_t spans = 0;       ///< spans timed by the tracer ("S")
  std::vector<TracedSample> samples;   ///< every measured sample (index >= 0) opened and closed
  std::vector<std::string> conflicts;  ///< what the library cannot have launched (a sample opened
                                       ///< twice, opened and closed with two tags, ...)
};

/// Parses a trace. Never throws: a malformed line makes it unusable, saying which.
Trace parse_trace(std::istream& in);
/// parse_trace of a file; a missing or empty file is a trace that was never loaded.
Trace read_trace(const fs::path& file);

/// The tolerance. The traced span holds the events' interval (stream order: the opening kernel
/// ends before the start event, the closing one starts after the stop event), so per sample
/// traced = reported + gap, where the gap is the GPU's turnaround at the two ends (a few us
/// after a lead-in; after a mark, also the host waking from its wait and recording the start
/// event), less at most the event timer's resolution (0.5 us). The reported median must lie in
///   [traced * (1 - kTraceRelative) - gap / batch,  traced * (1 + kTraceRelative) + kTraceResolutionMs / batch]
/// per launch, gap = kTraceLeadInGapMs or kTraceMarkGapMs. The relative part covers what the two
/// clocks may still disagree on; docs/history/grading-security-log.md has the numbers measured
/// on the H100.
inline constexpr double kTraceRelative = 0.02;
inline constexpr double kTraceLeadInGapMs = 0.005;
inline constexpr double kTraceMarkGapMs = 0.030;
inline constexpr double kTraceResolutionMs = 0.001;

/// How one variant's reported time compares with the trace.
struct VariantCheck {
  std::string name;
  double reported_ms = 0;  ///< the result file's median per launch
  double traced_ms = 0;    ///< the median per launch of the traced samples
  double low_ms = 0, high_ms = 0;  ///< where the reported median may lie
  std::size_t reported_samples = 0, dropped_samples = 0, traced_samples = 0;
  std::string problem;     ///< "" when corroborated
};

enum class Corroboration {
  agrees,       ///< every timed variant is corroborated
  disagrees,    ///< a variant is not (or the trace was damaged after the tracer was set up)
  unavailable,  ///< there is no usable trace, through no doing of the program's (see message)
  off,          ///< not asked for (--no-corroborate)
};
const char* to_string(Corroboration c);

struct CorroborationResult {
  Corroboration state = Corroboration::unavailable;
  std::string message;  ///< disagrees: the first problem, naming its variant; unavailable: why
  std::vector<VariantCheck> variants;
};

/// Checks every variant of a (validated) result document that has a time against the trace.
CorroborationResult corroborate(const json& result, const Trace& trace);

/// The record kept in the checker's report: state, message, and each variant's numbers.
json corroboration_json(const CorroborationResult& c);
/// One line for the terminal from a lesson's records (one per run), e.g. "times corroborated by
/// the checker's tracer: 3 variants, at most 0.8% apart (\"naive\")"; "" when there are none.
std::string corroboration_line(const json& runs);

}  // namespace lab
