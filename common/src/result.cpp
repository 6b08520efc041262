// The result file's structs, names, derived rates and writer (docs/result-file.md).
#include "lab/result.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include "write_all.hpp"

namespace lab {

using nlohmann::json;

const char* to_string(Mode mode) {
  switch (mode) {
    case Mode::Cold: return "cold";
    case Mode::Hot: return "hot";
    case Mode::Graph: return "graph";
  }
  return "?";
}

std::optional<Mode> mode_named(std::string_view name) {
  for (Mode m : kModes)
    if (name == to_string(m)) return m;
  return std::nullopt;
}

const char* to_string(Role role) {
  switch (role) {
    case Role::Baseline: return "baseline";
    case Role::Exercise: return "exercise";
    case Role::Reference: return "reference";
  }
  return "?";
}

std::optional<Role> role_named(std::string_view name) {
  for (Role r : kRoles)
    if (name == to_string(r)) return r;
  return std::nullopt;
}

double DeviceInfo::peak_bandwidth_gbs() const {
  // Double data rate: two transfers per memory clock, bus width in bits.
  return 2.0 * mem_clock_mhz * 1e6 * (bus_width_bits / 8.0) * 1e-9;
}

Rates rates_of(double bytes, double flops, bool host_link, double median_ms, double copy_gbs,
               double peak_gbs) {
  Rates r;
  if (!(median_ms > 0)) return r;
  r.gbs = bytes / (median_ms * 1e6);
  r.gflops = flops / (median_ms * 1e6);
  if (bytes > 0) r.intensity = flops / bytes;
  // Host-link bytes have another ceiling (pinned transfers): a fraction of copy would mislead.
  if (!host_link && copy_gbs > 0) r.fraction_of_copy = r.gbs / copy_gbs;
  if (!host_link && peak_gbs > 0) r.fraction_of_peak = r.gbs / peak_gbs;
  return r;
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

Rates Result::rates(const VariantResult& v) const {
  return rates_of(v.bytes, v.flops, v.host_link, v.measurement ? v.measurement->gpu_ms.median : 0,
                  ceilings ? ceilings->copy_gbs : 0, device ? device->peak_bandwidth_gbs() : 0);
}

namespace {

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
  if (!v.measurement) {
    j["diagnostics"] = json::array();
    return j;
  }
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
  // Rates are written for people; the checker computes its own from bytes, flops and the time.
  if (t.median > 0) {
    const Rates rates = r.rates(v);
    j["gbs"] = rates.gbs;
    j["gflops"] = rates.gflops;
    if (rates.intensity) j["intensity"] = *rates.intensity;
    if (rates.fraction_of_copy) j["fraction_of_copy"] = *rates.fraction_of_copy;
    if (rates.fraction_of_peak) j["fraction_of_peak"] = *rates.fraction_of_peak;
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
                       {"bf16_tensor_gflops", c.bf16_tensor_gflops},
                       {"tf32_tensor_gflops", c.tf32_tensor_gflops}};
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
  if (r.replay)
    doc["replay"] = {{"entries", r.replay->entries}, {"used", r.replay->used},
                     {"missing", r.replay->missing}, {"unused", r.replay->unused},
                     {"error", r.replay->error}};
  return doc.dump(2) + "\n";
}

std::FILE* open_for_atomic_write(const std::string& path) {
  return std::fopen((path + ".tmp").c_str(), "wb");
}

bool write_whole_file(int fd, const std::string& text) {
  if (::lseek(fd, 0, SEEK_SET) != 0) return false;
  if (!write_all(fd, text)) return false;
  return ::ftruncate(fd, static_cast<off_t>(text.size())) == 0;
}

void commit_atomic_write(std::FILE* tmp, const std::string& path, const std::string& text) {
  const std::string tmp_path = path + ".tmp";
  // Nothing was written through `tmp` itself: its descriptor takes the whole text directly.
  const bool written = std::fflush(tmp) == 0 && write_whole_file(::fileno(tmp), text);
  const bool closed = std::fclose(tmp) == 0;
  if (!written || !closed) throw std::runtime_error("cannot write " + tmp_path);
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot rename " + tmp_path + " to " + path);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  std::FILE* tmp = open_for_atomic_write(path);
  if (!tmp) throw std::runtime_error("cannot write " + path + ".tmp");
  commit_atomic_write(tmp, path, text);
}

}  // namespace lab
