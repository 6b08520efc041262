#include "lab/result.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace lab {

using nlohmann::json;

const char* to_string(Role role) {
  switch (role) {
    case Role::Baseline: return "baseline";
    case Role::Exercise: return "exercise";
    case Role::Reference: return "reference";
  }
  return "?";
}

bool VariantResult::correct() const {
  if (checks.empty()) return false;
  for (const CheckResult& c : checks)
    if (!c.ok) return false;
  return true;
}

const VariantResult* Result::find(const std::string& name) const {
  for (const VariantResult& v : variants)
    if (v.name == name) return &v;
  return nullptr;
}

namespace {

Role role_from(const std::string& s) {
  if (s == "baseline") return Role::Baseline;
  if (s == "exercise") return Role::Exercise;
  if (s == "reference") return Role::Reference;
  throw std::runtime_error("unknown variant role '" + s + "'");
}

Mode mode_from(const std::string& s) {
  if (s == "cold") return Mode::Cold;
  if (s == "hot") return Mode::Hot;
  if (s == "graph") return Mode::Graph;
  throw std::runtime_error("unknown measurement mode '" + s + "'");
}

// 7 significant digits: finer than a float's event reading needs, coarser than noise in the text.
double round7(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.7g", x);
  return std::strtod(buf, nullptr);
}

// The kept samples for the checker's intervals: at most kMaxResultSamples, evenly spaced over the
// run when there are more (a thinned set gives a wider, still honest, interval).
json samples_to_json(const std::vector<double>& samples) {
  json out = json::array();
  const std::size_t n = samples.size();
  const std::size_t m = std::min(n, kMaxResultSamples);
  for (std::size_t i = 0; i < m; ++i) out.push_back(round7(samples[i * n / m]));
  return out;
}

// Derived rates are written for people and the checker; the reader recomputes nothing.
json variant_to_json(const VariantResult& v, const Result& r) {
  json j = {{"name", v.name}, {"role", to_string(v.role)}, {"description", v.description},
            {"correct", v.correct()}, {"bytes", v.bytes}, {"flops", v.flops},
            {"host_link", v.host_link}};
  json checks = json::array();
  for (const CheckResult& c : v.checks)
    checks.push_back({{"case", c.name}, {"ok", c.ok}, {"max_abs_error", c.max_abs_error},
                      {"max_rel_error", c.max_rel_error}, {"rel_l2_error", c.rel_l2_error},
                      {"mismatches", c.mismatches}, {"message", c.message}});
  j["checks"] = checks;
  if (v.measurement) {
    const Measurement& m = *v.measurement;
    const Stats& t = m.gpu_ms;
    j["time_ms"] = {{"median", t.median}, {"min", t.min}, {"q1", t.q1}, {"q3", t.q3},
                    {"mean", t.mean}, {"stddev", t.stddev}, {"max", t.max}, {"n", t.n},
                    {"median_low", t.median_low}, {"median_high", t.median_high},
                    {"median_coverage", t.median_coverage}};
    j["samples_ms"] = samples_to_json(m.samples_ms);
    if (!m.stop_reason.empty()) j["stop_reason"] = m.stop_reason;
    j["enqueue_us"] = m.enqueue_us;
    j["mode"] = to_string(m.mode);
    j["batch"] = m.batch;
    j["converged"] = m.converged;
    j["sm_clock_mhz"] = m.sm_clock_mhz;
    j["discarded_throttled"] = m.discarded_throttled;
    j["diagnostics"] = m.diagnostics;
    if (t.median > 0) {
      const double seconds = t.median * 1e-3;
      j["gbs"] = v.bytes / seconds * 1e-9;
      j["gflops"] = v.flops / seconds * 1e-9;
      if (v.bytes > 0) j["intensity"] = v.flops / v.bytes;
      // Host-link bytes have another ceiling (pinned transfers): a fraction of copy would mislead.
      if (r.ceilings && r.ceilings->copy_gbs > 0 && !v.host_link)
        j["fraction_of_copy"] = v.bytes / seconds * 1e-9 / r.ceilings->copy_gbs;
      if (r.device && r.device->peak_bandwidth_gbs() > 0 && !v.host_link)
        j["fraction_of_peak"] = v.bytes / seconds * 1e-9 / r.device->peak_bandwidth_gbs();
    }
  } else {
    j["diagnostics"] = json::array();
  }
  return j;
}

}  // namespace

std::string to_json_text(const Result& r) {
  json doc = {{"schema", kResultSchema}, {"lesson", r.lesson}, {"build", r.build},
              {"nonce", r.nonce}, {"complete", r.complete}};
  if (r.device) {
    const DeviceInfo& d = *r.device;
    doc["device"] = {{"name", d.name},
                     {"cc", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                     {"sms", d.sms}, {"l2_bytes", d.l2_bytes}, {"global_bytes", d.global_bytes},
                     {"sm_clock_mhz", d.sm_clock_mhz}, {"mem_clock_mhz", d.mem_clock_mhz},
                     {"bus_width_bits", d.bus_width_bits},
                     {"peak_bandwidth_gbs", d.peak_bandwidth_gbs()},
                     {"driver", d.driver_version}, {"runtime", d.runtime_version},
                     {"debug_build", r.debug_build}};
  }
  if (r.ceilings) {
    const Ceilings& c = *r.ceilings;
    doc["ceilings"] = {{"copy_gbs", c.copy_gbs}, {"h2d_pinned_gbs", c.h2d_pinned_gbs},
                       {"d2h_pinned_gbs", c.d2h_pinned_gbs},
                       {"h2d_pageable_gbs", c.h2d_pageable_gbs},
                       {"d2h_pageable_gbs", c.d2h_pageable_gbs}, {"launch_us", c.launch_us},
                       {"fp32_gflops", c.fp32_gflops},
                       {"bf16_tensor_gflops", c.bf16_tensor_gflops}};
  }
  doc["config"] = {{"seed", r.seed}, {"quick", r.quick}, {"mode", to_string(r.mode)},
                   {"sizes", r.sizes}};
  json variants = json::array();
  for (const VariantResult& v : r.variants) variants.push_back(variant_to_json(v, r));
  doc["variants"] = variants;
  json metrics = json::object();
  for (const auto& [name, m] : r.metrics)
    metrics[name] = {{"value", m.value}, {"low", m.low}, {"high", m.high}, {"unit", m.unit}};
  doc["metrics"] = metrics;
  doc["diagnostics"] = r.diagnostics;
  doc["environment_ok"] = r.environment_ok;
  return doc.dump(2) + "\n";
}

Result parse_result(const std::string& text) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error(std::string("the result file is not valid JSON: ") + e.what());
  }
  if (!doc.is_object() || doc.value("schema", "") != kResultSchema)
    throw std::runtime_error(std::string("the result file's schema is not ") + kResultSchema);
  try {
    Result r;
    r.lesson = doc.at("lesson").get<std::string>();
    r.build = doc.at("build").get<std::string>();
    r.nonce = doc.at("nonce").get<std::string>();
    r.complete = doc.at("complete").get<bool>();
    if (doc.contains("device")) {
      const json& d = doc["device"];
      DeviceInfo info;
      info.name = d.at("name");
      const std::string cc = d.at("cc");
      info.cc_major = std::stoi(cc.substr(0, cc.find('.')));
      info.cc_minor = std::stoi(cc.substr(cc.find('.') + 1));
      info.sms = d.at("sms");
      info.l2_bytes = d.at("l2_bytes");
      info.global_bytes = d.at("global_bytes");
      info.sm_clock_mhz = d.at("sm_clock_mhz");
      info.mem_clock_mhz = d.at("mem_clock_mhz");
      info.bus_width_bits = d.at("bus_width_bits");
      info.driver_version = d.at("driver");
      info.runtime_version = d.at("runtime");
      r.debug_build = d.at("debug_build");
      r.device = info;
    }
    if (doc.contains("ceilings")) {
      const json& c = doc["ceilings"];
      r.ceilings = Ceilings{c.at("copy_gbs"),         c.at("h2d_pinned_gbs"),
                            c.at("d2h_pinned_gbs"),   c.at("h2d_pageable_gbs"),
                            c.at("d2h_pageable_gbs"), c.at("launch_us"),
                            c.value("fp32_gflops", 0.0),  // absent in files from before it
                            c.value("bf16_tensor_gflops", 0.0)};
    }
    const json& cfg = doc.at("config");
    r.seed = cfg.at("seed");
    r.quick = cfg.at("quick");
    r.mode = mode_from(cfg.at("mode"));
    r.sizes = cfg.at("sizes").get<std::vector<std::string>>();
    for (const json& jv : doc.at("variants")) {
      VariantResult v;
      v.name = jv.at("name");
      v.role = role_from(jv.at("role"));
      v.description = jv.at("description");
      v.bytes = jv.at("bytes");
      v.flops = jv.at("flops");
      v.host_link = jv.value("host_link", false);
      for (const json& jc : jv.at("checks"))
        v.checks.push_back({jc.at("case"), jc.at("ok"), jc.at("max_abs_error"),
                            jc.at("max_rel_error"), jc.at("rel_l2_error"), jc.at("mismatches"),
                            jc.at("message")});
      if (jv.contains("time_ms")) {
        Measurement m;
        const json& t = jv["time_ms"];
        m.gpu_ms = Stats{t.at("median"), t.at("min"), t.at("q1"),  t.at("q3"),
                         t.at("mean"),   t.at("stddev"), t.at("max"), t.at("n")};
        // Files from before the median interval: its width unknown (coverage 0 says so).
        m.gpu_ms.median_low = t.value("median_low", m.gpu_ms.median);
        m.gpu_ms.median_high = t.value("median_high", m.gpu_ms.median);
        m.gpu_ms.median_coverage = t.value("median_coverage", 0.0);
        m.samples_ms = jv.value("samples_ms", std::vector<double>{});
        m.stop_reason = jv.value("stop_reason", std::string());
        m.enqueue_us = jv.at("enqueue_us");
        m.mode = mode_from(jv.at("mode"));
        m.batch = jv.at("batch");
        m.converged = jv.at("converged");
        m.sm_clock_mhz = jv.at("sm_clock_mhz");
        m.discarded_throttled = jv.at("discarded_throttled");
        m.diagnostics = jv.at("diagnostics").get<std::vector<std::string>>();
        v.measurement = m;
      }
      r.variants.push_back(v);
    }
    for (const auto& [name, jm] : doc.at("metrics").items())
      r.metrics[name] = Metric{jm.at("value"), jm.at("low"), jm.at("high"), jm.at("unit")};
    r.diagnostics = doc.at("diagnostics").get<std::vector<std::string>>();
    r.environment_ok = doc.at("environment_ok");
    return r;
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("the result file is missing a field or has a wrong type: ") +
                             e.what());
  }
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

}  // namespace lab
