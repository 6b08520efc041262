// Grading submissions: one grading build folder, each student's exercise.cu files staged into
// it in turn, only the submission programs rebuilt (all lessons of a submission in one build),
// then run and judged lesson by lesson.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "judge.hpp"
#include "process.hpp"
#include "report.hpp"
#include "rules.hpp"
#include "sandbox.hpp"

namespace lab {

namespace fs = std::filesystem;

/// KEY:TYPE=VALUE lines of <build>/CMakeCache.txt (empty map if there is none).
std::map<std::string, std::string> read_cmake_cache(const fs::path& build_dir);

/// What every build in a grading build folder reads or writes, shown to it inside the sandbox
/// (SandboxPolicy::show_to_builds), even where the course lies in a folder the sandbox makes
/// private (/tmp): the course's source, the grading build folder, the main build's fetched
/// dependencies and, when the main build was configured with one, its offline bundle.
/// @param source the course's source folder
/// @param grading_dir the grading build folder
/// @param main_build the main build folder (its CMakeCache.txt names LAB_DEPS_DIR)
std::vector<fs::path> shown_to_builds(const fs::path& source, const fs::path& grading_dir,
                                      const fs::path& main_build);

/// Brings the starters of `lessons` in `build_dir` up to date (`cmake --build --target
/// NN-topic-starter`, a no-op where they are): the programs that time the speedup rules'
/// baselines with no student code must be built from the harness the students' programs are
/// built with, and the grading build is brought up to date too. Throws ConfigError, with the end
/// of the build's output, where that fails.
void build_pristine_programs(const fs::path& build_dir, const std::vector<std::string>& lessons);

/// Builds the target `mutants` in the course's build (a no-op where they are up to date, and
/// where @p build_dir is not a CMake build): the mutant programs are left out of the default
/// build, which students run. Throws ConfigError, with the end of the build's output.
void build_mutant_programs(const fs::path& build_dir);

/// The first compiler errors of a build log, with the staging folder's path removed. With
/// `own_file` ("04-coalescing/exercise.cu", as the log names it once the prefix is gone), only
/// lines about that file are quoted: messages located in any other file are replaced by one
/// neutral line, so an #include cannot copy another file into the student's feedback.
std::string compiler_errors(const std::string& log, const std::string& staging_prefix,
                            std::size_t max_lines = 25, const std::string& own_file = "");

class GradingBuild {
 public:
  /// `dir` is configured from `source_dir` with the architectures and build type of the
  /// already-configured `main_build` (read from its CMakeCache.txt). `jobs` = compiler jobs.
  GradingBuild(fs::path source_dir, fs::path main_build, fs::path dir, int jobs);

  /// Locks the folder for this process (another lab-check using it waits: no two commands share
  /// its staging or its programs), stages every lesson's starter that has no staged file yet (so
  /// every submission target exists) and configures the folder if needed, as a grading build
  /// (LAB_GRADING_BUILD: no solutions, no mutants). Throws ConfigError (with the end of CMake's
  /// output) if configuring fails.
  void prepare();

  /// Removes everything a submission left: the staged files (the starters take their place),
  /// the submission programs, their object files and the build logs. Called before and after
  /// each submission, so nothing of one student is there while another's code builds or runs.
  void clear_student_files();

  /// Puts `exercise` in the staging folder as the lesson's exercise.cu and removes the lesson's
  /// program (never run a previous student's program). Returns why it could not, for the student
  /// (a link, too large), or "" once it is staged.
  std::string stage_submission(const LessonConfig& lesson, const fs::path& exercise);
  /// The same for a file's text, read already (grade_submission reads each file once); refused
  /// where it names a file it may not read (refuse_unsafe_reads).
  std::string stage_content(const LessonConfig& lesson, const std::string& content);

  /// Builds the staged submissions of `lessons` in one run of the build tool, on every job and
  /// past a lesson that does not compile, within one overall time limit. It judges nothing:
  /// build() then finds each program made (a no-op) or builds the lesson again for its own log.
  void build_all(const std::vector<std::string>& lessons);

  struct Built {
    bool ok = false;
    std::string message;   ///< why not, for the student
    std::string output;    ///< the first compiler errors
    fs::path program;
  };
  /// Builds the lesson's staged submission program (only that target and the starter's object),
  /// with the build log <dir>/logs/<lesson>.log as the student's feedback.
  Built build(const LessonConfig& lesson);
  /// One lesson on its own (selftest's compile_error mutants): stage_submission(), then build().
  Built build(const LessonConfig& lesson, const fs::path& exercise);

  /// The limit on builds of the course's own code (its starters, the harness): 15 minutes.
  static constexpr double kBuildTimeoutS = 900;
  /// Seconds build_all() may take in all, and build() for one lesson. By default both are
  /// `factor` times the course's own compile time here (prepare() compiles every lesson's
  /// starter again and times it), and at least `floor_s`; set_time_limits() fixes them instead.
  /// After build_all(), one submission's lesson steps share one lesson limit in all (each gets
  /// at least kLeastStepS), so a submission's builds take minutes, however many lessons hang.
  void set_time_proportion(double factor, double floor_s);
  void set_time_limits(double all_lessons_s, double lesson_s);
  static constexpr double kTimeFactor = 4, kTimeFloorS = 120, kLeastStepS = 15;
  double lesson_time_limit() const { return lesson_timeout_s_; }
  double pristine_compile_s() const { return pristine_compile_s_; }  ///< 0 before prepare()

  const fs::path& dir() const { return dir_; }

 private:
  void stage(const std::string& lesson, const std::string& content);
  /// `cmake --build` of `targets` as a contained build (`tool_flags` go to the build tool), its
  /// output in `log`. Throws ConfigError if it could not start.
  ProcessResult run_build(const std::vector<std::string>& targets, const std::vector<std::string>& tool_flags,
                          const fs::path& log, double timeout_s) const;
  std::vector<std::string> lessons_with_starter() const;
  void time_pristine_compile();
  /// What the compile of the lesson's staged file may read (sandbox.hpp).
  SubmissionReads reads(const std::string& lesson) const;
  fs::path source_, main_build_, dir_;
  int jobs_;
  double all_lessons_timeout_s_ = kBuildTimeoutS, lesson_timeout_s_ = kBuildTimeoutS;
  double time_factor_ = kTimeFactor, time_floor_s_ = kTimeFloorS, pristine_compile_s_ = 0;
  bool fixed_limits_ = false;
  std::optional<std::chrono::steady_clock::time_point> steps_deadline_;  ///< set by build_all()
  bool prepared_ = false;
  std::unique_ptr<FileLock> lock_;
};

struct GradeOptions {
  fs::path out;
  bool force = false;          ///< grade again even if a complete result.json is there
  JudgeOptions judge;
  /// Per lesson, the program that times its baselines with no student code (JudgeOptions::
  /// pristine); a lesson not named here has none.
  std::map<std::string, fs::path> pristine;
  /// Where the speedup rules' baselines are timed, in words, for each record (Report::baselines).
  std::string baselines;
  /// Called after each lesson (for progress lines).
  std::function<void(const std::string& submission, const LessonOutcome&)> on_lesson;
  /// Judges a built lesson program: judge_program (tests put one that fails in its place).
  std::function<LessonOutcome(const LessonConfig&, const fs::path& program, const JudgeOptions&)> judge_lesson =
      judge_program;
};

/// A submission that was not graded because its output folder holds another submission's
/// grading (found once the folder is locked: another command graded into it meanwhile).
struct SubmissionRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Where a submission folder keeps a lesson's file: NN-topic/exercise.cu (or, for a copy of the
/// whole repository, lessons/NN-topic/exercise.cu). nullopt if not submitted.
std::optional<fs::path> submitted_file(const fs::path& submission, const LessonConfig& lesson);

/// Why `file`, a path inside `submission`, is not read: a link on its way (a lesson folder,
/// lessons/, exercise.cu) that leads out of the submission folder, or nowhere. "" where every
/// link on its way stays inside. A submission is read only inside itself: no other student's
/// file can be graded as this one's.
std::string link_out_of_submission(const fs::path& submission, const fs::path& file);

/// The submission folder's own name ("subs/a b/" -> "a b").
std::string submission_folder(const fs::path& submission);
/// The folder name a submission's outputs go to (unsafe characters replaced: "a b" -> "a_b").
std::string submission_slug(const fs::path& submission);

/// Refuses (ConfigError naming both) submissions that would share an output folder: two of
/// `submissions` with one slug, or one whose <out>/<slug> holds the grading of a submission
/// folder of another name ("a b" graded there, "a_b" now). Called before anything is graded.
void check_output_folders(const std::vector<fs::path>& submissions, const fs::path& out);

/// Grades one submission folder and writes <out>/<slug>/{result.json,gradescope.json,junit.xml},
/// rewritten after every lesson. Returns nullopt if it was skipped: graded already, a complete
/// record of this folder whose content hash (what was handed in, lesson by lesson) is this
/// submission's; a changed submission is graded again. Throws SubmissionRefused where the
/// output folder holds another submission folder's grading. All submitted lessons are built
/// together first; each lesson's build_s is an equal share of that build plus its own build
/// step, so their sum is the submission's whole build time. Whatever fails while one lesson is
/// built or judged (any exception but ConfigError, the grader's setup, and Interrupted) is that
/// lesson's `error` (reason::checker), and the next lesson is graded.
std::optional<Report> grade_submission(const fs::path& submission, const std::vector<LessonConfig>& lessons,
                                       GradingBuild& build, const GradeOptions& options);

}  // namespace lab
