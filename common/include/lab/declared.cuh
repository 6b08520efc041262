/// @file declared.cuh
/// @brief A problem's inputs and outputs declared once, and the lab::Checks that follow from
/// them (device code: include it from a .cu file). Each input is a device array of floats that
/// lab::fill_random writes from a seed (lab::RandomArray); each output a lab::GuardedBuffer.
/// lab::declared_checks makes Checks::fill (every input from the seed, in the order declared),
/// Checks::reset (every output poisoned, its guard zone armed) and Checks::inputs_changed (every
/// input compared with what the seed made) from that one list, so what is written and what is
/// compared after timing cannot disagree; the lesson writes only its reference, Checks::check.
///
/// @code
/// struct Inputs {  // what one seed makes: the reference regenerates the same values
///   lab::RandomInput x, a;
///   explicit Inputs(std::uint64_t seed) : x{seed}, a{lab::derive_seed(seed, 1), 0.99f, 1.01f} {}
/// };
/// auto check = [](lab::Look& look, Problem& p) { ... Inputs(look.seed()).a(i) ... };
/// return lab::declared_checks<Problem>({{"x", &Problem::x, &Inputs::x},
///                                       {"a", &Problem::a, &Inputs::a}},
///                                      {&Problem::y}, check);
/// // or, for one input in [-1, 1) from the seed itself: {{"x", &Problem::x}}
/// @endcode
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "lab/data.hpp"
#include "lab/guard.hpp"
#include "lab/memory.hpp"
#include "lab/protocol.cuh"
#include "lab/read_only.cuh"

namespace lab {

/// @brief One input of a problem: its name, its array, and the values a seed gives it.
template <class Problem>
struct RandomArray {
  using Member = DeviceBuffer<float> Problem::*;  ///< an array of the problem
  std::string name;                               ///< what messages call it, e.g. "x"
  Member array;                                   ///< where it lies in the problem
  /// What lab::fill_random writes into it from a set of inputs' seed (its own seed and range).
  std::function<RandomInput(std::uint64_t seed)> values;

  /// @brief An input filled from the seed itself, in [-1, 1).
  /// @param input_name what messages call it
  /// @param input where it lies in the problem
  RandomArray(std::string input_name, Member input)
      : name(std::move(input_name)), array(input),
        values([](std::uint64_t seed) { return RandomInput{seed}; }) {}

  /// @brief An input whose values are a member of the lesson's own struct made from the seed
  /// (a seed of its own, derived; a range of its own): the struct the reference reads too.
  /// @param input_name what messages call it
  /// @param input where it lies in the problem
  /// @param member its values in a Seeds made from the seed (Seeds(seed).*member)
  template <class Seeds>
  RandomArray(std::string input_name, Member input, RandomInput Seeds::*member)
      : name(std::move(input_name)), array(input),
        values([member](std::uint64_t seed) { return Seeds(seed).*member; }) {}
};

/// @brief Checks made from declared inputs and outputs, with the lesson's reference.
/// @param inputs every input a variant reads, each made by lab::fill_random (see RandomArray)
/// @param outputs every output, reset (poisoned, guard zone armed) before each call
/// @param check the lesson's one reference (Checks::check)
/// @return fill: each input's lab::fill_random from the seed, in order; reset: each output's
///         GuardedBuffer::reset, in order; inputs_changed: each input's lab::changed_input
///         against the same values, in order; check: @p check
template <class Problem>
Checks<Problem> declared_checks(std::vector<RandomArray<Problem>> inputs,
                                std::vector<GuardedBuffer<float> Problem::*> outputs,
                                std::function<void(Look&, Problem&)> check) {
  Checks<Problem> c;
  c.fill = [inputs](Problem& p, std::uint64_t seed, cudaStream_t s) {
    for (const RandomArray<Problem>& in : inputs) {
      const DeviceBuffer<float>& array = p.*in.array;
      const RandomInput v = in.values(seed);
      fill_random(array.data(), array.size(), v.seed, s, v.lo, v.hi);
    }
  };
  c.reset = [outputs](Problem& p, cudaStream_t s) {
    for (const auto& out : outputs) (p.*out).reset(s);
  };
  c.check = std::move(check);
  c.inputs_changed = [inputs](const Problem& p, std::uint64_t seed, cudaStream_t s) {
    std::vector<std::string> changes;
    for (const RandomArray<Problem>& in : inputs) {
      const DeviceBuffer<float>& array = p.*in.array;
      changes.push_back(changed_input(in.name, array.data(), array.size(), in.values(seed), s));
    }
    return changes;
  };
  return c;
}

}  // namespace lab
