// Output formats, atomic writes, the gradebook.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <functional>
#include <sstream>

#include "helpers.hpp"
#include "process.hpp"
#include "grade.hpp"
#include "report.hpp"

using namespace lab;
using namespace lab::test;

namespace {

// A report with one lesson of each kind of outcome, and text that needs escaping.
Report sample_report() {
  LessonConfig lesson = fake_lesson({}, standard_rules());
  Report r;
  r.name = "alice";
  r.started_at = r.finished_at = "2025-01-01T00:00:00Z";
  r.complete = true;

  LessonOutcome ok;
  ok.lesson = "90-fake";
  ok.title = "Fake";
  ok.build = "submission";
  ok.runs = 1;
  for (const auto& rule : lesson.rules) ok.rules.push_back(evaluate_rule(rule, sample_result(2.0)));
  finalize(ok, lesson);  // correct passes, speedup 2x fails, bandwidth passes
  r.lessons.push_back(ok);

  LessonConfig other = lesson;
  other.name = "91-other";
  LessonOutcome broken = lesson_outcome(other, "submission", Verdict::error, reason::compile,
                                        "your exercise.cu did not compile; the first errors are below");
  broken.output = "91-other/exercise.cu(3): error: expected a \";\" <here> & \x01 \xff\n";
  r.lessons.push_back(broken);

  LessonConfig third = lesson;
  third.name = "92-env";
  Findings disturbed;  // the checker saw the run disturbed
  disturbed.environment_ok = false;
  LessonOutcome e;
  e.lesson = "92-env";
  for (const auto& rule : third.rules) e.rules.push_back(evaluate_rule(rule, sample_result(2.0), disturbed));
  finalize(e, third);
  r.lessons.push_back(e);
  return r;
}

}  // namespace

TEST_SUITE("report") {

TEST_CASE("gradescope results.json has the documented fields and types") {
  const json g = gradescope_json(sample_report());
  CHECK(g["score"].is_number());
  // 7 from the first lesson, 4 (correctness) from the disturbed third, whose timed rules are all
  // `environment`; the compile error earns nothing
  CHECK(g["score"] == 11);
  CHECK(g["max_score"] == 30);
  CHECK(g["output"].is_string());
  CHECK(g["visibility"] == "visible");
  REQUIRE(g["tests"].is_array());
  REQUIRE(g["tests"].size() == 9);
  double sum = 0;
  for (const auto& t : g["tests"]) {
    CHECK(t["name"].is_string());
    CHECK(t["score"].is_number());
    CHECK(t["max_score"].is_number());
    CHECK(t["output"].is_string());
    CHECK(t["visibility"] == "visible");
    CHECK((t["status"] == "passed" || t["status"] == "failed"));
    sum += t["score"].get<double>();
  }
  CHECK(sum == g["score"].get<double>());
  CHECK(g["tests"][1]["name"] == "90-fake: speedup");
  CHECK(g["tests"][1]["status"] == "failed");
  CHECK(contains(g["tests"][1]["output"], "Only 2.00x faster, needs 3.00x."));
  // A compile error shows the compiler's first errors once, in the lesson's first test.
  CHECK(contains(g["tests"][3]["output"], "Compiler output (last lines):\n91-other/exercise.cu(3): error"));
  CHECK_FALSE(contains(g["tests"][4]["output"], "Compiler output"));
}

TEST_CASE("neutral result.json") {
  const json j = report_json(sample_report());
  CHECK(j["schema"] == "cuda-perf-lab/grade/1");
  CHECK(j["submission"] == "alice");
  CHECK(j["complete"] == true);
  CHECK(j["lessons"][0]["rules"][1]["verdict"] == "fail");
  CHECK(j["lessons"][0]["rules"][1]["value"] == doctest::Approx(2.0));
  CHECK(j["lessons"][1]["reason"] == "compile");
  CHECK(j["lessons"][2]["verdict"] == "environment");
  // Student text with invalid UTF-8 still dumps.
  CHECK_NOTHROW(dump_json(j));
}

TEST_CASE("the table: each lesson's check time, and ncu's share only where ncu ran") {
  Report r = sample_report();
  r.lessons[0].wall_s = 6.04;
  r.lessons[0].counters_s = 2.1;
  r.lessons[1].wall_s = 3.2;
  r.lessons[1].counters_s = 0.01;  // the counter phase's bookkeeping, no ncu run
  const std::string plain = table_text(r.lessons, false);
  CHECK(contains(plain, "90-fake (submission)  7/10  6.0 s (ncu 2.1 s)\n"));
  CHECK(contains(plain, "3.2 s\n"));
  CHECK_FALSE(contains(plain, "(ncu 0.0 s)"));
}

TEST_CASE("the table: plain without colour, escapes with it") {
  const Report r = sample_report();
  const std::string plain = table_text(r.lessons, false);
  CHECK_FALSE(contains(plain, "\x1b["));
  CHECK(contains(plain, "fail        90-fake (submission)  7/10"));
  CHECK(contains(plain, "    | 91-other/exercise.cu(3): error"));
  CHECK(contains(plain, "total 11/30"));
  CHECK(contains(table_text(r.lessons, true), "\x1b[31m"));

  setenv("NO_COLOR", "1", 1);
  CHECK_FALSE(use_colour(stdout));
  unsetenv("NO_COLOR");
}

TEST_CASE("atomic writes replace whole files and leave no temporary behind") {
  TempDir dir;
  const fs::path file = dir.path() / "sub" / "result.json";
  write_file_atomic(file, "first");
  write_file_atomic(file, "second, longer");
  CHECK(read_text(file) == "second, longer");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(file.parent_path())) {
    (void)e;
    ++entries;
  }
  CHECK(entries == 1);
  CHECK((fs::status(file).permissions() & fs::perms::others_read) != fs::perms::none);
  // A folder where the file should go: an error naming the path, and the folder untouched.
  fs::create_directories(dir.path() / "taken");
  CHECK_THROWS_WITH_AS(write_file_atomic(dir.path() / "taken", "x"), doctest::Contains("it is a folder"),
                       std::runtime_error);
  CHECK(fs::is_directory(dir.path() / "taken"));
}

TEST_CASE("outputs: a link, a FIFO or a folder where an output goes is refused and left as it was") {
  TempDir dir;
  const fs::path target = dir.path() / "precious.txt";
  write_text(target, "precious");
  const fs::path link = dir.path() / "grades.csv";
  fs::create_symlink(target, link);
  CHECK_THROWS_WITH_AS(write_file_atomic(link, "x"), doctest::Contains("it is a symbolic link"), std::runtime_error);
  CHECK(fs::is_symlink(fs::symlink_status(link)));  // still the link, not a new regular file
  CHECK(read_text(target) == "precious");
  const fs::path fifo = dir.path() / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CHECK_THROWS_WITH_AS(write_file_atomic(fifo, "x"), doctest::Contains("it is a FIFO"), std::runtime_error);
  CHECK(fs::is_fifo(fs::symlink_status(fifo)));
  CHECK(output_path_problem(dir.path() / "new.csv") == "");
  CHECK(output_path_problem(target) == "");
  CHECK(output_path_problem("/dev/null") == "is a character device");
  // A regular file is replaced whole, and keeps its permissions (a private gradebook stays so).
  fs::permissions(target, fs::perms::owner_read | fs::perms::owner_write);
  write_file_atomic(target, "new");
  CHECK(read_text(target) == "new");
  CHECK((fs::status(target).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
}

TEST_CASE("sha256_hex: the FIPS 180-4 examples") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("submissions: a link out of the folder is named and refused; one inside it is not") {
  TempDir dir;
  const fs::path other = dir.path() / "other", mallory = dir.path() / "mallory";
  write_text(other / "06-fusion" / "exercise.cu", "bob's work\n");
  write_text(mallory / "lessons" / "07-streams" / "exercise.cu", "mine\n");
  fs::create_directories(mallory);
  fs::create_directory_symlink("../other/06-fusion", mallory / "06-fusion");
  fs::create_directory_symlink("lessons/07-streams", mallory / "07-streams");
  fs::create_directory_symlink("../nowhere", mallory / "08-reductions");
  fs::create_directories(mallory / "09-graphs");
  fs::create_symlink("../../other/06-fusion/exercise.cu", mallory / "09-graphs" / "exercise.cu");
  CHECK(link_out_of_submission(mallory, mallory / "06-fusion" / "exercise.cu") ==
        "06-fusion is a link to ../other/06-fusion, outside the submission folder: nothing outside a "
        "submission is graded as its own");
  CHECK(contains(link_out_of_submission(mallory, mallory / "09-graphs" / "exercise.cu"),
                 "09-graphs/exercise.cu is a link to ../../other/06-fusion/exercise.cu, outside"));
  CHECK(contains(link_out_of_submission(mallory, mallory / "08-reductions" / "exercise.cu"), "leads nowhere"));
  CHECK(link_out_of_submission(mallory, mallory / "07-streams" / "exercise.cu") == "");
  CHECK(link_out_of_submission(mallory, mallory / "lessons" / "07-streams" / "exercise.cu") == "");
  // The whole repository's copy behind a link: refused at "lessons".
  const fs::path eve = dir.path() / "eve";
  fs::create_directories(eve);
  fs::create_directory_symlink(other, eve / "lessons");
  CHECK(contains(link_out_of_submission(eve, eve / "lessons" / "06-fusion" / "exercise.cu"),
                 "lessons is a link to " + other.string() + ", outside"));
}

TEST_CASE("output folders: two submissions with one slug, or a folder graded there before, are refused naming both") {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  CHECK(submission_slug(dir.path() / "a b") == "a_b");
  CHECK(submission_folder(dir.path() / "a b" / "") == "a b");
  const std::string both = "a b and " + (dir.path() / "y" / "a_b").string();
  CHECK_THROWS_WITH_AS(check_output_folders({dir.path() / "x" / "a b", dir.path() / "y" / "a_b"}, out),
                       doctest::Contains(both.c_str()), ConfigError);
  Report earlier = sample_report();
  earlier.name = "a_b";
  earlier.folder = "a b";
  write_report_files(out / "a_b", earlier);
  CHECK_NOTHROW(check_output_folders({dir.path() / "x" / "a b"}, out));  // the same folder again
  const std::string taken = "holds the grading of the submission folder \"a b\", and " + (dir.path() / "y" / "a_b").string();
  CHECK_THROWS_WITH_AS(check_output_folders({dir.path() / "y" / "a_b"}, out), doctest::Contains(taken.c_str()),
                       ConfigError);
}

TEST_CASE("merge: the name is the folder's, and every score is what the record's rules earned") {
  TempDir dir;
  const fs::path out = dir.path() / "out";
  Report bob = sample_report();
  bob.name = "bob";
  write_report_files(out / "bob", bob);
  // zed's folder holds a record that says it is bob's.
  write_report_files(out / "zed", bob);
  auto forged = [&](const std::string& name, const std::function<void(json&)>& change) {
    json doc = report_json(sample_report());
    doc["submission"] = name;
    change(doc);
    write_text(out / name / "result.json", dump_json(doc));
  };
  forged("carol", [](json& d) { d["score"] = 123456789.5; d["max_score"] = 124; });
  forged("dave", [](json& d) { d["score"] = 20; });  // within max_score 30, more than the rules earned
  forged("erin", [](json& d) {  // a failed rule given its points, and the sums made to match
    d["lessons"][0]["rules"][1]["points"] = 3;
    d["lessons"][0]["score"] = 10;
    d["score"] = 14;
  });
  forged("frank", [](json& d) { d["lessons"].push_back(d["lessons"][0]); d["score"] = 18; d["max_score"] = 40; });
  forged("gina", [](json& d) {  // a lesson that earned more than its maximum
    d["lessons"][0]["max_score"] = 5;
    d["max_score"] = 25;
  });
  const Gradebook book = merge_results({out});
  const std::string errors = book.doc["errors"].dump();
  INFO(errors);
  REQUIRE(book.errors.size() == 6);
  CHECK(book.errors[0] == (out / "carol" / "result.json").string() +
                              ": \"score\" is 123456789.5, more than its max_score 124");
  CHECK(book.errors[1] == (out / "dave" / "result.json").string() +
                              ": \"score\" is 20, but its lessons' scores add up to 11");
  CHECK(book.errors[2] == (out / "erin" / "result.json").string() +
                              ": \"lessons[0].rules[1].points\" is 3, but a rule that reads `fail` earns 0 of its 3");
  CHECK(book.errors[3] == (out / "frank" / "result.json").string() + ": \"lessons[3].lesson\" is \"90-fake\" again");
  CHECK(book.errors[4] == (out / "gina" / "result.json").string() +
                              ": \"lessons[0].score\" is 7.0, more than its max_score 5");
  CHECK(book.errors[5] == (out / "zed" / "result.json").string() +
                              ": the record is the grading of submission \"bob\", but it is in the folder \"zed\" "
                              "(grade that folder again)");
  CHECK(book.csv == "student,90-fake,91-other,92-env,total\nbob,7,0,4,11\n");
  CHECK(book.warnings.size() == 1);  // bob's disturbed lesson, and no "graded twice"
}

TEST_CASE("write_report_files writes all three outputs") {
  TempDir dir;
  write_report_files(dir.path() / "alice", sample_report());
  for (const char* f : {"result.json", "gradescope.json", "junit.xml"})
    CHECK(fs::exists(dir.path() / "alice" / f));
  CHECK(json::parse(read_text(dir.path() / "alice" / "gradescope.json"))["score"] == 11);
}

TEST_CASE("merge: a CSV with one column per lesson, and warnings for incomplete gradings") {
  TempDir dir;
  Report a = sample_report();
  Report b = sample_report();
  b.name = "bob, jr. \"the second\"";
  b.complete = false;
  b.lessons.pop_back();
  write_report_files(dir.path() / "out1" / "alice", a);
  write_report_files(dir.path() / "out2" / b.name, b);
  const Gradebook book = merge_results({dir.path() / "out1", dir.path() / "out2" / b.name});
  CHECK(book.csv ==
        "student,90-fake,91-other,92-env,total\n"
        "alice,7,0,4,11\n"
        "\"bob, jr. \"\"the second\"\"\",7,0,,7\n");
  // bob's grading is incomplete; alice's 92-env was disturbed: its timed rules earned nothing,
  // which the gradebook must not pass off as her score without saying so
  REQUIRE(book.warnings.size() == 2);
  CHECK(contains(book.warnings[0], "alice: not judged in 92-env (the GPU was disturbed)"));
  CHECK(contains(book.warnings[0], "--force"));
  CHECK(contains(book.warnings[1], "grading is incomplete"));
  CHECK(book.doc["max_total"] == 30);
  CHECK(book.doc["students"].size() == 2);

  CHECK_THROWS_WITH_AS(merge_results({dir.path()}), doctest::Contains("no result.json in"), ConfigError);
}

TEST_CASE("merge: a submission named like a spreadsheet formula is text in the CSV") {
  TempDir dir;
  const std::vector<std::string> names = {"=HYPERLINK(\"x\",\"y\")", "+1", "-2", "@SUM(A1)", "\tcmd"};
  for (const auto& name : names) {
    Report r = sample_report();
    r.name = name;  // the name of the folder it is in, as grade writes it
    write_report_files(dir.path() / "out" / name, r);
  }
  const Gradebook book = merge_results({dir.path() / "out"});
  std::istringstream lines(book.csv);
  std::string line;
  std::getline(lines, line);  // the header
  int rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    const std::string first = line.front() == '"' ? line.substr(1) : line;
    CHECK_MESSAGE(first.front() == '\'', line);  // the cell starts with an apostrophe
  }
  CHECK(rows == static_cast<int>(names.size()));
  CHECK(book.csv.find("\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\"") != std::string::npos);
  CHECK(book.doc["students"].size() == names.size());  // the JSON keeps the names as they are
}

TEST_CASE("printable() removes escapes, control bytes and invalid UTF-8, keeps valid UTF-8") {
  CHECK(printable("\x1b[1;31mred\x1b[0m\tok\r\n") == "red\tok\n");
  CHECK(printable("a\x01" "b\xff" "c") == "a?b?c");
  CHECK(printable("caf\xc3\xa9 \xe2\x9c\x93") == "caf\xc3\xa9 \xe2\x9c\x93");
  CHECK(printable("\xc0\xaf") == "??");  // overlong
}

}  // TEST_SUITE

TEST_SUITE("junit") {

TEST_CASE("the JUnit file validates against tests/junit.xsd (and a broken one does not)") {
  std::string xmllint = std::getenv("LAB_XMLLINT") ? std::getenv("LAB_XMLLINT") : "";
  if (xmllint.empty()) xmllint = find_on_path("xmllint").value_or(fs::path()).string();
  REQUIRE_MESSAGE(!xmllint.empty(), "xmllint is needed (Debian: libxml2-utils)");
  TempDir dir;
  const fs::path good = dir.path() / "junit.xml";
  write_file_atomic(good, junit_xml(sample_report()));
  const std::string xml = read_text(good);
  CHECK(contains(xml, "<testsuite name=\"90-fake\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"0\""));
  CHECK(contains(xml, "<error type=\"compile\""));
  CHECK(contains(xml, "&lt;here&gt; &amp; ?"));
  CHECK(contains(xml, "<skipped message="));

  auto validate = [&](const fs::path& file) {
    ProcessOptions p;
    p.argv = {xmllint, "--noout", "--schema", std::string(LAB_TEST_DATA_DIR) + "/junit.xsd", file.string()};
    p.stdout_path = p.stderr_path = dir.path() / "xmllint.txt";
    p.timeout_s = 20;
    return run_process(p);
  };
  const ProcessResult ok = validate(good);
  INFO(read_text(dir.path() / "xmllint.txt"));
  CHECK(ok.exited_ok());

  const fs::path bad = dir.path() / "bad.xml";
  write_text(bad, "<testsuites><testsuite name=\"x\"><testcase/></testsuite></testsuites>\n");
  CHECK_FALSE(validate(bad).exited_ok());
}

}  // TEST_SUITE

TEST_SUITE("report") {

TEST_CASE("compiler_errors: the first errors with their source line, the grading paths removed") {
  const std::string nvcc =
      "[1/2] Building CUDA object lessons/CMakeFiles/01-x-submission.dir/exercise.cu.o\n"
      "FAILED: lessons/CMakeFiles/01-x-submission.dir/exercise.cu.o\n"
      "/usr/local/cuda/bin/nvcc -Werror=all-warnings -c /g/staging/01-x/exercise.cu\n"
      "/g/staging/01-x/exercise.cu(7): error: expected a \";\"\n"
      "    return 1.0;\n"
      "    ^\n"
      "\n"
      "/g/staging/01-x/exercise.cu(8): warning #940-D: missing return statement\n"
      "  }\n"
      "  ^\n"
      "\n"
      "1 error detected in the compilation of \"/g/staging/01-x/exercise.cu\".\n"
      "ninja: build stopped: subcommand failed.\n";
  CHECK(compiler_errors(nvcc, "/g/staging/") ==
        "01-x/exercise.cu(7): error: expected a \";\"\n    return 1.0;\n    ^\n"
        "1 error detected in the compilation of \"01-x/exercise.cu\".\n");

  const std::string link = "FAILED: lessons/01-x/submission\n"
                           "/usr/bin/ld: exercise.cu.o: in function `main':\n"
                           "exercise.cu:(.text+0x0): multiple definition of `main'\n"
                           "collect2: error: ld returned 1 exit status\n";
  CHECK(compiler_errors(link, "") ==
        "exercise.cu:(.text+0x0): multiple definition of `main'\ncollect2: error: ld returned 1 exit status\n");

  // No line that looks like an error: the end of the log.
  CHECK(compiler_errors("a\nb\nc\n", "", 2) == "b\nc\n");
}

}  // TEST_SUITE
