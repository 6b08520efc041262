#include "runs.hpp"

#include "files.hpp"

#include <algorithm>
#include <limits>

namespace lab {

namespace {

double median_of(const json& variant) {
  if (variant.contains("time_ms") && variant["time_ms"].contains("median"))
    return variant["time_ms"]["median"].get<double>();
  return std::numeric_limits<double>::infinity();
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

json combine_runs(const std::vector<json>& runs) {
  if (runs.empty()) return json::object();
  if (runs.size() == 1) return runs.front();

  std::vector<const json*> use;
  for (const auto& r : runs)
    if (r.value("environment_ok", true)) use.push_back(&r);
  const bool env_ok = !use.empty();
  if (!env_ok)
    for (const auto& r : runs) use.push_back(&r);

  json out = *use.back();  // device, ceilings, metrics, diagnostics of the latest used run
  out["environment_ok"] = env_ok;
  out["complete"] = true;
  for (const json* r : use)
    if (!r->value("complete", true)) out["complete"] = false;

  json variants = json::array();
  // Variant names in the order of the first run, then any only later runs have.
  std::vector<std::string> names;
  for (const json* r : use)
    for (const auto& v : (*r)["variants"])
      if (std::find(names.begin(), names.end(), v["name"].get<std::string>()) == names.end())
        names.push_back(v["name"].get<std::string>());
  for (const auto& name : names) {
    const json* best = nullptr;
    const json* wrong = nullptr;
    for (const json* r : use) {
      const json* v = find_variant(*r, name);
      if (!v) continue;
      if (!(*v)["correct"].get<bool>() && !wrong) wrong = v;
      if (!best || median_of(*v) < median_of(*best)) best = v;
    }
    json merged = *best;
    if (wrong) {
      // Correct only if correct every time; keep the checks that show the failure.
      merged["correct"] = false;
      if (wrong->contains("checks")) merged["checks"] = (*wrong)["checks"];
    }
    variants.push_back(merged);
  }
  out["variants"] = variants;
  // A time the tracer contradicted in any run stays contradicted (rules.cpp counts none of it).
  json unverified = json::array();
  for (const json* r : use)
    for (const json& name : r->value("unverified_variants", json::array()))
      if (std::find(unverified.begin(), unverified.end(), name) == unverified.end())
        unverified.push_back(name);
  out.erase("unverified_variants");
  if (!unverified.empty()) out["unverified_variants"] = unverified;
  out["runs_combined"] = static_cast<int>(use.size());
  return out;
}

}  // namespace lab
