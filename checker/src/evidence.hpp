// What the rules judge about one run, typed: what the lesson program reported (RunReport) and
// what the checker itself found about that run (Findings), kept apart so that nothing the
// program wrote can pass for the checker's own word. evaluate_rule (rules.hpp) reads only these.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "counters.hpp"
#include "lab/result.hpp"

namespace lab {

using json = nlohmann::json;

/// One validation of a variant, as the report of the run holds it.
struct ReportedCheck {
  std::string name = "a check";  ///< its case: "1000x777 seed 7", "checked out of process: ..."
  bool ok = true;
  std::string message;           ///< what went wrong, in words ("" when ok or unsaid)
  std::string mismatches;        ///< how many values were wrong, as the file wrote the number
                                 ///< ("" when it wrote none)
};

/// A variant's median time and its 95% interval, milliseconds.
struct ReportedTime {
  double median = 0;
  double median_low = 0;   ///< the median where the file gave no interval
  double median_high = 0;  ///< likewise
};

/// One variant of the run, with the fields the rules judge.
struct ReportedVariant {
  std::string name;
  bool correct = true;                ///< correct in every run judged together (and out of
                                      ///< process, where replayed)
  std::vector<ReportedCheck> checks;  ///< in the order they ran
  std::optional<ReportedTime> time;   ///< absent if it was not timed
  std::vector<double> samples_ms;     ///< the kept samples (intervals.hpp samples_of: none if
                                      ///< any is not a positive number)
  bool host_link = false;             ///< its bytes cross the host link (lab::Work)
  double bytes = 0, flops = 0;        ///< the work the harness declared for it (lab::Work)
  Rates rates;                        ///< lab::rates_of its bytes, flops and median against the
                                      ///< run's ceilings (timed variants only)
};

/// What the lesson program reported in one run (or the runs combined), as the rules read it.
struct RunReport {
  bool complete = true;                   ///< the program ran to its end
  bool debug_build = false;               ///< a device-debug (-G) build, said by the library
  std::vector<ReportedVariant> variants;  ///< in the file's order
  std::map<std::string, Metric> metrics;  ///< low and high are the value where the file has none

  /// @return the variant called @p name, or nullptr
  const ReportedVariant* find(std::string_view name) const;
};

/// A speedup's baseline timed by the course's pristine program (judge.hpp,
/// use_pristine_baselines) in place of the student's.
struct PristineBaseline {
  bool measured = false;             ///< its time is the pristine run's
  std::optional<std::string> error;  ///< why the pristine run gave no time for it
};

/// What the checker found about one run: never anything the program said of itself.
struct Findings {
  bool environment_ok = true;            ///< the checker's watch saw an undisturbed GPU (and,
                                         ///< in grading, its tracer corroborated the times)
  std::vector<std::string> disturbance;  ///< what it saw instead, and its notes on the run, in
                                         ///< words: the record's diagnostics
  /// variants whose reported time the tracer contradicted (corroborate.hpp): no timed rule
  /// that uses them counts
  std::vector<std::string> unverified_variants;
  /// variant -> measure -> reading, from its run under ncu; a variant or measure not here was
  /// not read (--no-counters, or wrong code)
  std::map<std::string, std::map<std::string, CounterReading>> counters;
  std::map<std::string, PristineBaseline> pristine;  ///< by variant name

  /// @return the reading of @p measure for @p variant, or nullptr if it was not read
  const CounterReading* counter(const std::string& variant, const std::string& measure) const;
};

/// Everything a rule is judged on for one run.
struct JudgedRun {
  RunReport report;
  Findings findings;
};

/// @brief Reads what a run's document reports (a valid result file, with the baselines the
/// pristine run timed and the checks it made out of process put in: judge.hpp). Never throws: a
/// field of the wrong type reads as missing.
/// @param doc the document
/// @return the program's report, typed
RunReport run_report(const json& doc);

}  // namespace lab
