// Reading result files: every way one can be wrong has its own clear message.
#include <doctest/doctest.h>

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
  CHECK(load_error("") == "the result file is not valid JSON (line 1, column 1)");
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
