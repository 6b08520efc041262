/// @file timed_calls.hpp
/// @brief lab::TimedCalls: a lesson's checks of its exercise's timed calls, written as a class.
/// A lesson derives from it, writes prepare() and verify(), and hands checks() to
/// Lesson::measure (see lab::TimedCallChecks and docs/grading-security.md, "Timed calls are
/// validated calls"). Also what a check of a matrix product needs (lab::crossings,
/// lab::product_at, lab::KeptReference) and lab::BetweenCalls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/stats.hpp"
#include "lab/validate.hpp"

namespace lab {

/// @brief How an exercise's timed calls are held to account: before every one, prepare() gives
/// it new inputs from a seed the harness drew and re-poisons its outputs; after the calls the
/// harness picks once they have finished, verify() checks that call like a validated one.
class TimedCalls {
 public:
  virtual ~TimedCalls() = default;

  /// @return the checks for Lesson::measure: prepare() before every timed call; verify() after
  ///         every call the harness picks (all of them, right or wrong: a --replay run must make
  ///         the same checks, and it sees only what was recorded)
  TimedCallChecks checks() {
    return {[this](cudaStream_t stream, std::uint64_t call_seed) {
              prepared_ = true;
              prepare(stream, call_seed);
            },
            [this](cudaStream_t stream, const std::string& case_name, std::uint64_t pick_seed) {
              pick.seed(pick_seed);
              verify(stream, case_name);
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
  /// write), compared with Lesson::compare and recorded with Lesson::check under @p case_name.
  /// @param stream the lesson's stream
  /// @param case_name e.g. "timed call 17"
  virtual void verify(cudaStream_t stream, const std::string& case_name) = 0;

  /// The harness's own generator for what verify() looks at (rows, elements): seeded before
  /// each verify() from a draw made only after the call (a --replay run seeds it the same way).
  std::mt19937_64 pick;

 private:
  bool prepared_ = false;
};

/// @brief The harness's own work, timed between an exercise's calls (from TimedCalls::prepare,
/// or right after each call), for a rule that divides a reading by a reference: measured over the
/// same stretch of time as the exercise's samples, the reference moves with whatever drifts for a
/// while (the host link once ran at 45 instead of 55 GB/s for seconds on the H100). Each part runs on
/// the lesson's stream between events of its own, and time() waits for them, so no exercise code
/// runs while they are timed.
class BetweenCalls {
 public:
  /// One part: enqueues the harness's work on the given stream.
  using Part = std::function<void(cudaStream_t)>;

  /// @param parts the work timed before each call, each part timed on its own
  explicit BetweenCalls(std::vector<Part> parts) : parts_(std::move(parts)) {}

  /// @brief Runs every part once on @p stream, each between two events, and waits for them.
  /// A 20 us spin comes first, as lab::benchmark's lead-in does, so that the host's enqueue of
  /// the first part falls before its start event, not inside its time.
  /// @param stream the lesson's stream (everything of the last call is done on it by then)
  /// @return this call's GPU time of each part (ms), in the parts' order
  std::vector<double> time(cudaStream_t stream) {
    std::vector<double> ms;
    if (parts_.empty()) return ms;
    spin(kLeadInUs, stream);
    const std::size_t first = used_;
    for (const Part& part : parts_) {
      if (used_ == events_.size()) events_.emplace_back();
      events_[used_].first.record(stream);
      part(stream);
      events_[used_].second.record(stream);
      ++used_;
    }
    events_[used_ - 1].second.synchronize();
    for (std::size_t i = first; i < used_; ++i)
      ms.push_back(elapsed_ms(events_[i].first, events_[i].second));
    return ms;
  }

  /// @param part an index into the parts given to the constructor
  /// @return the GPU times of that part over every time() so far (ms), as a lab::Stats (n = 0
  ///         before the first, or for an index past the parts)
  Stats part(std::size_t part) const {
    std::vector<double> ms;
    if (part < parts_.size())
      for (std::size_t i = part; i < used_; i += parts_.size())
        ms.push_back(elapsed_ms(events_[i].first, events_[i].second));
    return summarize(ms);
  }

 private:
  static constexpr double kLeadInUs = 20.0;  ///< the spin before the first part (us)
  std::vector<Part> parts_;
  std::deque<std::pair<Event, Event>> events_;  // a deque: events are neither copied nor moved
  std::size_t used_ = 0;                        // events_ in use, part after part, call after call
};

/// @brief The row-major indices i * N + j of a matrix's elements where each of @p rows crosses
/// each of @p cols, row by row: all of them from all rows and columns (Look::indices after a
/// validated call), a grid of picks after a timed call.
/// @param rows row indices
/// @param cols column indices (each below @p N)
/// @param N columns of the matrix
/// @return rows.size() x cols.size() indices
std::vector<std::size_t> crossings(const std::vector<std::size_t>& rows,
                                   const std::vector<std::size_t>& cols, std::size_t N);

/// @brief The exact elements of a matrix product C = A B at the given places, for a check: from
/// rows of A and columns of B regenerated by the harness's generators (never read back: the code
/// under test could have written into them), each row and column regenerated once however many
/// elements use it. At 32 x 32 crossings and K = 4096: 262 K values regenerated and 4 M
/// multiply-adds, a few milliseconds of host time.
/// @param at C's elements, as row-major indices i * N + j (from lab::crossings, or any list)
/// @param N columns of B and C
/// @param K columns of A, rows of B
/// @param a_at A[i][k] as the harness wrote it, at i * K + k (row-major M x K)
/// @param b_at B[k][j] as the harness wrote it, at k * N + j (row-major K x N)
/// @return for each element, sum_k A[i][k] B[k][j] in double and its magnitude
std::vector<Dot> product_at(const std::vector<std::size_t>& at, int N, int K,
                            const std::function<float(std::uint64_t)>& a_at,
                            const std::function<float(std::uint64_t)>& b_at);

/// @brief A check's costly reference (a product's dot products), kept for the next check of the
/// same inputs at the same elements: a validation checks every variant on one set of inputs, so
/// the reference is made once per validation rather than once per variant.
template <class Value>
class KeptReference {
 public:
  /// @param seed the seed the inputs were made from (Look::seed)
  /// @param at the elements the reference is for
  /// @param make makes the reference; called unless the last get() had the same seed and elements
  /// @return the reference (valid until the next get())
  const Value& get(std::uint64_t seed, const std::vector<std::size_t>& at,
                   const std::function<Value()>& make) {
    if (!made_ || seed != seed_ || at != at_) {
      value_ = make();
      seed_ = seed;
      at_ = at;
      made_ = true;
    }
    return value_;
  }

 private:
  bool made_ = false;
  std::uint64_t seed_ = 0;
  std::vector<std::size_t> at_;
  Value value_{};
};

}  // namespace lab
