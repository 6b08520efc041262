// Outputs: the neutral result.json, Gradescope results.json, JUnit XML, the terminal table and
// the merged gradebook (CSV + JSON).
#pragma once

#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "judge.hpp"

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline constexpr const char* kGradeSchema = "cuda-perf-lab/grade/1";
inline constexpr const char* kGradebookSchema = "cuda-perf-lab/gradebook/1";

namespace reason {
/// The checker itself failed while building or judging the lesson (an exception it did not
/// expect): an `error` the student did not cause, so `grade` grades the submission again.
inline constexpr const char* checker = "checker";
}  // namespace reason

/// Everything graded for one submission (or one `run`).
struct Report {
  std::string name;          ///< the submission (its output folder's name), or the build judged
  std::string folder;        ///< grade: the submission folder's own name, as handed in
  std::string folder_path;   ///< grade: the submission folder's absolute path (two sections' "alice")
  std::string content_hash;  ///< grade: SHA-256 of what was handed in, lesson by lesson (grade.cpp: content_hash)
  std::string started_at;    ///< ISO 8601, UTC
  std::string finished_at;
  bool complete = false;     ///< false while grading is under way (or was interrupted)
  std::string containment;   ///< how student processes were contained (sandbox.hpp); "" = not said
  std::string baselines;     ///< where the speedup rules' baselines were timed; "" = not said
  std::string system_calls;  ///< whether lesson programs filtered their system calls; "" = not said
  std::vector<LessonOutcome> lessons;

  double score() const;
  double max_score() const;
};

std::string utc_now();

json outcome_json(const LessonOutcome& lesson);
/// The neutral record (schema cuda-perf-lab/grade/1; `merge` reads it).
json report_json(const Report& report);
/// Gradescope's results.json: score, max_score, tests[] (name, score, max_score, output,
/// visibility, status), one test per rule.
json gradescope_json(const Report& report);
/// JUnit XML: a <testsuite> per lesson, a <testcase> per rule; fail = <failure>, error =
/// <error>, environment = <skipped>.
std::string junit_xml(const Report& report);
/// Writes result.json, gradescope.json and junit.xml into `dir`, each atomically.
void write_report_files(const fs::path& dir, const Report& report);

/// The human table. Colour only when asked (see use_colour).
std::string table_text(const std::vector<LessonOutcome>& lessons, bool colour);
/// Colour on a terminal, unless NO_COLOR is set (https://no-color.org) or TERM=dumb.
bool use_colour(std::FILE* stream);

/// A JSON string dumped safely even if it holds bytes that are not UTF-8.
std::string dump_json(const json& doc);

struct Gradebook {
  std::string csv;    ///< student, one column per lesson, total
  json doc;           ///< schema cuda-perf-lab/gradebook/1
  std::vector<std::string> warnings;  ///< incomplete gradings, duplicates
  std::vector<std::string> errors;    ///< records that could not be used, each naming its file
};
/// Collects every result.json in `dirs` (each an `--out` folder of `grade`, or one submission's
/// folder). A student's name is the name of the folder their record is in. A record that cannot
/// be read, is not a grade record, names another submission than its folder, or whose scores are
/// not what its rules' verdicts and points add up to goes to `errors`, and the others are still
/// merged. Throws ConfigError if a folder has no result.json at all.
Gradebook merge_results(const std::vector<fs::path>& dirs);

/// Reads a grade record (result.json) and checks every field `merge` uses: their types, and that
/// every score is what its rules earned (a rule earns all its max_points when it passes or is
/// ambiguous, else none), within its maximum. On failure returns nullopt and sets `error` to a
/// phrase naming the field, without the file's name.
std::optional<json> read_grade_record(const fs::path& file, std::string& error);
/// Whether `file` is a usable grade record whose grading finished with no lesson the checker
/// itself failed on (reason::checker). Missing, damaged or unfinished records are graded again.
/// Never throws.
bool grade_record_complete(const fs::path& file);
/// The same of a record read_grade_record() accepted.
bool grade_record_complete(const json& record);

}  // namespace lab
