// Reading and validating the result file a lesson program writes (docs/result-file.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline constexpr const char* kResultSchema = "cuda-perf-lab/result/1";
inline constexpr std::uintmax_t kMaxResultBytes = 16u << 20;

struct LoadedResult {
  bool ok = false;
  std::string error;  ///< one sentence for the student/instructor when !ok
  json doc;
};

/// Reads `path` and checks it: exists, is JSON, has the schema this checker reads, every field
/// the rules use has the right type, and it echoes `nonce` (proof it was written by this run of
/// the harness, not left behind or forged) and names `lesson` (if not empty).
LoadedResult load_result(const fs::path& path, const std::string& nonce,
                         const std::string& lesson);

/// The structural part of the check on an already-parsed document: "" if valid, else why not.
std::string validate_result(const json& doc);

/// The variant called `name`, or nullptr.
const json* find_variant(const json& doc, const std::string& name);

/// Merges several runs of the same lesson into one document (the re-run rule): for each variant
/// the run with the lowest median time is kept, and a variant counts as correct only if it was
/// correct in every run. Runs whose environment_ok is true are preferred: if any run had a
/// healthy environment, only those are used; otherwise all are, and environment_ok stays false.
json combine_runs(const std::vector<json>& runs);

}  // namespace lab
