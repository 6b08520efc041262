// `lab-check selftest`: the checker's verdicts on each lesson's solution, starter and mutants
// must be the ones the lesson promises (solutions/NN-topic/mutants/expected.toml). The mutants
// live with the solutions, on the instructor's side, as patches of the solution or the starter
// (solutions/NN-topic/mutants/<name>.patch, patch.hpp).
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "grade.hpp"
#include "judge.hpp"
#include "rules.hpp"

namespace lab {

namespace fs = std::filesystem;

/// One entry of expected.toml: [mutant-name] verdict = "...", optional rule, reason, timeout_s.
struct Expectation {
  std::string mutant;
  std::optional<std::string> rule;  ///< judge this rule's verdict ("sanitizer" = that line)
  Verdict verdict = Verdict::fail;  ///< of the rule, or of the whole lesson without `rule`
  std::string reason;               ///< compile, timeout, crash, exit, result, sanitizer, ...
  double timeout_s = 0;             ///< > 0 shortens the run (an endless-loop mutant)
  std::string origin;

  bool needs_sanitizer() const { return reason == "sanitizer" || rule.value_or("") == "sanitizer"; }
  /// A mutant that must pass as a whole (the taught path, another correct design): held to what
  /// the solution is held to, and judged in every round of --repeat.
  bool whole_lesson_passes() const { return !rule && verdict == Verdict::pass; }
  std::string describe() const;
};

/// solutions/NN-topic/mutants of the course `lesson` belongs to: <name>.patch and expected.toml.
fs::path mutants_dir(const LessonConfig& lesson);

/// Parses a lesson's mutants/expected.toml; throws ConfigError naming file:line.
std::vector<Expectation> load_expectations(const fs::path& expected_toml);

/// Whether `outcome` meets `e`; if not, `why` says what was seen instead.
bool expectation_holds(const Expectation& e, const LessonOutcome& outcome, std::string& why);

struct SelftestCheck {
  std::string lesson;
  std::string subject;   ///< "solution", "starter", "mutant racy_tile"
  std::string expected;  ///< in words
  bool held = false;
  std::string detail;    ///< what was seen
  int runs = 0;          ///< program runs the verdict took (re-runs included)
  double seconds = 0;    ///< wall time of judging it (build, runs, ncu, sanitizer)
  /// For a subject expected to pass: its narrowest performance rule, as reading over bar (a
  /// minimum) or bar over reading (a maximum), 1.0 being the bar itself; 0 when it has none.
  double margin = 0;
  std::string margin_rule = {};  ///< that rule's id
};

/// The narrowest margin of a lesson outcome's timed and metric rules (see SelftestCheck).
void narrowest_margin(const LessonOutcome& outcome, SelftestCheck& check);

struct SelftestOptions {
  fs::path build_dir;
  double timeout_s = 0;  ///< > 0 overrides check.toml's timeout_s
  int jobs = 2;
  std::vector<std::string> sanitizer_cmd = {"compute-sanitizer"};
  bool mutants = true;   ///< false: solution, starter and the mutants expected to pass only (later rounds of --repeat)
  bool counters = true;  ///< read counters through ncu for counter rules
  bool inspect = true;   ///< check each exercise's object file first (off for stand-ins in tests)
  Corroborate corroborate = Corroborate::required;  ///< times against the tracer (judge.hpp)
  bool pristine = false;  ///< speedup baselines timed by the lesson's starter (JudgeOptions::pristine)
  fs::path tracer_probe;  ///< JudgeOptions::tracer_probe
  bool syscall_filter = false;  ///< JudgeOptions::syscall_filter
};

/// Judges the lesson's solution, starter and every mutant. Each mutant's patch is applied first
/// (in a work folder; one that does not apply is a failed check naming its hunk); compile-error
/// mutants are then built through `grading` (as a student's file would be; it may be null if the
/// lesson has none), the others judged as the build made them (<build>/lessons/NN/mutant-<name>).
/// `on_check`, if given, sees each check as soon as it is made (a lesson's mutants take minutes).
std::vector<SelftestCheck> selftest_lesson(
    const LessonConfig& lesson, const SelftestOptions& options, GradingBuild* grading,
    const std::function<void(const SelftestCheck&)>& on_check = {});

/// The seal alone (inspect.hpp) on every program of the lesson: reads object files, runs nothing,
/// needs no GPU. The solution, the starter and every mutant must pass it, except the mutants whose
/// expected reason is `forbidden`, which it must refuse.
std::vector<SelftestCheck> seal_lesson(const LessonConfig& lesson, const fs::path& build_dir);

}  // namespace lab
