// The checker's file readers on hostile files, case by case, with the exact sentences they
// print: numbers a double cannot hold, nesting thousands deep, values no GPU measures, damaged
// grade records among good ones, nan/inf and out-of-range numbers in check.toml and overrides,
// a rule key at lesson level. test_fuzz.cpp throws mutations at the same readers.
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "process.hpp"
#include "report.hpp"
#include "runs.hpp"
#include "roofline.hpp"

using namespace lab;
using namespace lab::test;

namespace {

std::string parse_error(const std::string& text) {
  std::string error;
  const auto doc = parse_json_limited(text, error);
  return doc ? "parsed" : error;
}

json roofline_result(double copy_gbs = 2000, double flops = 2e9) {
  return {{"schema", "cuda-perf-lab/result/1"},
          {"lesson", "05-x"},
          {"nonce", ""},
          {"device", {{"name", "GPU"}}},
          {"ceilings", {{"copy_gbs", copy_gbs}, {"fp32_gflops", 50000.0}}},
          {"variants", json::array({{{"name", "k"}, {"correct", true}, {"time_ms", {{"median", 1.0}}},
                                     {"bytes", 1e9}, {"flops", flops}}})}};
}

std::string grade_record(const std::string& name, bool complete = true) {
  return json{{"schema", kGradeSchema}, {"submission", name}, {"complete", complete},
              {"score", 7}, {"max_score", 10},
              {"lessons", json::array({{{"lesson", "90-fake"}, {"score", 7}, {"max_score", 10},
                                        {"verdict", "fail"}}})}}
      .dump();
}

struct Cli {
  int code;
  std::string out, err;
};

Cli lab_check(const TempDir& dir, std::vector<std::string> args) {
  ProcessOptions p;
  p.argv = {LAB_TEST_LAB_CHECK};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  p.timeout_s = 60;
  p.stdout_path = dir.path() / "out.txt";
  p.stderr_path = dir.path() / "err.txt";
  const ProcessResult r = run_process(p);
  return {r.started && r.signal == 0 ? r.exit_code : -1, read_text(p.stdout_path),
          read_text(p.stderr_path)};
}

}  // namespace

TEST_SUITE("readers") {
  TEST_CASE("JSON: nesting and number limits, with line and column, never a library exception") {
    CHECK(parse_error("{\"a\": [1, 2.5e3, -0.0, 1e-400, \"1e400 in a string\"]}") == "parsed");
    CHECK(parse_error(std::string(64, '[') + std::string(64, ']')) == "parsed");
    CHECK(parse_error(std::string(65, '[') + std::string(65, ']')) ==
          "is nested more than 64 levels deep (line 1, column 65): not a file the course writes");
    CHECK(parse_error(std::string(130000, '[') + std::string(130000, ']')) ==
          "is nested more than 64 levels deep (line 1, column 65): not a file the course writes");
    // Brackets inside strings do not count.
    CHECK(parse_error("[\"" + std::string(100, '[') + "\\\"" + std::string(100, '{') + "\"]") == "parsed");
    CHECK(parse_error("{\n  \"copy_gbs\": 1e400\n}") ==
          "has a number beyond the range of a double (1e400, line 2, column 15)");
    CHECK(parse_error("[-" + std::string(400, '9') + "]") ==
          "has a number beyond the range of a double (-99999999999999999999999..., line 1, column 2)");
    CHECK(parse_error("{\"a\": 1,\n \"b\": nan}") == "is not valid JSON (line 2, column 8)");
    CHECK(parse_error("") == "is not valid JSON (line 1, column 1)");
  }

  TEST_CASE("a lesson program's result file: limits make it this lesson's error, not the run's end") {
    TempDir dir;
    const fs::path f = dir.path() / "r.json";
    write_text(f, "{\"schema\": \"cuda-perf-lab/result/1\", \"x\": 1e400}");
    LoadedResult r = load_result(f, "", "");
    CHECK(!r.ok);
    CHECK(r.error == "the result file has a number beyond the range of a double (1e400, line 1, column 43)");
    write_text(f, std::string(100000, '[') + std::string(100000, ']'));
    r = load_result(f, "", "");
    CHECK(r.error == "the result file is nested more than 64 levels deep (line 1, column 65): not a "
                     "file the course writes");
  }

  TEST_CASE("roofline: each bad file named with its field, the good one still shown and drawn") {
    TempDir dir;
    const fs::path good = dir.path() / "good.json";
    write_text(good, roofline_result().dump());
    std::vector<std::pair<fs::path, std::string>> bad = {
        {dir.path() / "overflow.json", roofline_result().dump()},
        {dir.path() / "tiny-copy.json", roofline_result(4.9e-324).dump()},
        {dir.path() / "tiny-flops.json", roofline_result(2000, 1e-320).dump()},
        {dir.path() / "deep.json", std::string(130000, '[') + std::string(130000, ']')},
        {dir.path() / "type.json", roofline_result().dump()}};
    bad[0].second.replace(bad[0].second.find("2000.0"), 6, "1e400");
    bad[4].second.replace(bad[4].second.find("\"median\":1.0"), 12, "\"median\":\"fast\"");
    std::vector<fs::path> files;
    for (const auto& [path, text] : bad) {
      write_text(path, text);
      files.push_back(path);
    }
    files.push_back(good);
    const Roofline r = load_roofline(files);
    REQUIRE(r.errors.size() == 5);
    CHECK(r.errors[0] == bad[0].first.string() +
                             ": has a number beyond the range of a double (1e400, line 1, column 25)");
    CHECK(r.errors[1] == bad[1].first.string() +
                             ": not a lesson result file: \"ceilings.copy_gbs\" is 4.94066e-324 GB/s, which no GPU measures "
                             "(expected 0 or 1e-06 to 1e+09)");
    CHECK(r.errors[2] == bad[2].first.string() +
                             ": not a lesson result file: \"variants[0].flops\" is 9.99989e-321 FLOPs, which no GPU measures "
                             "(expected 0 or 0.001 to 1e+21)");
    CHECK(r.errors[3] == bad[3].first.string() +
                             ": is nested more than 64 levels deep (line 1, column 65): not a file the "
                             "course writes");
    CHECK(r.errors[4] == bad[4].first.string() +
                             ": not a lesson result file: \"variants[0].time_ms.median\" is a string, "
                             "expected a number");
    REQUIRE(r.runs.size() == 1);
    CHECK(r.runs[0].file == good.string());
    CHECK(contains(roofline_svg(r), "<circle"));

    // The command: every bad file on stderr, the good one on stdout, exit 1.
    std::vector<std::string> args = {"roofline"};
    for (const auto& f : files) args.push_back(f.string());
    const Cli c = lab_check(dir, args);
    CHECK(c.code == 1);
    CHECK(contains(c.out, "05-x"));
    for (const auto& [path, text] : bad) CHECK(contains(c.err, "lab-check: " + path.string() + ": "));
    CHECK(!contains(c.err, "json.exception"));
  }

  TEST_CASE("merge: damaged records named with their field, the good ones merged, exit 1") {
    TempDir dir;
    const fs::path out = dir.path() / "graded";
    write_text(out / "alice" / "result.json", grade_record("alice"));
    write_text(out / "bob" / "result.json", grade_record("bob").replace(0, 1, "{\"x\": 1e400, "));
    std::string wrong_type = grade_record("carol");
    wrong_type.replace(wrong_type.find("\"score\":7"), 9, "\"score\":\"7\"");
    write_text(out / "carol" / "result.json", wrong_type);
    write_text(out / "dave" / "result.json", std::string(300, '['));
    fs::create_directories(out / "erin" / "result.json");  // a folder where the file should be
    json rule_damaged = json::parse(grade_record("frank"));
    rule_damaged["lessons"][0]["rules"] = json::array({{{"id", "correct"}, {"verdict", 3}}});
    write_text(out / "frank" / "result.json", rule_damaged.dump());

    const Gradebook book = merge_results({out});
    REQUIRE(book.errors.size() == 5);
    CHECK(book.errors[0] == (out / "bob" / "result.json").string() +
                                ": has a number beyond the range of a double (1e400, line 1, column 7)");
    CHECK(book.errors[1] == (out / "carol" / "result.json").string() +
                                ": \"lessons[0].score\" is not a number");
    CHECK(contains(book.errors[2], (out / "dave" / "result.json").string() + ": is nested more than 64"));
    CHECK(book.errors[3] == (out / "erin" / "result.json").string() + ": is not a regular file");
    CHECK(book.errors[4] == (out / "frank" / "result.json").string() +
                                ": \"lessons[0].rules[0].verdict\" is not a string");
    CHECK(book.csv == "student,90-fake,total\nalice,7,7\n");
    CHECK(book.doc["errors"].size() == 5);

    const fs::path csv = dir.path() / "grades.csv";
    Cli c = lab_check(dir, {"merge", out.string(), "--csv", csv.string()});
    CHECK(c.code == 1);
    CHECK(contains(c.err, "lab-check: " + (out / "carol" / "result.json").string() +
                              ": \"lessons[0].score\" is not a number"));
    CHECK(contains(c.out, "1 students -> " + csv.string() + " (5 record(s) left out: see above)"));
    CHECK(read_text(csv) == book.csv);

    // Nothing usable: no gradebook at all.
    fs::remove_all(out / "alice");
    c = lab_check(dir, {"merge", out.string(), "--csv", (dir.path() / "none.csv").string()});
    CHECK(c.code == 1);
    CHECK(contains(c.err, "no usable grade record, so no gradebook was written"));
    CHECK(!fs::exists(dir.path() / "none.csv"));
  }

  TEST_CASE("grade's resume check: only a sound, finished record counts as graded") {
    TempDir dir;
    const fs::path f = dir.path() / "result.json";
    CHECK(!grade_record_complete(f));  // missing
    for (const std::string& damaged :
         {std::string("[1]"), std::string("\"x\""), std::string("{\"schema\": 5}"), std::string(""),
          std::string(100000, '['), grade_record("a").replace(0, 1, "{\"n\": 1e999, "),
          json{{"schema", kGradeSchema}, {"complete", "yes"}}.dump()}) {
      write_text(f, damaged);
      CHECK_MESSAGE(!grade_record_complete(f), damaged.substr(0, 40));
    }
    write_text(f, grade_record("a", false));
    CHECK(!grade_record_complete(f));
    write_text(f, grade_record("a", true));
    CHECK(grade_record_complete(f));
  }

  TEST_CASE("check.toml and overrides: nan, inf, tiny timeouts and keys in the wrong table") {
    TempDir dir;
    const fs::path file = dir.path() / "90-fake" / "check.toml";
    auto check_toml_error = [&](const std::string& tail) -> std::string {
      write_text(file, "lesson = \"90-fake\"\n[[rule]]\nid = \"s\"\nkind = \"speedup\"\nvariant = \"e\"\n"
                       "over = \"b\"\n" + tail);
      try {
        load_lesson(file);
      } catch (const ConfigError& e) {
        return e.what();
      }
      return "no error";
    };
    const std::string at = file.string() + ":";
    CHECK(check_toml_error("min = nan\n") == at + "7: \"min\" must be a finite number, not nan");
    CHECK(check_toml_error("min = 1\npoints = inf\n") == at + "8: \"points\" must be a finite number, not inf");
    CHECK(check_toml_error("max = -inf\n") == at + "7: \"max\" must be a finite number, not -inf");
    CHECK(check_toml_error("min = 1\npoints = 1e300\n") ==
          at + "8: \"points\" must be between 0 and 10000 (not 1e+300)");
    CHECK(check_toml_error("min = 1\n[x]\ntimeout_s = 1\n") != "no error");
    write_text(file, "lesson = \"90-fake\"\ntimeout_s = 1e-9\n");
    CHECK_THROWS_WITH_AS(load_lesson(file), (at + "2: \"timeout_s\" must be between 1 and 86400 seconds (not 1e-09)").c_str(),
                         ConfigError);
    std::string deep_key;
    for (int i = 0; i < 50000; ++i) deep_key += "a.";
    write_text(file, "lesson = \"90-fake\"\n" + deep_key + "a = 1\n");
    CHECK_THROWS_WITH_AS(load_lesson(file),
                         (at + "2: more than 2000 dotted key parts and decimal points: not a file the "
                               "course writes (keys nested that deep would crash the reader)").c_str(),
                         ConfigError);

    std::vector<LessonConfig> lessons{fake_lesson({}, standard_rules())};
    const fs::path overrides = dir.path() / "overrides.toml";
    auto overrides_error = [&](const std::string& body) -> std::string {
      write_text(overrides, body);
      std::vector<LessonConfig> copy = lessons;
      try {
        apply_overrides(copy, overrides);
      } catch (const ConfigError& e) {
        return e.what();
      }
      return "no error";
    };
    const std::string o = overrides.string() + ":";
    CHECK(overrides_error("[\"90-fake\"]\nmin = 0.65\n") ==
          o + "2: \"min\" is a rule key: put it under the rule's table, [\"90-fake\".<rule>] (rules: "
              "correct, speedup, bandwidth); only timeout_s goes under [\"90-fake\"]");
    CHECK(overrides_error("[\"90-fake\"]\ntitle = \"x\"\n") ==
          o + "2: \"title\" cannot be set for a lesson (only timeout_s; rule keys go under "
              "[\"90-fake\".<rule>], rules: correct, speedup, bandwidth)");
    CHECK(overrides_error("[\"90-fake\".speedup]\ntimeout_s = 30\n") ==
          o + "2: \"timeout_s\" is a lesson key: put it under [\"90-fake\"]");
    CHECK(overrides_error("[\"90-fake\".speedup]\nmin = nan\n") == o + "2: \"min\" must be a finite number, not nan");
    CHECK(overrides_error("[\"90-fake\".speedup]\npoints = -inf\n") ==
          o + "2: \"points\" must be a finite number, not -inf");
    CHECK(overrides_error("[\"90-fake\"]\ntimeout_s = 1e-9\n") ==
          o + "2: \"timeout_s\" must be between 1 and 86400 seconds (not 1e-09)");
    CHECK(overrides_error("[\"90-fake\"]\ntimeout_s = 300\n") == "no error");
  }

  TEST_CASE("list --overrides shows the thresholds in force and where they were changed") {
    TempDir dir;
    const fs::path overrides = dir.path() / "thresholds.toml";
    write_text(overrides, "[\"90-fake\"]\ntimeout_s = 300\n[\"90-fake\".speedup]\nmin = 2.5\npoints = 5\n");
    const std::string source = (fs::path(LAB_TEST_DATA_DIR) / "fake-course").string();
    Cli c = lab_check(dir, {"--source-dir", source, "list", "--overrides", overrides.string()});
    INFO(c.out << c.err);
    CHECK(c.code == 0);
    CHECK(contains(c.out, "90-fake  A fake lesson  (12 points, timeout 300 s)"));
    CHECK(contains(c.out, "speedup: speedup of exercise over naive >= 2.50x  [5 pt]  (overridden at " +
                              overrides.string() + ":3)"));
    c = lab_check(dir, {"--source-dir", source, "--format", "json", "list", "--overrides", overrides.string()});
    CHECK(json::parse(c.out)[0]["rules"][1]["overridden_at"] == overrides.string() + ":3");

    write_text(overrides, "[\"90-fake\"]\nmin = 0.65\n");
    c = lab_check(dir, {"--source-dir", source, "list", "--overrides", overrides.string()});
    CHECK(c.code == 2);
    CHECK(contains(c.err, overrides.string() + ":2: \"min\" is a rule key"));
  }
}  // TEST_SUITE
