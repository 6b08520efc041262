/// @file timed_calls.hpp
/// @brief lab::TimedCalls: a lesson's checks of its exercise's timed calls, written as a class.
/// A lesson derives from it, writes prepare() and verify(), and hands checks() to
/// Lesson::measure (see lab::TimedCallChecks and docs/grading-security.md, "Timed calls are
/// validated calls").
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "lab/harness.hpp"

namespace lab {

/// @brief How an exercise's timed calls are held to account: before every one, prepare() gives
/// it new inputs from a seed the harness drew and re-poisons its outputs; after the calls the
/// harness picks once they have finished, verify() checks that call like a validated one.
class TimedCalls {
 public:
  virtual ~TimedCalls() = default;

  /// @return the checks for Lesson::measure: prepare() before every timed call; verify() after
  ///         the calls the harness picks, until one is wrong (one wrong call fails the rule; more
  ///         would only repeat it in the table)
  TimedCallChecks checks() {
    return {[this](cudaStream_t stream, std::uint64_t call_seed) {
              prepared_ = true;
              prepare(stream, call_seed);
            },
            [this](cudaStream_t stream, const std::string& case_name) {
              if (!failed_) failed_ = !verify(stream, case_name);
            }};
  }

  /// @return true once a timed call was prepared: the exercise was timed (its inputs can be
  ///         checked afterwards)
  bool prepared() const { return prepared_; }

 protected:
  /// @brief Before a timed call, outside the timed window: new inputs made from @p call_seed (a
  /// seed the exercise cannot see) and poisoned outputs.
  /// @param stream the lesson's stream
  /// @param call_seed drawn by the harness for this call
  virtual void prepare(cudaStream_t stream, std::uint64_t call_seed) = 0;

  /// @brief After a call the harness picked, once it has finished: its outputs against a
  /// reference from the regenerated inputs (never read back from buffers the exercise could
  /// write), recorded with Lesson::check under @p case_name.
  /// @param stream the lesson's stream
  /// @param case_name e.g. "timed call 17"
  /// @return whether the call was right
  virtual bool verify(cudaStream_t stream, const std::string& case_name) = 0;

  /// The harness's own generator for what verify() looks at (rows, elements), drawn only after
  /// the call, where the exercise cannot see it.
  std::mt19937_64 pick{std::random_device{}()};

 private:
  bool prepared_ = false;
  bool failed_ = false;
};

}  // namespace lab
