/// @file record.hpp
/// @brief The exercise's results as they leave its process, for a pristine one to judge.
///
/// Under `lab-check grade` the student's program writes, as each check of the exercise is made,
/// what a process without student code needs to make it again: for an array comparison
/// (Lesson::compare) a sample of the exercise's values, drawn after the call (up to
/// kRecordSample elements, every one below that); for a verified timed call the seeds its inputs
/// and its picks came from. The checker then runs the course's own program with `--replay`: it
/// regenerates every input, computes every reference itself and compares the recorded values with
/// them. So whether the exercise was right is decided where no student code runs
/// (docs/grading-security.md, "Results judged out of process").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lab {

/// The most elements of one comparison a record keeps (a uniform sample above it).
inline constexpr std::size_t kRecordSample = 4096;
/// ... of one comparison made after a timed call: every timed call is checked, and thousands of
/// calls of 4096 values each would outgrow what the checker reads (a call that skipped its work
/// or got a tenth of its elements wrong still shows in 256 of them).
inline constexpr std::size_t kRecordTimedSample = 256;
/// Once a run has recorded this many values after timed calls (about 25 MB of record), each later
/// comparison keeps kRecordTimedSampleLate: a lesson that compares several outputs per call stays
/// bounded too (the checker reads at most 64 MiB).
inline constexpr std::size_t kRecordTimedValues = 1000000;
inline constexpr std::size_t kRecordTimedSampleLate = 16;  ///< see kRecordTimedValues

/// @brief One array comparison of the exercise: a sample of its values.
struct RecordedCheck {
  std::string variant;              ///< the variant compared (the exercise)
  std::string case_name;            ///< the check's case, e.g. "1000x777" or "timed call 17"
  std::size_t count = 0;            ///< elements the comparison covered
  std::vector<std::size_t> index;   ///< the sampled elements, in the comparison's own indices
  std::vector<double> got;          ///< the exercise's value at each
};

/// @brief One timed call: prepared (no case: its inputs came from call_seed), or verified
/// after it (the call prepared last; its check's picks came from pick_seed).
struct RecordedCall {
  std::string variant;          ///< the variant timed (the exercise)
  int measure = 0;              ///< which Lesson::measure of that variant (0 for the first)
  std::string case_name;        ///< "" for a prepared call; the check's case, e.g. "timed call 17"
  std::uint64_t call_seed = 0;  ///< handed to TimedCallChecks::prepare before the call
  std::uint64_t pick_seed = 0;  ///< handed to TimedCallChecks::verify after it (0 if prepared)
};

/// @brief A number the harness chose at run time (a calibration) that the exercise's results
/// depend on, recorded before any exercise code ran (Lesson::run_parameter).
struct RecordedParameter {
  std::string name;         ///< e.g. "steps"
  std::uint64_t value = 0;  ///< a count
};

/// @brief A whole record, in the order its entries were written.
struct Record {
  std::vector<RecordedCheck> checks;          ///< array comparisons
  std::vector<RecordedCall> calls;            ///< timed calls, prepared and verified
  std::vector<RecordedParameter> parameters;  ///< the harness's run-time choices
};

/// @param c a comparison's sample
/// @return its entry in the record's text (two lines); names lose tabs and line breaks
std::string record_text(const RecordedCheck& c);

/// @param c a verified call
/// @return its entry in the record's text (one line)
std::string record_text(const RecordedCall& c);

/// @param p a parameter
/// @return its entry in the record's text (one line)
std::string record_text(const RecordedParameter& p);

/// @brief Parses a record's text.
/// @param text what a program wrote (the concatenated entries)
/// @return the record
/// @throws std::runtime_error naming the line that is malformed
Record parse_record(const std::string& text);

/// @brief The elements of an @p n -element comparison a record keeps: all of them up to
/// @p most, else @p most drawn uniformly from @p seed (repeats possible).
/// @param n elements compared
/// @param seed where the draw comes from (fresh from std::random_device after the call)
/// @param most kRecordSample; after a timed call kRecordTimedSample, or kRecordTimedSampleLate
///        once the run has recorded kRecordTimedValues such values
/// @return indices below n
std::vector<std::size_t> sample_indices(std::size_t n, std::uint64_t seed,
                                        std::size_t most = kRecordSample);

}  // namespace lab
