// measured-tables: the measured table in each lesson text comes from committed result files.
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
// else. So the table and the files cannot drift: a new run means new files, and
// LAB_WRITE_MEASURED=1 ctest -R measured-tables rewrites the blocks (then review the diff).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lab/format.hpp"
#include "lab/result_reader.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kBegin = "<!-- measured: generated from measurements/h100 by CTest measured-tables -->";
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

}  // namespace

/// The generated block of one lesson, from its two committed result files.
std::string measured_block(const fs::path& repo, const std::string& lesson) {
  const fs::path dir = repo / "measurements" / "h100";
  std::string out = kBegin + "\n";
  const json solution = load(dir / (lesson + "-solution.json"));
  const json starter = load(dir / (lesson + "-starter.json"));
  out += "Every variant of this lesson's solution and starter as the lesson programs wrote them in "
         "[`" + lesson + "-solution.json`](../../measurements/h100/" + lesson + "-solution.json) and [`" +
         lesson + "-starter.json`](../../measurements/h100/" + lesson + "-starter.json), on " +
         solution["device"]["name"].get<std::string>() + " (the run, its date, commit and command: " +
         "[measurements/h100](../../measurements/h100/README.md)). The median is of GPU time per " +
         "launch, its 95% interval from order statistics; GB/s and GFLOP/s are the variant's bytes " +
         "and FLOPs over its median; \"of copy\" is GB/s over the copy ceiling of the same run.\n\n";
  for (const auto* doc : {&solution, &starter}) {
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
  for (const auto* doc : {&solution, &starter}) {
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
  for (const auto* doc : {&solution, &starter})
    for (const auto& [name, m] : (*doc)["metrics"].items()) {
      if (!metrics) out += "\n| build | metric | value | interval |\n| --- | --- | --- | --- |\n";
      metrics = true;
      out += "| " + (*doc)["build"].get<std::string>() + " | `" + name + "` | " +
             lab::text("%.4g", m["value"].get<double>()) + " | " + lab::text("%.4g", m["low"].get<double>()) +
             " - " + lab::text("%.4g", m["high"].get<double>()) + " |\n";
    }
  return out + kEnd;
}

TEST_CASE("every lesson text's measured table is the committed result files'") {
  const fs::path repo = LAB_SOURCE_DIR;
  const bool write = std::getenv("LAB_WRITE_MEASURED") != nullptr;
  REQUIRE(fs::exists(repo / "measurements" / "h100" / "README.md"));
  int lessons = 0;
  for (const auto& entry : fs::directory_iterator(repo / "lessons")) {
    const std::string lesson = entry.path().filename().string();
    if (!entry.is_directory() || lesson.front() == '_') continue;
    ++lessons;
    const fs::path readme = entry.path() / "README.md";
    std::string text = read_text(readme);
    const auto begin = text.find(kBegin), end = text.find(kEnd);
    if (begin == std::string::npos || end == std::string::npos || end < begin) {
      CHECK_MESSAGE(false, readme.string() << " has no generated block (" << kBegin << " ... " << kEnd
                                           << "): put one under \"What we measured\"");
      continue;
    }
    const std::string expected = measured_block(repo, lesson);
    const std::string found = text.substr(begin, end + kEnd.size() - begin);
    if (found == expected) continue;
    if (write) {
      text.replace(begin, found.size(), expected);
      std::ofstream(readme, std::ios::binary) << text;
      MESSAGE("rewrote the measured table of " << readme.string());
    } else {
      CHECK_MESSAGE(false, readme.string() << ": the measured table is not what measurements/h100 holds; "
                                           << "LAB_WRITE_MEASURED=1 ctest -R measured-tables rewrites it. "
                                           << "Expected:\n" << expected);
    }
  }
  CHECK(lessons >= 12);
}

TEST_CASE("a table is made only of what the files hold") {
  const std::string block = measured_block(LAB_SOURCE_DIR, "07-streams");
  CHECK(block.rfind(kBegin, 0) == 0);
  CHECK(block.find("| solution | exercise | exercise |") != std::string::npos);
  CHECK(block.find("| starter | exercise | exercise |") != std::string::npos);
  CHECK(block.find("`overlap_efficiency`") != std::string::npos);
  CHECK(block.find("NVIDIA H100") != std::string::npos);
}
