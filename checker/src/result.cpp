#include "result.hpp"

#include "files.hpp"

#include <algorithm>
#include <limits>
#include <tuple>

namespace lab {

namespace {

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

// Each checker returns "" when fine, else the sentence.
std::string expect(const json& obj, const std::string& where, const char* key,
                   json::value_t want, bool required) {
  auto it = obj.find(key);
  const std::string name = where.empty() ? std::string(key) : where + "." + key;
  if (it == obj.end()) return required ? "\"" + name + "\" is missing" : "";
  const bool good = want == json::value_t::number_float ? it->is_number()
                    : want == json::value_t::boolean    ? it->is_boolean()
                    : want == json::value_t::string     ? it->is_string()
                    : want == json::value_t::array      ? it->is_array()
                                                        : it->is_object();
  if (good) return "";
  const char* wanted = want == json::value_t::number_float ? "a number"
                       : want == json::value_t::boolean    ? "a boolean"
                       : want == json::value_t::string     ? "a string"
                       : want == json::value_t::array      ? "an array"
                                                           : "an object";
  return "\"" + name + "\" is " + type_name(*it) + ", expected " + wanted;
}

constexpr auto kNum = json::value_t::number_float;
constexpr auto kBool = json::value_t::boolean;
constexpr auto kStr = json::value_t::string;
constexpr auto kArr = json::value_t::array;
constexpr auto kObj = json::value_t::object;

double median_of(const json& variant) {
  if (variant.contains("time_ms") && variant["time_ms"].contains("median"))
    return variant["time_ms"]["median"].get<double>();
  return std::numeric_limits<double>::infinity();
}

}  // namespace

std::string validate_result(const json& doc) {
  if (!doc.is_object()) return "the top level is " + type_name(doc) + ", expected an object";
  if (!doc.contains("schema")) return "\"schema\" is missing: this is not a lesson result file";
  if (!doc["schema"].is_string() || doc["schema"] != kResultSchema)
    return "schema is " + doc["schema"].dump() + ", this checker reads \"" + kResultSchema +
           "\" (rebuild the lesson and the checker from the same commit)";
  for (auto [key, type, required] :
       {std::tuple{"lesson", kStr, true}, {"nonce", kStr, true}, {"variants", kArr, true},
        {"complete", kBool, false}, {"environment_ok", kBool, false}, {"device", kObj, false},
        {"ceilings", kObj, false}, {"metrics", kObj, false}, {"diagnostics", kArr, false},
        {"build", kStr, false}, {"config", kObj, false}}) {
    if (auto e = expect(doc, "", key, type, required); !e.empty()) return e;
  }
  if (doc.contains("ceilings"))
    for (auto& [k, v] : doc["ceilings"].items())
      if (!v.is_number() && !v.is_null())
        return "\"ceilings." + k + "\" is " + type_name(v) + ", expected a number";

  const auto& variants = doc["variants"];
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const auto& v = variants[i];
    const std::string where = "variants[" + std::to_string(i) + "]";
    if (!v.is_object()) return "\"" + where + "\" is " + type_name(v) + ", expected an object";
    if (auto e = expect(v, where, "name", kStr, true); !e.empty()) return e;
    if (auto e = expect(v, where, "correct", kBool, true); !e.empty()) return e;
    for (const char* key : {"gbs", "gflops", "fraction_of_copy", "fraction_of_peak", "bytes",
                            "flops", "max_rel_error"})
      if (auto e = expect(v, where, key, kNum, false); !e.empty()) return e;
    if (auto e = expect(v, where, "time_ms", kObj, false); !e.empty()) return e;
    if (v.contains("time_ms")) {
      const std::string tw = where + ".time_ms";
      if (auto e = expect(v["time_ms"], tw, "median", kNum, true); !e.empty()) return e;
      for (const char* key : {"min", "q1", "q3", "max", "mean", "stddev", "n", "median_low",
                              "median_high", "median_coverage"})
        if (auto e = expect(v["time_ms"], tw, key, kNum, false); !e.empty()) return e;
      if (!(v["time_ms"]["median"].get<double>() > 0))
        return "\"" + tw + ".median\" is not a positive time";
    }
    // The kept samples behind time_ms (optional: files from before they were written lack them).
    if (auto e = expect(v, where, "samples_ms", kArr, false); !e.empty()) return e;
    if (v.contains("samples_ms"))
      for (std::size_t k = 0; k < v["samples_ms"].size(); ++k)
        if (!v["samples_ms"][k].is_number() || !(v["samples_ms"][k].get<double>() > 0))
          return "\"" + where + ".samples_ms[" + std::to_string(k) + "]\" is not a positive time";
    if (auto e = expect(v, where, "stop_reason", kStr, false); !e.empty()) return e;
    if (auto e = expect(v, where, "checks", kArr, false); !e.empty()) return e;
  }
  if (doc.contains("metrics"))
    for (auto& [name, m] : doc["metrics"].items()) {
      const std::string where = "metrics." + name;
      if (!m.is_object()) return "\"" + where + "\" is " + type_name(m) + ", expected an object";
      if (auto e = expect(m, where, "value", kNum, true); !e.empty()) return e;
      for (const char* key : {"low", "high"})
        if (auto e = expect(m, where, key, kNum, false); !e.empty()) return e;
    }
  return "";
}

LoadedResult load_result(const fs::path& path, const std::string& nonce,
                         const std::string& lesson) {
  LoadedResult r;
  std::string why;
  auto text = read_file_limited(path, kMaxResultBytes, why);
  if (!text) {
    r.error = "the program wrote no usable result file: " + path.filename().string() + " " + why;
    return r;
  }
  // A program's output is hostile input: no depth or number may reach the JSON library's
  // exceptions, which would end the whole grading run instead of this lesson.
  auto doc = parse_json_limited(*text, why);
  if (!doc) {
    r.error = "the result file " + why;
    return r;
  }
  r.doc = std::move(*doc);
  if (auto e = validate_result(r.doc); !e.empty()) {
    r.error = "the result file does not follow the result schema: " + e;
    return r;
  }
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

const json* find_variant(const json& doc, const std::string& name) {
  if (!doc.contains("variants")) return nullptr;
  for (const auto& v : doc["variants"])
    if (v.value("name", "") == name) return &v;
  return nullptr;
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
  out["runs_combined"] = static_cast<int>(use.size());
  return out;
}

}  // namespace lab
