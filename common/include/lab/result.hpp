/// @file result.hpp
/// @brief The result document a lesson writes with --json (schema cuda-perf-lab/result/1; see
/// docs/result-file.md). Plain structs plus a writer and a reader (host only).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lab/device.hpp"
#include "lab/timing.hpp"

namespace lab {

/// The schema identifier written into every result file.
inline constexpr const char* kResultSchema = "cuda-perf-lab/result/1";

/// At most this many samples of a variant are written (samples_ms), evenly spaced over the run.
inline constexpr std::size_t kMaxResultSamples = 2000;

/// @brief What a variant is, for the table and the checker.
enum class Role {
  Baseline,   ///< given code the lesson starts from or compares with
  Exercise,   ///< the student's code (the starter, the solution, or a submission)
  Reference,  ///< a library's implementation (cuBLAS, CUB) or the hardware ceiling
};

/// @param role a role
/// @return "baseline", "exercise" or "reference"
const char* to_string(Role role);

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

  /// @param name a variant name
  /// @return the variant, or nullptr
  const VariantResult* find(const std::string& name) const;
};

/// @param result the document
/// @return its JSON text (pretty-printed)
std::string to_json_text(const Result& result);

/// @param text a JSON document
/// @return the parsed document; throws std::runtime_error with a readable message on a wrong
///         schema or a malformed document
Result parse_result(const std::string& text);

/// @brief Writes @p text to @p path atomically (a temporary file in the same folder, renamed).
/// @param path destination
/// @param text content
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace lab
