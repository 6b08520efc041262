/// @file declared.cuh
/// @brief A problem's inputs and outputs declared once, and the lab::Checks that follow from
/// them (device code: include it from a .cu file). Each input is a device array written from a
/// seed (lab::RandomArray): by lab::fill_random, or by a generator of the lesson's own made from
/// the problem and the seed (lab::fill_with). Each output is a lab::GuardedBuffer, poisoned and
/// its guard zone armed, or a plain array a variant adds into, zeroed (lab::ResetOutput).
/// lab::declared_checks makes Checks::fill (every input from the seed, in the order declared),
/// Checks::reset (every output made ready) and Checks::inputs_changed (every input compared with
/// what the seed made) from that one list, so what is written and what is compared after timing
/// cannot disagree; the lesson writes only its reference, Checks::check.
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
/// // or, from a generator that needs the problem's shape:
/// //   {{"x", &Problem::x, [](const Problem& p, std::uint64_t seed) { return Table{seed, p.cols}; }}}
/// @endcode
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lab/data.hpp"
#include "lab/fill.cuh"
#include "lab/guard.hpp"
#include "lab/memory.hpp"
#include "lab/protocol.cuh"
#include "lab/read_only.cuh"

namespace lab {

/// @brief One input of a problem: its name, and how a seed writes it and finds it changed.
template <class Problem>
struct RandomArray {
  std::string name;  ///< what messages call it, e.g. "x"
  /// Writes the input's values for a seed (lab::fill_random, or lab::fill_with of a generator).
  std::function<void(Problem&, std::uint64_t seed, cudaStream_t)> fill;
  /// lab::changed_input of the input against the values of a seed: "" when it still holds them.
  std::function<std::string(const Problem&, std::uint64_t seed, cudaStream_t)> changed;

  /// @brief An input filled from the seed itself, in [-1, 1).
  /// @param input_name what messages call it
  /// @param input where it lies in the problem
  RandomArray(std::string input_name, DeviceBuffer<float> Problem::*input)
      : RandomArray(std::move(input_name), input,
                    [](const Problem&, std::uint64_t seed) { return RandomInput{seed}; }) {}

  /// @brief An input whose values are a member of the lesson's own struct made from the seed
  /// (a seed of its own, derived; a range of its own): the struct the reference reads too.
  /// @param input_name what messages call it
  /// @param input where it lies in the problem
  /// @param member its values in a Seeds made from the seed (Seeds(seed).*member)
  template <class Seeds>
  RandomArray(std::string input_name, DeviceBuffer<float> Problem::*input,
              RandomInput Seeds::*member)
      : RandomArray(std::move(input_name), input,
                    [member](const Problem&, std::uint64_t seed) { return Seeds(seed).*member; }) {}

  /// @brief An input made by a generator of the lesson's own, which may depend on the problem
  /// (its shape): the functor the reference regenerates the input from, element by element.
  /// @param input_name what messages call it
  /// @param input where it lies in the problem
  /// @param make make(problem, seed) returns the generator: a functor with a __host__ __device__
  ///        operator()(std::uint64_t index) const returning the element (of the array's type)
  template <class T, class Make,
            std::enable_if_t<std::is_invocable_v<const Make&, const Problem&, std::uint64_t>, int> = 0>
  RandomArray(std::string input_name, DeviceBuffer<T> Problem::*input, Make make)
      : name(std::move(input_name)),
        fill([input, make](Problem& p, std::uint64_t seed, cudaStream_t s) {
          const DeviceBuffer<T>& array = p.*input;
          const auto values = make(p, seed);
          // lab::fill_random's own kernel for its own values; any other generator through fill_with
          if constexpr (std::is_same_v<std::decay_t<decltype(values)>, RandomInput>)
            fill_random(array.data(), array.size(), values.seed, s, values.lo, values.hi);
          else
            fill_with(array.data(), static_cast<long long>(array.size()), values, s);
        }),
        changed([what = name, input, make](const Problem& p, std::uint64_t seed, cudaStream_t s) {
          const DeviceBuffer<T>& array = p.*input;
          return changed_input(what, array.data(), array.size(), make(p, seed), s);
        }) {}
};

/// @brief One output of a problem, made ready before every call.
template <class Problem>
struct ResetOutput {
  /// Makes the output ready for a call, on the stream.
  std::function<void(Problem&, cudaStream_t)> reset;

  /// @brief An output (or a workspace) in a lab::GuardedBuffer: poisoned, its guard zone armed
  /// (GuardedBuffer::reset).
  /// @param output where it lies in the problem
  template <class T>
  ResetOutput(GuardedBuffer<T> Problem::*output)  // NOLINT: a member pointer is the declaration
      : reset([output](Problem& p, cudaStream_t s) { (p.*output).reset(s); }) {}

  /// @brief An output a variant adds into (atomics), not one it writes: set to zero bytes.
  /// @param sums where it lies in the problem
  template <class T>
  ResetOutput(DeviceBuffer<T> Problem::*sums)  // NOLINT: a member pointer is the declaration
      : reset([sums](Problem& p, cudaStream_t s) {
          LAB_CHECK(cudaMemsetAsync((p.*sums).data(), 0, (p.*sums).bytes(), s));
        }) {}

  /// Optional: for an output a call reads before it writes (updated in place), what makes it
  /// ready instead of reset, from the seed of the inputs it is given (the last fill's).
  std::function<void(Problem&, std::uint64_t seed, cudaStream_t)> start;

  /// @brief An output a call updates in place (y = alpha A x + beta y, a[i] = f(a[i])) in a
  /// lab::GuardedBuffer<float>: written by lab::fill_random from starting_values(problem, seed)
  /// when the problem reads it; poisoned when it gives std::nullopt (this problem only writes
  /// it, beta == 0 say); its guard zone armed either way.
  /// @param output where it lies in the problem
  /// @param starting_values (const Problem&, std::uint64_t seed) -> RandomInput or
  ///        std::optional<RandomInput>: the values, as the reference regenerates them
  template <class Values, std::enable_if_t<std::is_invocable_v<const Values&, const Problem&,
                                                               std::uint64_t>, int> = 0>
  ResetOutput(GuardedBuffer<float> Problem::*output, Values starting_values)
      : reset([output](Problem& p, cudaStream_t s) { (p.*output).reset(s); }),
        start([output, starting_values](Problem& p, std::uint64_t seed, cudaStream_t s) {
          const GuardedBuffer<float>& array = p.*output;
          const std::optional<RandomInput> v = starting_values(p, seed);
          if (!v) return array.reset(s);
          fill_random(array.data(), array.size(), v->seed, s, v->lo, v->hi);
          array.arm(s);
        }) {}
};

/// @brief Checks made from declared inputs and outputs, with the lesson's reference.
/// @param inputs every input a variant reads, each written from the seed (see RandomArray)
/// @param outputs every output, reset before each call (see ResetOutput)
/// @param check the lesson's one reference (Checks::check)
/// @return fill: each input's RandomArray::fill from the seed, in order; reset: each output's
///         ResetOutput::start with the last fill's seed, or its ResetOutput::reset, in order;
///         inputs_changed: each input's RandomArray::changed
///         against the same values, in order; check: @p check
template <class Problem>
Checks<Problem> declared_checks(std::vector<RandomArray<Problem>> inputs,
                                std::vector<ResetOutput<Problem>> outputs,
                                std::function<void(Look&, Problem&)> check) {
  Checks<Problem> c;
  // The protocol fills a problem right before it resets it: an output updated in place starts
  // from the seed of that fill.
  auto filled = std::make_shared<std::uint64_t>(0);
  c.fill = [inputs, filled](Problem& p, std::uint64_t seed, cudaStream_t s) {
    *filled = seed;
    for (const RandomArray<Problem>& in : inputs) in.fill(p, seed, s);
  };
  c.reset = [outputs, filled](Problem& p, cudaStream_t s) {
    for (const ResetOutput<Problem>& out : outputs)
      out.start ? out.start(p, *filled, s) : out.reset(p, s);
  };
  c.check = std::move(check);
  c.inputs_changed = [inputs](const Problem& p, std::uint64_t seed, cudaStream_t s) {
    std::vector<std::string> changes;
    for (const RandomArray<Problem>& in : inputs) changes.push_back(in.changed(p, seed, s));
    return changes;
  };
  return c;
}

}  // namespace lab
