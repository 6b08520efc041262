/// @file sum_reference.cuh
/// @brief A sum of n floats judged against the exact one (lesson 08; any lesson whose result is
/// one sum or mean of a generated input): lab::sum_reference adds the generator's values up on
/// the host in double, lab::sum_bound is how far a float sum in any order may be from it, and
/// lab::check_sum judges and records the value a variant left.
///
/// The bound for float sums (lesson 08's README, "Accuracy: the bound the checker uses"): with
/// S1 = sum |x_i| and u = 2^-24, the worst case (n - 1) u S1 says nothing at n = 2^28; Higham and
/// Mary's probabilistic bound lambda sqrt(n) u S1, any order of addition, fails with probability
/// below 2n exp(-lambda^2 / 2), under 1e-4 up to n = 2^31 at lambda = 8; one more u S1 pays for
/// rounding the exact sum to a float:
///     bound = (8 sqrt(n) + 1) u S1,
/// about 5e-4 S at n = 1000003 and 8e-3 S at n = 2^28. A tree, a grid-stride loop, several
/// accumulators, atomics in any order: all well inside (they measure 1e-7 to 1e-6). One float
/// accumulator walked through 2^28 values in [0, 1) is not: it stops growing at 2^24
/// (SumReference::sequential shows it). lab::sum_tolerance is the working (lambda = 4) form of
/// the same bound for many short sums.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lab/format.hpp"
#include "lab/guard.hpp"
#include "lab/protocol.cuh"
#include "lab/validate.hpp"

namespace lab {

/// @brief A generated input's sum, added up on the host from its generator (never read back).
struct SumReference {
  double exact = 0;      ///< the sum, in double: exact to far better than a float result can be
  double magnitude = 0;  ///< S1 = sum |x_i|, what the bound scales with
  float sequential = 0;  ///< one float accumulator, in index order (what not to do, for notes)
};

/// @param n elements
/// @param value the input's value at an index (a fill's generator, __host__ callable)
/// @return the sum of value(0) .. value(n - 1)
template <class Value>
SumReference sum_reference(long long n, const Value& value) {
  SumReference r;
  float seq = 0.0f;
  for (long long i = 0; i < n; ++i) {
    const float v = value(static_cast<std::uint64_t>(i));
    r.exact += v;
    r.magnitude += std::fabs(static_cast<double>(v));
    seq += v;
  }
  r.sequential = seq;
  return r;
}

/// @param n terms of the sum
/// @param magnitude S1 = sum |x_i| (SumReference::magnitude)
/// @return |got - exact| a float sum in any order stays within (see the file's comment)
inline double sum_bound(long long n, double magnitude) {
  return (8.0 * std::sqrt(static_cast<double>(n)) + 1.0) * 0x1p-24 * magnitude;
}

/// @brief What is wrong with a sum, in words.
/// @param got the value judged (a replay's: the recorded one)
/// @param exact the exact sum
/// @param bound the distance allowed
/// @param exactly_because why the sum must be exact (e.g. integer-valued data), or "": within
///        @p bound
/// @return "got G, expected E exactly (...)" or "got G, expected E within B (off by D)"
inline std::string sum_mismatch(double got, double exact, double bound,
                                const std::string& exactly_because) {
  return text("got %.9g, expected %.9g", got, exact) +
         (!exactly_because.empty() ? " exactly (" + exactly_because + ")"
                     : text(" within %.3g (off by %.3g)", bound, std::fabs(got - exact)));
}

/// @brief Judges the sum a variant left in out[0] (waits for the look's stream): through
/// Lesson::compare on doubles (a --replay run makes the same comparison), |got - exact| <= bound,
/// then the guard zones of @p out and of @p more (each to the end of its allocation), and
/// records it with what is wrong in words (sum_mismatch, then each damage, "; " between).
/// @param look the look at the variant's outputs
/// @param out the output: the sum in element 0
/// @param exact the exact sum
/// @param bound the distance allowed (0 where the sum must be exact)
/// @param exactly_because as for sum_mismatch
/// @param more other guarded buffers of the call (a workspace), or nullptr
/// @return the sum the variant left
template <class T = unsigned char>
float check_sum(Look& look, const GuardedBuffer<float>& out, double exact, double bound,
                const std::string& exactly_because, const GuardedBuffer<T>* more = nullptr) {
  const cudaStream_t s = look.stream();
  const float got = out.download(s)[0];
  const double value = got;
  Comparison c = look.lesson().compare(look.variant(), look.case_name(), &value, &exact, 1,
                                       Tolerance{0.0, bound});
  std::string message = c.note;
  if (message.empty() && !c.ok)
    message = sum_mismatch(c.first.empty() ? value : c.first[0].got, exact, bound, exactly_because);
  for (const std::string& damage : {out.damage(s), more ? more->damage(s) : std::string()})
    if (!damage.empty()) message += (message.empty() ? "" : "; ") + damage;
  if (!message.empty()) {
    c.ok = false;
    c.note = message;
  }
  look.lesson().check(look.variant(), look.case_name(), c);
  return got;
}

}  // namespace lab
