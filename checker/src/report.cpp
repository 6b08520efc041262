#include "report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "files.hpp"

namespace lab {

double Report::score() const {
  double s = 0;
  for (const auto& l : lessons) s += l.score;
  return s;
}

double Report::max_score() const {
  double s = 0;
  for (const auto& l : lessons) s += l.max_score;
  return s;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string dump_json(const json& doc) {
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

std::string points_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

json rule_json(const RuleOutcome& r) {
  json j = {{"id", r.id}, {"kind", r.kind}, {"verdict", to_string(r.verdict)},
            {"points", r.points}, {"max_points", r.max_points}, {"message", r.message}};
  if (r.reading) {
    j["value"] = r.reading->value;
    j["low"] = r.reading->low;
    j["high"] = r.reading->high;
  }
  if (r.min) j["min"] = *r.min;
  if (r.max) j["max"] = *r.max;
  if (!r.hint.empty()) j["hint"] = r.hint;
  return j;
}

// Everything about a lesson a student should read when one of its rules is not a pass.
std::string lesson_feedback(const LessonOutcome& l) {
  std::string s;
  if (!l.message.empty()) s += l.message + "\n";
  for (const auto& f : l.findings)
    s += f.tool + ": " + f.what + (f.location.empty() ? "" : " at " + f.location) +
         (f.count > 1 ? " (x" + std::to_string(f.count) + ")" : "") + "\n";
  for (const auto& d : l.diagnostics) s += "diagnostic: " + d + "\n";
  if (!l.output.empty() && (l.verdict == Verdict::error || l.verdict == Verdict::environment))
    s += "\n" + std::string(l.reason == reason::compile ? "Compiler output" : "Program output") +
         " (last lines):\n" + l.output + "\n";
  return s;
}

std::string xml_escape(const std::string& text) {
  const std::string clean = printable(text);
  std::string out;
  out.reserve(clean.size());
  for (char c : clean) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

// A field of the gradebook CSV. A submission's name is the name of its folder, which a student
// may have chosen: one that starts like a formula ("=HYPERLINK(...)", "+", "-", "@", a tab) would
// run as one where the instructor opens the gradebook in a spreadsheet, so it gets a leading
// apostrophe (shown as text there; OWASP's advice for CSV injection).
std::string csv_field(const std::string& text) {
  const std::string s = (!text.empty() && std::string("=+-@\t\r").find(text[0]) != std::string::npos)
                            ? "'" + text
                            : text;
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

json outcome_json(const LessonOutcome& l) {
  json rules = json::array();
  for (const auto& r : l.rules) rules.push_back(rule_json(r));
  json j = {{"lesson", l.lesson}, {"title", l.title}, {"build", l.build},
            {"verdict", to_string(l.verdict)}, {"reason", l.reason}, {"message", l.message},
            {"score", l.score}, {"max_score", l.max_score}, {"runs", l.runs},
            {"wall_s", l.wall_s}, {"program_s", l.program_s}, {"build_s", l.build_s},
            {"pristine_s", l.pristine_s}, {"counters_s", l.counters_s},
            {"rules", rules}, {"diagnostics", l.diagnostics}, {"device", l.device},
            {"output", l.output}, {"corroboration", l.corroboration},
            {"results_checked", l.results_checked}, {"review", l.review}};
  if (l.sanitizer) {
    j["sanitizer"] = rule_json(*l.sanitizer);
    json findings = json::array();
    for (const auto& f : l.findings)
      findings.push_back({{"tool", f.tool}, {"what", f.what}, {"location", f.location}, {"count", f.count}});
    j["sanitizer"]["findings"] = findings;
  }
  return j;
}

json report_json(const Report& r) {
  json lessons = json::array();
  for (const auto& l : r.lessons) lessons.push_back(outcome_json(l));
  json doc = {{"schema", kGradeSchema}, {"checker_version", LAB_CHECKER_VERSION},
              {"submission", r.name}, {"started_at", r.started_at}, {"finished_at", r.finished_at},
              {"complete", r.complete}, {"score", r.score()}, {"max_score", r.max_score()},
              {"lessons", lessons}};
  if (!r.folder.empty()) doc["folder"] = r.folder;
  if (!r.folder_path.empty()) doc["folder_path"] = r.folder_path;
  if (!r.content_hash.empty()) doc["content_hash"] = r.content_hash;
  if (!r.containment.empty()) doc["containment"] = r.containment;
  if (!r.baselines.empty()) doc["baselines"] = r.baselines;
  if (!r.system_calls.empty()) doc["system_calls"] = r.system_calls;
  return doc;
}

json gradescope_json(const Report& r) {
  json tests = json::array();
  std::string summary;
  int lesson_number = 0;
  for (const auto& l : r.lessons) {
    ++lesson_number;
    summary += l.lesson + ": " + points_text(l.score) + "/" + points_text(l.max_score) + " (" +
               to_string(l.verdict) + ")\n";
    const std::string feedback = lesson_feedback(l);
    bool first = true;
    int rule_number = 0;
    auto add = [&](const RuleOutcome& rule) {
      std::string output = rule.message;
      if (rule.verdict != Verdict::pass && first && !feedback.empty() && feedback != rule.message + "\n")
        output += "\n\n" + feedback;
      if (rule.verdict != Verdict::pass) first = false;
      // A skipped counter rule is worth 0 of 0: nothing was lost, and its output says why.
      const bool passed = earns_points(rule.verdict) || rule.verdict == Verdict::skipped;
      tests.push_back({{"name", l.lesson + ": " + rule.id},
                       {"number", std::to_string(lesson_number) + "." + std::to_string(++rule_number)},
                       {"score", rule.points},
                       {"max_score", rule.max_points},
                       {"status", passed ? "passed" : "failed"},
                       {"output", printable(output)},
                       {"tags", json::array({l.lesson, rule.kind, to_string(rule.verdict)})},
                       {"visibility", "visible"}});
    };
    for (const auto& rule : l.rules) add(rule);
    if (l.sanitizer) add(*l.sanitizer);
  }
  return {{"score", r.score()},
          {"max_score", r.max_score()},
          {"output", summary},
          {"visibility", "visible"},
          {"stdout_visibility", "hidden"},
          {"tests", tests}};
}

std::string junit_xml(const Report& r) {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double total_time = 0;
  std::ostringstream suites;
  for (const auto& l : r.lessons) {
    int t = 0, f = 0, e = 0, s = 0;
    std::ostringstream cases;
    std::vector<RuleOutcome> all = l.rules;
    if (l.sanitizer) all.push_back(*l.sanitizer);
    for (const auto& rule : all) {
      ++t;
      cases << "    <testcase classname=\"" << xml_escape(l.lesson) << "\" name=\""
            << xml_escape(rule.id) << "\" time=\"0\">\n";
      const std::string msg = xml_escape(rule.message);
      switch (rule.verdict) {
        case Verdict::fail:
          ++f;
          cases << "      <failure type=\"fail\" message=\"" << msg << "\">" << msg << "</failure>\n";
          break;
        case Verdict::error:
          ++e;
          cases << "      <error type=\"" << xml_escape(l.reason.empty() ? "error" : l.reason)
                << "\" message=\"" << msg << "\">" << xml_escape(lesson_feedback(l)) << "</error>\n";
          break;
        case Verdict::environment:
        case Verdict::skipped:
          ++s;
          cases << "      <skipped message=\"" << msg << "\"/>\n";
          break;
        default:
          cases << "      <system-out>" << xml_escape(std::string(to_string(rule.verdict)) + ": " +
                                                      rule.message) << "</system-out>\n";
      }
      cases << "    </testcase>\n";
    }
    suites << "  <testsuite name=\"" << xml_escape(l.lesson) << "\" tests=\"" << t
           << "\" failures=\"" << f << "\" errors=\"" << e << "\" skipped=\"" << s
           << "\" time=\"" << fixed(l.wall_s, 3) << "\">\n"
           << cases.str();
    if (!l.output.empty()) suites << "    <system-out>" << xml_escape(l.output) << "</system-out>\n";
    suites << "  </testsuite>\n";
    tests += t;
    failures += f;
    errors += e;
    skipped += s;
    total_time += l.wall_s;
  }
  std::ostringstream doc;
  doc << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"lab-check " << xml_escape(r.name) << "\" tests=\"" << tests
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped
      << "\" time=\"" << fixed(total_time, 3) << "\">\n"
      << suites.str() << "</testsuites>\n";
  return doc.str();
}

void write_report_files(const fs::path& dir, const Report& r) {
  write_file_atomic(dir / "gradescope.json", dump_json(gradescope_json(r)));
  write_file_atomic(dir / "junit.xml", junit_xml(r));
  // Last: its "complete" flag is what resuming trusts.
  write_file_atomic(dir / "result.json", dump_json(report_json(r)));
}

bool use_colour(std::FILE* stream) {
  const char* no = std::getenv("NO_COLOR");
  if (no && *no) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string(term) == "dumb") return false;
  return ::isatty(::fileno(stream)) == 1;
}

std::string table_text(const std::vector<LessonOutcome>& lessons, bool colour) {
  auto paint = [&](Verdict v, const std::string& text) {
    if (!colour) return text;
    const char* code = v == Verdict::pass ? "32" : v == Verdict::fail ? "31"
                       : v == Verdict::error ? "1;31" : "33";
    return "\033[" + std::string(code) + "m" + text + "\033[0m";
  };
  auto pad = [](std::string s, std::size_t w) {
    if (s.size() < w) s.append(w - s.size(), ' ');
    return s;
  };
  std::size_t id_width = 9;
  for (const auto& l : lessons)
    for (const auto& r : l.rules) id_width = std::max(id_width, r.id.size());

  std::ostringstream out;
  double score = 0, max_score = 0;
  for (const auto& l : lessons) {
    score += l.score;
    max_score += l.max_score;
    out << paint(l.verdict, pad(to_string(l.verdict), 11)) << " " << l.lesson << " ("
        << l.build << ")  " << points_text(l.score) << "/" << points_text(l.max_score);
    if (l.runs > 1) out << "  [" << l.runs << " runs]";
    // Where a check's time goes (the main command's two minutes are mostly these lines).
    if (l.wall_s > 0) {
      out << "  " << fixed(l.wall_s, 1) << " s";
      if (l.counters_s >= 0.05) out << " (ncu " << fixed(l.counters_s, 1) << " s)";
    }
    out << "\n";
    const bool lesson_level = !l.reason.empty() && l.reason != reason::sanitizer;
    if (lesson_level) {
      out << "    " << l.message << "\n";
      if (l.verdict == Verdict::error && !l.output.empty()) {
        std::istringstream lines(l.output);
        std::string line;
        int shown = 0;
        while (std::getline(lines, line) && shown++ < 12) out << "    | " << line << "\n";
      }
    } else {
      std::vector<RuleOutcome> all = l.rules;
      if (l.sanitizer) all.push_back(*l.sanitizer);
      for (const auto& r : all)
        out << "    " << paint(r.verdict, pad(to_string(r.verdict), 11)) << " "
            << pad(r.id, id_width) << " " << pad(points_text(r.points) + "/" + points_text(r.max_points), 7)
            << " " << r.message << "\n";
      for (const auto& f : l.findings)
        out << "      " << f.tool << ": " << f.what << (f.location.empty() ? "" : " at " + f.location)
            << (f.count > 1 ? " (x" + std::to_string(f.count) + ")" : "") << "\n";
      if (!l.message.empty()) out << "    note: " << l.message << "\n";
    }
    for (const auto& d : l.diagnostics) out << "    diagnostic: " << d << "\n";
    if (const std::string times = corroboration_line(l.corroboration); !times.empty() && !lesson_level)
      out << "    " << times << "\n";
    if (const std::string results = results_checked_line(l.results_checked); !results.empty() && !lesson_level)
      out << "    " << results << "\n";
  }
  if (lessons.size() > 1)
    out << "total " << points_text(score) << "/" << points_text(max_score) << "\n";
  return out.str();
}

namespace {

inline constexpr std::uintmax_t kMaxGradeRecordBytes = 64u << 20;

// "" if obj[key] is as `merge` needs it (absent and optional, or of the type), else why not.
std::string record_field(const json& obj, const std::string& where, const char* key,
                         json::value_t type, bool required) {
  const std::string name = "\"" + where + key + "\"";
  const auto it = obj.find(key);
  if (it == obj.end()) return required ? name + " is missing" : "";
  switch (type) {
    case json::value_t::string:
      return it->is_string() ? "" : name + " is not a string";
    case json::value_t::boolean:
      return it->is_boolean() ? "" : name + " is not a boolean";
    case json::value_t::array:
      return it->is_array() ? "" : name + " is not an array";
    default: {
      if (!it->is_number()) return name + " is not a number";
      // Points: never negative, never absurd (the sum of a class must stay a number).
      const double v = it->get<double>();
      if (!(v >= 0 && v <= 1e9)) return name + " is " + it->dump() + ", outside 0..1e9 points";
      return "";
    }
  }
}

// A string of the record as JSON text, whatever bytes it holds.
std::string json_text(const json& text) { return text.dump(-1, ' ', true, json::error_handler_t::replace); }

// Whether two sums of points are the same (points like 0.1 do not add up exactly).
bool same_points(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }

// "" if every score of the record is what its rules earned, within its maximum; else why not.
// A rule earns all its max_points when its verdict earns points (pass, ambiguous), else none; a
// lesson's score is what its rules earned, its maximum theirs (a lesson without rules earns
// nothing); the record's are its lessons'. Nothing a record says about its total is believed.
std::string score_problem(const json& doc) {
  auto number = [](const json& j) { return j.dump(); };  // as the record wrote it: 123456789.5
  const json& lessons = doc["lessons"];
  double total = 0, total_max = 0;
  for (std::size_t i = 0; i < lessons.size(); ++i) {
    const std::string where = "lessons[" + std::to_string(i) + "].";
    const json& lesson = lessons[i];
    const json rules = lesson.value("rules", json::array());
    double earned = 0, most = 0;
    for (std::size_t j = 0; j < rules.size(); ++j) {
      const std::string at = where + "rules[" + std::to_string(j) + "].";
      const std::string said = rules[j]["verdict"].get<std::string>();
      const auto verdict = verdict_from_string(said);
      if (!verdict) return "\"" + at + "verdict\" is " + json_text(rules[j]["verdict"]) + ", not a verdict";
      const double points = rules[j]["points"].get<double>(), max_points = rules[j]["max_points"].get<double>();
      const double due = earns_points(*verdict) ? max_points : 0;
      if (!same_points(points, due))
        return "\"" + at + "points\" is " + number(rules[j]["points"]) + ", but a rule that reads `" + said +
               "` earns " + points_text(due) + " of its " + points_text(max_points);
      earned += points;
      most += max_points;
    }
    const double score = lesson["score"].get<double>(), max_score = lesson["max_score"].get<double>();
    if (score > max_score && !same_points(score, max_score))
      return "\"" + where + "score\" is " + number(lesson["score"]) + ", more than its max_score " +
             number(lesson["max_score"]);
    if (!same_points(score, earned))
      return "\"" + where + "score\" is " + number(lesson["score"]) + ", but its rules earned " + points_text(earned);
    if (!rules.empty() && !same_points(max_score, most))
      return "\"" + where + "max_score\" is " + number(lesson["max_score"]) + ", but its rules' max_points add up to " +
             points_text(most);
    total += score;
    total_max += max_score;
  }
  const double score = doc["score"].get<double>(), max_score = doc["max_score"].get<double>();
  if (score > max_score && !same_points(score, max_score))
    return "\"score\" is " + number(doc["score"]) + ", more than its max_score " + number(doc["max_score"]);
  if (!same_points(score, total))
    return "\"score\" is " + number(doc["score"]) + ", but its lessons' scores add up to " + points_text(total);
  if (!same_points(max_score, total_max))
    return "\"max_score\" is " + number(doc["max_score"]) + ", but its lessons' max_score add up to " +
           points_text(total_max);
  return "";
}

std::string grade_record_problem(const json& doc) {
  if (!doc.is_object() || !doc.contains("schema") || doc["schema"] != kGradeSchema)
    return std::string("not a lab-check grade record (schema ") + kGradeSchema + ")";
  using t = json::value_t;
  for (auto [key, type, required] :
       {std::tuple{"submission", t::string, false}, {"folder", t::string, false}, {"folder_path", t::string, false},
        {"content_hash", t::string, false},
        {"complete", t::boolean, false}, {"score", t::number_float, true}, {"max_score", t::number_float, true},
        {"lessons", t::array, true}})
    if (auto e = record_field(doc, "", key, type, required); !e.empty()) return e;
  const json& lessons = doc["lessons"];
  std::set<std::string> seen;
  for (std::size_t i = 0; i < lessons.size(); ++i) {
    const std::string where = "lessons[" + std::to_string(i) + "].";
    if (!lessons[i].is_object()) return "\"lessons[" + std::to_string(i) + "]\" is not an object";
    if (auto e = record_field(lessons[i], where, "lesson", t::string, true); !e.empty()) return e;
    if (lessons[i]["lesson"].get<std::string>().empty()) return "\"" + where + "lesson\" is empty";
    for (auto [key, type, required] :
         {std::tuple{"score", t::number_float, true}, {"max_score", t::number_float, true},
          {"verdict", t::string, false}, {"reason", t::string, false}, {"message", t::string, false},
          {"rules", t::array, false}})
      if (auto e = record_field(lessons[i], where, key, type, required); !e.empty()) return e;
    // One entry per lesson: a lesson counted twice would count its points twice.
    if (!seen.insert(lessons[i]["lesson"].get<std::string>()).second)
      return "\"" + where + "lesson\" is " + json_text(lessons[i]["lesson"]) + " again";
    const json rules = lessons[i].value("rules", json::array());
    for (std::size_t j = 0; j < rules.size(); ++j) {
      const std::string at = where + "rules[" + std::to_string(j) + "]";
      if (!rules[j].is_object()) return "\"" + at + "\" is not an object";
      for (auto [key, type] : {std::pair{"verdict", t::string}, {"points", t::number_float}, {"max_points", t::number_float}})
        if (auto e = record_field(rules[j], at + ".", key, type, true); !e.empty()) return e;
    }
  }
  return score_problem(doc);
}

}  // namespace

std::optional<json> read_grade_record(const fs::path& file, std::string& error) {
  auto doc = read_json_file(file, kMaxGradeRecordBytes, error);
  if (!doc) return std::nullopt;
  if (error = grade_record_problem(*doc); !error.empty()) return std::nullopt;
  return doc;
}

bool grade_record_complete(const json& record) {
  if (!record.value("complete", false)) return false;
  for (const auto& l : record["lessons"])
    if (l.value("reason", "") == reason::checker) return false;  // the checker's failure: again
  return true;
}

bool grade_record_complete(const fs::path& file) {
  std::string why;
  const auto doc = read_grade_record(file, why);
  return doc && grade_record_complete(*doc);
}

Gradebook merge_results(const std::vector<fs::path>& dirs) {
  std::vector<fs::path> files;
  // Any entry called result.json counts (a folder or a link loop by that name is reported as
  // an error below, not skipped in silence); no filesystem call here may throw.
  auto has_record = [](const fs::path& dir) {
    std::error_code ec;
    return fs::exists(fs::symlink_status(dir / "result.json", ec));
  };
  for (const auto& d : dirs) {
    if (has_record(d)) {
      files.push_back(d / "result.json");
      continue;
    }
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw ConfigError(d.string() + " is not a folder");
    std::vector<fs::path> found;
    fs::directory_iterator it(d, ec), end;
    if (ec) throw ConfigError("cannot list the folder " + d.string() + ": " + ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) throw ConfigError("cannot list the folder " + d.string() + ": " + ec.message());
      std::error_code dir_ec;
      if (it->is_directory(dir_ec) && has_record(it->path())) found.push_back(it->path() / "result.json");
    }
    if (ec) throw ConfigError("cannot list the folder " + d.string() + ": " + ec.message());
    std::sort(found.begin(), found.end());
    if (found.empty())
      throw ConfigError("no result.json in " + d.string() + " or its sub-folders: is it an --out folder of lab-check grade?");
    files.insert(files.end(), found.begin(), found.end());
  }

  Gradebook book;
  std::map<std::string, json> students;     // name -> record
  std::map<std::string, double> lesson_max;  // lesson -> max score
  for (const auto& f : files) {
    std::string why;
    const auto parsed = read_grade_record(f, why);
    if (!parsed) {
      // One damaged record must not hide the others: say which, merge the rest.
      book.errors.push_back(f.string() + ": " + why);
      continue;
    }
    const json& doc = *parsed;
    // The student is the folder the record is in ("graded/bob/result.json": bob), never what the
    // record says of itself: a record moved or copied into another student's folder is refused.
    const fs::path folder = fs::absolute(f).lexically_normal().parent_path();
    const std::string name = folder.filename().string();
    if (const std::string said = doc.value("submission", name); said != name) {
      book.errors.push_back(f.string() + ": the record is the grading of submission " + json_text(said) +
                            ", but it is in the folder " + json_text(name) + " (grade that folder again)");
      continue;
    }
    if (!doc.value("complete", false))
      book.warnings.push_back(name + ": grading is incomplete (" + f.string() + "); grade it again to finish");
    if (students.count(name)) book.warnings.push_back(name + ": graded twice; keeping " + f.string());
    json record = {{"name", name}, {"total", doc["score"].get<double>()},
                   {"max_score", doc["max_score"].get<double>()}, {"complete", doc.value("complete", false)},
                   {"lessons", json::object()}, {"source", f.string()}};
    std::string unjudged;  // lessons with a rule the checker could not judge (the machine's fault)
    for (const auto& l : doc.value("lessons", json::array())) {
      const std::string lesson = l.value("lesson", "");
      const bool whole = l.value("verdict", "") == "environment";
      const bool checker_failed = l.value("reason", "") == reason::checker;
      bool environment = whole || checker_failed;
      for (const auto& rule : l.value("rules", json::array()))
        environment = environment || rule.value("verdict", "") == "environment";
      const std::string why = checker_failed ? "the checker failed: " + l.value("message", std::string())
                              : whole        ? l.value("reason", std::string())
                                             : std::string();
      if (environment)
        unjudged += (unjudged.empty() ? "" : ", ") + lesson + " (" +
                    (why.empty() ? std::string("the GPU was disturbed") : why) + ")";
      record["lessons"][lesson] = {{"score", l["score"].get<double>()}, {"verdict", l.value("verdict", "")}};
      // What an instructor reviews first: the lesson's flagged constructs (review_flags).
      const json flags = l.value("review", json::array());
      if (flags.is_array() && !flags.empty()) {
        record["lessons"][lesson]["review"] = flags;
        record["review"].push_back(lesson);
      }
      lesson_max[lesson] = std::max(lesson_max[lesson], l["max_score"].get<double>());
    }
    if (!unjudged.empty())
      book.warnings.push_back(name + ": not judged in " + unjudged +
                              ": the machine's doing, not the student's, and those rules earned "
                              "nothing; grade again with --force on a quiet machine with a GPU");
    students[name] = record;
  }

  std::ostringstream csv;
  csv << "student";
  for (const auto& [lesson, _] : lesson_max) csv << "," << csv_field(lesson);
  // A "review" column where any submission has constructs an instructor should look at first.
  const bool any_review = std::any_of(students.begin(), students.end(),
                                      [](const auto& st) { return st.second.contains("review"); });
  csv << ",total" << (any_review ? ",review" : "") << "\n";
  json list = json::array();
  for (const auto& [name, rec] : students) {
    csv << csv_field(name);
    for (const auto& [lesson, _] : lesson_max) {
      csv << ",";
      if (rec["lessons"].contains(lesson)) csv << points_text(rec["lessons"][lesson]["score"].get<double>());
    }
    std::string review;  // the lessons to review first, "04-coalescing 11-one-time-costs"
    for (const auto& lesson : rec.value("review", json::array())) review += (review.empty() ? "" : " ") + lesson.get<std::string>();
    csv << "," << points_text(rec["total"].get<double>()) << (any_review ? "," + csv_field(review) : "") << "\n";
    list.push_back(rec);
  }
  json lessons = json::array();
  double max_total = 0;
  for (const auto& [lesson, m] : lesson_max) {
    lessons.push_back({{"lesson", lesson}, {"max_score", m}});
    max_total += m;
  }
  book.csv = csv.str();
  book.doc = {{"schema", kGradebookSchema}, {"created_at", utc_now()}, {"lessons", lessons},
              {"max_total", max_total}, {"students", list}, {"warnings", book.warnings},
              {"errors", book.errors}};
  return book;
}

}  // namespace lab
