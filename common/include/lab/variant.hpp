/// @file variant.hpp
/// @brief lab::Variant, one way of doing a lesson's work, declared in one place; and
/// lab::Variants, the lesson's list of them, which validation and measurement loop over.
///
/// A harness declares each variant once, with everything the harness needs to know about it:
/// @code
/// lab::Variants<Problem> variants(lesson);
/// variants.add({"row_per_thread", lab::Role::Baseline, "one thread per row: strided reads",
///               [](Problem& p, cudaStream_t s) { row_per_thread(p, s); },
///               [](const Problem& p) { return lab::Work{4.0 * p.size, 2.0 * p.size}; }});
/// variants.add({"exercise", lab::Role::Exercise, "your gemv (exercise.cu)", ...});
/// return lesson.run(argc, argv, [&](lab::Lesson& l) {
///   for (const auto* v : variants.selected()) validate(l, *v, problem);   // each case
///   variants.measure_all(problem, timed.checks());  // the exercise's timed calls are checked
///   const lab::Measurement* m = variants.measurement("exercise");
/// });
/// @endcode
/// A misspelt name is an error (std::logic_error), never a silent default. A lesson with facts of
/// its own about each variant derives from lab::Variant and names its type: Variants<Problem, V>.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lab/harness.hpp"

namespace lab {

/// @brief What sets the pace of a variant's calls, and so how its time is taken.
enum class Pacing {
  /// The GPU (the default): a lead-in kernel holds the stream while the call is enqueued, so the
  /// time is the GPU's work, not the launch call.
  Device,
  /// The host: its calls are part of the cost (many launches, waits for the GPU, allocations).
  /// No lead-in: the events hold the whole call, host gaps included.
  Host,
};

/// @brief One way of doing a lesson's work on a @p Problem (the lesson's own struct: its sizes
/// and buffers).
template <class Problem>
struct Variant {
  std::string name = {};         ///< unique in the lesson; the student's is "exercise"
  Role role = Role::Baseline;    ///< what it is, for the table and the checker
  std::string description = {};  ///< one line for the table's legend
  /// Enqueues one call on the stream (no synchronization, unless its pacing says it waits).
  /// Empty for an exercise the harness does not time (a timer, judged on what it reports).
  std::function<void(Problem&, cudaStream_t)> launch = {};
  /// Bytes and FLOPs of one call on a problem: the basis of its GB/s and GFLOP/s.
  std::function<Work(const Problem&)> work = {};
  /// What the problem must hold for it, as the lesson's own bits (a temporary, a library's
  /// workspace): a lesson allocates Variants::needs(), what the selected variants need.
  unsigned needs = 0;
  Pacing pacing = Pacing::Device;  ///< see Pacing
  BenchmarkOptions options = {};   ///< how it is measured (the course's method by default)
  /// Why it is timed in cold mode only ("": in every mode): a call that waits for the GPU can be
  /// neither replayed back to back (hot) nor captured (graph). Printed when --mode skips it.
  std::string cold_only = {};
  /// Why graph mode cannot time it ("": it can), e.g. it launches a graph itself.
  std::string no_graph = {};
};

/// @brief The lesson's variants of one kind of problem, in declaration order (a lesson whose
/// parts work on different problems keeps one list per part). Each add() declares the variant to
/// the lesson (--list, --variant, the table).
/// @tparam Problem the lesson's problem struct
/// @tparam V Variant<Problem>, or a lesson's struct derived from it
template <class Problem, class V = Variant<Problem>>
class Variants {
 public:
  /// @param lesson the lesson they belong to; must outlive this list
  explicit Variants(Lesson& lesson) : lesson_(lesson) {}
  Variants(const Variants&) = delete;
  Variants& operator=(const Variants&) = delete;

  /// @brief Declares @p v to the lesson (before Lesson::run) and keeps it.
  /// @param v the variant: a new name; a launch and a work function unless the harness never
  ///        measures it (an exercise that is a timer, judged on what it reports)
  /// @return the variant, as kept (the reference stays valid)
  const V& add(V v) {
    for (const V& o : list_)
      if (o.name == v.name) throw std::logic_error("variant '" + v.name + "' declared twice");
    lesson_.declare(v.name, v.role, v.description);
    list_.push_back(std::move(v));
    return list_.back();
  }

  /// @param name a variant's name
  /// @return the variant; throws std::logic_error naming the known ones when there is none
  const V& operator[](const std::string& name) const {
    std::string known;
    for (const V& v : list_) {
      if (v.name == name) return v;
      known += (known.empty() ? "" : ", ") + v.name;
    }
    throw std::logic_error("no variant named '" + name + "' (variants: " + known + ")");
  }

  /// @return the first variant (iteration in declaration order)
  auto begin() const { return list_.begin(); }
  /// @return past the last variant
  auto end() const { return list_.end(); }

  /// @return the variants --variant selected, in declaration order
  std::vector<const V*> selected() const {
    std::vector<const V*> out;
    for (const V& v : list_)
      if (lesson_.selected(v.name)) out.push_back(&v);
    return out;
  }

  /// @return the selected variants with the exercise last: for validations on shared buffers,
  ///         so that whatever the exercise does to them cannot touch the given variants' checks
  std::vector<const V*> selected_exercise_last() const {
    std::vector<const V*> out = selected();
    std::stable_partition(out.begin(), out.end(),
                          [](const V* v) { return v->role != Role::Exercise; });
    return out;
  }

  /// @return the bits of Variant::needs of the selected variants, together
  unsigned needs() const {
    unsigned bits = 0;
    for (const V* v : selected()) bits |= v->needs;
    return bits;
  }

  /// @return true when --variant selected at least one of them (else the part can be skipped)
  bool any_selected() const { return !selected().empty(); }

  /// @brief Measures @p v on @p p with Lesson::measure: its work, options and pacing. In a
  /// --mode it cannot be timed in, it is skipped with a note under the table.
  /// @param v one of this list's variants
  /// @param p the problem (the timing size)
  /// @param checks how its timed calls are prepared and verified (see lab::TimedCallChecks)
  /// @return the measurement, or nullptr (not selected, skipped, or --profile)
  const Measurement* measure(const V& v, Problem& p, const TimedCallChecks& checks = {}) {
    const Mode mode = lesson_.result().mode;
    const std::string why = mode == Mode::Graph && !v.no_graph.empty() ? v.no_graph
                            : mode != Mode::Cold                         ? v.cold_only
                                                                         : std::string();
    const Measurement* m = nullptr;
    if (!why.empty()) {
      if (lesson_.selected(v.name))
        lesson_.note(v.name + " not timed in " + to_string(mode) + " mode: " + why);
    } else {
      if (!v.launch || !v.work)
        throw std::logic_error("variant '" + v.name +
                               "' has no launch or work: it cannot be measured");
      BenchmarkOptions options = v.options;
      if (v.pacing == Pacing::Host) options.lead_in_us = 0;
      m = lesson_.measure(v.name, v.work(p), [&v, &p](cudaStream_t s) { v.launch(p, s); },
                          options, checks);
    }
    measured_[v.name] = m;
    return m;
  }

  /// @brief Measures every variant on @p p, in declaration order.
  /// @param p the problem
  /// @param exercise the exercise's TimedCallChecks (the variant whose role is Exercise)
  void measure_all(Problem& p, const TimedCallChecks& exercise = {}) {
    for (const V& v : list_) measure(v, p, v.role == Role::Exercise ? exercise : TimedCallChecks{});
  }

  /// @param name a variant's name (a misspelt one throws)
  /// @return what measure() got for it, or nullptr when it was not measured
  const Measurement* measurement(const std::string& name) const {
    (*this)[name];
    const auto it = measured_.find(name);
    return it == measured_.end() ? nullptr : it->second;
  }

 private:
  Lesson& lesson_;
  std::deque<V> list_;  // a deque: add() never moves the variants already kept
  std::map<std::string, const Measurement*> measured_;
};

}  // namespace lab
