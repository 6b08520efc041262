// A lesson's rules (lessons/NN-topic/check.toml, docs/check-toml.md) and their evaluation
// against one result document.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "evidence.hpp"

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// pass, fail, ambiguous (too close to call after all re-runs; points are awarded), environment
/// (timings untrustworthy: not the student's failure, no points), error (did not build, crashed,
/// timed out, no valid result), skipped (a counter rule where ncu may not read counters: neither
/// points nor maximum count, so the lesson is graded on its other rules).
enum class Verdict { pass, fail, ambiguous, environment, error, skipped };
enum class RuleKind { correct, fraction_of_copy, fraction_of_peak, speedup, metric, counter };

const char* to_string(Verdict v);
const char* to_string(RuleKind k);
std::optional<Verdict> verdict_from_string(const std::string& s);
/// How bad a verdict is: pass and skipped 0, ambiguous 1, environment 2, fail 3, error 4.
int severity(Verdict v);
/// The worse of two verdicts: error > fail > environment > ambiguous > pass.
Verdict worse(Verdict a, Verdict b);
/// Whether a verdict earns the rule's points (pass, and ambiguous: the benefit of the doubt).
inline bool earns_points(Verdict v) { return v == Verdict::pass || v == Verdict::ambiguous; }

/// How far, relative to the bar, a reading's median may miss it and still have the benefit of
/// the doubt (`ambiguous`, full points) where its 95% interval holds the bar. The doubt is meant
/// for measurement noise, a few percent on a quiet GPU; a program can widen its own interval at
/// will (a minority of calls made slower on purpose leaves the median where it was and stretches
/// the interval past any bar), so a median further off than this is judged on its median: `fail`.
inline constexpr double kDoubtMargin = 0.05;

/// A configuration mistake (check.toml, overrides, expected.toml): "file:line: what is wrong".
struct ConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Rule {
  std::string id;
  RuleKind kind = RuleKind::correct;
  std::string variant;  ///< the variant judged (correct, fraction_*, speedup; optional for metric)
  std::string over;     ///< speedup: the variant it is compared with
  std::string metric;   ///< metric: the key in the result's "metrics"
  std::string counter;  ///< counter: a measure read through ncu (see counters.hpp)
  /// counter: the most work its kernels may do per unit the problem needs (kDefaultMaxWork when
  /// unset; counters.hpp, work_done): beyond it the reading is not judged, and the rule fails
  std::optional<double> max_work;
  std::optional<double> min, max;
  double points = 0;
  std::string hint;
  std::string origin;   ///< "path/check.toml:12", for messages
};

/// One lesson as the checker grades it: its check.toml (and overrides). Not the harness's
/// lab::Lesson, which is the lesson program itself.
struct LessonConfig {
  std::string name;    ///< the folder name, NN-topic (= the "lesson" key)
  std::string title;
  double timeout_s = 120;
  std::vector<std::string> args;  ///< extra arguments for the lesson program
  std::vector<std::string> allowed_calls;  ///< what the exercise may call beyond the course-wide
                                           ///< list (inspect.cpp); "name" or "prefix*"
  std::vector<std::string> forbidden_calls;  ///< what this lesson's exercise may not call though
                                             ///< the course-wide list allows it (same form)
  /// The exercise's array comparisons checked again in a pristine program from the values the
  /// student's program recorded (lab/record.hpp); false for a lesson whose exercise checks are
  /// facts the harness observes in the process (a timer's readings, files), not arrays.
  bool replay = true;
  /// The program's system calls filtered once the exercise can run (lab/syscall_filter.hpp);
  /// false for a lesson whose exercise opens files or starts processes as its subject (11).
  bool syscall_filter = true;
  /// The GPU generation the lesson is built for (13: 9, Hopper's sm_90a); 0 = any. On another,
  /// its program says so and exits 77, which the checker then takes as "not applicable here".
  int compute_capability_major = 0;
  std::vector<Rule> rules;
  fs::path dir;        ///< lessons/NN-topic

  double max_points() const;
};

/// Parses one check.toml; throws ConfigError with the file and line of the first problem.
LessonConfig load_lesson(const fs::path& check_toml);
/// Every <source>/lessons/*/check.toml, sorted by name.
std::vector<LessonConfig> load_lessons(const fs::path& source_dir);
/// Keeps the lessons named (either "04-coalescing" or just "04"); if `names` is empty, all of
/// them but a template (a folder whose name starts with "_", such as lessons/_template: built and
/// self-tested when named, never graded). Throws ConfigError for a name that matches no lesson.
std::vector<LessonConfig> select_lessons(const std::vector<LessonConfig>& all,
                                   const std::vector<std::string>& names);
/// Applies an instructor's overrides file (see docs/check-toml.md). Unknown lessons, rules or
/// keys are errors, so a typo cannot silently leave a threshold unchanged.
void apply_overrides(std::vector<LessonConfig>& lessons, const fs::path& overrides_toml);

/// A measured number with its pessimistic..optimistic range (low <= value <= high normally).
struct Reading {
  double value = 0, low = 0, high = 0;
};

struct RuleOutcome {
  std::string id;
  std::string kind;    ///< a RuleKind name, or "sanitizer"
  Verdict verdict = Verdict::error;
  std::optional<Reading> reading;
  std::optional<double> min, max;
  double points = 0;       ///< awarded
  double max_points = 0;
  std::string message;     ///< what was measured and, on failure, the hint
  std::string hint;        ///< the filled-in hint, when the rule failed and has one
};

/// Judges one rule on one run: what the program reported and what the checker found
/// (evidence.hpp). A counter rule reads run.findings.counters (the judge's ncu run); without a
/// reading there, the rule is skipped.
RuleOutcome evaluate_rule(const Rule& rule, const JudgedRun& run);
/// Every rule of the lesson marked `error` with the same message (the lesson did not run).
std::vector<RuleOutcome> error_outcomes(const LessonConfig& lesson, Verdict verdict,
                                        const std::string& message);

/// How a value reads in messages: fractions as percentages, speedups with "x", metrics as
/// numbers with their unit.
std::string format_value(RuleKind kind, double value, const std::string& unit = "");
/// The rule's hint with {value}, {min} and {max} replaced.
std::string fill_hint(const Rule& rule, double value, const std::string& unit = "");

}  // namespace lab
