// The checker's file readers on hostile files, case by case, with the exact sentences they
// print: numbers a double cannot hold, nesting thousands deep, values no GPU measures, damaged
// grade records among good ones, nan/inf and out-of-range numbers in check.toml and overrides,
// a rule key at lesson level. test_fuzz.cpp throws mutations at the same readers.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <chrono>

#include "doctor.hpp"
#include "grade.hpp"
#include "helpers.hpp"
#include "judge.hpp"
#include "process.hpp"
#include "selftest.hpp"
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
                                        {"verdict", "fail"},
                                        {"rules", json::array({{{"id", "correct"}, {"verdict", "pass"},
                                                                {"points", 7}, {"max_points", 7}},
                                                               {{"id", "speedup"}, {"verdict", "fail"},
                                                                {"points", 0}, {"max_points", 3}}})}}})}}
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

  TEST_CASE("compiler output: a caret line of 40,000 spaces and a 1 MB line, read in linear time, lines cut") {
    // One long line of exercise.cu (int a[] = {1,1,...,1 1};): nvcc quotes it with a caret line
    // under it; the regex that read these lines overflowed the stack from ~26,500 spaces.
    std::string numbers;
    for (int i = 0; i < 20000; ++i) numbers += "1,";
    const std::string log = "/g/staging/01-x/exercise.cu(1): error: expected a \"}\"\n"
                            "  int a[] = {" + numbers + "1 1};\n" + std::string(40000, ' ') + "^\n\n"
                            "/usr/include/other.h(3): error: " + std::string(1 << 20, 'x') + "\n"
                            "   " + std::string(1 << 20, ' ') + "error\n"
                            "1 error detected in the compilation of \"/g/staging/01-x/exercise.cu\".\n";
    const auto t0 = std::chrono::steady_clock::now();
    const std::string shown = compiler_errors(log, "/g/staging/", 25, "01-x/exercise.cu");
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 5);
    CHECK(shown.rfind("01-x/exercise.cu(1): error: expected a \"}\"\n  int a[] = {1,1,", 0) == 0);
    CHECK(!contains(shown, "xxxx"));
    for (const std::string& line : bounded_lines(shown)) CHECK(line.size() <= kMaxParsedLine + 6);
    CHECK(contains(shown, " [...]\n"));
    // Without the own-file filter too.
    CHECK(compiler_errors(std::string(40000, ' ') + "^\n", "", 25) == std::string(kMaxParsedLine, ' ') + " [...]\n");
  }

  TEST_CASE("compute-sanitizer logs: long lines cut, many findings folded in linear time") {
    std::string log = "========= " + std::string(40000, ' ') + "in x.cu:1\n" +
                      "========= Invalid __global__ read in " + std::string(1 << 20, 'a') + ".cu:7\n" +
                      "=========     at k+0x10 in /s/90-fake/exercise.cu:12\n";
    auto f = parse_sanitizer_log("memcheck", log);
    REQUIRE(f.size() == 1);
    CHECK(f[0].location == "90-fake/exercise.cu:12");  // the location past the cut is not read
    CHECK(f[0].what.size() <= kMaxParsedLine + 6);
    // 200,000 findings, all different: folded through an index (a scan per finding was quadratic).
    log.clear();
    for (int i = 0; i < 200000; ++i)
      log += "========= Invalid read " + std::to_string(i) + "\n=========     at k in /s/l/exercise.cu:" +
             std::to_string(i % 7) + "\n";
    const auto t0 = std::chrono::steady_clock::now();
    f = parse_sanitizer_log("memcheck", log);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 10);
    REQUIRE(f.size() == 10);
    CHECK(f[3].what == "Invalid read 3");
    CHECK(f[3].location == "l/exercise.cu:3");
  }

  TEST_CASE("expected.toml gets check.toml's limits: a FIFO, a 40,000-part key, a timeout of nan") {
    TempDir dir;
    const fs::path file = dir.path() / "expected.toml";
    REQUIRE(::mkfifo(file.c_str(), 0600) == 0);  // reading it waited for a writer for ever
    CHECK_THROWS_WITH_AS(load_expectations(file), (file.string() + ": is not a regular file").c_str(), ConfigError);
    fs::remove(file);
    std::string key;
    for (int i = 0; i < 40000; ++i) key += "a.";
    write_text(file, key + "a = 1\n");  // toml++ freed its 40,000 nested tables recursively
    CHECK_THROWS_WITH_AS(load_expectations(file),
                         (file.string() + ":1: more than 2000 dotted key parts and decimal points: not a "
                          "file the course writes (keys nested that deep would crash the reader)").c_str(),
                         ConfigError);
    for (const char* bad : {"nan", "inf", "-5", "0"}) {
      write_text(file, std::string("[m1]\nverdict = \"fail\"\ntimeout_s = ") + bad + "\n");
      CHECK_THROWS_WITH_AS(load_expectations(file),
                           (file.string() + ":3: \"timeout_s\" must be from 1 to 86400 seconds").c_str(), ConfigError);
    }
    write_text(file, "[m1]\nverdict = \"fail\"\ntimeout_s = 30\n");
    REQUIRE(load_expectations(file).size() == 1);
  }

  TEST_CASE("lab-doctor's report: hostile JSON is a one-line refusal, names are shown printable") {
    std::string error;
    CHECK(!read_doctor_report("{\"device\": {\"l2_bytes\": 1e400}}", error));  // out_of_range.406
    CHECK(error == "has a number beyond the range of a double (1e400, line 1, column 25)");
    CHECK(!read_doctor_report(std::string(200000, '[') + std::string(200000, ']'), error));  // bad_alloc
    CHECK(error == "is nested more than 64 levels deep (line 1, column 65): not a file the course writes");
    CHECK(!read_doctor_report("{\"device\": {\"debug_build\": \"yes\"}}", error));
    CHECK(error == "does not follow the result schema: \"device.debug_build\" is a string, expected a boolean");
    CHECK(!read_doctor_report("[1]", error));
    CHECK(error == "is not a JSON object");
    const auto info = read_doctor_report(
        "{\"device\": {\"name\": \"GPU\\u001b[2J\\u009b31m\", \"sms\": 132, \"x\": [1]},"
        " \"ceilings\": {\"copy_gbs\": 2000, \"\\u001b]0;title\\u0007\": 1}}", error);
    REQUIRE(info);
    CHECK((*info)["device"]["name"] == "GPU?31m");
    CHECK(!(*info)["device"].contains("x"));
    DoctorReport rep;
    rep.info = *info;
    rep.info["tools"] = json::object();
    const std::string text = doctor_text(rep);
    CHECK(contains(text, "GPU        GPU?31m (compute capability ?, 132 SMs"));
    CHECK(text.find('\x1b') == std::string::npos);
  }

  TEST_CASE("roofline --svg: names with U+FFFE, control characters and escape sequences stay valid XML") {
    TempDir dir;
    const fs::path file = dir.path() / "r.json";
    json doc = roofline_result();
    doc["variants"][0]["name"] = "k\xef\xbf\xbe\x1b[31m\x01<&>";
    doc["device"]["name"] = "GPU\xef\xbf\xbf\xc2\x9b";
    write_text(file, doc.dump());
    const Roofline r = load_roofline({file});
    REQUIRE(r.runs.size() == 1);
    const std::string svg = roofline_svg(r);
    CHECK(contains(svg, "k??&lt;&amp;&gt;"));  // U+FFFE and the \x01 as ?, the escape sequence gone
    for (const std::string_view bad : {"\xef\xbf\xbe", "\xef\xbf\xbf", "\xc2\x9b", "\x1b", "\x01"}) {
      CHECK(svg.find(bad) == std::string::npos);
      CHECK(roofline_table(r).find(bad) == std::string::npos);
    }
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
