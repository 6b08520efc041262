/// @file outputs.cuh
/// @brief lab::OutputsCheck: several outputs of one call judged as one check, for a look at a
/// variant's outputs (Checks::check). Each output is compared through Lesson::compare under
/// "<case>, <output>" (so a --replay run can make the same comparison), in order, until one
/// differs: that one decides, and the check's note names it. Once every output is right, the
/// guard zones are read, in order; the first that changed fails the check with what was written
/// there. Then the check is recorded once, under the case. Device code (lab::gather): include it
/// from a .cu file.
///
/// @code
/// lab::OutputsCheck o(look);
/// o.compare(p.mean, want_mean, tol);          // all of mean, under its own name
/// o.compare(p.score, want_score, tol, rows);  // score at `rows` only
/// o.guard(p.mean).guard(p.score);
/// o.record();
/// @endcode
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "lab/guard.hpp"
#include "lab/harness.hpp"
#include "lab/protocol.cuh"
#include "lab/validate.hpp"

namespace lab {

/// @brief One check over several outputs of a call (see the file's comment).
class OutputsCheck {
 public:
  /// @param look the look at a variant's outputs: its lesson, variant, case and stream
  explicit OutputsCheck(const Look& look)
      : lesson_(look.lesson()),
        variant_(look.variant()),
        case_name_(look.case_name()),
        stream_(look.stream()) {}

  /// @return true while every output compared so far is right and no guard zone changed
  bool ok() const { return c_.ok && damage_.empty(); }

  /// @brief Compares an output with its reference, unless an earlier one already differs (then
  /// @p got is never called: nothing more is read back).
  /// @param output its name, e.g. "mean": the comparison is made under "<case>, <output>"
  /// @param got returns the output's values (a std::vector<T>), read only when compared
  /// @param want the reference, one per value
  /// @param tol the tolerance
  /// @param index where each value lies in the output (empty: got[i] is element i), so that a
  ///        mismatch names the output's own index
  /// @return *this
  template <class Got, class T>
  OutputsCheck& compare(const std::string& output, const Got& got, const std::vector<T>& want,
                        Tolerance tol, const std::vector<std::size_t>& index = {}) {
    if (!ok()) return *this;
    c_ = lesson_.compare(variant_, case_name_ + ", " + output, got(), want, tol);
    if (!index.empty())
      for (Mismatch& m : c_.first) m.index = index[m.index];
    what_ = output;
    return *this;
  }

  /// @brief compare() of an output in a lab::GuardedBuffer, under the buffer's own name: all of
  /// it, or the elements at @p at only (lab::gather), read on the look's stream.
  /// @param out the output
  /// @param want the reference: one per element, or one per place of @p at
  /// @param tol the tolerance
  /// @param at the places looked at (Look::indices), or empty: every element
  /// @return *this
  template <class T>
  OutputsCheck& compare(const GuardedBuffer<T>& out, const std::vector<T>& want, Tolerance tol,
                        const std::vector<std::size_t>& at = {}) {
    auto got = [&] { return at.empty() ? out.download(stream_) : gather(out.data(), at, stream_); };
    return compare(out.name(), got, want, tol, at);
  }

  /// @brief A guard zone's verdict, kept when every output is right and no earlier zone changed.
  /// @param damage GuardedBuffer::damage's answer: "" for an intact zone
  /// @return *this
  OutputsCheck& guard(const std::string& damage) {
    if (ok()) damage_ = damage;
    return *this;
  }

  /// @brief An output's (or a workspace's) guard zone, read only when every output is right and
  /// no earlier zone changed (waits for the look's stream).
  /// @param buffer the buffer
  /// @return *this
  template <class T>
  OutputsCheck& guard(const GuardedBuffer<T>& buffer) {
    return ok() ? guard(buffer.damage(stream_)) : *this;
  }

  /// @brief Records the check under the case (Lesson::check): the first output that differs,
  /// its note "<output>: <what differs>"; else the first changed guard zone; else the last
  /// comparison (all right).
  /// @return the comparison as recorded (a changed guard zone: not ok, its note what changed)
  Comparison record() {
    Comparison c = c_;
    if (!c.ok) {
      c.note = what_ + ": " + c.summary();
      lesson_.check(variant_, case_name_, c);
    } else if (!damage_.empty()) {
      lesson_.check(variant_, case_name_, false, damage_);
      c = Comparison{};
      c.ok = false;
      c.mismatches = 1;
      c.note = damage_;
    } else {
      lesson_.check(variant_, case_name_, c);
    }
    return c;
  }

 private:
  Lesson& lesson_;
  std::string variant_;
  std::string case_name_;
  cudaStream_t stream_;
  Comparison c_;        // the last comparison made
  std::string what_;    // the output it was of
  std::string damage_;  // the first changed guard zone's verdict
};

}  // namespace lab
