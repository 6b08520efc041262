// measured-tables: the measured tables in each lesson text and deck come from committed result
// files.
//
// measurements/h100/ holds the result files (and the programs' printed tables) of one named run
// of every lesson's solution and starter; its README.md names the GPU, the date, the commit and
// the command. Each lesson README holds one generated block between
//
//     <!-- measured: generated from measurements/h100 by CTest measured-tables -->
//     <!-- end measured -->
//
// This test builds the block again from the files, with the reader and the rates the checker
// uses (lab_result), and fails, printing the block it expects, when the text holds anything
// else. Each slide deck holds the same kind of block for the rules alone (kSlideBegin): every
// rule of check.toml judged by the checker's own evaluate_rule on the two files. So the tables
// and the files cannot drift: a new run means new files, and LAB_WRITE_MEASURED=1 ctest -R
// measured-tables rewrites the blocks (then review the diff).
#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "lab/format.hpp"
#include "lab/result_reader.hpp"
#include "evidence.hpp"
#include "rules.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kBegin = "<!-- measured: generated from measurements/h100 by CTest measured-tables -->";
const std::string kSlideBegin = "<!-- measured rules: generated from measurements/h100 by CTest measured-tables -->";
const std::string kEnd = "<!-- end measured -->";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A time in the unit a reader expects at its size; the interval in the median's unit.
std::string time_text(double ms, double unit_of_ms) {
  if (unit_of_ms >= 1) return lab::text("%.3f ms", ms);
  const double us = ms * 1000;
  return unit_of_ms * 1000 >= 10 ? lab::text("%.1f us", us) : lab::text("%.2f us", us);
}

std::string number(double v, int digits) { return v > 0 ? lab::fixed(v, digits) : "-"; }

json load(const fs::path& file) {
  std::string error;
  auto doc = lab::read_result(read_text(file), error);
  if (!doc) FAIL(file.string() << ": the result file " << error);
  return *doc;
}

// One lesson's committed run: its two result files and its rules, read once.
struct CommittedRun {
  std::string lesson;
  json solution, starter;
  lab::LessonConfig config;
  std::array<const json*, 2> builds() const { return {&solution, &starter}; }
};

CommittedRun committed_run(const fs::path& repo, const std::string& lesson) {
  const fs::path dir = repo / "measurements" / "h100";
  return {lesson, load(dir / (lesson + "-solution.json")), load(dir / (lesson + "-starter.json")),
          lab::load_lesson(repo / "lessons" / lesson / "check.toml")};
}

// Every rule of the lesson judged on both files by the checker (counter rules need ncu: skipped).
std::string rules_table(const CommittedRun& run) {
  std::string out = "| build | rule | reading | 95% interval | bar | verdict |\n| --- | --- | --- | --- | --- | --- |\n";
  for (const json* doc : run.builds())
    for (const lab::Rule& rule : run.config.rules) {
      // A committed run was made by hand, not under the checker's watch: its own word on the
      // GPU's state stands in for the checker's.
      lab::Findings seen;
      seen.environment_ok = doc->value("environment_ok", true);
      const lab::RuleOutcome o = lab::evaluate_rule(rule, {lab::run_report(*doc), seen});
      std::string reading = "-", interval = "-", bar = "-";
      if (o.reading) {
        reading = lab::format_value(rule.kind, o.reading->value);
        interval = lab::format_value(rule.kind, o.reading->low) + " - " + lab::format_value(rule.kind, o.reading->high);
      }
      if (rule.min) bar = "min " + lab::format_value(rule.kind, *rule.min);
      if (rule.max) bar = "max " + lab::format_value(rule.kind, *rule.max);
      out += "| " + (*doc)["build"].get<std::string>() + " | `" + rule.id + "` | " + reading + " | " +
             interval + " | " + bar + " | " + lab::to_string(o.verdict) + " |\n";
    }
  return out;
}

/// The generated block of one lesson's slide deck: the rules on the committed run.
std::string slide_block(const CommittedRun& run) {
  return kSlideBegin + "\n\n" + rules_table(run) +
         "\nThe checker's verdicts on the committed run of " + run.solution["device"]["name"].get<std::string>() +
         " (measurements/h100); counter rules need ncu and are skipped here.\n\n" + kEnd;
}

/// The generated block of one lesson's README, from its two committed result files.
std::string measured_block(const CommittedRun& run) {
  const std::string& lesson = run.lesson;
  std::string out = kBegin + "\n";
  out += "Every variant of this lesson's solution and starter as the lesson programs wrote them in "
         "[`" + lesson + "-solution.json`](../../measurements/h100/" + lesson + "-solution.json) and [`" +
         lesson + "-starter.json`](../../measurements/h100/" + lesson + "-starter.json), on " +
         run.solution["device"]["name"].get<std::string>() + " (the run, its date, commit and command: " +
         "[measurements/h100](../../measurements/h100/README.md)). The median is of GPU time per " +
         "launch, its 95% interval from order statistics; GB/s and GFLOP/s are the variant's bytes " +
         "and FLOPs over its median; \"of copy\" is GB/s over the copy ceiling of the same run.\n\n";
  for (const json* doc : run.builds()) {
    const json& c = (*doc)["ceilings"];
    std::string line = "Ceilings of the " + (*doc)["build"].get<std::string>() + "'s run: copy " +
                       number(c.value("copy_gbs", 0.0), 0) + " GB/s";
    if (c.value("fp32_gflops", 0.0) > 0) line += ", FP32 " + number(c["fp32_gflops"], 0) + " GFLOP/s";
    if (c.value("bf16_tensor_gflops", 0.0) > 0)
      line += ", BF16 tensor " + number(c["bf16_tensor_gflops"], 0) + " GFLOP/s";
    if (c.value("h2d_pinned_gbs", 0.0) > 0)
      line += ", pinned host link " + number(c["h2d_pinned_gbs"], 1) + " / " +
              number(c.value("d2h_pinned_gbs", 0.0), 1) + " GB/s (to / from the GPU)";
    out += line + ".\n";
  }
  out += "\n| build | variant | role | median | 95% interval | samples | GB/s | of copy | GFLOP/s |\n"
         "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const json* doc : run.builds()) {
    for (const json& v : (*doc)["variants"]) {
      if (!v.contains("time_ms")) continue;
      const json& t = v["time_ms"];
      const double median = t["median"];
      const lab::Rates r = lab::rates_of(*doc, v);
      out += "| " + (*doc)["build"].get<std::string>() + " | " + v["name"].get<std::string>() + " | " +
             v.value("role", std::string("-")) + " | " + time_text(median, median) + " | " +
             time_text(t.value("median_low", median), median) + " - " +
             time_text(t.value("median_high", median), median) + " | " +
             std::to_string(t.value("n", 0)) + " | " + number(r.gbs, 1) + " | " +
             (r.fraction_of_copy ? lab::fixed(*r.fraction_of_copy, 3) : std::string("-")) + " | " +
             number(r.gflops, 1) + " |\n";
    }
  }
  bool metrics = false;
  for (const json* doc : run.builds())
    for (const auto& [name, m] : (*doc)["metrics"].items()) {
      if (!metrics) out += "\n| build | metric | value | interval |\n| --- | --- | --- | --- |\n";
      metrics = true;
      out += "| " + (*doc)["build"].get<std::string>() + " | `" + name + "` | " +
             lab::text("%.4g", m["value"].get<double>()) + " | " + lab::text("%.4g", m["low"].get<double>()) +
             " - " + lab::text("%.4g", m["high"].get<double>()) + " |\n";
    }
  out += "\nEvery rule of check.toml, judged by the checker on these two files (counter rules need "
         "ncu and are skipped here):\n\n" + rules_table(run);
  return out + kEnd;
}

// Checks (or, with LAB_WRITE_MEASURED set, rewrites) the block that starts with `begin` in `file`.
void check_block(const fs::path& file, const std::string& begin_marker, const std::string& expected) {
  std::string text = read_text(file);
  const auto begin = text.find(begin_marker);
  const auto end = begin == std::string::npos ? begin : text.find(kEnd, begin);
  if (end == std::string::npos) {
    CHECK_MESSAGE(false, file.string() << " has no generated block (" << begin_marker << " ... " << kEnd
                                       << "): see docs/writing-a-lesson.md, \"Measured numbers in the texts\"");
    return;
  }
  const std::string found = text.substr(begin, end + kEnd.size() - begin);
  if (found == expected) return;
  if (std::getenv("LAB_WRITE_MEASURED") != nullptr) {
    text.replace(begin, found.size(), expected);
    std::ofstream(file, std::ios::binary) << text;
    MESSAGE("rewrote the measured block of " << file.string());
  } else {
    CHECK_MESSAGE(false, file.string() << ": the measured block is not what measurements/h100 holds; "
                                       << "LAB_WRITE_MEASURED=1 ctest -R measured-tables rewrites it. "
                                       << "Expected:\n" << expected);
  }
}

}  // namespace

TEST_CASE("every lesson text's and deck's measured tables are the committed result files'") {
  const fs::path repo = LAB_SOURCE_DIR;
  REQUIRE(fs::exists(repo / "measurements" / "h100" / "README.md"));
  int lessons = 0;
  for (const auto& entry : fs::directory_iterator(repo / "lessons")) {
    const std::string lesson = entry.path().filename().string();
    if (!entry.is_directory() || lesson.front() == '_') continue;
    ++lessons;
    const CommittedRun run = committed_run(repo, lesson);
    check_block(entry.path() / "README.md", kBegin, measured_block(run));
    check_block(repo / "slides" / (lesson + ".md"), kSlideBegin, slide_block(run));
  }
  CHECK(lessons >= 12);
}

TEST_CASE("a table is made only of what the files hold") {
  const CommittedRun run = committed_run(LAB_SOURCE_DIR, "07-streams");
  const std::string block = measured_block(run);
  CHECK(block.rfind(kBegin, 0) == 0);
  CHECK(block.find("| solution | exercise | exercise |") != std::string::npos);
  CHECK(block.find("| starter | exercise | exercise |") != std::string::npos);
  CHECK(block.find("`overlap_efficiency`") != std::string::npos);
  CHECK(block.find("NVIDIA H100") != std::string::npos);
  // The rules as the checker judges them, a row per build and rule, in the README and the slide.
  CHECK(block.find("| solution | `overlap` |") != std::string::npos);
  const std::string slide = slide_block(run);
  CHECK(slide.rfind(kSlideBegin, 0) == 0);
  CHECK(slide.find("| starter | `correct` |") != std::string::npos);
}
