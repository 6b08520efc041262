// The result file's one implementation (library lab_result, no CUDA): the writer, the reader the
// checker uses, the names of modes and roles, and the derived rates.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/result.hpp"
#include "lab/result_reader.hpp"

using nlohmann::json;

namespace {

// A result with every field the writer can write: each optional part present at least once.
lab::Result sample_result() {
  lab::Result r;
  r.lesson = "04-coalescing";
  r.build = "solution";
  r.nonce = "abc123";
  r.complete = true;
  lab::DeviceInfo d;
  d.name = "Test GPU";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sms = 132;
  d.l2_bytes = 50u << 20;
  d.global_bytes = 80ull << 30;
  d.sm_clock_mhz = 1980;
  d.mem_clock_mhz = 2619;
  d.bus_width_bits = 5120;
  d.driver_version = 13000;
  d.runtime_version = 13000;
  r.device = d;
  r.ceilings = lab::Ceilings{2800, 55, 54, 12, 9, 2.5, 61000, 750000, 380000};
  r.seed = 42;
  r.mode = lab::Mode::Hot;
  r.sizes = {"16384x16384"};
  lab::VariantResult v;
  v.name = "exercise";
  v.role = lab::Role::Exercise;
  v.description = "yours";
  v.bytes = 1.4e9;
  v.flops = 5e8;
  v.checks.push_back({"100x77", true, 1e-7, 2e-7, 3e-8, 0, ""});
  lab::Measurement m;
  m.mode = lab::Mode::Hot;
  m.samples_ms = {1.0, 1.1, 0.9, 1.0};
  m.gpu_ms = lab::summarize(m.samples_ms);
  m.converged = true;
  m.stop_reason = "converged";
  m.enqueue_us = 3.5;
  m.sm_clock_mhz = 1980;
  m.diagnostics = {"a note"};
  v.measurement = m;
  r.variants.push_back(v);
  lab::VariantResult wrong;
  wrong.name = "broken";
  wrong.role = lab::Role::Reference;
  wrong.host_link = true;
  wrong.checks.push_back({"after timing", false, 0, 0, 0, 1, "1 of 10 elements differ"});
  r.variants.push_back(wrong);
  r.metrics["overlap_efficiency"] = {0.8, 0.75, 0.85, "x"};
  r.diagnostics = {"warning"};
  r.environment_ok = false;
  return r;
}

std::string read_error(const std::string& text) {
  std::string error;
  return lab::read_result(text, error) ? "ok" : error;
}

std::string doc_error(const json& doc) { return read_error(doc.dump()); }

// Calls `visit(path, node)` for every leaf of `doc` (a value that is no object or array), with
// its path as the reader names it: "variants[0].time_ms.median", "config.sizes[0]".
void each_leaf(json& doc, const std::string& path,
               const std::function<void(const std::string&, json&)>& visit) {
  if (doc.is_object()) {
    for (auto& [key, value] : doc.items()) each_leaf(value, path.empty() ? key : path + "." + key, visit);
  } else if (doc.is_array()) {
    for (std::size_t i = 0; i < doc.size(); ++i)
      each_leaf(doc[i], path + "[" + std::to_string(i) + "]", visit);
  } else {
    visit(path, doc);
  }
}

}  // namespace

TEST_CASE("the writer's document reads back with the one reader, every value in place") {
  const lab::Result r = sample_result();
  std::string error;
  const auto doc = lab::read_result(lab::to_json_text(r), error);
  REQUIRE_MESSAGE(doc, error);
  const json& d = *doc;
  CHECK(d["schema"] == lab::kResultSchema);
  CHECK(d["lesson"] == "04-coalescing");
  CHECK(d["build"] == "solution");
  CHECK(d["nonce"] == "abc123");
  CHECK(d["complete"] == true);
  CHECK(d["device"]["cc"] == "9.0");
  CHECK(d["device"]["peak_bandwidth_gbs"].get<double>() == doctest::Approx(3352.32));
  CHECK(d["ceilings"]["copy_gbs"] == 2800);
  CHECK(d["ceilings"]["fp32_gflops"] == 61000);
  CHECK(d["ceilings"]["bf16_tensor_gflops"] == 750000);
  CHECK(d["ceilings"]["tf32_tensor_gflops"] == 380000);
  CHECK(d["config"]["seed"] == 42);
  CHECK(d["config"]["mode"] == "hot");
  CHECK(d["config"]["sizes"] == json::array({"16384x16384"}));
  REQUIRE(d["variants"].size() == 2);
  const json& v = d["variants"][0];
  CHECK(v["role"] == "exercise");
  CHECK(v["mode"] == "hot");
  CHECK(v["correct"] == true);
  CHECK(v["host_link"] == false);
  CHECK(v["time_ms"]["median"].get<double>() == doctest::Approx(1.0));
  CHECK(v["samples_ms"] == json::array({1.0, 1.1, 0.9, 1.0}));
  CHECK(v["diagnostics"] == json::array({"a note"}));
  const json& w = d["variants"][1];
  CHECK(w["role"] == "reference");
  CHECK(w["correct"] == false);
  CHECK(w["host_link"] == true);
  CHECK(w["checks"][0]["message"] == "1 of 10 elements differ");
  CHECK_FALSE(w.contains("time_ms"));
  CHECK(d["metrics"]["overlap_efficiency"]["low"] == 0.75);
  CHECK(d["environment_ok"] == false);
  CHECK(lab::find_variant(d, "broken") == &w);
  CHECK(lab::find_variant(d, "nope") == nullptr);
  CHECK(lab::mode_of(d, v) == lab::Mode::Hot);
}

TEST_CASE("every field the writer writes is checked by the reader") {
  // Each leaf in turn gets a value of another type: the reader must refuse the document and
  // name that field. A field the writer adds and the reader does not know fails here.
  json written = json::parse(lab::to_json_text(sample_result()));
  std::vector<std::string> paths;
  each_leaf(written, "", [&](const std::string& path, json&) { paths.push_back(path); });
  REQUIRE(paths.size() > 80);
  for (const std::string& path : paths) {
    if (path == "schema") continue;  // its own message, below
    json doc = json::parse(lab::to_json_text(sample_result()));
    each_leaf(doc, "", [&](const std::string& p, json& node) {
      if (p == path) node = node.is_string() ? json(5) : json("text");
    });
    const std::string error = doc_error(doc);
    CHECK_MESSAGE(error.find("\"" + path + "\"") != std::string::npos, path << ": " << error);
  }
}

TEST_CASE("the reader refuses what no lesson writes, with a sentence") {
  const json good = json::parse(lab::to_json_text(sample_result()));
  CHECK(doc_error(good) == "ok");
  CHECK(read_error("{not json") == "is not valid JSON (line 1, column 3)");
  CHECK(read_error(std::string(100, '[') + std::string(100, ']')) ==
        "is nested more than 64 levels deep (line 1, column 65): not a file the course writes");
  CHECK(read_error(R"({"schema": "cuda-perf-lab/result/1", "x": 1e400})") ==
        "has a number beyond the range of a double (1e400, line 1, column 43)");
  CHECK(read_error(std::string(lab::kMaxResultBytes + 1, ' ')) ==
        "is 16777217 bytes, more than the 16777216 allowed");

  auto changed = [&](const std::function<void(json&)>& change) {
    json doc = good;
    change(doc);
    return doc_error(doc);
  };
  const std::string prefix = "does not follow the result schema: ";
  CHECK(changed([](json& d) { d["schema"] = "cuda-perf-lab/result/0"; }) ==
        prefix + "schema is \"cuda-perf-lab/result/0\", this checker reads \"cuda-perf-lab/result/1\" "
                 "(rebuild the lesson and the checker from the same commit)");
  CHECK(changed([](json& d) { d.erase("schema"); }) ==
        prefix + "\"schema\" is missing: this is not a lesson result file");
  CHECK(read_error("[1]") == prefix + "the top level is an array, expected an object");
  for (const char* required : {"lesson", "nonce", "variants"})
    CHECK(changed([&](json& d) { d.erase(required); }) == prefix + "\"" + required + "\" is missing");
  CHECK(changed([](json& d) { d["variants"][0].erase("correct"); }) ==
        prefix + "\"variants[0].correct\" is missing");
  CHECK(changed([](json& d) { d["variants"][0]["time_ms"].erase("median"); }) ==
        prefix + "\"variants[0].time_ms.median\" is missing");
  CHECK(changed([](json& d) { d["metrics"]["overlap_efficiency"].erase("value"); }) ==
        prefix + "\"metrics.overlap_efficiency.value\" is missing");
  // Names and ranges.
  CHECK(changed([](json& d) { d["config"]["mode"] = "lukewarm"; }) ==
        prefix + "\"config.mode\" is \"lukewarm\", expected cold, hot or graph");
  CHECK(changed([](json& d) { d["variants"][1]["role"] = "student"; }) ==
        prefix + "\"variants[1].role\" is \"student\", expected baseline, exercise or reference");
  CHECK(changed([](json& d) { d["variants"][0]["time_ms"]["median"] = 0; }) ==
        prefix + "\"variants[0].time_ms.median\" is not a positive time");
  CHECK(changed([](json& d) { d["variants"][0]["samples_ms"][2] = -1.0; }) ==
        prefix + "\"variants[0].samples_ms[2]\" is not a positive time");
  CHECK(changed([](json& d) { d["variants"][0]["time_ms"]["median"] = 1e12; }) ==
        prefix + "\"variants[0].time_ms.median\" is 1e+12 ms, which no GPU measures (expected "
                 "1e-09 to 1e+09)");
  CHECK(changed([](json& d) { d["ceilings"]["copy_gbs"] = 4.9e-324; }) ==
        prefix + "\"ceilings.copy_gbs\" is 4.94066e-324 GB/s, which no GPU measures (expected 0 "
                 "or 1e-06 to 1e+09)");
  CHECK(changed([](json& d) { d["variants"][0]["bytes"] = 1e300; }) ==
        prefix + "\"variants[0].bytes\" is 1e+300 bytes, which no GPU measures (expected 0 or "
                 "0.001 to 1e+21)");
  CHECK(changed([](json& d) { d["variants"][0] = 3; }) ==
        prefix + "\"variants[0]\" is a number, expected an object");
  CHECK(changed([](json& d) { d["variants"][0]["checks"][0] = "passed"; }) ==
        prefix + "\"variants[0].checks[0]\" is a string, expected an object");
  // A document built in memory may hold what JSON text cannot.
  json nan = good;
  nan["metrics"]["overlap_efficiency"]["value"] = std::numeric_limits<double>::quiet_NaN();
  CHECK(lab::validate_result(nan) == "\"metrics.overlap_efficiency.value\" is not a finite number");
}

TEST_CASE("what JSON writes for NaN (null) is accepted where a NaN is honest") {
  lab::Result r = sample_result();
  r.variants[1].checks[0].max_rel_error = std::numeric_limits<double>::quiet_NaN();
  r.ceilings->h2d_pageable_gbs = std::numeric_limits<double>::quiet_NaN();
  const json doc = json::parse(lab::to_json_text(r));
  CHECK(doc["variants"][1]["checks"][0]["max_rel_error"].is_null());
  CHECK(doc_error(doc) == "ok");
}

TEST_CASE("a file written before the median interval and the samples still reads") {
  json doc = json::parse(lab::to_json_text(sample_result()));
  auto& v = doc["variants"][0];
  for (const char* key : {"median_low", "median_high", "median_coverage"}) v["time_ms"].erase(key);
  v.erase("samples_ms");
  v.erase("stop_reason");
  doc["ceilings"].erase("fp32_gflops");
  doc["ceilings"].erase("bf16_tensor_gflops");  // before lesson 12's tensor roof
  doc["ceilings"].erase("tf32_tensor_gflops");  // before lesson 05's
  CHECK(doc_error(doc) == "ok");
}

TEST_CASE("modes and roles: one name each, both ways") {
  for (lab::Mode m : lab::kModes) CHECK(lab::mode_named(lab::to_string(m)) == m);
  for (lab::Role r : lab::kRoles) CHECK(lab::role_named(lab::to_string(r)) == r);
  CHECK(std::string(lab::to_string(lab::Mode::Graph)) == "graph");
  CHECK(std::string(lab::to_string(lab::Role::Baseline)) == "baseline");
  CHECK_FALSE(lab::mode_named("Cold"));
  CHECK_FALSE(lab::mode_named(""));
  CHECK_FALSE(lab::role_named("student"));
}

TEST_CASE("derived rates: one computation for the table, the file and the checker") {
  const lab::Rates r = lab::rates_of(1.4e9, 5e8, false, 1.0, 2800, 3500);
  CHECK(r.gbs == doctest::Approx(1400.0));  // 1.4e9 B in 1 ms
  CHECK(r.gflops == doctest::Approx(500.0));
  CHECK(*r.intensity == doctest::Approx(5e8 / 1.4e9));
  CHECK(*r.fraction_of_copy == doctest::Approx(0.5));
  CHECK(*r.fraction_of_peak == doctest::Approx(0.4));
  // Host-link bytes have no device-memory fraction; an unknown ceiling gives none either.
  const lab::Rates link = lab::rates_of(1e9, 0, true, 1.0, 2800, 3500);
  CHECK(link.gbs == doctest::Approx(1000.0));
  CHECK_FALSE(link.fraction_of_copy);
  CHECK_FALSE(link.fraction_of_peak);
  CHECK_FALSE(lab::rates_of(1e9, 0, false, 1.0, 0, 0).fraction_of_copy);
  CHECK_FALSE(lab::rates_of(0, 1e9, false, 1.0, 2800, 0).intensity);
  // Not timed: nothing.
  const lab::Rates none = lab::rates_of(1e9, 1e9, false, 0, 2800, 3500);
  CHECK(none.gbs == 0);
  CHECK_FALSE(none.fraction_of_copy);

  // The file holds what rates_of gives, and the reader's rates_of(doc, variant) (the checker's)
  // gives it again from the same document.
  const json doc = json::parse(lab::to_json_text(sample_result()));
  const json& v = doc["variants"][0];
  const lab::Rates again = lab::rates_of(doc, v);
  CHECK(v["gbs"].get<double>() == doctest::Approx(1400.0));
  CHECK(v["fraction_of_copy"].get<double>() == doctest::Approx(0.5));
  CHECK(v["intensity"].get<double>() == doctest::Approx(5e8 / 1.4e9));
  CHECK(again.gbs == v["gbs"].get<double>());
  CHECK(again.gflops == v["gflops"].get<double>());
  CHECK(*again.fraction_of_copy == v["fraction_of_copy"].get<double>());
  CHECK(*again.fraction_of_peak == v["fraction_of_peak"].get<double>());
}

TEST_CASE("the median's interval and the kept samples are written for the checker") {
  lab::Result r = sample_result();
  lab::Measurement& m = *r.variants[0].measurement;
  m.samples_ms.clear();
  for (int i = 0; i < 5000; ++i) m.samples_ms.push_back(1.0 + i * 1e-4 + 1.23456789e-9);
  m.gpu_ms = lab::summarize(m.samples_ms);
  std::string error;
  const auto doc = lab::read_result(lab::to_json_text(r), error);
  REQUIRE_MESSAGE(doc, error);
  const auto& v = (*doc)["variants"][0];
  CHECK(v["time_ms"]["median_low"].get<double>() == doctest::Approx(m.gpu_ms.median_low));
  CHECK(v["time_ms"]["median_high"].get<double>() == doctest::Approx(m.gpu_ms.median_high));
  CHECK(v["time_ms"]["median_coverage"].get<double>() >= 0.95);
  CHECK(v["stop_reason"] == "converged");
  // Capped at 2000, evenly spaced over the run, 7 significant digits.
  const auto samples = v["samples_ms"].get<std::vector<double>>();
  REQUIRE(samples.size() == lab::kMaxResultSamples);
  CHECK(samples[0] == 1.0);
  CHECK(samples[1] == doctest::Approx(1.0002));  // sample floor(i * 5000 / 2000)
  CHECK(samples.back() == doctest::Approx(1.0 + 4997 * 1e-4));
}

TEST_CASE("files are written atomically: no temporary left, content complete") {
  const std::string path = "lab_result_test.json";
  lab::write_file_atomically(path, "first");
  lab::write_file_atomically(path, "second");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "second");
  CHECK_FALSE(std::ifstream(path + ".tmp").good());
  std::remove(path.c_str());
  CHECK_THROWS_AS(lab::write_file_atomically("/nonexistent-dir/x.json", "x"), std::runtime_error);
}

TEST_CASE("a result file holds only what its writer wrote, whatever was written into it before") {
  // A lesson program opens its result file (PATH.tmp, or the descriptor the checker hands) at its
  // start; exercise code that finds it open can write into it while it runs. The harness's text
  // replaces all of that: written from the start, cut to its length.
  const std::string path = "lab_result_forged_test.json";
  std::FILE* tmp = lab::open_for_atomic_write(path);
  REQUIRE(tmp);
  {
    std::ofstream forged(path + ".tmp", std::ios::binary);
    forged << "{\"forged\": true}" << std::string(100000, ' ');
  }
  lab::commit_atomic_write(tmp, path, "{\"real\": 1}");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "{\"real\": 1}");
  std::remove(path.c_str());
}
