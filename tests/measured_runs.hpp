// The committed runs under measurements/, for the tests that hold the texts to them
// (measured_tables.cpp: the generated tables; measured_text.cpp: the numbers of the prose).
//
// A folder of measurements/ holds a run when it has a README.md and result files named
// NN-topic-solution.json / NN-topic-starter.json (measurements/h100/ is one; a folder of other
// things, such as measurements/h200-harness-ab/, is not). The result files do not say when or
// from which commit they were made, so the README's table does: its rows `date` and `commit`
// for the whole run, and a row `lesson NN` (or `lessons NN, MM`) whose text says `commit HASH
// (DATE` for the lessons that come from another run.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/result_reader.hpp"

namespace measured {

namespace fs = std::filesystem;
using nlohmann::json;

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(p.string() + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

/// When and from which commit one lesson's files were made.
struct RunStamp {
  std::string date, commit;
};

/// One folder of measurements/ that holds a run.
struct GpuFolder {
  std::string name;  ///< the folder's name, which the texts' sources use: "h100"
  fs::path dir;
  RunStamp run;                               ///< the README's rows `date` and `commit`
  std::map<std::string, RunStamp> by_lesson;  ///< "03" -> the run its files come from, if another

  RunStamp stamp(const std::string& lesson) const {
    const auto it = by_lesson.find(lesson.substr(0, 2));
    return it == by_lesson.end() ? run : it->second;
  }
  fs::path result(const std::string& lesson, const std::string& build) const {
    return dir / (lesson + "-" + build + ".json");
  }
};

/// Reads the README table of a run folder (see the top of this file).
inline GpuFolder read_gpu_folder(const fs::path& dir) {
  GpuFolder folder{dir.filename().string(), dir, {}, {}};
  const std::regex date(R"(\d{4}-\d{2}-\d{2})"), commit(R"(\b[0-9a-f]{7,40}\b)"),
      lesson_run(R"(commit ([0-9a-f]{7,40}) \((\d{4}-\d{2}-\d{2}))"), lesson_number(R"(\b\d{2}\b)"),
      parenthesis(R"(\([^)]*\))");
  std::istringstream lines(read_text(dir / "README.md"));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0) continue;
    const auto bar = line.find(" | ", 2);
    if (bar == std::string::npos) continue;
    const std::string key = trim(line.substr(2, bar - 2)), value = line.substr(bar + 3);
    std::smatch m;
    if (key == "date" && std::regex_search(value, m, date)) folder.run.date = m[0];
    if (key == "commit" && std::regex_search(value, m, commit)) folder.run.commit = m[0];
    if (key.rfind("lesson", 0) == 0 && std::regex_search(value, m, lesson_run)) {
      const std::string lessons = std::regex_replace(key, parenthesis, "");
      for (std::sregex_iterator n(lessons.begin(), lessons.end(), lesson_number), end; n != end; ++n)
        folder.by_lesson[n->str()] = {m[2], m[1]};
    }
  }
  if (folder.run.date.empty() || folder.run.commit.empty())
    throw std::runtime_error((dir / "README.md").string() +
                             ": its table needs a row `| date | YYYY-MM-DD ... |` and a row `| commit | HASH ... |`");
  return folder;
}

/// Every folder of `measurements` that holds a run, by name (h100 before h200).
inline std::vector<GpuFolder> gpu_folders(const fs::path& measurements) {
  std::vector<GpuFolder> out;
  const std::regex result_name(R"(\d{2}-[a-z0-9-]+-(solution|starter)\.json)");
  for (const auto& entry : fs::directory_iterator(measurements)) {
    if (!entry.is_directory() || !fs::exists(entry.path() / "README.md")) continue;
    bool has_results = false;
    for (const auto& file : fs::directory_iterator(entry.path()))
      has_results = has_results || std::regex_match(file.path().filename().string(), result_name);
    if (has_results) out.push_back(read_gpu_folder(entry.path()));
  }
  std::sort(out.begin(), out.end(), [](const GpuFolder& a, const GpuFolder& b) { return a.name < b.name; });
  return out;
}

/// A result file, read by the checker's reader; a clear error when it is missing or not one.
inline json load_result(const fs::path& file) {
  if (!fs::exists(file)) throw std::runtime_error(file.string() + ": missing (every run folder holds every lesson's two files)");
  std::string error;
  auto doc = lab::read_result(read_text(file), error);
  if (!doc) throw std::runtime_error(file.string() + ": the result file " + error);
  return *doc;
}

}  // namespace measured
