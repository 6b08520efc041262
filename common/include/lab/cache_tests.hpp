/// @file cache_tests.hpp
/// @brief Tests of a disk cache that code under test keeps, each call in a new process: the first
/// call on an empty folder, the first call on the folder an earlier process filled, and the same
/// after the folder's files were damaged in place, in rounds that cannot be told apart.
///
/// A cache is only tested by a process that did not write it (lab/child_process.hpp), and only
/// where it is kept: every process gets a folder of its own, and the write audit
/// (lab/write_audit.hpp) fails a process that wrote anywhere else. Every round is the same three
/// new processes: the course's own first call (the yardstick a rule divides by), then the code
/// under test's first call on an empty folder, then on the folder that call filled, as it was left
/// or damaged (Damage). The damaged rounds are shuffled in among the plain ones, every folder has
/// a name drawn at random, every damaged file keeps its time of change, and each folder is removed
/// once its round is over: nothing a process is handed tells a damaged round from another, and no
/// undamaged copy of an entry is left to read.
///
/// @code
/// lab::ScratchFolder root("lab11-cache", keep);        // this run's folders, removed at the end
/// lab::CacheTests tests(lesson, audit, root.path(), keep);
/// const std::string expression = draw(tests.rng());    // the programs, drawn only now
/// const lab::FirstCallTimes t = tests.run(
///     processes,
///     [&](const fs::path& dir, int program) {          // the code under test, in a new process
///       return lab::run_self({"first-call", dir.string(), std::to_string(program)});
///     },
///     [&] { return lab::run_self({"compile-first-call"}); });  // the course's own
/// lab::record_first_calls(lesson, t, processes, "n = 4096");  // the disk cache rule's metrics
/// @endcode
///
/// The checks are the "exercise" variant's. The code under test's process reports its first call
/// with lab::report_first_call(ms, wrong), the yardstick's with lab::report_first_call(ms).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lab/child_process.hpp"
#include "lab/write_audit.hpp"

namespace lab {

class Lesson;

/// @param p a file
/// @return its bytes ("" when it cannot be read)
std::string read_bytes(const std::filesystem::path& p);

/// @param dir a folder
/// @return every regular file under it, recursively, with its bytes
std::map<std::filesystem::path, std::string> files_in(const std::filesystem::path& dir);

/// @brief Writes @p bytes as the whole of file @p p.
/// @param p the file, created or cut
/// @param bytes its new content
/// @throws std::runtime_error when it cannot
void write_bytes(const std::filesystem::path& p, const std::string& bytes);

/// @brief Writes @p bytes over the file @p p in place and gives it back its time of change: a
/// damaged folder looks like one an earlier process filled.
/// @param p an existing file
/// @param bytes its new content
void plant(const std::filesystem::path& p, const std::string& bytes);

/// @param dir a folder
/// @return its largest regular file, recursively (the compiled code, whatever else a cache
///         keeps; the last in the listing's order among equals), or an empty path
std::filesystem::path largest_file(const std::filesystem::path& dir);

/// @brief A program's expression no code written or compiled before the draw can answer: a float
/// expression of `v` (CUDA C++) of five nested steps, each one of ten forms (an affine map,
/// sinf, tanhf, expf, fmaxf, sqrtf, cosf, rsqrtf, fminf, a scale by @p parameter) with constants
/// of its own (10^5 shapes), then "parameter * (...) + v" so that @p parameter always counts.
/// Every value stays finite for v in [-2, 2) and @p parameter below 1.75 (below about 1e13: an
/// exp of at most four steps that each scale by less than 1.75 and add 1).
/// @param rng where the draw comes from (CacheTests::rng(): entropy of the moment)
/// @param parameter a macro the program defines through its options, e.g. "ALPHA"
/// @return the expression, e.g. "ALPHA * sinf(1.2345f * (v)) + v" with five steps
std::string draw_expression(std::mt19937_64& rng, const std::string& parameter);

/// @brief A folder of this run's under @p parent (made absolute: the working directory is the one
/// place a graded program may write): parent/run-NNNNNNNNN, the number drawn at random, removed
/// with everything in it at the end, and @p parent too if nothing else is left in it (other runs
/// may share it).
class ScratchFolder {
 public:
  /// @param parent e.g. "lab11-cache"
  /// @param keep true: leave it in place at the end, to look at
  ScratchFolder(const std::filesystem::path& parent, bool keep);
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  /// @return the folder (absolute)
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool keep_;
};

/// @brief What a round does to the folder between its two calls of the code under test.
enum class Damage {
  none,       ///< nothing: a plain round
  truncated,  ///< every file cut to half its size
  flipped,    ///< every file with 7 bits flipped, at 1/8, 2/8, ... 7/8 of its length
  stale,      ///< the largest file replaced by the one program 1 left (another key's entry)
};

/// @brief The first calls of the plain rounds that succeeded ("first_call_ms"), for a lesson's
/// metrics; each round in a row, so a machine that slows for a while slows every side alike.
struct FirstCallTimes {
  std::vector<double> yardstick;  ///< the course's own first call, every plain round
  std::vector<double> empty;      ///< the code under test's, on an empty folder
  std::vector<double> filled;     ///< ... on the folder the previous process filled
  bool on_disk = false;           ///< the first plain round's folder held a file after its calls
};

/// @brief The disk cache rule's metrics from the plain rounds' first calls: first_call_compiled_ms
/// (the yardstick's, which compiles), first_call_cold_ms (the code under test's on an empty folder;
/// only when one succeeded) and first_call_filled_ms, each the median with the fastest and slowest
/// process as its range; first_call_speedup, the yardstick's median over the filled folder's with
/// lab::ratio_of_medians's interval; and a note of the three. Not over the empty folder's call:
/// that time is the code under test's to make as long as it likes (a wait where the folder is
/// empty), and only the filled side is its to make short. A speed-up earns the rule only from a
/// cache in the folder, which is what the damaged rounds reach: with no file there
/// (FirstCallTimes::on_disk false) it is 0, with a note; with no filled-folder call that succeeded
/// (checked already) it is 0 and nothing else is recorded.
/// @param lesson where to record
/// @param t what CacheTests::run returned
/// @param rounds the plain rounds it ran (the note's "median of")
/// @param size the first call's problem, for the note, e.g. "n = 4096"
void record_first_calls(Lesson& lesson, const FirstCallTimes& t, int rounds,
                        const std::string& size);

/// @brief In the code under test's process: reports its first call as CacheTests reads it, the
/// readings "first_call_ms", "correct" ("1" when @p wrong is empty) and, when not, "wrong".
/// @param first_call_ms the first call's time
/// @param wrong what was wrong with its result, in words; "" when right
void report_first_call(double first_call_ms, const std::string& wrong);

/// @brief In the yardstick's process: reports its first call, the reading "first_call_ms".
/// @param first_call_ms the first call's time
void report_first_call(double first_call_ms);

/// @brief The cache tests of one run (see the file's description).
class CacheTests {
 public:
  /// A new process's first call of program @p program (0, or 1: another key) on cache folder
  /// @p dir; it reports "correct", "wrong" and "first_call_ms".
  using FirstCall = std::function<ChildRun(const std::filesystem::path& dir, int program)>;
  /// The course's own first call of program 0 in a new process; it reports "first_call_ms".
  using Yardstick = std::function<ChildRun()>;

  /// @param lesson where the checks and notes go (the "exercise" variant's checks)
  /// @param audit made before any code under test ran; every folder handed out is allowed in it
  /// @param root where the folders are made (a ScratchFolder's)
  /// @param keep true: leave each folder in place once its round is over
  CacheTests(Lesson& lesson, WriteAudit& audit, std::filesystem::path root, bool keep);

  /// @return the tests' random numbers, seeded from std::random_device when the tests were made:
  ///         folder names, the order of the rounds; and whatever the lesson draws from them (the
  ///         programs, the seeds of each process)
  std::mt19937_64& rng() { return rng_; }

  /// @brief Runs the tests: a process of program 1 on a folder of its own (its largest file is
  /// the stale round's entry); then @p rounds plain rounds and one of each damage, in a random
  /// order. Checks, as the exercise's: each process's result, each damaged round (right, and
  /// no damaged file left as it was planted), and that no process wrote outside its folder. A
  /// damage with nothing to damage is skipped, with a note.
  /// @param rounds plain rounds
  /// @param first_call the code under test's first call in a new process
  /// @param yardstick the course's own, first in every round
  /// @return the plain rounds' times
  /// @throws std::runtime_error when the yardstick's process fails (no code under test runs
  ///         there: the machine's or the course's problem)
  FirstCallTimes run(int rounds, const FirstCall& first_call, const Yardstick& yardstick);

 private:
  std::filesystem::path new_folder();
  void leave(const std::filesystem::path& dir);
  ChildRun first_call(const FirstCall& call, const std::filesystem::path& dir, int program);
  bool record_call(const std::string& name, const ChildRun& c);
  std::map<std::filesystem::path, std::string> damage(Damage d, const std::filesystem::path& dir);
  void judge(Damage d, const ChildRun& c,
             const std::map<std::filesystem::path, std::string>& damaged);

  Lesson& lesson_;
  WriteAudit& audit_;
  std::filesystem::path root_;
  bool keep_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::filesystem::path other_name_;  // program 1's entry: its file's name in its folder
  std::string other_entry_;           // and its bytes
  FileStamps before_;                 // the places a graded run can write, before the tests
  std::string written_;  // what a process wrote outside its folder (the first one found)
};

}  // namespace lab
