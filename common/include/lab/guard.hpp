/// @file guard.hpp
/// @brief lab::GuardedBuffer: a device output with a guard zone after its last element, to the end
/// of its allocation, so that a write past the end (which never crashes inside an allocation) is
/// seen and reported as a wrong result.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "lab/check.hpp"
#include "lab/data.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/validate.hpp"

namespace lab {

/// @brief @p T elements in device memory, followed by a guard zone filled with a byte pattern.
/// Before a run: poison() the elements (a NaN for floats) and arm() the guard zone; after it,
/// check_guard() says whether anything in the zone changed, to its last byte. The default zone
/// is a 2 MiB page: far longer than any row of any case, so an off-by-one in a row or column
/// guard, or a stray index well past the end, lands in it. Move-only.
template <class T>
class GuardedBuffer {
 public:
  /// The default length of the guard zone: one 2 MiB page.
  static constexpr std::size_t kGuardBytes = std::size_t{2} << 20;
  /// The byte the guard zone is filled with.
  static constexpr unsigned char kPattern = 0xA5;

  /// @brief Nothing allocated.
  GuardedBuffer() = default;
  /// @param count elements (uninitialised until poison() or a copy)
  /// @param name what error messages call it, e.g. "y"
  /// @param guard_bytes length of the guard zone (rounded up to whole elements)
  GuardedBuffer(std::size_t count, std::string name, std::size_t guard_bytes = kGuardBytes)
      : count_(count),
        guard_(guard_bytes / sizeof(T) + (guard_bytes % sizeof(T) != 0)),
        name_(std::move(name)),
        memory_(count + guard_) {}

  /// @return the device pointer to the first element
  T* data() const noexcept { return memory_.data(); }
  /// @return the number of elements (the guard zone not included)
  std::size_t size() const noexcept { return count_; }
  /// @return the elements' size in bytes
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  /// @return what error messages call it, e.g. "y"
  const std::string& name() const noexcept { return name_; }

  /// @brief Fills the elements with 0xFF bytes (lab::poison): a float never written stays NaN.
  /// @param stream where to enqueue it
  void poison(cudaStream_t stream) const { lab::poison(data(), bytes(), stream); }

  /// @brief Fills the guard zone with its pattern.
  /// @param stream where to enqueue it
  void arm(cudaStream_t stream) const {
    LAB_CHECK(cudaMemsetAsync(data() + count_, kPattern, guard_ * sizeof(T), stream));
  }

  /// @brief Copies the elements back (waits for @p stream).
  /// @param stream where to enqueue the copy
  /// @return the elements
  std::vector<T> download(cudaStream_t stream) const {
    std::vector<T> host(count_);
    LAB_CHECK(cudaMemcpyAsync(host.data(), data(), bytes(), cudaMemcpyDeviceToHost, stream));
    LAB_CHECK(cudaStreamSynchronize(stream));
    return host;
  }

  /// @brief Before a run: poison() the elements and arm() the guard zone.
  /// @param stream where to enqueue both
  void reset(cudaStream_t stream) const {
    poison(stream);
    arm(stream);
  }

  /// @brief Copies the guard zone back (waits for @p stream) and looks at every byte of it.
  /// @param stream where to enqueue the copy
  /// @return "" when the zone is intact, else what was written there, in words
  std::string damage(cudaStream_t stream) const {
    std::size_t changed = 0;
    const std::size_t first = scan(stream, changed);  // before describe() reads `changed`: the
    return describe(first, changed);                  // order of a call's arguments is unspecified
  }

  /// @brief Adds the guard zone's verdict to @p c (waits for @p stream): a changed zone fails
  /// the comparison, and its note says where, followed by what the values said.
  /// @param c the comparison of the elements
  /// @param stream where to enqueue the copy
  void check_guard(Comparison& c, cudaStream_t stream) const {
    std::size_t changed = 0;
    const std::size_t first = scan(stream, changed);
    if (changed == 0) return;
    const std::string values = c.ok ? "" : "; also " + c.summary();
    c.ok = false;
    c.mismatches += changed;
    c.note = describe(first, changed) + values;
  }

 private:
  // The index (from the zone's start) of the first element that changed; @p changed counts them.
  std::size_t scan(cudaStream_t stream, std::size_t& changed) const {
    std::vector<unsigned char> zone(guard_ * sizeof(T));
    LAB_CHECK(
        cudaMemcpyAsync(zone.data(), data() + count_, zone.size(), cudaMemcpyDeviceToHost, stream));
    LAB_CHECK(cudaStreamSynchronize(stream));
    std::vector<unsigned char> intact(sizeof(T), kPattern);
    std::size_t first = 0;
    for (std::size_t i = 0; i < guard_; ++i)
      if (std::memcmp(zone.data() + i * sizeof(T), intact.data(), sizeof(T)) != 0 && changed++ == 0)
        first = i;
    return first;
  }

  std::string describe(std::size_t first, std::size_t changed) const {
    if (changed == 0) return "";
    const char* unit = sizeof(T) == 1 ? " bytes" : " elements";
    return "wrote past the end of " + name_ + " (" + std::to_string(count_) + unit + "): " + name_ +
           "[" + std::to_string(count_ + first) + "]" +
           (changed > 1 ? " and " + std::to_string(changed - 1) + " more" : "") + " of the " +
           std::to_string(guard_) + unit + " after it changed";
  }

  std::size_t count_ = 0;
  std::size_t guard_ = 0;  // elements of the guard zone
  std::string name_;
  DeviceBuffer<T> memory_;  // count_ + guard_ elements
};

/// @brief A variant's output judged and recorded in one step: @p got against @p expected
/// (Lesson::compare, so the record can replay it), then @p out's guard zone (check_guard), then
/// Lesson::check under @p case_name.
/// @param l the lesson
/// @param variant a declared variant
/// @param case_name the case
/// @param out the output buffer the values came from (its guard zone is read on @p stream)
/// @param got the values compared: all of @p out, or those at @p index
/// @param expected the reference, one per value of @p got
/// @param tol the tolerance
/// @param stream the lesson's stream
/// @param index where each value of @p got lies in @p out (empty: got[i] is out[i]), so that a
///        mismatch names the output's own index
/// @return the comparison, as recorded
template <class T>
Comparison check_output(Lesson& l, const std::string& variant, const std::string& case_name,
                        const GuardedBuffer<T>& out, const std::vector<T>& got,
                        const std::vector<T>& expected, Tolerance tol, cudaStream_t stream,
                        const std::vector<std::size_t>& index = {}) {
  Comparison c = l.compare(variant, case_name, got, expected, tol);
  if (!index.empty())
    for (Mismatch& m : c.first) m.index = index[m.index];
  out.check_guard(c, stream);
  l.check(variant, case_name, c);
  return c;
}

}  // namespace lab
