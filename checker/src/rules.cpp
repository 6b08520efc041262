#include "rules.hpp"

#include "intervals.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

// Debian's toml++ 3.3 ships toml.h; releases from 3.4 on also have toml.hpp.
#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>
#endif

#include "counters.hpp"
#include "files.hpp"
#include "runs.hpp"
#include "toml_file.hpp"

namespace lab {

// ---------------------------------------------------------------- names

const char* to_string(Verdict v) {
  switch (v) {
    case Verdict::pass: return "pass";
    case Verdict::fail: return "fail";
    case Verdict::ambiguous: return "ambiguous";
    case Verdict::environment: return "environment";
    case Verdict::error: return "error";
    case Verdict::skipped: return "skipped";
  }
  return "?";
}

const char* to_string(RuleKind k) {
  switch (k) {
    case RuleKind::correct: return "correct";
    case RuleKind::fraction_of_copy: return "fraction_of_copy";
    case RuleKind::fraction_of_peak: return "fraction_of_peak";
    case RuleKind::speedup: return "speedup";
    case RuleKind::metric: return "metric";
    case RuleKind::counter: return "counter";
  }
  return "?";
}

std::optional<Verdict> verdict_from_string(const std::string& s) {
  for (Verdict v : {Verdict::pass, Verdict::fail, Verdict::ambiguous, Verdict::environment,
                    Verdict::error, Verdict::skipped})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

int severity(Verdict v) {
  switch (v) {
    case Verdict::pass:
    case Verdict::skipped: return 0;
    case Verdict::ambiguous: return 1;
    case Verdict::environment: return 2;
    case Verdict::fail: return 3;
    case Verdict::error: return 4;
  }
  return 4;
}

Verdict worse(Verdict a, Verdict b) {
  if (severity(a) == severity(b)) return a == Verdict::pass ? a : b;  // pass outranks skipped
  return severity(a) > severity(b) ? a : b;
}

double LessonConfig::max_points() const {
  double sum = 0;
  for (const auto& r : rules) sum += r.points;
  return sum;
}

// ---------------------------------------------------------------- TOML reading

namespace {

std::string where(const fs::path& file, const toml::node& node) {
  return file.string() + ":" + std::to_string(node.source().begin.line);
}

[[noreturn]] void config_error(const fs::path& file, const toml::node& node,
                               const std::string& what) {
  throw ConfigError(where(file, node) + ": " + what);
}

std::string get_string(const fs::path& file, const toml::node& node, const std::string& key) {
  if (!node.is_string()) config_error(file, node, "\"" + key + "\" must be a string");
  return node.as_string()->get();
}

double get_number(const fs::path& file, const toml::node& node, const std::string& key) {
  double v = 0;
  if (node.is_integer()) v = static_cast<double>(node.as_integer()->get());
  else if (node.is_floating_point()) v = node.as_floating_point()->get();
  else config_error(file, node, "\"" + key + "\" must be a number");
  // TOML has nan and inf; no threshold, points or time limit means anything with them.
  if (!std::isfinite(v))
    config_error(file, node, "\"" + key + "\" must be a finite number, not " +
                                 (std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf"));
  return v;
}

// A number within [low, high], else "file:line: "key" must be between low and high unit".
double get_number_in(const fs::path& file, const toml::node& node, const std::string& key,
                     double low, double high, const char* unit) {
  const double v = get_number(file, node, key);
  if (v < low || v > high) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "\"%s\" must be between %g and %g%s (not %g)", key.c_str(), low,
                  high, unit, v);
    config_error(file, node, buf);
  }
  return v;
}

// Limits of what check.toml and overrides files may say: a lesson run of a second to a day,
// points a person could add up.
constexpr double kMinTimeout = 1, kMaxTimeout = 86400, kMaxPoints = 10000;
constexpr std::uintmax_t kMaxTomlBytes = 1u << 20;

std::optional<RuleKind> kind_from_string(const std::string& s) {
  for (RuleKind k : {RuleKind::correct, RuleKind::fraction_of_copy, RuleKind::fraction_of_peak,
                     RuleKind::speedup, RuleKind::metric, RuleKind::counter})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

// toml++ makes a table per part of a dotted key (a.b.c = 1, [a.b.c]) and frees them
// recursively: a key of 40,000 parts overflows the stack. Each part costs a dot outside strings
// and comments, so a bound on those bounds the depth, far above what a real file has (a few
// dozen). Returns the line of the dot past the bound, or 0.
constexpr std::size_t kMaxTomlDots = 2000;
std::size_t line_past_dot_bound(const std::string& t) {
  std::size_t line = 1, dots = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (c == '\n') {
      ++line;
    } else if (c == '#') {
      while (i + 1 < t.size() && t[i + 1] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      const bool basic = c == '"';
      const bool multi = t.compare(i, 3, std::string(3, c)) == 0;
      i += multi ? 3 : 1;
      for (; i < t.size(); ++i) {
        if (basic && t[i] == '\\') {
          ++i;  // the escaped character, whatever it is
        } else if (multi ? t.compare(i, 3, std::string(3, c)) == 0 : t[i] == c) {
          if (multi) i += 2;
          break;
        } else if (t[i] == '\n') {
          ++line;
          if (!multi) break;  // an unterminated string: the parser will say so
        }
      }
    } else if (c == '.' && ++dots > kMaxTomlDots) {
      return line;
    }
  }
  return 0;
}

}  // namespace

toml::table parse_toml(const fs::path& file) {
  std::string why;
  const auto text = read_file_limited(file, kMaxTomlBytes, why);
  if (!text) throw ConfigError(file.string() + ": " + why);
  if (const std::size_t line = line_past_dot_bound(*text))
    throw ConfigError(file.string() + ":" + std::to_string(line) + ": more than " +
                      std::to_string(kMaxTomlDots) + " dotted key parts and decimal points: "
                      "not a file the course writes (keys nested that deep would crash the reader)");
  try {
    return toml::parse(*text, file.string());
  } catch (const toml::parse_error& e) {
    throw ConfigError(file.string() + ":" + std::to_string(e.source().begin.line) +
                      ": not valid TOML: " + std::string(e.description()));
  }
}

namespace {

// Sets one overridable rule field; returns false if `key` is not one.
bool set_rule_field(const fs::path& file, Rule& rule, const std::string& key,
                    const toml::node& node) {
  if (key == "min") rule.min = get_number(file, node, key);
  else if (key == "max") rule.max = get_number(file, node, key);
  else if (key == "points") rule.points = get_number_in(file, node, key, 0, kMaxPoints, "");
  else if (key == "hint") rule.hint = get_string(file, node, key);
  else if (key == "max_work") rule.max_work = get_number_in(file, node, key, 1, 1000, " times the needed work");
  else return false;
  return true;
}

void check_rule(const fs::path& file, const toml::node& node, const Rule& r) {
  const std::string name = "rule \"" + r.id + "\"";
  const bool perf = r.kind != RuleKind::correct;
  if (r.kind != RuleKind::metric && r.variant.empty())
    config_error(file, node, name + " needs \"variant\" (the variant it judges)");
  if (r.kind == RuleKind::speedup && r.over.empty())
    config_error(file, node, name + " is a speedup and needs \"over\" (the variant it is compared with)");
  if (r.kind == RuleKind::metric && r.metric.empty())
    config_error(file, node, name + " is a metric rule and needs \"metric\" (a key of the result's metrics)");
  if (r.kind == RuleKind::counter && !find_counter_measure(r.counter)) {
    std::string known;
    for (const auto& m : counter_measures()) known += (known.empty() ? "" : ", ") + m.name;
    config_error(file, node, name + " is a counter rule and needs \"counter\", one of: " + known +
                 (r.counter.empty() ? "" : " (not \"" + r.counter + "\")"));
  }
  if (r.kind != RuleKind::counter && !r.counter.empty())
    config_error(file, node, name + " has \"counter\" but is not a counter rule");
  if (r.kind != RuleKind::counter && r.max_work)
    config_error(file, node, name + " has \"max_work\" but is not a counter rule");
  if (perf && !r.min && !r.max)
    config_error(file, node, name + " needs a threshold: \"min\", \"max\" or both");
  if (!perf && (r.min || r.max))
    config_error(file, node, name + " is a correctness rule: it takes no \"min\"/\"max\"");
  if (r.min && r.max && *r.min > *r.max)
    config_error(file, node, name + " has min > max: nothing could pass");
}

// The variants a lesson's args name with --skip-variant (repeated, comma-separated, or "=").
std::vector<std::string> skipped_by(const std::vector<std::string>& args) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string list;
    if (args[i] == "--skip-variant" && i + 1 < args.size()) list = args[++i];
    else if (args[i].rfind("--skip-variant=", 0) == 0) list = args[i].substr(15);
    else continue;
    std::stringstream parts(list);
    for (std::string name; std::getline(parts, name, ',');) names.push_back(name);
  }
  return names;
}

}  // namespace

LessonConfig load_lesson(const fs::path& check_toml) {
  const toml::table doc = parse_toml(check_toml);
  LessonConfig lesson;
  lesson.dir = check_toml.parent_path();
  const std::string folder = lesson.dir.filename().string();
  std::set<std::string> ids;

  for (auto&& [k, node] : doc) {
    const std::string key(k.str());
    if (key == "lesson") lesson.name = get_string(check_toml, node, key);
    else if (key == "title") lesson.title = get_string(check_toml, node, key);
    else if (key == "timeout_s")
      lesson.timeout_s = get_number_in(check_toml, node, key, kMinTimeout, kMaxTimeout, " seconds");
    else if (key == "args") {
      if (!node.is_array()) config_error(check_toml, node, "\"args\" must be an array of strings");
      for (auto&& a : *node.as_array()) lesson.args.push_back(get_string(check_toml, a, "args"));
    } else if (key == "allowed_calls") {
      if (!node.is_array())
        config_error(check_toml, node, "\"allowed_calls\" must be an array of strings");
      for (auto&& a : *node.as_array())
        lesson.allowed_calls.push_back(get_string(check_toml, a, "allowed_calls"));
    } else if (key == "forbidden_calls") {
      if (!node.is_array())
        config_error(check_toml, node, "\"forbidden_calls\" must be an array of strings");
      for (auto&& a : *node.as_array())
        lesson.forbidden_calls.push_back(get_string(check_toml, a, "forbidden_calls"));
    } else if (key == "replay") {
      if (!node.is_boolean()) config_error(check_toml, node, "\"replay\" must be true or false");
      lesson.replay = *node.value<bool>();
    } else if (key == "syscall_filter") {
      if (!node.is_boolean()) config_error(check_toml, node, "\"syscall_filter\" must be true or false");
      lesson.syscall_filter = *node.value<bool>();
    } else if (key == "compute_capability_major") {
      lesson.compute_capability_major =
          static_cast<int>(get_number_in(check_toml, node, key, 1, 99, ""));
    } else if (key == "rule") {
      if (!node.is_array_of_tables())
        config_error(check_toml, node, "\"rule\" must be written as [[rule]] tables");
      for (auto&& item : *node.as_array()) {
        const toml::table& t = *item.as_table();
        Rule r;
        r.origin = where(check_toml, item);
        bool have_kind = false;
        for (auto&& [rk, rn] : t) {
          const std::string rkey(rk.str());
          if (rkey == "id") r.id = get_string(check_toml, rn, rkey);
          else if (rkey == "kind") {
            const std::string s = get_string(check_toml, rn, rkey);
            auto kind = kind_from_string(s);
            if (!kind)
              config_error(check_toml, rn, "unknown rule kind \"" + s + "\" (kinds: correct, "
                           "fraction_of_copy, fraction_of_peak, speedup, metric, counter)");
            r.kind = *kind;
            have_kind = true;
          } else if (rkey == "variant") r.variant = get_string(check_toml, rn, rkey);
          else if (rkey == "over") r.over = get_string(check_toml, rn, rkey);
          else if (rkey == "metric") r.metric = get_string(check_toml, rn, rkey);
          else if (rkey == "counter") r.counter = get_string(check_toml, rn, rkey);
          else if (!set_rule_field(check_toml, r, rkey, rn))
            config_error(check_toml, rn, "unknown key \"" + rkey + "\" in a rule (keys: id, "
                         "kind, variant, over, metric, counter, min, max, max_work, points, hint)");
        }
        if (r.id.empty()) config_error(check_toml, item, "a [[rule]] has no \"id\"");
        if (!have_kind) config_error(check_toml, item, "rule \"" + r.id + "\" has no \"kind\"");
        if (!ids.insert(r.id).second)
          config_error(check_toml, item, "two rules share the id \"" + r.id + "\"");
        if (r.id == "sanitizer")
          config_error(check_toml, item, "\"sanitizer\" is reserved for the --sanitize line");
        check_rule(check_toml, item, r);
        lesson.rules.push_back(r);
      }
    } else {
      config_error(check_toml, node, "unknown key \"" + key + "\" (keys: lesson, title, "
                   "timeout_s, args, allowed_calls, forbidden_calls, replay, syscall_filter, "
                   "compute_capability_major, [[rule]])");
    }
  }
  if (lesson.name.empty())
    throw ConfigError(check_toml.string() + ": \"lesson\" is missing (it should be \"" + folder + "\")");
  if (lesson.name != folder)
    throw ConfigError(check_toml.string() + ": lesson = \"" + lesson.name +
                      "\" but the folder is \"" + folder + "\"");
  if (lesson.rules.empty()) throw ConfigError(check_toml.string() + ": no [[rule]] tables");
  if (lesson.title.empty()) lesson.title = lesson.name;
  // Every run passes the args, the course's pristine one too: a variant they leave out that a
  // rule reads (its variant, or the baseline it divides by) would be missing from every grade.
  for (const std::string& name : skipped_by(lesson.args))
    for (const Rule& r : lesson.rules)
      if (r.variant == name || r.over == name)
        throw ConfigError(check_toml.string() + ": args leave out \"" + name + "\" (--skip-variant), "
                          "which rule \"" + r.id + "\" reads");
  return lesson;
}

std::vector<LessonConfig> load_lessons(const fs::path& source_dir) {
  const fs::path root = source_dir / "lessons";
  if (!fs::is_directory(root))
    throw ConfigError(root.string() + " does not exist: is --source-dir the course repository?");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory() && fs::exists(entry.path() / "check.toml"))
      files.push_back(entry.path() / "check.toml");
  std::sort(files.begin(), files.end());
  std::vector<LessonConfig> lessons;
  for (const auto& f : files) lessons.push_back(load_lesson(f));
  return lessons;
}

std::vector<LessonConfig> select_lessons(const std::vector<LessonConfig>& all,
                                   const std::vector<std::string>& names) {
  if (names.empty()) {  // every lesson, but no template (lessons/_template): never graded
    auto out = all;
    out.erase(std::remove_if(out.begin(), out.end(),
                             [](const auto& l) { return l.name.rfind('_', 0) == 0; }),
              out.end());
    return out;
  }
  std::vector<LessonConfig> out;
  for (const auto& name : names) {
    auto it = std::find_if(all.begin(), all.end(), [&](const LessonConfig& l) {
      return l.name == name || l.name.rfind(name + "-", 0) == 0;
    });
    if (it == all.end()) {
      std::string known;
      for (const auto& l : all) known += (known.empty() ? "" : ", ") + l.name;
      throw ConfigError("no lesson \"" + name + "\" (lessons: " + (known.empty() ? "none" : known) + ")");
    }
    out.push_back(*it);
  }
  return out;
}

void apply_overrides(std::vector<LessonConfig>& lessons, const fs::path& file) {
  const toml::table doc = parse_toml(file);
  for (auto&& [lk, lnode] : doc) {
    const std::string lname(lk.str());
    auto lesson = std::find_if(lessons.begin(), lessons.end(),
                               [&](const LessonConfig& l) { return l.name == lname; });
    if (lesson == lessons.end()) config_error(file, lnode, "no lesson \"" + lname + "\"");
    if (!lnode.is_table())
      config_error(file, lnode, "\"" + lname + "\" must be a table: [\"" + lname + "\".rule-id]");
    for (auto&& [rk, rnode] : *lnode.as_table()) {
      const std::string rname(rk.str());
      if (rname == "timeout_s") {
        lesson->timeout_s = get_number_in(file, rnode, rname, kMinTimeout, kMaxTimeout, " seconds");
        continue;
      }
      auto rule = std::find_if(lesson->rules.begin(), lesson->rules.end(),
                               [&](const Rule& r) { return r.id == rname; });
      if (rule == lesson->rules.end()) {
        std::string ids;
        for (const auto& r : lesson->rules) ids += (ids.empty() ? "" : ", ") + r.id;
        // A rule key (min = 0.65) written under the lesson's own table: say where it goes.
        if (!rnode.is_table() && (rname == "min" || rname == "max" || rname == "points" || rname == "hint"))
          config_error(file, rnode, "\"" + rname + "\" is a rule key: put it under the rule's table, "
                       "[\"" + lname + "\".<rule>] (rules: " + ids + "); only timeout_s goes under [\"" +
                       lname + "\"]");
        if (!rnode.is_table())
          config_error(file, rnode, "\"" + rname + "\" cannot be set for a lesson (only timeout_s; "
                       "rule keys go under [\"" + lname + "\".<rule>], rules: " + ids + ")");
        config_error(file, rnode, "lesson \"" + lname + "\" has no rule \"" + rname + "\" (rules: " + ids + ")");
      }
      if (!rnode.is_table())
        config_error(file, rnode, "[\"" + lname + "\"." + rname + "] must be a table");
      for (auto&& [fk, fnode] : *rnode.as_table()) {
        const std::string fname(fk.str());
        if (fname == "timeout_s")
          config_error(file, fnode, "\"timeout_s\" is a lesson key: put it under [\"" + lname + "\"]");
        if (!set_rule_field(file, *rule, fname, fnode))
          config_error(file, fnode, "\"" + fname + "\" cannot be overridden (min, max, points, hint)");
      }
      check_rule(file, rnode, *rule);
      rule->origin += " (overridden at " + where(file, rnode) + ")";
    }
  }
}

// ---------------------------------------------------------------- evaluation

std::string format_value(RuleKind kind, double value, const std::string& unit) {
  char buf[64];
  switch (kind) {
    case RuleKind::fraction_of_copy:
    case RuleKind::fraction_of_peak:
      std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * value);
      break;
    case RuleKind::speedup:  // under 1x three digits: 0.113x of cuBLAS, not 0.11x
      std::snprintf(buf, sizeof buf, std::fabs(value) < 1 ? "%.3gx" : "%.2fx", value);
      break;
    default:
      std::snprintf(buf, sizeof buf, "%.3g", value);
      return unit.empty() ? std::string(buf) : std::string(buf) + " " + unit;
  }
  return buf;
}

std::string fill_hint(const Rule& rule, double value, const std::string& unit) {
  std::string out = rule.hint;
  auto replace = [&](const std::string& token, const std::string& text) {
    for (std::size_t at = out.find(token); at != std::string::npos;
         at = out.find(token, at + text.size()))
      out.replace(at, token.size(), text);
  };
  replace("{value}", format_value(rule.kind, value, unit));
  replace("{min}", rule.min ? format_value(rule.kind, *rule.min, unit) : "-");
  replace("{max}", rule.max ? format_value(rule.kind, *rule.max, unit) : "-");
  return out;
}

namespace {

std::string variant_list(const RunReport& report) {
  std::string s;
  for (const auto& v : report.variants) s += (s.empty() ? "" : ", ") + v.name;
  return s.empty() ? "none" : s;
}

// Why a correctness check failed, in a line: the first failing check's case and message.
std::string first_failed_check(const ReportedVariant& variant) {
  for (const ReportedCheck& c : variant.checks) {
    if (c.ok) continue;
    std::string s = c.name;
    if (!c.message.empty()) s += ": " + c.message;
    else if (!c.mismatches.empty()) s += ": " + c.mismatches + " mismatches";
    return s;
  }
  return "";
}

std::string threshold_text(const Rule& r, const std::string& unit) {
  std::string s;
  if (r.min) s += "at least " + format_value(r.kind, *r.min, unit);
  if (r.max) s += std::string(s.empty() ? "" : " and ") + "at most " + format_value(r.kind, *r.max, unit);
  return s;
}

// Why the checker judged a run's timings untrustworthy: its own observations of the GPU, and a
// device-debug build (which the pristine library reports). Nothing the exercise can say or do
// decides this.
std::string untrusted_because(const JudgedRun& run) {
  std::string why;
  for (const std::string& d : run.findings.disturbance) why += (why.empty() ? "" : "; ") + d;
  if (run.report.debug_build) why += (why.empty() ? "" : "; ") + std::string("a -G build");
  return why;
}

const char* what_is_measured(RuleKind k) {
  switch (k) {
    case RuleKind::fraction_of_copy: return " of the copy bandwidth";
    case RuleKind::fraction_of_peak: return " of the theoretical bandwidth";
    default: return "";
  }
}

}  // namespace

RuleOutcome evaluate_rule(const Rule& rule, const JudgedRun& run) {
  const RunReport& report = run.report;
  const Findings& found = run.findings;
  RuleOutcome out;
  out.id = rule.id;
  out.kind = to_string(rule.kind);
  out.min = rule.min;
  out.max = rule.max;
  out.max_points = rule.points;
  const bool complete = report.complete;
  auto finish = [&](Verdict v, std::string msg) {
    out.verdict = v;
    out.message = std::move(msg);
    out.points = earns_points(v) ? rule.points : 0;
    return out;
  };

  // The judged variant (optional only for metric rules).
  const ReportedVariant* variant = nullptr;
  if (!rule.variant.empty()) {
    variant = report.find(rule.variant);
    if (!variant) {
      if (!complete)
        return finish(Verdict::fail, "the program stopped before it measured \"" + rule.variant + "\"");
      return finish(Verdict::error, "check.toml names the variant \"" + rule.variant +
                                        "\", which the lesson does not report (it has: " +
                                        variant_list(report) + ")");
    }
  }

  if (rule.kind == RuleKind::correct) {
    if (variant->correct) return finish(Verdict::pass, "\"" + rule.variant + "\" gives correct results");
    std::string msg = "\"" + rule.variant + "\" gives wrong results";
    if (auto why = first_failed_check(*variant); !why.empty()) msg += " (" + why + ")";
    if (!rule.hint.empty()) {
      out.hint = rule.hint;
      msg += ". " + rule.hint;
    }
    return finish(Verdict::fail, msg);
  }

  // Nothing timed counts on a time the checker's tracer contradicted (judge.cpp lets such a run
  // be judged only when the variants concerned gave wrong results). A metric may be computed
  // from any variant's time, so one contradicted time fails every metric rule.
  if (rule.kind != RuleKind::counter) {
    for (const std::string& name : found.unverified_variants)
      if (rule.kind == RuleKind::metric || name == rule.variant || name == rule.over)
        return finish(Verdict::fail, "the time of \"" + name +
                                         "\" disagreed with the checker's tracer, so no timed "
                                         "rule that uses it counts");
  }
  // Performance only counts for correct code.
  if (variant && !variant->correct)
    return finish(Verdict::fail, "\"" + rule.variant + "\" gives wrong results, so its " +
                                     (rule.kind == RuleKind::counter ? "counters do" : "speed does") +
                                     " not count");

  if (rule.kind == RuleKind::counter) {
    using Status = CounterRun::Status;
    const CounterReading* reading = found.counter(rule.variant, rule.counter);
    if (!reading || reading->status == Status::unavailable) {
      out.max_points = 0;  // left out of the total: the machine, not the student
      return finish(Verdict::skipped,
                    "not checked: " + (!reading ? std::string("the counters were not read (--no-counters)")
                                                : reading->message) +
                        "; this rule's points are left out of the total");
    }
    if (reading->status == Status::failed)
      return finish(Verdict::fail, rule.counter + " could not be measured: " + reading->message);
    // Not the student's doing, and no skip either (a skip would drop the rule from the total).
    if (reading->status == Status::unchecked)
      return finish(Verdict::environment, reading->message + "; grade again with --force");
    // Work that feeds nothing moves a ratio towards its bar: a reading is judged only where the
    // kernels did about the work the problem needs.
    const double most = rule.max_work.value_or(kDefaultMaxWork);
    if (reading->work_per_needed && *reading->work_per_needed > most) {
      const CounterMeasure& m = *find_counter_measure(rule.counter);
      return finish(Verdict::fail,
                    rule.counter + " of \"" + rule.variant + "\" is not judged: its kernels did " +
                        fixed(*reading->work_per_needed, 1) + "x the " + m.work +
                        " the problem needs (at most " + fixed(most, 1) + "x counts), and work that " +
                        "feeds nothing moves this reading. Drop what your kernels compute or load " +
                        "only to be thrown away.");
    }
  }

  Reading reading;
  std::string unit;
  switch (rule.kind) {
    case RuleKind::fraction_of_copy:
    case RuleKind::fraction_of_peak: {
      const bool copy = rule.kind == RuleKind::fraction_of_copy;
      if (!variant->time)
        return finish(Verdict::fail, "\"" + rule.variant + "\" was not timed (it stopped before it was measured)");
      // From the bytes, the median and the run's ceilings (the library's rates_of), never from
      // the fraction the file holds: no judged number can disagree with the others.
      const Rates& rates = variant->rates;
      const std::optional<double> fraction = copy ? rates.fraction_of_copy : rates.fraction_of_peak;
      if (!fraction && variant->host_link)
        return finish(Verdict::error, "\"" + rule.variant + "\" moves its bytes over the host "
                                      "link, which has no fraction of a device-memory ceiling");
      if (!fraction)
        return finish(Verdict::error, std::string("the result has no ") +
                                          (copy ? "copy ceiling (ceilings.copy_gbs)"
                                                : "theoretical bandwidth (device.peak_bandwidth_gbs)") +
                                          " to compare \"" + rule.variant + "\" with");
      const double value = *fraction;
      // A rate is bytes over time: the 95% interval of the median time bounds it.
      const ReportedTime& t = *variant->time;
      const Interval i = constant_over_median(value * t.median, variant->samples_ms);
      reading = i.ok ? Reading{value, i.low, i.high}
                     : Reading{value, value * t.median / t.median_high, value * t.median / t.median_low};
      break;
    }
    case RuleKind::speedup: {
      const ReportedVariant* over = report.find(rule.over);
      if (!over) {
        if (!complete)
          return finish(Verdict::fail, "the program stopped before it measured \"" + rule.over + "\"");
        return finish(Verdict::error, "check.toml names the variant \"" + rule.over +
                                          "\", which the lesson does not report (it has: " +
                                          variant_list(report) + ")");
      }
      if (!variant->time)
        return finish(Verdict::fail, "\"" + rule.variant + "\" was not timed (it stopped before it was measured)");
      if (const auto p = found.pristine.find(rule.over); p != found.pristine.end() && p->second.error)
        return finish(Verdict::environment,
                      "the baseline \"" + rule.over + "\" could not be timed in the checker's run "
                      "of the pristine lesson (no code of yours): " + *p->second.error);
      if (!over->time)
        return finish(Verdict::error, "the baseline \"" + rule.over + "\" was not timed");
      // A baseline whose results are wrong did other work than the exercise: no speedup over it.
      if (!over->correct)
        return finish(Verdict::fail, "the baseline \"" + rule.over + "\" gives wrong results, so "
                                     "there is no speedup over it to judge");
      // Both medians from the same run: the interval of their ratio, from both sets of samples.
      const ReportedTime &o = *over->time, &t = *variant->time;
      const double v = o.median / t.median;
      const Interval i = ratio_of_medians(over->samples_ms, variant->samples_ms);
      reading = i.ok ? Reading{v, i.low, i.high}
                     : Reading{v, o.median_low / t.median_high, o.median_high / t.median_low};
      break;
    }
    case RuleKind::metric: {
      const auto m = report.metrics.find(rule.metric);
      if (m == report.metrics.end()) {
        if (!complete)
          return finish(Verdict::fail, "the program stopped before it measured \"" + rule.metric + "\"");
        std::string have;
        for (const auto& [k, _] : report.metrics) have += (have.empty() ? "" : ", ") + k;
        return finish(Verdict::error, "check.toml names the metric \"" + rule.metric +
                                          "\", which the lesson does not report (it has: " +
                                          (have.empty() ? "none" : have) + ")");
      }
      reading = {m->second.value, m->second.low, m->second.high};
      unit = m->second.unit;
      break;
    }
    case RuleKind::counter: {
      // A count, not a time: the same on every run, so no range.
      const double v = found.counter(rule.variant, rule.counter)->value;
      reading = {v, v, v};
      break;
    }
    case RuleKind::correct:
      break;
  }
  if (reading.low > reading.high) std::swap(reading.low, reading.high);
  out.reading = reading;

  // Both ends of the range on the right side: pass; both on the wrong side: fail; else ambiguous.
  Verdict v = Verdict::pass;
  if (rule.min) {
    if (reading.high < *rule.min) v = worse(v, Verdict::fail);
    else if (reading.low < *rule.min) v = worse(v, Verdict::ambiguous);
  }
  if (rule.max) {
    if (reading.low > *rule.max) v = worse(v, Verdict::fail);
    else if (reading.high > *rule.max) v = worse(v, Verdict::ambiguous);
  }
  // The benefit of the doubt is bounded (kDoubtMargin): a median far short of the bar fails,
  // however wide the interval around it.
  const bool far_short = (rule.min && reading.value < *rule.min * (1 - kDoubtMargin)) ||
                         (rule.max && reading.value > *rule.max * (1 + kDoubtMargin));
  const bool doubt_refused = v == Verdict::ambiguous && far_short;
  if (doubt_refused) v = Verdict::fail;

  std::string measured = format_value(rule.kind, reading.value, unit) + what_is_measured(rule.kind);
  if (rule.kind == RuleKind::speedup) {
    // Under 1x it is slower: "0.23x the speed of" (a reference such as cuBLAS).
    measured += (reading.value >= 1 ? " faster than \"" : " the speed of \"") + rule.over + "\"";
    // A baseline timed by the pristine run (judge.hpp, use_pristine_baselines): said.
    const ReportedVariant* over = report.find(rule.over);
    const auto p = found.pristine.find(rule.over);
    if (over && over->time && p != found.pristine.end() && p->second.measured)
      measured += " (timed in a run of the pristine lesson, no code of yours: " +
                  format_value(RuleKind::metric, over->time->median, "ms") + ")";
  }
  if (rule.kind == RuleKind::metric) measured = rule.metric + " = " + measured;
  if (rule.kind == RuleKind::counter) measured = rule.counter + " of \"" + rule.variant + "\" = " + measured;
  std::string msg = measured + " (needs " + threshold_text(rule, unit) + ")";
  // How much work stood behind the reading, so an instructor sees how near max_work it was.
  if (rule.kind == RuleKind::counter) {
    const CounterReading* r = found.counter(rule.variant, rule.counter);
    if (r && r->work_per_needed)
      msg += "; its kernels did " + fixed(*r->work_per_needed, 2) + "x the " +
             find_counter_measure(rule.counter)->work + " the problem needs";
  }
  if (v == Verdict::ambiguous)
    msg = measured + ", between " + format_value(rule.kind, reading.low, unit) + " and " +
          format_value(rule.kind, reading.high, unit) + " (95% interval): too close to " +
          threshold_text(rule, unit) + " to call";
  if (doubt_refused)
    msg = measured + " (needs " + threshold_text(rule, unit) + "; its 95% interval, " +
          format_value(rule.kind, reading.low, unit) + " to " +
          format_value(rule.kind, reading.high, unit) + ", holds the bar, but the median misses " +
          "it by more than " + std::to_string(std::lround(100 * kDoubtMargin)) +
          "%, and the benefit of the doubt covers measurement noise only: a spread that wide " +
          "comes from calls of very different speeds)";

  // Counters do not depend on how trustworthy the run's timings were; every timed reading
  // does, a pass included (a GPU shared with another process can slow a baseline and so make a
  // speedup): such a run is judged `environment` and run again.
  const bool disturbed = !found.environment_ok || report.debug_build;
  if (disturbed && rule.kind != RuleKind::counter) {
    const std::string why = untrusted_because(run);
    return finish(Verdict::environment,
                  "not judged: the checker saw this run disturbed" +
                      (why.empty() ? std::string() : " (" + why + ")") + "; measured " + msg);
  }
  if (v == Verdict::fail && !rule.hint.empty()) {
    out.hint = fill_hint(rule, reading.value, unit);
    msg += ". " + out.hint;
  }
  return finish(v, msg);
}

std::vector<RuleOutcome> error_outcomes(const LessonConfig& lesson, Verdict verdict,
                                        const std::string& message) {
  std::vector<RuleOutcome> out;
  for (const auto& r : lesson.rules) {
    RuleOutcome o;
    o.id = r.id;
    o.kind = to_string(r.kind);
    o.verdict = verdict;
    o.min = r.min;
    o.max = r.max;
    o.max_points = r.points;
    o.points = 0;
    o.message = message;
    out.push_back(o);
  }
  return out;
}

}  // namespace lab
