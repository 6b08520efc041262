// Reading result files: every way one can be wrong has its own clear message.
#include <doctest/doctest.h>

#include <chrono>

#include "helpers.hpp"
#include "runs.hpp"

using namespace lab;
using namespace lab::test;

TEST_SUITE("result") {

namespace {
std::string load_error(const std::string& text, const std::string& nonce = "abc") {
  TempDir dir;
  const fs::path file = dir.path() / "result.json";
  write_text(file, text);
  const LoadedResult r = load_result(file, nonce, "90-fake");
  return r.ok ? "ok" : r.error;
}
}  // namespace

TEST_CASE("a valid result loads") {
  CHECK(load_error(sample_result().dump()) == "ok");
}

TEST_CASE("missing file") {
  TempDir dir;
  const LoadedResult r = load_result(dir.path() / "result.json", "abc", "");
  CHECK_FALSE(r.ok);
  CHECK(r.error == "the program wrote no usable result file: result.json does not exist");
}

TEST_CASE("malformed JSON") {
  CHECK(load_error("{\"schema\": \"cuda-perf-lab/result/1\", \"variants\": [") ==
        "the result file is not valid JSON (line 1, column 51)");
  // An empty file is the one the checker handed (--result-fd) and the program never wrote.
  CHECK(load_error("") == "the program wrote no result (result.json is empty): it ended before its harness did");
  CHECK(load_error(" ") == "the result file is not valid JSON (line 1, column 2)");
}

TEST_CASE("wrong or missing schema") {
  json doc = sample_result();
  doc["schema"] = "cuda-perf-lab/result/2";
  CHECK(load_error(doc.dump()) ==
        "the result file does not follow the result schema: schema is \"cuda-perf-lab/result/2\", this checker "
        "reads \"cuda-perf-lab/result/1\" (rebuild the lesson and the checker from the same commit)");
  doc.erase("schema");
  CHECK(load_error(doc.dump()) ==
        "the result file does not follow the result schema: \"schema\" is missing: this is not a lesson result file");
  CHECK(load_error("[1, 2]") ==
        "the result file does not follow the result schema: the top level is an array, expected an object");
}

TEST_CASE("fields of the wrong type are named with their path") {
  json doc = sample_result();
  doc["variants"][1]["correct"] = "yes";
  CHECK(load_error(doc.dump()) ==
        "the result file does not follow the result schema: \"variants[1].correct\" is a string, expected a boolean");
  doc = sample_result();
  doc["variants"][0]["time_ms"].erase("median");
  CHECK(load_error(doc.dump()) ==
        "the result file does not follow the result schema: \"variants[0].time_ms.median\" is missing");
  doc = sample_result();
  doc["variants"][0]["time_ms"]["median"] = 0;
  CHECK(load_error(doc.dump()) ==
        "the result file does not follow the result schema: \"variants[0].time_ms.median\" is not a positive time");
  doc = sample_result();
  doc["metrics"]["overlap_efficiency"]["value"] = "high";
  CHECK(load_error(doc.dump()) ==
        "the result file does not follow the result schema: \"metrics.overlap_efficiency.value\" is a string, expected a number");
  doc = sample_result();
  doc.erase("variants");
  CHECK(load_error(doc.dump()) == "the result file does not follow the result schema: \"variants\" is missing");
}

TEST_CASE("every key the checker reads is type-checked where the file is read, never a library exception") {
  const std::string refused = "the result file does not follow the result schema: ";
  json doc = sample_result();
  doc["debug_build"] = "yes";  // rules.cpp reads it: the library threw type_error.302 there
  CHECK(load_error(doc.dump()) == refused + "\"debug_build\" is a string, expected a boolean");
  doc = sample_result();
  doc["replay"] = {{"entries", 3}, {"error", 5}};
  CHECK(load_error(doc.dump()) == refused + "\"replay.error\" is a number, expected a string");
  doc = sample_result();
  doc["variants"][0]["time_ms"]["n"] = 1e300;  // a count a size_t cannot hold
  CHECK(load_error(doc.dump()) == refused + "\"variants[0].time_ms.n\" is 1e+300, expected a count (0 or 1 to 1e+12)");
  doc = sample_result();
  doc["variants"][1]["batch"] = 0.5;
  CHECK(load_error(doc.dump()) == refused + "\"variants[1].batch\" is 0.5, expected a count (0 or 1 to 1e+12)");
}

TEST_CASE("keys only the checker writes are refused in a program's file") {
  const std::string refused = "the result file does not follow the result schema: ";
  json doc = sample_result();
  doc["unverified_variants"] = json::array({1});
  CHECK(load_error(doc.dump()) ==
        refused + "\"unverified_variants\" is the checker's own key: a lesson program does not write it");
  doc = sample_result();
  doc["counters"] = {{"exercise", {{"dram_bytes", {{"value", 1}}}}}};
  CHECK(load_error(doc.dump()) == refused + "\"counters\" is the checker's own key: a lesson program does not write it");
  // A baseline "the pristine run could not time" would make a failed speedup `environment`.
  doc = sample_result();
  doc["variants"][0]["pristine_error"] = "no GPU";
  CHECK(load_error(doc.dump()) ==
        refused + "\"variants[0].pristine_error\" is the checker's own key: a lesson program does not write it");
}

TEST_CASE("readings that contradict themselves are refused, naming the field") {
  const std::string refused = "the result file does not follow the result schema: ";
  json doc = sample_result();
  doc["variants"][1]["time_ms"]["median"] = 0.5;  // min 0.98, max 1.03
  CHECK(load_error(doc.dump()) ==
        refused + "\"variants[1].time_ms.median\" is 0.5, outside its own min and max (0.98 to 1.03)");
  // The samples behind the time: as many as it counts, within its min and max, around its median.
  doc = sample_result();
  doc["variants"][1]["time_ms"]["n"] = 3;
  doc["variants"][1]["samples_ms"] = {1.0, 1.01};
  CHECK(load_error(doc.dump()) == refused + "\"variants[1].samples_ms\" holds 2 samples, but its time counts 3 "
                                            "(a file holds all of them, up to 2000)");
  doc["variants"][1]["samples_ms"] = {1.0, 1.01, 7.0};
  CHECK(load_error(doc.dump()) == refused + "\"variants[1].samples_ms\" run from 1 to 7 ms, outside its time's "
                                            "own min and max (0.98 to 1.03)");
  doc["variants"][1]["samples_ms"] = {1.01, 1.02, 1.02};
  CHECK(load_error(doc.dump()) == refused + "\"variants[1].time_ms.median\" is 1, outside the range of its "
                                            "own samples (1.01 to 1.02)");
  doc["variants"][1]["samples_ms"] = {0.99, 1.0, 1.02};  // rounded to 7 digits as written: fine
  CHECK(load_error(doc.dump()) == "ok");
  // A metric within its own interval.
  doc = sample_result();
  doc["metrics"]["overlap_efficiency"]["value"] = 0.9;
  CHECK(load_error(doc.dump()) == refused + "\"metrics.overlap_efficiency.value\" is 0.9, outside its own "
                                            "interval (low 0.78, high 0.82)");
  // Two variants of one name: the first would win every rule.
  doc = sample_result();
  doc["variants"][1]["name"] = "naive";
  CHECK(load_error(doc.dump()) == refused + "\"variants[1].name\" is \"naive\", the name of an earlier "
                                            "variant (names are unique within a lesson)");
}

TEST_CASE("a result of 40,000 variants is refused at once: judging time is bounded by the file") {
  json doc = sample_result();
  json tiny = doc["variants"][0];
  for (int i = 0; i < 40000; ++i) {
    tiny["name"] = "v" + std::to_string(i);
    doc["variants"].push_back(tiny);
  }
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(load_error(doc.dump()) == "the result file does not follow the result schema: \"variants\" holds "
                                  "40002 variants, more than the 1000 a lesson may declare");
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
  // At the bound, unique names are checked in linear time too.
  json first = json::array();
  for (std::size_t i = 0; i < kMaxResultVariants; ++i) first.push_back(doc["variants"][i]);
  doc["variants"] = first;
  CHECK(load_error(doc.dump()) == "ok");
}

TEST_CASE("nonce: missing, empty or wrong") {
  json doc = sample_result();
  CHECK(load_error(doc.dump(), "def") ==
        "the result file's nonce does not match this run's: it was not written by this run of the harness");
  doc["nonce"] = "";
  CHECK(load_error(doc.dump(), "def") ==
        "the result file has no nonce: it was not written by this run of the harness");
  doc.erase("nonce");
  CHECK(load_error(doc.dump()) == "the result file does not follow the result schema: \"nonce\" is missing");
}

TEST_CASE("another lesson's result") {
  json doc = sample_result();
  doc["lesson"] = "04-coalescing";
  CHECK(load_error(doc.dump()) == "the result file is for lesson \"04-coalescing\", expected \"90-fake\"");
}

TEST_CASE("a result larger than the limit is refused without reading it") {
  TempDir dir;
  const fs::path file = dir.path() / "result.json";
  {
    std::ofstream out(file);
    out.seekp(static_cast<std::streamoff>(kMaxResultBytes) + 10);
    out << 'x';
  }
  const LoadedResult r = load_result(file, "abc", "");
  CHECK_FALSE(r.ok);
  CHECK(contains(r.error, "result.json is 16777227 bytes, more than the 16777216 allowed"));
}

}  // TEST_SUITE
