// measured-tables: the measured tables in each lesson text and deck come from committed result
// files.
//
// Every folder of measurements/ that holds a run (measured_runs.hpp: README.md and the result
// files of every lesson's solution and starter; measurements/h100/ is one) is a column of the
// tables, headed with its folder, GPU, date and commit. Each lesson README holds one generated
// block between
//
//     <!-- measured: generated from measurements/ by CTest measured-tables -->
//     <!-- end measured -->
//
// This test builds the block again from the files, with the reader and the rates the checker
// uses (lab_result), and fails, printing the block it expects, when the text holds anything
// else. Each slide deck holds the same kind of block for the rules alone (kSlideBegin): every
// rule of check.toml judged by the checker's own evaluate_rule on the two files of each run. So
// the tables and the files cannot drift: a new run means new files, and LAB_WRITE_MEASURED=1
// ctest -R measured-tables rewrites the blocks (then review the diff).
#include <doctest/doctest.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "lab/format.hpp"
#include "lab/result_reader.hpp"
#include "evidence.hpp"
#include "measured_runs.hpp"
#include "rules.hpp"

namespace fs = std::filesystem;
using measured::GpuFolder;
using measured::read_text;
using nlohmann::json;

namespace {

// The blocks are found by these beginnings; the whole first line is what the generator writes.
const std::string kBeginStart = "<!-- measured: generated from measurements";
const std::string kSlideBeginStart = "<!-- measured rules: generated from measurements";
const std::string kBegin = kBeginStart + "/ by CTest measured-tables -->";
const std::string kSlideBegin = kSlideBeginStart + "/ by CTest measured-tables -->";
const std::string kEnd = "<!-- end measured -->";

// A time in the unit a reader expects at its size; the interval in the median's unit.
std::string time_text(double ms, double unit_of_ms) {
  if (unit_of_ms >= 1) return lab::text("%.3f ms", ms);
  const double us = ms * 1000;
  return unit_of_ms * 1000 >= 10 ? lab::text("%.1f us", us) : lab::text("%.2f us", us);
}

std::string number(double v, int digits) { return v > 0 ? lab::fixed(v, digits) : "-"; }

// One lesson's files in one run folder, read once.
struct CommittedRun {
  const GpuFolder* gpu;
  json solution, starter;
  const json& build(int i) const { return i == 0 ? solution : starter; }
  /// The column's head: the folder the texts' sources name, the GPU, the date and the commit.
  std::string heading(const std::string& lesson) const {
    const measured::RunStamp stamp = gpu->stamp(lesson);
    return "`" + gpu->name + "`: " + solution["device"]["name"].get<std::string>() + ", " + stamp.date + ", " +
           stamp.commit;
  }
};

// One lesson in every run folder, one column each.
struct LessonRuns {
  std::string lesson;
  lab::LessonConfig config;
  std::vector<CommittedRun> runs;
};

const char* const kBuilds[] = {"solution", "starter"};

LessonRuns lesson_runs(const fs::path& repo, const std::vector<GpuFolder>& gpus, const std::string& lesson) {
  LessonRuns out{lesson, lab::load_lesson(repo / "lessons" / lesson / "check.toml"), {}};
  for (const GpuFolder& gpu : gpus) {
    // A run of the course before the lesson existed (or on a GPU it needs more than) has neither
    // file; one file without the other is a broken run, which load_result names.
    if (!fs::exists(gpu.result(lesson, "solution")) && !fs::exists(gpu.result(lesson, "starter"))) continue;
    out.runs.push_back({&gpu, measured::load_result(gpu.result(lesson, "solution")),
                        measured::load_result(gpu.result(lesson, "starter"))});
  }
  return out;
}

// `short_heading`: the run folder's name alone (a slide has no room for GPU, date and commit).
std::string header_row(const LessonRuns& l, const std::string& first_columns, bool short_heading = false) {
  std::string head = "| " + first_columns + " |", rule = "|";
  for (int i = 0, n = std::count(first_columns.begin(), first_columns.end(), '|') + 1; i < n; ++i) rule += " --- |";
  for (const CommittedRun& run : l.runs) {
    head += " " + (short_heading ? "`" + run.gpu->name + "`" : run.heading(l.lesson)) + " |";
    rule += " --- |";
  }
  return head + "\n" + rule + "\n";
}

const json* find_variant(const json& doc, const std::string& name) {
  for (const json& v : doc["variants"])
    if (v.value("name", std::string()) == name) return &v;
  return nullptr;
}

// Every rule of the lesson judged on each run's two files by the checker (counter rules need
// ncu: skipped). A cell: the reading, its interval (not on a slide) and the verdict.
std::string rules_table(const LessonRuns& l, bool slide = false) {
  std::string out = header_row(l, "build | rule | bar", slide);
  for (int b = 0; b < 2; ++b)
    for (const lab::Rule& rule : l.config.rules) {
      std::string bar = "-";
      if (rule.min) bar = "min " + lab::format_value(rule.kind, *rule.min);
      if (rule.max) bar = "max " + lab::format_value(rule.kind, *rule.max);
      out += std::string("| ") + kBuilds[b] + " | `" + rule.id + "` | " + bar + " |";
      for (const CommittedRun& run : l.runs) {
        const json& doc = run.build(b);
        // A committed run was made by hand, not under the checker's watch: its own word on the
        // GPU's state stands in for the checker's.
        lab::Findings seen;
        seen.environment_ok = doc.value("environment_ok", true);
        const lab::RuleOutcome o = lab::evaluate_rule(rule, {lab::run_report(doc), seen});
        std::string cell;
        if (o.reading)
          cell = lab::format_value(rule.kind, o.reading->value) +
                 (slide ? std::string(" ")
                        : " (" + lab::format_value(rule.kind, o.reading->low) + " - " +
                              lab::format_value(rule.kind, o.reading->high) + ") ");
        out += " " + cell + lab::to_string(o.verdict) + " |";
      }
      out += "\n";
    }
  return out;
}

/// The generated block of one lesson's slide deck: the rules on every committed run.
std::string slide_block(const LessonRuns& l) {
  return kSlideBegin + "\n\n" + rules_table(l, true) +
         "\nThe checker's reading and verdict on each committed run (measurements/, its README names "
         "GPU, date and commit); counter rules need ncu: skipped.\n\n" + kEnd;
}

// One variant in one run: its median and interval, samples, rates.
std::string variant_cell(const json& doc, const json* v) {
  if (v == nullptr || !v->contains("time_ms")) return "-";
  const json& t = (*v)["time_ms"];
  const double median = t["median"];
  const lab::Rates r = lab::rates_of(doc, *v);
  std::string cell = time_text(median, median) + " (" + time_text(t.value("median_low", median), median) + " - " +
                     time_text(t.value("median_high", median), median) + ", " + std::to_string(t.value("n", 0)) +
                     " samples)";
  if (r.gbs > 0) cell += "; " + number(r.gbs, 1) + " GB/s";
  if (r.fraction_of_copy) cell += ", " + lab::fixed(*r.fraction_of_copy, 3) + " of copy";
  if (r.gflops > 0) cell += "; " + number(r.gflops, 1) + " GFLOP/s";
  return cell;
}

// The ceilings each run measured, a row per build and ceiling.
std::string ceilings_table(const LessonRuns& l) {
  struct Ceiling {
    const char* name;
    const char* key;
    int digits;
    const char* unit;
  };
  const Ceiling ceilings[] = {{"copy", "copy_gbs", 0, " GB/s"},
                              {"FP32", "fp32_gflops", 0, " GFLOP/s"},
                              {"BF16 tensor", "bf16_tensor_gflops", 0, " GFLOP/s"},
                              {"TF32 tensor", "tf32_tensor_gflops", 0, " GFLOP/s"},
                              {"pinned host link, to the GPU", "h2d_pinned_gbs", 1, " GB/s"},
                              {"pinned host link, from the GPU", "d2h_pinned_gbs", 1, " GB/s"}};
  std::string out = header_row(l, "build | ceiling");
  for (int b = 0; b < 2; ++b)
    for (const Ceiling& c : ceilings) {
      std::string row = std::string("| ") + kBuilds[b] + " | " + c.name + " |";
      bool any = false;
      for (const CommittedRun& run : l.runs) {
        const double value = run.build(b)["ceilings"].value(c.key, 0.0);
        any = any || value > 0;
        row += " " + (value > 0 ? number(value, c.digits) + c.unit : std::string("-")) + " |";
      }
      if (any) out += row + "\n";
    }
  return out;
}

/// The generated block of one lesson's README, from the two files of every committed run.
std::string measured_block(const LessonRuns& l) {
  const std::string& lesson = l.lesson;
  std::string out = kBegin + "\n";
  out += "Every variant of this lesson's solution and starter as the lesson programs wrote them, one column per "
         "committed run:";
  for (const CommittedRun& run : l.runs) {
    const std::string dir = "../../measurements/" + run.gpu->name + "/";
    out += " [`" + run.gpu->name + "`](" + dir + "README.md) ([solution](" + dir + lesson + "-solution.json), [starter](" +
           dir + lesson + "-starter.json))" + (&run == &l.runs.back() ? "." : ",");
  }
  out += " A cell holds the median GPU time per launch with its 95% interval from order statistics and the "
         "samples, then GB/s and GFLOP/s (the variant's bytes and FLOPs over its median) and \"of copy\" (GB/s "
         "over the copy ceiling of the same run).\n\n";
  out += ceilings_table(l) + "\n";
  out += header_row(l, "build | variant | role");
  for (int b = 0; b < 2; ++b) {
    // The variants in the order of the first run; a run without one shows "-".
    std::vector<std::string> names;
    for (const CommittedRun& run : l.runs)
      for (const json& v : run.build(b)["variants"]) {
        const std::string name = v["name"];
        if (v.contains("time_ms") && std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
    for (const std::string& name : names) {
      std::string role = "-";
      for (const CommittedRun& run : l.runs)
        if (const json* v = find_variant(run.build(b), name); v != nullptr && role == "-")
          role = v->value("role", std::string("-"));
      out += std::string("| ") + kBuilds[b] + " | " + name + " | " + role + " |";
      for (const CommittedRun& run : l.runs) out += " " + variant_cell(run.build(b), find_variant(run.build(b), name)) + " |";
      out += "\n";
    }
  }
  std::string metrics;
  for (int b = 0; b < 2; ++b) {
    std::vector<std::string> names;
    for (const CommittedRun& run : l.runs)
      for (const auto& [name, m] : run.build(b)["metrics"].items())
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    for (const std::string& name : names) {
      metrics += std::string("| ") + kBuilds[b] + " | `" + name + "` |";
      for (const CommittedRun& run : l.runs) {
        const json& all = run.build(b)["metrics"];
        if (!all.contains(name)) {
          metrics += " - |";
          continue;
        }
        const json& m = all[name];
        metrics += " " + lab::text("%.4g", m["value"].get<double>()) + " (" + lab::text("%.4g", m["low"].get<double>()) +
                   " - " + lab::text("%.4g", m["high"].get<double>()) + ") |";
      }
      metrics += "\n";
    }
  }
  if (!metrics.empty()) out += "\nThe lesson's metrics, value (low - high):\n\n" + header_row(l, "build | metric") + metrics;
  out += "\nEvery rule of check.toml, judged by the checker on these files (counter rules need ncu and are "
         "skipped here), reading (95% interval) and verdict:\n\n" + rules_table(l);
  return out + kEnd;
}

// Checks (or, with LAB_WRITE_MEASURED set, rewrites) the block that starts with `begin_start`
// in `file`.
void check_block(const fs::path& file, const std::string& begin_start, const std::string& expected) {
  std::string text = read_text(file);
  const auto begin = text.find(begin_start);
  const auto end = begin == std::string::npos ? begin : text.find(kEnd, begin);
  if (end == std::string::npos) {
    CHECK_MESSAGE(false, file.string() << " has no generated block (" << begin_start << "/ ... " << kEnd
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
    CHECK_MESSAGE(false, file.string() << ": the measured block is not what measurements/ holds; "
                                       << "LAB_WRITE_MEASURED=1 ctest -R measured-tables rewrites it. "
                                       << "Expected:\n" << expected);
  }
}

const fs::path kRepo = LAB_SOURCE_DIR;
const fs::path kFixtureRun = kRepo / "tests" / "fixtures" / "measured" / "x200";

}  // namespace

TEST_CASE("every lesson text's and deck's measured tables are the committed result files'") {
  const std::vector<GpuFolder> gpus = measured::gpu_folders(kRepo / "measurements");
  REQUIRE_MESSAGE(!gpus.empty(), "measurements/ holds no run (a folder with README.md and result files)");
  int lessons = 0;
  for (const auto& entry : fs::directory_iterator(kRepo / "lessons")) {
    const std::string lesson = entry.path().filename().string();
    if (!entry.is_directory() || lesson.front() == '_') continue;
    ++lessons;
    const LessonRuns runs = lesson_runs(kRepo, gpus, lesson);
    check_block(entry.path() / "README.md", kBeginStart, measured_block(runs));
    check_block(kRepo / "slides" / (lesson + ".md"), kSlideBeginStart, slide_block(runs));
  }
  CHECK(lessons >= 12);
}

TEST_CASE("a run folder is one whose README and result files are there; its stamps come from the README") {
  const std::vector<GpuFolder> gpus = measured::gpu_folders(kRepo / "measurements");
  REQUIRE(!gpus.empty());
  CHECK(gpus.front().name == "h100");
  for (const GpuFolder& gpu : gpus) CHECK(gpu.name.find("-ab") == std::string::npos);  // A/B comparisons are no run
  const GpuFolder& h100 = gpus.front();
  CHECK(h100.run.date == "2026-11-27");
  CHECK(h100.run.commit == "f203a1f");
  CHECK(h100.stamp("01-timing-pitfalls").commit == "f203a1f");
  CHECK(h100.stamp("02-cuda-events").commit == "2cd6fd8");
  CHECK(h100.stamp("03-pinned-memory").commit == "2f9b75a");  // its own row overrides "(and 03 until ...)"
  CHECK(h100.stamp("05-shared-memory").commit == "c76ca72");
  CHECK(h100.stamp("07-streams").commit == "6bf2814");
  const GpuFolder fixture = measured::read_gpu_folder(kFixtureRun);
  CHECK(fixture.name == "x200");
  CHECK(fixture.stamp("07-streams").date == "2027-01-02");
  CHECK(fixture.stamp("07-streams").commit == "abcdef1");
}

TEST_CASE("a table is made only of what the files hold, one column per run") {
  const std::vector<GpuFolder> gpus = {measured::read_gpu_folder(kRepo / "measurements" / "h100"),
                                       measured::read_gpu_folder(kFixtureRun)};
  const LessonRuns runs = lesson_runs(kRepo, gpus, "07-streams");
  const std::string block = measured_block(runs);
  CHECK(block.rfind(kBegin, 0) == 0);
  // Each column headed with its folder, GPU, date and commit.
  CHECK(block.find("| build | variant | role | `h100`: NVIDIA H100 80GB HBM3, 2026-11-27, 6bf2814 | "
                   "`x200`: NVIDIA X200 (test fixture), 2027-01-02, abcdef1 |") != std::string::npos);
  CHECK(block.find("| solution | exercise | exercise | ") != std::string::npos);
  CHECK(block.find("| starter | exercise | exercise | ") != std::string::npos);
  CHECK(block.find("`overlap_efficiency`") != std::string::npos);
  // The fixture's times are the H100's halved: both columns hold their own file's median.
  const json& h100 = runs.runs[0].solution;
  const double median = (*find_variant(h100, "serial"))["time_ms"]["median"];
  CHECK(block.find("| solution | serial | baseline | " + time_text(median, median) + " (") != std::string::npos);
  CHECK(block.find(" | " + time_text(median / 2, median / 2) + " (") != std::string::npos);
  // The rules as the checker judges them, a row per build and rule, in the README and the slide.
  CHECK(block.find("| solution | `overlap` |") != std::string::npos);
  const std::string slide = slide_block(runs);
  CHECK(slide.rfind(kSlideBegin, 0) == 0);
  CHECK(slide.find("| starter | `correct` | - | pass | pass |") != std::string::npos);
  // With one run, one column.
  const std::string one = measured_block(lesson_runs(kRepo, {gpus[0]}, "07-streams"));
  CHECK(one.find("x200") == std::string::npos);
}

TEST_CASE("a run folder without a lesson's file, or without its date, is a clear error") {
  const fs::path dir = fs::temp_directory_path() / "lab-measured-tables-test" / "z100";
  fs::remove_all(dir.parent_path());
  fs::create_directories(dir);
  std::ofstream(dir / "README.md") << "| | |\n| --- | --- |\n| GPU | none |\n| commit | 1234567 |\n";
  std::ofstream(dir / "07-streams-solution.json") << read_text(kFixtureRun / "07-streams-solution.json");
  CHECK_THROWS_WITH(measured::gpu_folders(dir.parent_path()),
                    doctest::Contains("needs a row `| date | YYYY-MM-DD ... |`"));
  std::ofstream(dir / "README.md", std::ios::app) << "| date | 2027-01-01 |\n";
  const std::vector<GpuFolder> gpus = measured::gpu_folders(dir.parent_path());
  REQUIRE(gpus.size() == 1);
  CHECK_THROWS_WITH(lesson_runs(kRepo, gpus, "07-streams"), doctest::Contains("07-streams-starter.json: missing"));
  fs::remove_all(dir.parent_path());
}
