// Shared bits of the checker's tests.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "files.hpp"
#include "rules.hpp"

namespace lab::test {

inline void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

/// A result document like a lesson writes: baseline "naive" and "exercise", copy ceiling 2800.
inline json sample_result(double exercise_ms = 1.0, double baseline_ms = 4.0, double spread = 0.01) {
  auto timing = [&](double m) {
    return json{{"median", m}, {"median_low", m * (1 - spread)}, {"median_high", m * (1 + spread)},
                {"min", m * (1 - 2 * spread)}, {"q1", m * (1 - spread)},
                {"q3", m * (1 + spread)}, {"max", m * (1 + 3 * spread)}, {"n", 30}};
  };
  const double bytes = 1e9;
  auto variant = [&](const char* name, double ms) {
    const double gbs = bytes / (ms * 1e-3) / 1e9;
    return json{{"name", name}, {"correct", true}, {"time_ms", timing(ms)}, {"bytes", bytes},
                {"gbs", gbs}, {"fraction_of_copy", gbs / 2800.0}};
  };
  return json{{"schema", "cuda-perf-lab/result/1"},
              {"lesson", "90-fake"},
              {"nonce", "abc"},
              {"complete", true},
              {"device", {{"name", "Fake GPU"}, {"peak_bandwidth_gbs", 3352.3}}},
              {"ceilings", {{"copy_gbs", 2800.0}}},
              {"variants", json::array({variant("naive", baseline_ms), variant("exercise", exercise_ms)})},
              {"metrics", {{"overlap_efficiency", {{"value", 0.8}, {"low", 0.78}, {"high", 0.82}}}}},
              {"diagnostics", json::array()},
              {"environment_ok", true}};
}

inline Rule make_rule(const std::string& id, RuleKind kind, std::optional<double> min,
                      std::optional<double> max = std::nullopt, double points = 1) {
  Rule r;
  r.id = id;
  r.kind = kind;
  r.variant = kind == RuleKind::metric ? "" : "exercise";
  if (kind == RuleKind::speedup) r.over = "naive";
  if (kind == RuleKind::metric) r.metric = "overlap_efficiency";
  r.min = min;
  r.max = max;
  r.points = points;
  return r;
}

/// A rule judged on what a run's document reports (read once by run_report) and on what the
/// checker found about the run.
inline RuleOutcome evaluate_rule(const Rule& rule, const json& doc, Findings found = {}) {
  return lab::evaluate_rule(rule, {run_report(doc), std::move(found)});
}

/// A lesson whose program is the fake lesson, run with `args`.
inline LessonConfig fake_lesson(std::vector<std::string> args, std::vector<Rule> rules, double timeout_s = 10) {
  LessonConfig l;
  l.name = "90-fake";
  l.title = "Fake";
  l.timeout_s = timeout_s;
  l.args = std::move(args);
  l.rules = std::move(rules);
  return l;
}

inline std::vector<Rule> standard_rules() {
  Rule correct = make_rule("correct", RuleKind::correct, std::nullopt, std::nullopt, 4);
  correct.hint = "Check the tail.";
  Rule speed = make_rule("speedup", RuleKind::speedup, 3.0, std::nullopt, 3);
  speed.hint = "Only {value} faster, needs {min}.";
  return {correct, speed, make_rule("bandwidth", RuleKind::fraction_of_copy, 0.15, std::nullopt, 3)};
}

}  // namespace lab::test
