#include "evidence.hpp"

#include <algorithm>

#include "intervals.hpp"
#include "lab/result_reader.hpp"

namespace lab {

namespace {

// The member `key` of `obj` if it is of the type asked for, else nullptr: a document the judge
// holds was validated, but a field of the wrong type must still read as missing, never throw.
const json* member(const json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  const auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

bool flag(const json& obj, const char* key, bool otherwise) {
  const json* v = member(obj, key);
  return v && v->is_boolean() ? v->get<bool>() : otherwise;
}

std::optional<double> number(const json& obj, const char* key) {
  const json* v = member(obj, key);
  if (v && v->is_number()) return v->get<double>();
  return std::nullopt;
}

std::optional<std::string> text(const json& obj, const char* key) {
  const json* v = member(obj, key);
  if (v && v->is_string()) return v->get<std::string>();
  return std::nullopt;
}

ReportedCheck check_of(const json& c) {
  ReportedCheck out;
  out.name = text(c, "case").value_or(out.name);
  out.ok = flag(c, "ok", true);
  out.message = text(c, "message").value_or("");
  if (const json* n = member(c, "mismatches"); n && n->is_number()) out.mismatches = n->dump();
  return out;
}

ReportedVariant variant_of(const json& doc, const json& v) {
  ReportedVariant out;
  out.name = text(v, "name").value_or("");
  out.correct = flag(v, "correct", true);
  if (const json* checks = member(v, "checks"); checks && checks->is_array())
    for (const json& c : *checks)
      if (c.is_object()) out.checks.push_back(check_of(c));
  if (const json* t = member(v, "time_ms")) {
    const double median = number(*t, "median").value_or(0);
    out.time = ReportedTime{median, number(*t, "median_low").value_or(median),
                            number(*t, "median_high").value_or(median)};
    out.rates = rates_of(doc, v);
  }
  out.samples_ms = samples_of(v);
  out.host_link = flag(v, "host_link", false);
  out.bytes = number(v, "bytes").value_or(0);
  out.flops = number(v, "flops").value_or(0);
  return out;
}

}  // namespace

RunReport run_report(const json& doc) {
  RunReport out;
  out.complete = flag(doc, "complete", true);
  // The library writes it under "device" (result.cpp); a file of the older layout, at the top.
  const json* device = member(doc, "device");
  out.debug_build = flag(doc, "debug_build", false) || (device && flag(*device, "debug_build", false));
  if (const json* variants = member(doc, "variants"); variants && variants->is_array())
    for (const json& v : *variants)
      if (v.is_object()) out.variants.push_back(variant_of(doc, v));
  if (const json* metrics = member(doc, "metrics"); metrics && metrics->is_object())
    for (const auto& [name, m] : metrics->items()) {
      const std::optional<double> value = number(m, "value");
      if (!value) continue;
      out.metrics[name] = Metric{*value, number(m, "low").value_or(*value),
                                 number(m, "high").value_or(*value), text(m, "unit").value_or("")};
    }
  return out;
}

const ReportedVariant* RunReport::find(std::string_view name) const {
  const auto it = std::find_if(variants.begin(), variants.end(),
                               [&](const ReportedVariant& v) { return v.name == name; });
  return it == variants.end() ? nullptr : &*it;
}

const CounterReading* Findings::counter(const std::string& variant, const std::string& measure) const {
  const auto v = counters.find(variant);
  if (v == counters.end()) return nullptr;
  const auto m = v->second.find(measure);
  return m == v->second.end() ? nullptr : &m->second;
}

}  // namespace lab
