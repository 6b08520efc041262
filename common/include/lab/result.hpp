/// @file result.hpp
/// @brief The result file a lesson program writes with --json and the checker reads (schema
/// cuda-perf-lab/result/1, docs/result-file.md): its structs, the names of its modes and roles,
/// the rates derived from a measurement, and the writer. Plain C++ (library lab_result: no CUDA
/// header, no CUDA runtime), so the checker links the same code; the reader is in
/// lab/result_reader.hpp.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lab/device.hpp"
#include "lab/stats.hpp"

namespace lab {

/// The schema identifier written into every result file.
inline constexpr const char* kResultSchema = "cuda-perf-lab/result/1";

/// At most this many samples of a variant are written (samples_ms), evenly spaced over the run.
inline constexpr std::size_t kMaxResultSamples = 2000;

/// @brief How samples are taken.
enum class Mode {
  Cold,   ///< default: one launch per sample, L2 flushed, launch latency hidden by a lead-in
  Hot,    ///< back-to-back launches between one event pair, L2 warm: pipelined throughput
  Graph,  ///< the launches captured once in a CUDA graph and replayed: no CPU launch cost
};

/// Every mode, in the order --mode lists them.
inline constexpr Mode kModes[] = {Mode::Cold, Mode::Hot, Mode::Graph};

/// @param mode a mode
/// @return "cold", "hot" or "graph": its name on the command line and in the result file
const char* to_string(Mode mode);

/// @param name a mode's name
/// @return the mode, or nothing if no mode has that name
std::optional<Mode> mode_named(std::string_view name);

/// @brief What a variant is, for the table and the checker.
enum class Role {
  Baseline,   ///< given code the lesson starts from or compares with
  Exercise,   ///< the student's code (the starter, the solution, or a submission)
  Reference,  ///< a library's implementation (cuBLAS, CUB) or the hardware ceiling
};

/// Every role.
inline constexpr Role kRoles[] = {Role::Baseline, Role::Exercise, Role::Reference};

/// @param role a role
/// @return "baseline", "exercise" or "reference"
const char* to_string(Role role);

/// @param name a role's name
/// @return the role, or nothing if no role has that name
std::optional<Role> role_named(std::string_view name);

/// @brief What lab::benchmark measured for one piece of work.
struct Measurement {
  Mode mode = Mode::Cold;                ///< how it was measured
  Stats gpu_ms;                          ///< GPU time per launch (events), milliseconds
  double enqueue_us = 0;                 ///< median host time of the launch call (per launch)
  int batch = 1;                         ///< launches per sample (Hot and Graph)
  bool converged = false;                ///< the stopping rule was met before any limit
  /// Why sampling stopped: "converged", "timeout" (BenchmarkOptions::timeout_s), "budget" (the
  /// process's time budget, see set_time_budget) or "samples" (BenchmarkOptions::max_samples).
  std::string stop_reason;
  double sm_clock_mhz = 0;               ///< median SM clock over the timed work (0: unknown)
  int discarded_throttled = 0;           ///< samples dropped: SM clock < 75% of its default
  std::vector<double> samples_ms;        ///< the kept samples (GPU ms per launch), in the order
                                         ///< taken: gpu_ms summarizes these
  std::vector<std::string> diagnostics;  ///< why a number may not be trusted, in words
};

/// @brief The rates of one launch. Every GB/s, GFLOP/s and fraction of a ceiling that the table
/// prints, the result file holds and the checker judges is computed by rates_of.
struct Rates {
  double gbs = 0;                          ///< bytes per second, in 10^9
  double gflops = 0;                       ///< FLOPs per second, in 10^9
  std::optional<double> intensity;         ///< FLOPs per byte (when there are bytes)
  std::optional<double> fraction_of_copy;  ///< gbs over the copy ceiling
  std::optional<double> fraction_of_peak;  ///< gbs over the theoretical DRAM bandwidth
};

/// @param bytes global-memory bytes read plus written by one launch
/// @param flops floating-point operations of one launch
/// @param host_link the bytes cross the host link: they have no fraction of a device-memory
///        ceiling (their ceiling is the pinned transfer rate)
/// @param median_ms the median time of one launch (> 0, else every rate is 0)
/// @param copy_gbs the copy ceiling measured in the same run (0: unknown, no fraction_of_copy)
/// @param peak_gbs the theoretical DRAM bandwidth (0: unknown, no fraction_of_peak)
/// @return the rates
Rates rates_of(double bytes, double flops, bool host_link, double median_ms, double copy_gbs,
               double peak_gbs);

/// @brief One validation of one variant on one case (a size and a seed).
struct CheckResult {
  std::string name;            ///< e.g. "1000x777 seed 7" or "after timing"
  bool ok = false;             ///< passed
  double max_abs_error = 0;    ///< from lab::Comparison
  double max_rel_error = 0;    ///< from lab::Comparison
  double rel_l2_error = 0;     ///< from lab::Comparison
  std::size_t mismatches = 0;  ///< from lab::Comparison
  std::string message;         ///< what went wrong, in words (empty when ok)
};

/// @brief Everything recorded about one variant.
struct VariantResult {
  std::string name;                        ///< unique within the lesson
  Role role = Role::Baseline;              ///< see Role
  std::string description;                 ///< one line for the table's legend
  std::vector<CheckResult> checks;         ///< validations, in the order they ran
  std::optional<Measurement> measurement;  ///< absent if it was not timed
  double bytes = 0;                        ///< global-memory bytes read + written per launch
  double flops = 0;                        ///< floating-point operations per launch
  bool host_link = false;                  ///< the bytes cross the host link (see lab::Work)
  /// @return true if it was checked at least once and every check passed
  bool correct() const;
};

/// @brief A lesson-specific number with its uncertainty (e.g. overlap efficiency).
struct Metric {
  double value = 0;  ///< the number from medians
  double low = 0;    ///< pessimistic reading
  double high = 0;   ///< optimistic reading
  std::string unit;  ///< for display
};

/// @brief What a --replay run found in the record it was given (lab/record.hpp).
struct ReplaySummary {
  std::size_t entries = 0;           ///< checks, calls and parameters in the record
  std::size_t used = 0;              ///< of them, the ones this run asked for
  std::vector<std::string> missing;  ///< checks and calls this run asked for that it lacked
  std::vector<std::string> unused;   ///< entries it never asked for (the first few)
  std::string error;                 ///< why it could not be read ("" if it was)
};

/// @brief The whole document.
struct Result {
  std::string lesson;                         ///< "04-coalescing"
  std::string build;                          ///< starter | solution | submission | mutant-\<m\>
  std::string nonce;                          ///< echoed from --nonce
  bool complete = false;                      ///< the lesson ran to its end
  std::optional<DeviceInfo> device;           ///< absent if no GPU
  bool debug_build = false;                   ///< built with device debug info (-G)
  std::optional<Ceilings> ceilings;           ///< absent if not measured
  std::uint64_t seed = 0;                     ///< the inputs' seed
  bool quick = false;                         ///< --quick (small sizes, short timing)
  Mode mode = Mode::Cold;                     ///< default measurement mode
  std::vector<std::string> sizes;             ///< problem sizes, in words
  std::vector<VariantResult> variants;        ///< in declaration order
  std::map<std::string, Metric> metrics;      ///< lesson-specific numbers
  std::vector<std::string> diagnostics;       ///< run-wide trust warnings
  bool environment_ok = true;                 ///< timings can be trusted (see docs)
  std::optional<ReplaySummary> replay;        ///< only in a --replay run

  /// @param name a variant name
  /// @return the variant, or nullptr
  const VariantResult* find(const std::string& name) const;
  /// @param v one of this result's variants, measured
  /// @return its rates, against this result's ceilings and device
  Rates rates(const VariantResult& v) const;
};

/// @param result the document
/// @return its JSON text (pretty-printed)
std::string to_json_text(const Result& result);

/// @brief Writes @p text to @p path atomically (a temporary file in the same folder, renamed).
/// @param path destination
/// @param text content
void write_file_atomically(const std::string& path, const std::string& text);

/// @brief The first half of write_file_atomically, for a writer that must open its file early
/// (a lesson program opens its result file before the system calls are restricted).
/// @param path destination
/// @return `path`.tmp opened for writing, or nullptr (errno says why)
std::FILE* open_for_atomic_write(const std::string& path);

/// @brief Makes @p text the whole content of the file open as @p fd: written from its start and
/// cut to its length, so that nothing written through the descriptor before (by exercise code
/// that found it open) survives.
/// @param fd open for writing, on a regular file
/// @param text content
/// @return false on an error (errno says which)
bool write_whole_file(int fd, const std::string& text);

/// @brief The second half: writes @p text to @p tmp (write_whole_file), closes it and renames it
/// to @p path.
/// @param tmp from open_for_atomic_write(@p path); closed whatever happens
/// @param path destination
/// @param text content
/// @throws std::runtime_error if it cannot be written, closed or renamed
void commit_atomic_write(std::FILE* tmp, const std::string& path, const std::string& text);

}  // namespace lab
