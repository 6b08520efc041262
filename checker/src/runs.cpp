#include "runs.hpp"

#include "files.hpp"

#include <algorithm>
#include <limits>

namespace lab {

namespace {

double median_of(const ReportedVariant& v) {
  return v.time ? v.time->median : std::numeric_limits<double>::infinity();
}

}  // namespace

LoadedResult load_result(const fs::path& path, const std::string& nonce,
                         const std::string& lesson) {
  LoadedResult r;
  std::string why;
  auto text = read_file_limited(path, kMaxResultBytes, why);
  if (!text) {
    r.error = "the program wrote no usable result file: " + path.filename().string() + " " + why;
    return r;
  }
  if (text->empty()) {  // a file the checker handed it (--result-fd), never written
    r.error = "the program wrote no result (" + path.filename().string() + " is empty): it ended "
              "before its harness did";
    return r;
  }
  // A program's output is hostile input: no depth or number may reach the JSON library's
  // exceptions, which would end the whole grading run instead of this lesson.
  auto doc = read_result(*text, why);
  if (!doc) {
    r.error = "the result file " + why;
    return r;
  }
  r.doc = std::move(*doc);
  if (r.doc["nonce"].get<std::string>() != nonce) {
    r.error = r.doc["nonce"].get<std::string>().empty()
                  ? "the result file has no nonce: it was not written by this run of the harness"
                  : "the result file's nonce does not match this run's: it was not written by "
                    "this run of the harness";
    return r;
  }
  if (!lesson.empty() && r.doc["lesson"].get<std::string>() != lesson) {
    r.error = "the result file is for lesson \"" + r.doc["lesson"].get<std::string>() +
              "\", expected \"" + lesson + "\"";
    return r;
  }
  r.ok = true;
  return r;
}

JudgedRun combine_runs(const std::vector<JudgedRun>& runs) {
  if (runs.empty()) return {};
  if (runs.size() == 1) return runs.front();

  std::vector<const JudgedRun*> use;
  for (const auto& r : runs)
    if (r.findings.environment_ok) use.push_back(&r);
  if (use.empty())
    for (const auto& r : runs) use.push_back(&r);

  JudgedRun out = *use.back();  // debug_build, metrics, the checker's notes of the latest used run
  out.report.variants.clear();
  out.findings.pristine.clear();
  out.report.complete = std::all_of(use.begin(), use.end(), [](const JudgedRun* r) { return r->report.complete; });

  // Variant names in the order of the first run, then any only later runs have.
  std::vector<std::string> names;
  for (const JudgedRun* r : use)
    for (const auto& v : r->report.variants)
      if (std::find(names.begin(), names.end(), v.name) == names.end()) names.push_back(v.name);
  for (const auto& name : names) {
    const ReportedVariant* best = nullptr;
    const ReportedVariant* wrong = nullptr;
    const JudgedRun* best_run = nullptr;
    for (const JudgedRun* r : use) {
      const ReportedVariant* v = r->report.find(name);
      if (!v) continue;
      if (!v->correct && !wrong) wrong = v;
      if (!best || median_of(*v) < median_of(*best)) {
        best = v;
        best_run = r;
      }
    }
    ReportedVariant merged = *best;
    if (wrong) {
      // Correct only if correct every time; keep the checks that show the failure.
      merged.correct = false;
      merged.checks = wrong->checks;
    }
    out.report.variants.push_back(std::move(merged));
    // Where its time came from the pristine run, so did the time kept.
    if (const auto p = best_run->findings.pristine.find(name); p != best_run->findings.pristine.end())
      out.findings.pristine[name] = p->second;
  }
  // A time the tracer contradicted in any run stays contradicted (rules.cpp counts none of it).
  std::vector<std::string>& unverified = out.findings.unverified_variants;
  unverified.clear();
  for (const JudgedRun* r : use)
    for (const std::string& name : r->findings.unverified_variants)
      if (std::find(unverified.begin(), unverified.end(), name) == unverified.end()) unverified.push_back(name);
  return out;
}

}  // namespace lab
