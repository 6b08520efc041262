#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/result.hpp"

namespace {

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
  r.ceilings = lab::Ceilings{2800, 55, 54, 12, 9, 2.5, 61000, 750000};
  r.seed = 42;
  r.sizes = {"16384x16384"};
  lab::VariantResult v;
  v.name = "exercise";
  v.role = lab::Role::Exercise;
  v.description = "yours";
  v.bytes = 1.4e9;
  v.flops = 5e8;
  v.checks.push_back({"100x77", true, 1e-7, 2e-7, 3e-8, 0, ""});
  lab::Measurement m;
  m.samples_ms = {1.0, 1.1, 0.9, 1.0};
  m.gpu_ms = lab::summarize(m.samples_ms);
  m.converged = true;
  m.stop_reason = "converged";
  m.enqueue_us = 3.5;
  m.diagnostics = {"a note"};
  v.measurement = m;
  r.variants.push_back(v);
  lab::VariantResult wrong;
  wrong.name = "broken";
  wrong.host_link = true;
  wrong.checks.push_back({"after timing", false, 0, 0, 0, 1, "1 of 10 elements differ"});
  r.variants.push_back(wrong);
  r.metrics["overlap_efficiency"] = {0.8, 0.75, 0.85, ""};
  r.diagnostics = {"warning"};
  r.environment_ok = false;
  return r;
}

}  // namespace

TEST_CASE("the result file round-trips through JSON") {
  const lab::Result r = sample_result();
  const std::string text = lab::to_json_text(r);
  const lab::Result back = lab::parse_result(text);
  CHECK(back.lesson == r.lesson);
  CHECK(back.nonce == "abc123");
  CHECK(back.device->peak_bandwidth_gbs() == doctest::Approx(3352.32));
  CHECK(back.ceilings->copy_gbs == 2800);
  CHECK(back.ceilings->fp32_gflops == 61000);
  CHECK(back.ceilings->bf16_tensor_gflops == 750000);
  CHECK_FALSE(back.variants[0].host_link);
  CHECK(back.variants[1].host_link);
  CHECK(back.seed == 42);
  REQUIRE(back.variants.size() == 2);
  CHECK(back.variants[0].correct());
  CHECK_FALSE(back.variants[1].correct());
  CHECK(back.variants[1].checks[0].message == "1 of 10 elements differ");
  CHECK(back.variants[0].measurement->gpu_ms.median == doctest::Approx(1.0));
  CHECK(back.variants[0].measurement->diagnostics == std::vector<std::string>{"a note"});
  CHECK_FALSE(back.variants[1].measurement.has_value());
  CHECK(back.metrics.at("overlap_efficiency").low == 0.75);
  CHECK_FALSE(back.environment_ok);
  CHECK(lab::to_json_text(back) == text);  // nothing lost or invented
}

TEST_CASE("derived rates: GB/s and fractions of the ceilings come from the median") {
  const nlohmann::json doc = nlohmann::json::parse(lab::to_json_text(sample_result()));
  const auto& v = doc["variants"][0];
  CHECK(doc["schema"] == "cuda-perf-lab/result/1");
  CHECK(v["gbs"].get<double>() == doctest::Approx(1400.0));  // 1.4e9 B in 1 ms
  CHECK(v["fraction_of_copy"].get<double>() == doctest::Approx(0.5));
  CHECK(v["gflops"].get<double>() == doctest::Approx(500.0));
  CHECK(v["intensity"].get<double>() == doctest::Approx(5e8 / 1.4e9));
  CHECK(v["correct"] == true);
  CHECK(doc["variants"][1]["correct"] == false);
  CHECK_FALSE(doc["variants"][1].contains("time_ms"));
}

TEST_CASE("the median's interval and the kept samples are written for the checker") {
  lab::Result r = sample_result();
  lab::Measurement& m = *r.variants[0].measurement;
  m.samples_ms.clear();
  for (int i = 0; i < 5000; ++i) m.samples_ms.push_back(1.0 + i * 1e-4 + 1.23456789e-9);
  m.gpu_ms = lab::summarize(m.samples_ms);
  const nlohmann::json doc = nlohmann::json::parse(lab::to_json_text(r));
  const auto& v = doc["variants"][0];
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
  const lab::Result back = lab::parse_result(doc.dump());
  CHECK(back.variants[0].measurement->samples_ms == samples);
  CHECK(back.variants[0].measurement->gpu_ms.median_high == doctest::Approx(m.gpu_ms.median_high));
  CHECK(back.variants[0].measurement->stop_reason == "converged");
}

TEST_CASE("a file written before the median interval and the samples still reads") {
  nlohmann::json doc = nlohmann::json::parse(lab::to_json_text(sample_result()));
  auto& v = doc["variants"][0];
  for (const char* key : {"median_low", "median_high", "median_coverage"}) v["time_ms"].erase(key);
  v.erase("samples_ms");
  v.erase("stop_reason");
  const lab::Result back = lab::parse_result(doc.dump());
  const lab::Measurement& m = *back.variants[0].measurement;
  CHECK(m.samples_ms.empty());
  CHECK(m.gpu_ms.median_low == m.gpu_ms.median);
  CHECK(m.gpu_ms.median_coverage == 0);  // unknown
  CHECK(m.stop_reason.empty());
}

TEST_CASE("a file written before the tensor roof still reads, with the roof unknown (0)") {
  nlohmann::json doc = nlohmann::json::parse(lab::to_json_text(sample_result()));
  doc["ceilings"].erase("bf16_tensor_gflops");
  const lab::Result back = lab::parse_result(doc.dump());
  CHECK(back.ceilings->bf16_tensor_gflops == 0);
  CHECK(back.ceilings->fp32_gflops == 61000);
}

TEST_CASE("reading a bad result file says what is wrong") {
  CHECK_THROWS_WITH_AS(lab::parse_result("{not json"),
                       doctest::Contains("not valid JSON"), std::runtime_error);
  CHECK_THROWS_WITH_AS(lab::parse_result(R"({"schema": "cuda-perf-lab/result/0"})"),
                       doctest::Contains("schema is not cuda-perf-lab/result/1"),
                       std::runtime_error);
  nlohmann::json doc = nlohmann::json::parse(lab::to_json_text(sample_result()));
  doc.erase("nonce");
  CHECK_THROWS_WITH_AS(lab::parse_result(doc.dump()), doctest::Contains("nonce"),
                       std::runtime_error);
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
