// Running one lesson program (as many times as the re-run rule asks) and judging its result.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "corroborate.hpp"
#include "rules.hpp"

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct SanitizerFinding {
  std::string tool;      ///< memcheck | racecheck
  std::string what;      ///< "Invalid __global__ write of size 4 bytes"
  std::string location;  ///< "04-coalescing/exercise.cu:31", or "" if the report named none
  int count = 1;         ///< identical reports folded into one
};

/// Why a lesson got an error (or environment) verdict as a whole, for reports and for the
/// mutants' expected.toml.
namespace reason {
inline constexpr const char* compile = "compile";            ///< the exercise did not build
inline constexpr const char* not_submitted = "not-submitted";
inline constexpr const char* missing = "missing";            ///< no program: not built
inline constexpr const char* timeout = "timeout";
inline constexpr const char* crash = "crash";                ///< killed by a signal
inline constexpr const char* exit = "exit";                  ///< non-zero exit, no result file
inline constexpr const char* result = "result";              ///< result file missing/garbage/forged
inline constexpr const char* no_gpu = "no-gpu";              ///< the program exited 77
inline constexpr const char* sanitizer = "sanitizer";        ///< compute-sanitizer found errors
inline constexpr const char* implausible = "implausible";    ///< faster than the hardware can be
inline constexpr const char* forbidden = "forbidden";        ///< the exercise defines or calls
                                                             ///< what it may not (inspect.hpp)
inline constexpr const char* unverified_time = "unverified-time";  ///< a reported time disagrees
                                                             ///< with the checker's tracer
inline constexpr const char* replay = "replay";                  ///< the pristine program that
                                                             ///< checks the exercise's results failed
inline constexpr const char* unverified_result = "unverified-result";  ///< the exercise's results,
                                                             ///< checked out of process, do not
                                                             ///< hold up (lab/record.hpp)
}  // namespace reason

struct LessonOutcome {
  std::string lesson, title;
  std::string build;            ///< starter | solution | submission | mutant-<name>
  Verdict verdict = Verdict::pass;
  std::string reason;           ///< see lab::reason; "" when the rules decided
  std::string message;          ///< for a lesson-level verdict: what happened
  std::vector<RuleOutcome> rules;
  std::optional<RuleOutcome> sanitizer;  ///< the "sanitizer" line (--sanitize), 0 points
  std::vector<SanitizerFinding> findings;
  int runs = 0;
  double wall_s = 0;            ///< judging it: its runs, reading and judging their results
  double program_s = 0;         ///< of which the lesson program's own runs (sanitizer excluded)
  double pristine_s = 0;        ///< of program_s, the course's pristine program (baselines, replays)
  double counters_s = 0;        ///< of wall_s, the runs under ncu and the checks of their calls
  double build_s = 0;           ///< compiling the submission (grade only)
  double score = 0, max_score = 0;
  std::string output;           ///< the program's (or compiler's) last output, for feedback
  json device = json::object(); ///< from the result file
  json corroboration = json::array();  ///< per run: the tracer's reading of each reported time
                                       ///< (corroborate.hpp: corroboration_json)
  /// per run: where the exercise's results were judged: {"state": "replayed", "checks",
  /// "entries"} (out of process, use_replayed_checks) or {"state": "in-process", "why"}
  json results_checked = json::array();
  std::vector<std::string> diagnostics;
  /// What an instructor should review first in a submitted exercise.cu (review_flags in
  /// inspect.hpp: inline assembly, casts between functions and data, ...); grade only
  std::vector<std::string> review;
};

/// Whether reported times are checked against the checker's tracer (corroborate.hpp).
enum class Corroborate {
  off,           ///< not traced (--no-corroborate); the record says so
  if_available,  ///< traced where the tracer runs; where it cannot, the times are judged anyway
                 ///< and the record says why they were not corroborated (run)
  required,      ///< where the tracer cannot run, every timed rule is `environment` (grade)
};

struct JudgeOptions {
  std::string build = "solution";  ///< a name for reports
  double timeout_s = 0;            ///< > 0 overrides the lesson's timeout_s
  bool quick = false;              ///< pass --quick (small sizes; one run, no re-runs)
  bool sanitize = false;           ///< also run compute-sanitizer memcheck and racecheck
  int max_runs = 3;                ///< the re-run rule: at most this many runs in total
  std::vector<std::string> sanitizer_cmd = {"compute-sanitizer"};  ///< the tool (tests swap it)
  bool counters = true;            ///< read hardware counters through ncu for counter rules
  bool inspect = true;             ///< check the exercise's object file before running it
                                   ///< (inspect.hpp); off only for stand-in programs in tests
  std::vector<std::string> ncu_cmd = {"ncu"};  ///< the tool (tests swap it)
  Corroborate corroborate = Corroborate::required;
  /// The same lesson built from its pristine starter (no student code); empty: none. Where set,
  /// the program leaves out the variants the speedup rules divide by (--skip-variant), each of
  /// its runs is followed by one of this one that times only those (--variant), and the rules
  /// use its times: a baseline the student's process cannot slow (use_pristine_baselines). In a
  /// lesson that replays (LessonConfig::replay), the student's program also writes its record
  /// and the pristine run checks the exercise's results from it (--replay, use_replayed_checks).
  fs::path pristine;
  fs::path tracer = built_tracer();  ///< the tracer library; empty: none was built
  /// A program of the course's that initialises CUDA and runs no student code (`lab-doctor
  /// --probe`); empty: none. Where a run's trace is missing or unreadable, the checker runs it
  /// traced: if its trace is whole, the tracer works here, so the run's trace was removed or
  /// overwritten (lesson 11's exercise may open files): an `error`, never `environment`.
  fs::path tracer_probe;
  /// Pass --restrict-syscalls to the lesson programs of lessons that allow it
  /// (LessonConfig::syscall_filter), in their runs for a verdict and under compute-sanitizer
  /// (not under ncu, whose code in the program opens a lock file): no new files, threads,
  /// processes or executable memory once the exercise can run (lab/syscall_filter.hpp).
  bool syscall_filter = false;
  /// Where each lesson's result file and printed output are kept, as NN-topic-BUILD.json and
  /// NN-topic-BUILD.txt, as the program wrote them in its last run (`lab-check run --keep`);
  /// empty: not kept.
  fs::path keep;
};

/// Whether lesson programs filter their system calls, in words, for output and records.
inline std::string describe_syscall_filter(bool on) {
  return on ? "filtered from the first exercise call on (lab/syscall_filter.hpp; not in lessons "
              "whose check.toml says syscall_filter = false)"
            : "not filtered (--no-syscall-filter)";
}

/// Runs `program` (a lesson built from some exercise.cu) and judges it by the lesson's rules.
/// Never throws for anything the program does: a crash, a hang, garbage, all end as verdicts.
LessonOutcome judge_program(const LessonConfig& lesson, const fs::path& program, const JudgeOptions& options);

/// How far past a ceiling measured in the same run a rate may go before it is an error: a cold
/// read-mostly stream can beat the copy kernel by a few percent (the copy also writes), a timer
/// rounds, and nothing honest comes near these margins.
inline constexpr double kCopyMargin = 1.3, kLinkMargin = 1.3, kFlopsMargin = 1.15;

/// @return "" or, for the first variant whose bytes or FLOPs over its median time exceed a
/// ceiling of the same run by more than its margin, one sentence saying so
std::string implausible_rates(const json& result);

/// @return the variants the speedup rules of @p lesson divide by, each once (what a pristine run
///         times)
std::vector<std::string> speedup_baselines(const LessonConfig& lesson);

/// Puts the baselines timed by the pristine program into a run's result: each variant in
/// @p overs is replaced by the pristine run's (added where the student's program left it out),
/// and @p found says it was measured there. Where the pristine run gave no time for it, or a
/// wrong result, the variant loses its time and @p found says why (a speedup over it is then
/// `environment`: nothing of the student's failed); where the checker saw the GPU disturbed
/// during it, so is the run.
/// @param found the checker's findings about the student's run
/// @param pristine the checker's findings about the pristine run, nullptr where it gave no result
///        (@p pristine_doc; else @p why)
void use_pristine_baselines(json& doc, Findings& found, const json& pristine_doc, const Findings* pristine,
                            const std::string& why, const std::vector<std::string>& overs);

/// The most bytes a student's program's record may hold (lab/record.hpp): about a hundred
/// times what a lesson writes; more is not a record a harness wrote.
inline constexpr std::uintmax_t kMaxRecordBytes = 64u << 20;

/// What the pristine program's replay of a run's record checked.
struct Replayed {
  int checks = 0;   ///< the exercise's comparisons made again out of process
  int entries = 0;  ///< the entries of the student's record
  /// @return the run's entry of LessonOutcome::results_checked
  json to_json() const { return {{"state", "replayed"}, {"checks", checks}, {"entries", entries}}; }
};

/// Judges a run's exercise by the pristine program's replay of its record (lab/record.hpp): each
/// of the exercise's comparisons made again there, from the values the student's program recorded
/// against references computed where no student code runs. A replayed comparison that fails
/// makes the variant wrong (its check is added, "checked out of process: <case>").
/// (A pristine run that failed is `environment`, decided by the caller.)
/// @param pristine_doc the pristine run's result
/// @param replayed where given, what the replay checked (the checker's finding, kept out of
///        @p doc)
/// @return "" or why the run is an `error` (reason unverified-result): the replay could not read
///         the record, the record lacks a check the replay asked for, or a comparison the
///         student's process judged right is wrong out of process
std::string use_replayed_checks(json& doc, const json& pristine_doc, Replayed* replayed = nullptr);

struct GpuObservation;
/// The checker's findings about a run, to begin with: its own watch of the GPU. The program's
/// own environment_ok and diagnostics are never read.
Findings findings_of_watch(const GpuObservation& seen);
/// @return true when the checker's own watch saw a GPU of another generation than the one
/// @p lesson is built for (check.toml's compute_capability_major): there its program's exit 77
/// means "not applicable on this GPU", not an exercise that ended the program
bool gpu_of_another_generation(const LessonConfig& lesson, const GpuObservation& seen);

/// An outcome that says the lesson could not be judged: every rule gets `verdict` and 0 points.
LessonOutcome lesson_outcome(const LessonConfig& lesson, const std::string& build, Verdict verdict,
                             const std::string& reason, const std::string& message);

/// @param runs LessonOutcome::results_checked
/// @return one line for the report: where the exercise's results were judged ("" for no runs)
std::string results_checked_line(const json& runs);

/// Recomputes verdict, score and max_score from the rules and the sanitizer line.
void finalize(LessonOutcome& outcome, const LessonConfig& lesson);

/// Pulls findings with file:line out of a compute-sanitizer log.
std::vector<SanitizerFinding> parse_sanitizer_log(const std::string& tool, const std::string& log);

/// Text from a program, made safe to show: no escape sequences or control characters.
std::string printable(const std::string& text);

/// The longest line of a tool's or a program's output that the checker's parsers look at; the
/// rest of a longer line is cut (a compiler's caret line under a 40,000-character source line).
inline constexpr std::size_t kMaxParsedLine = 4096;

/// @p text split into lines, each cut to @p max_line bytes (a cut line ends in " [...]"): what
/// every parser of untrusted output reads, so that none of them can take longer than linear time.
std::vector<std::string> bounded_lines(const std::string& text, std::size_t max_line = kMaxParsedLine);

}  // namespace lab
