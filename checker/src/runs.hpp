// The runs of a lesson program: the result file one run wrote, accepted or refused with a
// sentence, and several runs combined. The format itself (reader, schema, derived rates) is the
// lab library's: lab/result_reader.hpp.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evidence.hpp"
#include "lab/result_reader.hpp"

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct LoadedResult {
  bool ok = false;
  std::string error;  ///< one sentence for the student/instructor when !ok
  json doc;
};

/// Reads `path` with lab::read_result (at most kMaxResultBytes; JSON within limits; every field
/// of the schema checked) and checks that it echoes `nonce` (proof it was written by this run of
/// the harness, not left behind or forged) and names `lesson` (if not empty).
LoadedResult load_result(const fs::path& path, const std::string& nonce,
                         const std::string& lesson);

/// Merges several judged runs of the same lesson into one (the re-run rule): for each variant
/// the run with the lowest median time is kept, and a variant counts as correct only if it was
/// correct in every run. Runs the checker saw undisturbed are preferred: if any was, only those
/// are used; otherwise all are, and environment_ok stays false. A time the tracer contradicted in
/// any run used stays contradicted; the checker's notes are the latest used run's.
JudgedRun combine_runs(const std::vector<JudgedRun>& runs);

}  // namespace lab
