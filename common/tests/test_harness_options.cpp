// The harness's command line, without a GPU: usage errors, --list, --help, and the no-GPU path.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "lab/harness.hpp"
#include "lab/result_reader.hpp"

namespace {

int run_with(std::vector<std::string> args, bool* body_ran = nullptr) {
  lab::Lesson lesson("99-test", "harness test");
  lesson.declare("baseline", lab::Role::Baseline, "the given one");
  lesson.declare("exercise", lab::Role::Exercise, "yours");
  long long rows = 10;
  lesson.option("--rows", &rows, "rows");
  args.insert(args.begin(), "/some/dir/solution");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return lesson.run(static_cast<int>(argv.size()), argv.data(), [&](lab::Lesson& l) {
    if (body_ran) *body_ran = true;
    CHECK(rows == 20);
    l.check("baseline", "trivial", true, "");
    l.check("exercise", "trivial", true, "");
  });
}

}  // namespace

TEST_CASE("usage errors exit 2 and never run the lesson") {
  bool ran = false;
  CHECK(run_with({"--bogus"}, &ran) == lab::kExitUsage);
  CHECK(run_with({"--mode", "lukewarm"}, &ran) == lab::kExitUsage);
  CHECK(run_with({"--seed", "not-a-number"}, &ran) == lab::kExitUsage);
  CHECK(run_with({"--variant", "nope"}, &ran) == lab::kExitUsage);
  CHECK(run_with({"--skip-variant", "nope"}, &ran) == lab::kExitUsage);  // a misspelt baseline
  CHECK_FALSE(ran);
}

TEST_CASE("--list and --help exit 0 without a GPU and without running the lesson") {
  bool ran = false;
  CHECK(run_with({"--list"}, &ran) == lab::kExitOk);
  CHECK(run_with({"--help"}, &ran) == lab::kExitOk);
  CHECK_FALSE(ran);
}

TEST_CASE("a run writes the result file; without a GPU it says so and exits 77") {
  const std::string path = "harness_test_result.json";
  bool ran = false;
  const int code = run_with({"--rows", "20", "--seed", "5", "--nonce", "n1", "--json", path,
                             "--quick", "--mode", "graph"}, &ran);
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  const auto doc = lab::read_result(text.str(), error);  // the checker's reader
  REQUIRE_MESSAGE(doc, error);
  const nlohmann::json& r = *doc;
  CHECK(r["nonce"] == "n1");
  CHECK(r["config"]["seed"] == 5);
  CHECK(r["build"] == "solution");  // from the program's name
  CHECK(r["config"]["mode"] == "graph");
  if (lab::gpu_available()) {
    CHECK(code == lab::kExitOk);
    CHECK(ran);
    CHECK(r["complete"] == true);
  } else {
    CHECK(code == lab::kExitNoGpu);
    CHECK_FALSE(ran);
    CHECK(r["complete"] == false);
    REQUIRE_FALSE(r["diagnostics"].empty());
    CHECK(r["diagnostics"][0].get<std::string>().find("GPU") != std::string::npos);
  }
  std::remove(path.c_str());
}
