// The one reader of result files: bounded parsing, then every field checked (docs/result-file.md).
#include "lab/result_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>

namespace lab {

using nlohmann::json;

namespace {

// "line 3, column 7" of byte `at` (from 0), for messages.
std::string position(std::string_view text, std::size_t at) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

bool number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

// ---------------------------------------------------------------- the schema, field by field

enum class Type { number, number_or_null, boolean, string, array, object, strings, mode, role };

// What a number may be besides 0 ("none"): bounds far beyond any GPU either way, so that a value
// no GPU produces (1e-320 GB/s, 1e300 bytes) is refused by name instead of drawn or judged.
struct Range {
  double low, high;
  const char* unit;
  bool positive = false;  // 0 is not allowed either (a time that was measured)
};
constexpr Range kGbs{1e-6, 1e9, "GB/s"};
constexpr Range kGflops{1e-6, 1e9, "GFLOP/s"};
constexpr Range kMicroseconds{1e-6, 1e9, "us"};
constexpr Range kBytes{1e-3, 1e21, "bytes"};
constexpr Range kFlops{1e-3, 1e21, "FLOPs"};
constexpr Range kMs{1e-9, 1e9, "ms"};
constexpr Range kMeasuredMs{1e-9, 1e9, "ms", true};
// Counts (samples, launches per sample, mismatches, record entries): whole numbers a size_t or
// an int holds, far beyond any run.
constexpr Range kCount{1, 1e12, ""};
constexpr Range kSeed{1, 1.8e19, ""};

struct Field {
  const char* key;
  Type type;
  bool required = false;
  const Range* range = nullptr;
};

const Field kTopFields[] = {
    {"lesson", Type::string, true},    {"nonce", Type::string, true},
    {"variants", Type::array, true},   {"build", Type::string},
    {"complete", Type::boolean},       {"device", Type::object},
    {"ceilings", Type::object},        {"config", Type::object},
    {"metrics", Type::object},         {"diagnostics", Type::strings},
    {"environment_ok", Type::boolean}, {"debug_build", Type::boolean},
    {"replay", Type::object}};
// What a --replay run found in the record it was given (the pristine program's file).
const Field kReplayFields[] = {{"entries", Type::number, false, &kCount},
                               {"used", Type::number, false, &kCount},
                               {"missing", Type::strings},
                               {"unused", Type::strings},
                               {"error", Type::string}};
// Keys only the checker writes into a run's document (judge.cpp, runs.cpp): from a program they
// would be its own say on what the checker saw (a baseline "the pristine run could not time", a
// contradicted time, counters, where its results were checked).
const char* const kCheckerTopKeys[] = {"program_environment_ok", "program_diagnostics", "watched",
                                       "unverified_variants", "counters", "results_checked",
                                       "runs_combined"};
const char* const kCheckerVariantKeys[] = {"measured_in", "pristine_error"};
const Field kDeviceFields[] = {
    {"name", Type::string},           {"cc", Type::string},
    {"sms", Type::number},            {"l2_bytes", Type::number},
    {"global_bytes", Type::number},   {"sm_clock_mhz", Type::number},
    {"mem_clock_mhz", Type::number},  {"bus_width_bits", Type::number},
    {"driver", Type::number},         {"runtime", Type::number},
    {"debug_build", Type::boolean},   {"peak_bandwidth_gbs", Type::number, false, &kGbs}};
// A ceiling that could not be measured may be NaN, which JSON writes as null.
const Field kCeilingFields[] = {
    {"copy_gbs", Type::number_or_null, false, &kGbs},
    {"h2d_pinned_gbs", Type::number_or_null, false, &kGbs},
    {"d2h_pinned_gbs", Type::number_or_null, false, &kGbs},
    {"h2d_pageable_gbs", Type::number_or_null, false, &kGbs},
    {"d2h_pageable_gbs", Type::number_or_null, false, &kGbs},
    {"launch_us", Type::number_or_null, false, &kMicroseconds},
    {"fp32_gflops", Type::number_or_null, false, &kGflops},
    {"bf16_tensor_gflops", Type::number_or_null, false, &kGflops},
    {"tf32_tensor_gflops", Type::number_or_null, false, &kGflops}};
const Field kConfigFields[] = {{"seed", Type::number, false, &kSeed},
                               {"quick", Type::boolean},
                               {"mode", Type::mode},
                               {"sizes", Type::strings}};
const Field kVariantFields[] = {
    {"name", Type::string, true},
    {"correct", Type::boolean, true},
    {"role", Type::role},
    {"description", Type::string},
    {"bytes", Type::number, false, &kBytes},
    {"flops", Type::number, false, &kFlops},
    {"host_link", Type::boolean},
    {"checks", Type::array},
    {"time_ms", Type::object},
    {"samples_ms", Type::array},
    {"stop_reason", Type::string},
    {"enqueue_us", Type::number},
    {"mode", Type::mode},
    {"batch", Type::number, false, &kCount},
    {"converged", Type::boolean},
    {"sm_clock_mhz", Type::number},
    {"discarded_throttled", Type::number, false, &kCount},
    {"diagnostics", Type::strings},
    {"gbs", Type::number, false, &kGbs},
    {"gflops", Type::number, false, &kGflops},
    {"intensity", Type::number},
    {"fraction_of_copy", Type::number},
    {"fraction_of_peak", Type::number}};
const Field kTimeFields[] = {
    {"median", Type::number, true, &kMeasuredMs},
    {"min", Type::number, false, &kMs},
    {"q1", Type::number, false, &kMs},
    {"q3", Type::number, false, &kMs},
    {"mean", Type::number, false, &kMs},
    {"stddev", Type::number, false, &kMs},
    {"max", Type::number, false, &kMs},
    {"n", Type::number, false, &kCount},
    {"median_low", Type::number, false, &kMs},
    {"median_high", Type::number, false, &kMs},
    {"median_coverage", Type::number}};
// An error measure of an output that holds NaN is NaN itself: null in JSON.
const Field kCheckFields[] = {{"case", Type::string},
                              {"ok", Type::boolean},
                              {"max_abs_error", Type::number_or_null},
                              {"max_rel_error", Type::number_or_null},
                              {"rel_l2_error", Type::number_or_null},
                              {"mismatches", Type::number, false, &kCount},
                              {"message", Type::string}};
const Field kMetricFields[] = {{"value", Type::number, true},
                               {"low", Type::number},
                               {"high", Type::number},
                               {"unit", Type::string}};
const Field kSample{"", Type::number, true, &kMeasuredMs};

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

std::string quoted(const std::string& path) { return "\"" + path + "\""; }

template <typename Name, std::size_t N>
std::string name_list(Name (&names)[N]) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i)
    s += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + to_string(names[i]);
  return s;
}

// "" if `v` is what `f` asks for, else the sentence naming `path`.
std::string check_value(const json& v, const std::string& path, const Field& f) {
  auto expected = [&](const char* what) {
    return quoted(path) + " is " + type_name(v) + ", expected " + what;
  };
  switch (f.type) {
    case Type::number_or_null:
      if (v.is_null()) return "";
      [[fallthrough]];
    case Type::number: {
      if (!v.is_number()) return expected("a number");
      const double x = v.get<double>();
      if (!std::isfinite(x)) return quoted(path) + " is not a finite number";
      if (!f.range) return "";
      if (f.range->positive && !(x > 0)) return quoted(path) + " is not a positive time";
      if (x == 0 || (x >= f.range->low && x <= f.range->high)) return "";
      char buf[200];
      if (!*f.range->unit)
        std::snprintf(buf, sizeof buf, " is %g, expected a count (0 or %g to %g)", x, f.range->low,
                      f.range->high);
      else
        std::snprintf(buf, sizeof buf, " is %g %s, which no GPU measures (expected %s%g to %g)", x,
                      f.range->unit, f.range->positive ? "" : "0 or ", f.range->low, f.range->high);
      return quoted(path) + buf;
    }
    case Type::boolean: return v.is_boolean() ? "" : expected("a boolean");
    case Type::string: return v.is_string() ? "" : expected("a string");
    case Type::array: return v.is_array() ? "" : expected("an array");
    case Type::object: return v.is_object() ? "" : expected("an object");
    case Type::strings:
      if (!v.is_array()) return expected("an array of strings");
      for (std::size_t i = 0; i < v.size(); ++i)
        if (!v[i].is_string())
          return quoted(path + "[" + std::to_string(i) + "]") + " is " + type_name(v[i]) +
                 ", expected a string";
      return "";
    case Type::mode:
      if (!v.is_string()) return expected("a string");
      if (mode_named(v.get<std::string>())) return "";
      return quoted(path) + " is " + v.dump() + ", expected " + name_list(kModes);
    case Type::role:
      if (!v.is_string()) return expected("a string");
      if (role_named(v.get<std::string>())) return "";
      return quoted(path) + " is " + v.dump() + ", expected " + name_list(kRoles);
  }
  return "";
}

template <std::size_t N>
std::string check_fields(const json& obj, const std::string& where, const Field (&fields)[N]) {
  for (const Field& f : fields) {
    const std::string path = where.empty() ? f.key : where + "." + f.key;
    const auto it = obj.find(f.key);
    if (it == obj.end()) {
      if (f.required) return quoted(path) + " is missing";
      continue;
    }
    if (auto e = check_value(*it, path, f); !e.empty()) return e;
  }
  return "";
}

// Whether `x` is within [low, high], give or take the rounding of a written number (samples
// are written with 7 significant digits).
bool within(double x, double low, double high) {
  const double slack = 1e-6 * std::max({std::fabs(low), std::fabs(high), std::fabs(x)});
  return x >= low - slack && x <= high + slack;
}

std::string number_text(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.7g", x);
  return buf;
}

// A variant's time agrees with itself: its median within its min and max and its samples within
// those too, as many samples as it counts (all of them up to kMaxResultSamples, then that many),
// and, where it wrote them all, its median within theirs.
std::string check_time(const json& v, const std::string& where) {
  const json& t = v["time_ms"];
  const double median = t["median"].get<double>();
  const double low = t.contains("min") ? t["min"].get<double>() : median;
  const double high = t.contains("max") ? t["max"].get<double>() : median;
  if (!within(median, low, high))
    return quoted(where + ".time_ms.median") + " is " + number_text(median) +
           ", outside its own min and max (" + number_text(low) + " to " + number_text(high) + ")";
  if (!v.contains("samples_ms") || v["samples_ms"].empty()) return "";
  const json& samples = v["samples_ms"];
  if (t.contains("n")) {
    const double n = t["n"].get<double>();
    const double written = std::min(n, static_cast<double>(kMaxResultSamples));
    if (static_cast<double>(samples.size()) != written)
      return quoted(where + ".samples_ms") + " holds " + std::to_string(samples.size()) +
             " samples, but its time counts " + number_text(n) + " (a file holds all of them, up to " +
             std::to_string(kMaxResultSamples) + ")";
  }
  double fewest = samples[0].get<double>(), most = fewest;
  for (const json& s : samples) {
    const double x = s.get<double>();
    fewest = std::min(fewest, x);
    most = std::max(most, x);
  }
  if ((t.contains("min") && !within(fewest, low, high)) || (t.contains("max") && !within(most, low, high)))
    return quoted(where + ".samples_ms") + " run from " + number_text(fewest) + " to " +
           number_text(most) + " ms, outside its time's own min and max (" + number_text(low) +
           " to " + number_text(high) + ")";
  const bool all_written = t.contains("n") ? t["n"].get<double>() <= static_cast<double>(kMaxResultSamples)
                                           : samples.size() < kMaxResultSamples;
  if (all_written && !within(median, fewest, most))
    return quoted(where + ".time_ms.median") + " is " + number_text(median) +
           ", outside the range of its own samples (" + number_text(fewest) + " to " +
           number_text(most) + ")";
  return "";
}

std::string check_variant(const json& v, const std::string& where) {
  if (!v.is_object()) return quoted(where) + " is " + type_name(v) + ", expected an object";
  if (auto e = check_fields(v, where, kVariantFields); !e.empty()) return e;
  if (v.contains("time_ms"))
    if (auto e = check_fields(v["time_ms"], where + ".time_ms", kTimeFields); !e.empty()) return e;
  // The kept samples behind time_ms (missing from files written before they were).
  if (v.contains("samples_ms")) {
    if (v["samples_ms"].size() > kMaxResultSamples)
      return quoted(where + ".samples_ms") + " holds " + std::to_string(v["samples_ms"].size()) +
             " samples, more than the " + std::to_string(kMaxResultSamples) + " a result file holds";
    for (std::size_t k = 0; k < v["samples_ms"].size(); ++k)
      if (auto e = check_value(v["samples_ms"][k], where + ".samples_ms[" + std::to_string(k) + "]",
                               kSample);
          !e.empty())
        return e;
  }
  if (v.contains("time_ms"))
    if (auto e = check_time(v, where); !e.empty()) return e;
  if (v.contains("checks"))
    for (std::size_t k = 0; k < v["checks"].size(); ++k) {
      const json& c = v["checks"][k];
      const std::string at = where + ".checks[" + std::to_string(k) + "]";
      if (!c.is_object()) return quoted(at) + " is " + type_name(c) + ", expected an object";
      if (auto e = check_fields(c, at, kCheckFields); !e.empty()) return e;
    }
  return "";
}

const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

double number_in(const json* obj, const char* key) {
  const json* v = obj ? member(*obj, key) : nullptr;
  return v && v->is_number() ? v->get<double>() : 0.0;
}

}  // namespace

std::optional<json> parse_json_limited(std::string_view text, std::string& error, int max_depth) {
  // One pass over the text first: the parser itself copes with any depth, but the documents it
  // builds are copied, compared and destroyed recursively, and it throws a bare out_of_range
  // (no position) for a number a double cannot hold.
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        error = "is nested more than " + std::to_string(max_depth) + " levels deep (" +
                position(text, i) + "): not a file the course writes";
        return std::nullopt;
      }
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      std::size_t end = i;
      while (end < text.size() && number_char(text[end])) ++end;
      const std::string token(text.substr(i, end - i));
      if (!std::isfinite(std::strtod(token.c_str(), nullptr))) {
        error = "has a number beyond the range of a double (" +
                (token.size() > 24 ? token.substr(0, 24) + "..." : token) + ", " +
                position(text, i) + ")";
        return std::nullopt;
      }
      i = end - 1;
    }
  }
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    error = "is not valid JSON (" + position(text, e.byte > 0 ? e.byte - 1 : 0) + ")";
  } catch (const json::exception& e) {
    // Not expected after the scan above; still a sentence, never the library's exception.
    std::string what = e.what();
    if (const auto at = what.find("] "); at != std::string::npos) what.erase(0, at + 2);
    error = "cannot be read as JSON: " + what;
  }
  return std::nullopt;
}

std::string validate_result(const json& doc) {
  if (!doc.is_object()) return "the top level is " + type_name(doc) + ", expected an object";
  if (!doc.contains("schema")) return "\"schema\" is missing: this is not a lesson result file";
  if (!doc["schema"].is_string() || doc["schema"] != kResultSchema)
    return "schema is " + doc["schema"].dump() + ", this checker reads \"" + kResultSchema +
           "\" (rebuild the lesson and the checker from the same commit)";
  if (auto e = check_fields(doc, "", kTopFields); !e.empty()) return e;
  if (doc.contains("device"))
    if (auto e = check_fields(doc["device"], "device", kDeviceFields); !e.empty()) return e;
  if (doc.contains("ceilings"))
    if (auto e = check_fields(doc["ceilings"], "ceilings", kCeilingFields); !e.empty()) return e;
  if (doc.contains("config"))
    if (auto e = check_fields(doc["config"], "config", kConfigFields); !e.empty()) return e;
  if (doc.contains("replay"))
    if (auto e = check_fields(doc["replay"], "replay", kReplayFields); !e.empty()) return e;
  const json& variants = doc["variants"];
  if (variants.size() > kMaxResultVariants)
    return "\"variants\" holds " + std::to_string(variants.size()) + " variants, more than the " +
           std::to_string(kMaxResultVariants) + " a lesson may declare";
  // Names are how every rule finds its variant: two of one name would have the first win.
  std::unordered_set<std::string> names;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const std::string where = "variants[" + std::to_string(i) + "]";
    if (auto e = check_variant(variants[i], where); !e.empty()) return e;
    if (!names.insert(variants[i]["name"].get<std::string>()).second)
      return quoted(where + ".name") + " is " + variants[i]["name"].dump() +
             ", the name of an earlier variant (names are unique within a lesson)";
  }
  if (doc.contains("metrics"))
    for (const auto& [name, m] : doc["metrics"].items()) {
      const std::string where = "metrics." + name;
      if (!m.is_object()) return quoted(where) + " is " + type_name(m) + ", expected an object";
      if (auto e = check_fields(m, where, kMetricFields); !e.empty()) return e;
      // A reading lies within its own interval.
      const double value = m["value"].get<double>();
      const double low = m.contains("low") ? m["low"].get<double>() : value;
      const double high = m.contains("high") ? m["high"].get<double>() : value;
      if (!within(value, low, high))
        return quoted(where + ".value") + " is " + number_text(value) +
               ", outside its own interval (low " + number_text(low) + ", high " +
               number_text(high) + ")";
    }
  return "";
}

std::string checker_keys_in(const json& doc) {
  for (const char* key : kCheckerTopKeys)
    if (doc.contains(key))
      return quoted(key) + " is the checker's own key: a lesson program does not write it";
  const json& variants = doc["variants"];
  for (std::size_t i = 0; i < variants.size(); ++i)
    for (const char* key : kCheckerVariantKeys)
      if (variants[i].contains(key))
        return quoted("variants[" + std::to_string(i) + "]." + key) +
               " is the checker's own key: a lesson program does not write it";
  return "";
}

std::optional<json> read_result(std::string_view text, std::string& error) {
  if (text.size() > kMaxResultBytes) {
    error = "is " + std::to_string(text.size()) + " bytes, more than the " +
            std::to_string(kMaxResultBytes) + " allowed";
    return std::nullopt;
  }
  std::optional<json> doc = parse_json_limited(text, error);
  if (!doc) return std::nullopt;
  std::string why = validate_result(*doc);
  if (why.empty()) why = checker_keys_in(*doc);
  if (!why.empty()) {
    error = "does not follow the result schema: " + why;
    return std::nullopt;
  }
  return doc;
}

const json* find_variant(const json& doc, std::string_view name) {
  const json* variants = member(doc, "variants");
  if (!variants || !variants->is_array()) return nullptr;
  for (const json& v : *variants) {
    const json* n = member(v, "name");
    if (n && n->is_string() && n->get_ref<const std::string&>() == name) return &v;
  }
  return nullptr;
}

Rates rates_of(const json& doc, const json& variant) {
  const json* host_link = member(variant, "host_link");
  return rates_of(number_in(&variant, "bytes"), number_in(&variant, "flops"),
                  host_link && host_link->is_boolean() && host_link->get<bool>(),
                  number_in(member(variant, "time_ms"), "median"),
                  number_in(member(doc, "ceilings"), "copy_gbs"),
                  number_in(member(doc, "device"), "peak_bandwidth_gbs"));
}

Mode mode_of(const json& doc, const json& variant) {
  const json* config = member(doc, "config");
  for (const json* m : {member(variant, "mode"), config ? member(*config, "mode") : nullptr})
    if (m && m->is_string())
      if (auto mode = mode_named(m->get_ref<const std::string&>())) return *mode;
  return Mode::Cold;
}

}  // namespace lab
