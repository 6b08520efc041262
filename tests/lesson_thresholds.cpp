// lesson-thresholds: every threshold the course's texts state is the one check.toml holds.
//
// The convention (docs/writing-a-lesson.md, "Thresholds in the texts"): a text states a rule's
// threshold as a Markdown link to the rule, in Markdown files and in code comments alike:
//
//     your gemv must reach [at least **0.7x** the copy ceiling](check.toml#bandwidth)
//
// The target is the lesson's check.toml, relative to the text like any link, and the anchor is
// the rule's id; the link's text holds one number, the rule's min or max, as it is (0.7, 0.7x,
// 1.333x) or as a percentage (70%). "at least", ">=" or "≥" in it point at min; "at most", "<="
// or "≤" at max. The rules are read with the checker's own reader (load_lesson). It fails, with
// file and line, when
//   - a marked number is not its rule's threshold, or the link names no rule with one;
//   - a link's text holds no number, or more than one;
//   - a lesson's README or slide deck does not mark every rule that has a threshold;
//   - a line of a lesson's texts names a rule with a threshold (`id`, **id**, or the first cell
//     of a table row) and states a bound (>=, ≥, <=, ≤, at least, at most, within, needs,
//     followed by a number) outside a marker: mark it, or say it without the number;
//   - a rule's hint writes a bound as a number instead of {min} or {max}.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "rules.hpp"

namespace fs = std::filesystem;
using lab::LessonConfig;
using lab::Rule;

namespace {

struct Number {
  double value;  // a percentage divided by 100
  std::string text;
};

// The numbers of `text` that stand alone (not "float4" or "x86_64"), with a '%' after them, if
// any, applied. "{min}" and the like hold none.
std::vector<Number> numbers_in(const std::string& text) {
  std::vector<Number> out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!std::isdigit(c)) continue;
    const auto before = i == 0 ? ' ' : static_cast<unsigned char>(text[i - 1]);
    std::size_t end = i;
    while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) ||
                                 (text[end] == '.' && end + 1 < text.size() &&
                                  std::isdigit(static_cast<unsigned char>(text[end + 1])))))
      ++end;
    if (!(std::isalnum(before) || before == '_' || before == '.')) {
      std::size_t after = end;
      while (after < text.size() && (text[after] == ' ' || text[after] == '*')) ++after;
      const bool percent = after < text.size() && text[after] == '%';
      const double v = std::stod(text.substr(i, end - i));
      out.push_back({percent ? v / 100 : v, text.substr(i, end - i) + (percent ? "%" : "")});
    }
    i = end;
  }
  return out;
}

bool same(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(1.0, std::fabs(b)); }

bool has_threshold(const Rule& r) { return r.min || r.max; }

// A bound stated with a number: "at least 0.7", ">= **3x**", "within 10%", "needs 0.8".
const std::regex kBound(R"((>=|≥|<=|≤|\bat least\b|\bat most\b|\bwithin\b|\bneeds\b)\s*[*`~]*\s*\d)",
                        std::regex::icase);
// A marker: [text](path/check.toml#rule).
const std::regex kMarker(R"(\[([^\]]*)\]\(([^)\s]*check\.toml)#([A-Za-z0-9_-]+)\))");

// "" if the marker's text states `rule`'s threshold, else what is wrong.
std::string check_marker(const std::string& text, const Rule& rule) {
  if (!has_threshold(rule)) return "rule \"" + rule.id + "\" has no min or max";
  const std::vector<Number> found = numbers_in(text);
  if (found.size() != 1)
    return "\"" + text + "\" holds " + std::to_string(found.size()) +
           " numbers: a marker's text holds the threshold only";
  static const std::regex at_least(R"(>=|≥|\bat least\b)", std::regex::icase);
  static const std::regex at_most(R"(<=|≤|\bat most\b)", std::regex::icase);
  const bool min_meant = std::regex_search(text, at_least), max_meant = std::regex_search(text, at_most);
  const double v = found[0].value;
  if (rule.min && !max_meant && same(v, *rule.min)) return "";
  if (rule.max && !min_meant && same(v, *rule.max)) return "";
  std::ostringstream want;
  if (rule.min) want << "min = " << *rule.min;
  if (rule.min && rule.max) want << ", ";
  if (rule.max) want << "max = " << *rule.max;
  return "\"" + text + "\" says " + found[0].text + ", but rule \"" + rule.id + "\" has " +
         want.str() + (min_meant ? " (the text says at least: min)" : "") +
         (max_meant ? " (the text says at most: max)" : "");
}

// Does `line` name `id` the way the texts name rules: `id`, **id**, or a table row's first cell?
bool names_rule(const std::string& line, const std::string& id) {
  if (line.find("`" + id + "`") != std::string::npos) return true;
  if (line.find("**" + id + "**") != std::string::npos) return true;
  static const std::regex first_cell(R"(^\s*\|\s*[`*]*([A-Za-z0-9_-]+)[`*]*\s*\|)");
  std::smatch m;
  return std::regex_search(line, m, first_cell) && m[1] == id;
}

struct Course {
  fs::path root;
  std::map<fs::path, LessonConfig> lessons;  // by the path of their check.toml

  explicit Course(fs::path source) : root(std::move(source)) {
    for (const LessonConfig& l : lab::load_lessons(root))
      lessons[fs::weakly_canonical(l.dir / "check.toml")] = l;
  }

  const LessonConfig* lesson_named(const std::string& name) const {
    for (const auto& [_, l] : lessons)
      if (l.name == name) return &l;
    return nullptr;
  }
};

struct Marked {
  fs::path file;
  std::string lesson, rule;
};

// Checks one text; appends its problems ("file:line: ...") and the rules it marks. `own` is the
// lesson the text belongs to (nullptr for the course-wide texts): its rules' names are watched
// for bounds stated outside a marker.
void check_text(const Course& course, const fs::path& file, const LessonConfig* own,
                std::vector<std::string>& problems, std::vector<Marked>& marked) {
  std::ifstream in(file);
  const bool markdown = file.extension() == ".md";
  const std::string name = fs::relative(file, course.root).string();
  static const std::regex fence(R"(^\s*```)");
  std::string line;
  bool fenced = false;  // examples in fenced code blocks are not statements
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string at = name + ":" + std::to_string(n) + ": ";
    if (markdown && std::regex_search(line, fence)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    std::string rest;  // the line without its markers
    std::size_t from = 0;
    for (std::sregex_iterator it(line.begin(), line.end(), kMarker), end; it != end; ++it) {
      const std::smatch& m = *it;
      rest += line.substr(from, static_cast<std::size_t>(m.position(0)) - from);
      from = static_cast<std::size_t>(m.position(0) + m.length(0));
      const auto lesson = course.lessons.find(fs::weakly_canonical(file.parent_path() / m[2].str()));
      if (lesson == course.lessons.end()) {
        problems.push_back(at + m[2].str() + " is no lesson's check.toml");
        continue;
      }
      const auto& rules = lesson->second.rules;
      const auto rule = std::find_if(rules.begin(), rules.end(), [&](const Rule& r) { return r.id == m[3]; });
      if (rule == rules.end()) {
        problems.push_back(at + lesson->second.name + " has no rule \"" + m[3].str() + "\"");
        continue;
      }
      if (auto e = check_marker(m[1], *rule); !e.empty()) problems.push_back(at + e);
      marked.push_back({file, lesson->second.name, rule->id});
    }
    rest += line.substr(from);
    if (!own || !std::regex_search(rest, kBound)) continue;
    for (const Rule& r : own->rules)
      if (has_threshold(r) && names_rule(rest, r.id))
        problems.push_back(at + "states a bound next to rule \"" + r.id + "\" outside a marker: "
                           "write [the threshold](check.toml#" + r.id + ") or leave the number out");
  }
}

// Every problem of the course's texts.
std::vector<std::string> course_problems(const fs::path& root) {
  const Course course(root);
  // lessons/NN-topic/..., solutions/NN-topic/... and slides/NN-topic.md belong to lesson NN-topic.
  auto lesson_of = [&](const fs::path& text) {
    const fs::path folder = text.parent_path().filename();
    return course.lesson_named(folder == "slides" ? text.stem().string() : folder.string());
  };
  std::vector<fs::path> texts = {root / "README.md"};
  for (const char* folder : {"lessons", "solutions"})
    for (const auto& dir : fs::directory_iterator(root / folder))
      for (const char* name : {"README.md", "exercise.cu", "ANSWERS.md"})
        if (fs::exists(dir.path() / name)) texts.push_back(dir.path() / name);
  for (const char* folder : {"slides", "docs"})
    for (const auto& f : fs::directory_iterator(root / folder))
      if (f.path().extension() == ".md") texts.push_back(f.path());
  std::sort(texts.begin(), texts.end());

  std::vector<std::string> problems;
  std::vector<Marked> marked;
  for (const fs::path& t : texts) check_text(course, t, lesson_of(t), problems, marked);

  // The lesson's text and its slides state every threshold; hints leave the numbers to {min}/{max}.
  for (const auto& [_, lesson] : course.lessons)
    for (const Rule& r : lesson.rules) {
      if (!has_threshold(r)) continue;
      for (const fs::path& text : {lesson.dir / "README.md", root / "slides" / (lesson.name + ".md")}) {
        const bool stated = std::any_of(marked.begin(), marked.end(), [&](const Marked& m) {
          return m.file == text && m.lesson == lesson.name && m.rule == r.id;
        });
        if (fs::exists(text) && !stated)
          problems.push_back(fs::relative(text, root).string() + ": never states the threshold of rule \"" +
                             r.id + "\": mark it, [at least ...](check.toml#" + r.id + ")");
      }
      if (std::regex_search(r.hint, kBound))
        problems.push_back(r.origin + ": the hint of rule \"" + r.id +
                           "\" writes a bound as a number: use {min} or {max}");
    }
  return problems;
}

}  // namespace

TEST_CASE("a marker's number must be its rule's threshold") {
  Rule r;
  r.id = "bandwidth";
  r.min = 0.7;
  CHECK(check_marker("at least **0.7x** the copy ceiling", r) == "");
  CHECK(check_marker("≥ 70%", r) == "");
  CHECK(check_marker("0.7", r) == "");
  CHECK(check_marker("at least 0.75x the copy ceiling", r) ==
        "\"at least 0.75x the copy ceiling\" says 0.75, but rule \"bandwidth\" has min = 0.7 (the text says at least: min)");
  CHECK(check_marker("at most 0.7x", r) ==
        "\"at most 0.7x\" says 0.7, but rule \"bandwidth\" has min = 0.7 (the text says at most: max)");
  CHECK(check_marker("the copy ceiling", r) ==
        "\"the copy ceiling\" holds 0 numbers: a marker's text holds the threshold only");
  CHECK(check_marker("0.7x on 256 MB", r) ==
        "\"0.7x on 256 MB\" holds 2 numbers: a marker's text holds the threshold only");
  CHECK(check_marker("float4 loads at 0.7", r) == "");  // "float4" is a name, not a number
  Rule m;
  m.id = "accurate";
  m.max = 0.10;
  CHECK(check_marker("within **10%**", m) == "");
  CHECK(check_marker("`timing_error <= 0.10`", m) == "");
  CHECK(check_marker("within 5%", m) != "");
  Rule none;
  none.id = "correct";
  CHECK(check_marker("1", none) == "rule \"correct\" has no min or max");
}

TEST_CASE("a bound next to a rule's name outside a marker is found") {
  CHECK(names_rule("- **bandwidth** (3 points): at least 0.7x", "bandwidth"));
  CHECK(names_rule("passes `speedup` (3.60x >= 3)", "speedup"));
  CHECK(names_rule("| speedup | ≥ **3 ×** `row_per_thread` | 3 |", "speedup"));
  CHECK_FALSE(names_rule("a speedup of at least 3", "speedup"));  // a word, not the rule
  CHECK(std::regex_search(std::string("passes (3.60x >= 3)"), kBound));
  CHECK(std::regex_search(std::string("within **10%** of"), kBound));
  CHECK_FALSE(std::regex_search(std::string("needs {min}"), kBound));
  // A hint that writes its bound as a number.
  CHECK(std::regex_search(std::string("Graph per-kernel time must be <= 0.75x the stream's"), kBound));
}

TEST_CASE("every threshold in the course's texts is check.toml's") {
  const std::vector<std::string> problems = course_problems(LAB_SOURCE_DIR);
  for (const std::string& p : problems) FAIL_CHECK(p);
}
