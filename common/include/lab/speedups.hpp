/// @file speedups.hpp
/// @brief Speedups between a lesson's variants, by name, for its notes and metrics: lab::speedup
/// of their measurements, or nothing where a variant was not measured (--variant left it out,
/// --profile measures nothing), so that a note never divides by a missing time.
///
/// @code
/// if (const auto r = lab::speedup(variants, "tiled", "exercise")) lab::metric(l, "speedup", *r);
/// for (const auto& [v, r] : lab::speedups(variants, "cublas")) line += " " + v->name + ...;
/// @endcode
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lab/format.hpp"
#include "lab/ratio.hpp"
#include "lab/variant.hpp"

namespace lab {

/// @param variants a lesson's list
/// @param slow the slower (or reference) variant's name (a misspelt name throws)
/// @param fast the other's
/// @return lab::speedup(slow's measurement, fast's): how many times faster @p fast ran, with its
///         interval; nothing when either was not measured
template <class Problem, class V>
std::optional<Reading> speedup(const Variants<Problem, V>& variants, const std::string& slow,
                               const std::string& fast) {
  const Measurement* s = variants.measurement(slow);
  const Measurement* f = variants.measurement(fast);
  if (!s || !f) return std::nullopt;
  return speedup(*s, *f);
}

/// @param variants a lesson's list
/// @param reference the variant the others are held to (a misspelt name throws)
/// @return every measured variant but @p reference, in declaration order, with its speed as a
///         fraction of the reference's (lab::speedup(reference, it)); none when the reference
///         was not measured
template <class Problem, class V>
std::vector<std::pair<const V*, Reading>> speedups(const Variants<Problem, V>& variants,
                                                   const std::string& reference) {
  std::vector<std::pair<const V*, Reading>> out;
  const Measurement* ref = variants.measurement(reference);
  if (!ref) return out;
  for (const V& v : variants)
    if (const Measurement* m = variants.measurement(v.name); m && v.name != reference)
      out.emplace_back(&v, speedup(*ref, *m));
  return out;
}

/// @param variants a lesson's list
/// @param flops the work of one call, the same for every variant
/// @param reference the variant the others are held to (a misspelt name throws)
/// @param roof_gflops the roof the fractions are of (0: none)
/// @return the note of a product's speeds: each measured variant's TFLOP/s, then, where the
///         reference was measured, its fraction of the reference's speed and of the roof
template <class Problem, class V>
std::string tflops_note(const Variants<Problem, V>& variants, double flops,
                        const std::string& reference, double roof_gflops) {
  const Measurement* ref = variants.measurement(reference);
  std::string line = "TFLOP/s (fraction of " + reference + "; of the tensor roof):";
  for (const V& v : variants) {
    const Measurement* m = variants.measurement(v.name);
    if (!m) continue;
    line += "\n  " + v.name + " " + fixed(flops / (m->gpu_ms.median * 1e9), 1);
    if (!ref) continue;
    line += " (" + fixed(speedup(*ref, *m).value, 3);
    if (roof_gflops > 0) line += "; " + fixed(flops / (m->gpu_ms.median * 1e6) / roof_gflops, 3);
    line += ")";
  }
  return line;
}

}  // namespace lab
