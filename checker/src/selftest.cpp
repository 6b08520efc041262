#include "selftest.hpp"

#include "files.hpp"
#include "inspect.hpp"
#include "patch.hpp"
#include "toml_file.hpp"

#include <algorithm>
#include <chrono>

namespace lab {

std::string Expectation::describe() const {
  std::string s = rule ? "rule " + *rule + " = " + to_string(verdict) : std::string("verdict ") + to_string(verdict);
  if (!reason.empty()) s += " (" + reason + ")";
  return s;
}

fs::path mutants_dir(const LessonConfig& lesson) {
  return lesson.dir.parent_path().parent_path() / "solutions" / lesson.name / "mutants";
}

namespace {

// Whether there is anything at `p` (a link that leads nowhere, or in a loop, too: reading it
// then says what is wrong with it, where fs::exists would throw its own text).
bool present(const fs::path& p) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(p, ec));
}

}  // namespace

std::vector<Expectation> load_expectations(const fs::path& file) {
  // With check.toml's limits: a FIFO, a huge file or a key of 40,000 dotted parts is refused.
  const toml::table doc = parse_toml(file);
  std::vector<Expectation> out;
  for (auto&& [k, node] : doc) {
    const std::string at = file.string() + ":" + std::to_string(node.source().begin.line);
    if (!node.is_table())
      throw ConfigError(at + ": \"" + std::string(k.str()) + "\" must be a table: [mutant-name]");
    Expectation e;
    e.mutant = std::string(k.str());
    e.origin = at;
    bool have_verdict = false;
    for (auto&& [fk, fn] : *node.as_table()) {
      const std::string key(fk.str());
      const std::string fat = file.string() + ":" + std::to_string(fn.source().begin.line);
      if (key == "timeout_s") {
        if (fn.is_integer()) e.timeout_s = static_cast<double>(fn.as_integer()->get());
        else if (fn.is_floating_point()) e.timeout_s = fn.as_floating_point()->get();
        else throw ConfigError(fat + ": \"timeout_s\" must be a number");
        if (!(e.timeout_s >= 1 && e.timeout_s <= 86400))  // nan and inf too
          throw ConfigError(fat + ": \"timeout_s\" must be from 1 to 86400 seconds");
        continue;
      }
      if (!fn.is_string()) throw ConfigError(fat + ": \"" + key + "\" must be a string");
      const std::string value = fn.as_string()->get();
      if (key == "verdict") {
        auto v = verdict_from_string(value);
        if (!v) throw ConfigError(fat + ": unknown verdict \"" + value + "\" (pass, fail, ambiguous, environment, error, skipped)");
        e.verdict = *v;
        have_verdict = true;
      } else if (key == "rule") {
        e.rule = value;
      } else if (key == "reason") {
        static const char* known[] = {reason::compile, reason::timeout,   reason::crash,
                                      reason::exit,    reason::result,    reason::no_gpu,
                                      reason::sanitizer, reason::forbidden, reason::implausible,
                                      reason::unverified_time, reason::unverified_result,
                                      reason::replay};
        if (std::none_of(std::begin(known), std::end(known), [&](const char* r) { return value == r; })) {
          std::string names;
          for (const char* r : known) names += std::string(names.empty() ? "" : ", ") + r;
          throw ConfigError(fat + ": unknown reason \"" + value + "\" (" + names + ")");
        }
        e.reason = value;
      } else {
        throw ConfigError(fat + ": unknown key \"" + key + "\" (verdict, rule, reason, timeout_s)");
      }
    }
    if (!have_verdict && e.reason == reason::sanitizer) {
      e.verdict = Verdict::fail;
      have_verdict = true;
    }
    if (!have_verdict) throw ConfigError(at + ": [" + e.mutant + "] has no \"verdict\"");
    out.push_back(e);
  }
  return out;
}

bool expectation_holds(const Expectation& e, const LessonOutcome& o, std::string& why) {
  Verdict seen = o.verdict;
  std::string message = o.message;
  if (e.rule) {
    const RuleOutcome* r = nullptr;
    if (*e.rule == "sanitizer" && o.sanitizer) r = &*o.sanitizer;
    for (const auto& x : o.rules)
      if (x.id == *e.rule) r = &x;
    if (!r) {
      why = "the lesson has no rule \"" + *e.rule + "\"";
      return false;
    }
    seen = r->verdict;
    message = r->message;
  }
  // A whole lesson expected to pass (a taught path) is held to what the solution is held to:
  // every point earned, `ambiguous` included (the benefit of the doubt a student gets too).
  bool ok = seen == e.verdict;
  // A counter rule is skipped where ncu may not read the counters: nothing to hold it to there.
  const bool unreadable = seen == Verdict::skipped && o.reason.empty() &&
                          std::any_of(o.rules.begin(), o.rules.end(), [&](const RuleOutcome& x) {
                            return e.rule && x.id == *e.rule && x.kind == "counter";
                          });
  if (unreadable) ok = true;
  if (e.whole_lesson_passes()) ok = earns_points(seen) && o.score == o.max_score;
  if (e.reason == reason::sanitizer) ok = ok && o.sanitizer && o.sanitizer->verdict == Verdict::fail;
  else if (!e.reason.empty()) ok = ok && o.reason == e.reason;
  why = std::string("got ") + to_string(seen) + (o.reason.empty() ? "" : " (" + o.reason + ")") +
        (message.empty() ? "" : ": " + message);
  return ok;
}

void narrowest_margin(const LessonOutcome& outcome, SelftestCheck& check) {
  for (const auto& r : outcome.rules) {
    if (r.kind == "correct" || r.kind == "sanitizer" || !r.reading) continue;
    double m = 0;
    if (r.min && *r.min > 0) m = r.reading->value / *r.min;
    else if (r.max && r.reading->value > 0) m = *r.max / r.reading->value;
    else continue;
    if (check.margin_rule.empty() || m < check.margin) {
      check.margin = m;
      check.margin_rule = r.id;
    }
  }
}

std::vector<SelftestCheck> selftest_lesson(const LessonConfig& lesson, const SelftestOptions& opt,
                                           GradingBuild* grading,
                                           const std::function<void(const SelftestCheck&)>& on_check) {
  std::vector<SelftestCheck> checks;
  auto add = [&](const SelftestCheck& c) {
    checks.push_back(c);
    if (on_check) on_check(c);
  };
  const fs::path programs = opt.build_dir / "lessons" / lesson.name;
  JudgeOptions base;
  base.timeout_s = opt.timeout_s;
  base.sanitizer_cmd = opt.sanitizer_cmd;
  base.counters = opt.counters;
  base.inspect = opt.inspect;
  base.corroborate = opt.corroborate;
  base.tracer_probe = opt.tracer_probe;
  base.syscall_filter = opt.syscall_filter;
  if (opt.pristine) base.pristine = programs / "starter";

  {  // The solution passes every rule (ambiguous counts: that is the rule for students too).
    SelftestCheck c{lesson.name, "solution", "passes every rule", false, ""};
    JudgeOptions j = base;
    j.build = "solution";
    const LessonOutcome o = judge_program(lesson, programs / "solution", j);
    c.runs = o.runs;
    c.seconds = o.wall_s;
    c.held = earns_points(o.verdict) && o.score == o.max_score;
    for (const auto& r : o.rules)
      if (r.verdict != Verdict::pass || !c.held)
        c.detail += (c.detail.empty() ? "" : "; ") + r.id + " " + to_string(r.verdict) + ": " + r.message;
    if (!o.reason.empty()) c.detail = o.message;
    narrowest_margin(o, c);
    add(c);
  }
  {  // The starter is correct but too slow, and the failing rule says why (its hint).
    SelftestCheck c{lesson.name, "starter", "passes correctness, fails a performance rule with its hint", false, ""};
    JudgeOptions j = base;
    j.build = "starter";
    const LessonOutcome o = judge_program(lesson, programs / "starter", j);
    c.runs = o.runs;
    c.seconds = o.wall_s;
    bool correct_ok = o.reason.empty(), perf_failed = false;
    for (const auto& r : o.rules) {
      const Rule& rule = *std::find_if(lesson.rules.begin(), lesson.rules.end(),
                                       [&](const Rule& x) { return x.id == r.id; });
      if (rule.kind == RuleKind::correct) {
        if (r.verdict != Verdict::pass) {
          correct_ok = false;
          c.detail += r.id + " " + to_string(r.verdict) + ": " + r.message + "; ";
        }
      } else if (r.verdict == Verdict::fail && !r.hint.empty() &&
                 r.message.find(r.hint) != std::string::npos) {
        perf_failed = true;
        c.detail += r.id + " fails: " + r.message + "; ";
      }
    }
    if (!o.reason.empty()) c.detail = o.message;
    else if (!perf_failed) c.detail += "no performance rule failed with its hint";
    c.held = correct_ok && perf_failed;
    add(c);
  }

  const fs::path mutants = mutants_dir(lesson);
  if (!fs::is_directory(mutants)) return checks;
  std::vector<Expectation> expected;
  if (present(mutants / "expected.toml")) expected = load_expectations(mutants / "expected.toml");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(mutants))
    if (e.path().extension() == ".patch") files.push_back(e.path().stem().string());
  std::sort(files.begin(), files.end());
  // Without mutants (later rounds of --repeat) the ones expected to pass as a whole (the taught
  // path, other correct designs) still run: the bars must hold for them in every round, like the
  // solution's.
  auto expected_of = [&](const std::string& name) {
    return std::find_if(expected.begin(), expected.end(), [&](const Expectation& x) { return x.mutant == name; });
  };
  if (!opt.mutants)
    files.erase(std::remove_if(files.begin(), files.end(),
                               [&](const std::string& f) {
                                 auto e = expected_of(f);
                                 return e == expected.end() || !e->whole_lesson_passes();
                               }),
                files.end());

  for (const auto& name : files) {
    SelftestCheck c{lesson.name, "mutant " + name, "", false, ""};
    auto e = expected_of(name);
    if (e == expected.end()) {
      c.expected = "an entry in mutants/expected.toml";
      c.detail = "mutants/" + name + ".patch has no [" + name + "] in expected.toml";
      add(c);
      continue;
    }
    c.expected = e->describe();
    JudgeOptions j = base;
    j.build = "mutant-" + name;
    if (e->timeout_s > 0) j.timeout_s = e->timeout_s;
    j.sanitize = e->needs_sanitizer();
    LessonOutcome o;
    const auto t0 = std::chrono::steady_clock::now();
    // The mutant as a file, in a work folder of its own: the patch must still fit its base.
    TempDir work("lab-mutant");
    const fs::path source = work.path() / "exercise.cu";
    try {
      write_file_atomic(source, materialise_mutant(lesson.dir.parent_path().parent_path(), lesson.name, name));
    } catch (const PatchError& err) {
      c.detail = err.what();
      add(c);
      continue;
    }
    if (name.rfind("compile_error", 0) == 0) {
      // Not built by CMake: it goes through the grading build, exactly like a student's file.
      if (!grading) {
        c.detail = "no grading build to compile it in";
        add(c);
        continue;
      }
      auto built = grading->build(lesson, source);
      if (built.ok) {
        j.build = "submission";
        o = judge_program(lesson, built.program, j);
      } else {
        o = lesson_outcome(lesson, j.build, Verdict::error, reason::compile, built.message);
        o.output = built.output;
      }
    } else {
      o = judge_program(lesson, programs / ("mutant-" + name), j);
    }
    c.held = expectation_holds(*e, o, c.detail);
    if (e->whole_lesson_passes()) narrowest_margin(o, c);
    c.runs = o.runs;
    c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    add(c);
  }
  for (const auto& e : expected)
    if (opt.mutants && std::find(files.begin(), files.end(), e.mutant) == files.end())
      add({lesson.name, "mutant " + e.mutant, e.describe(), false,
           e.origin + ": no mutants/" + e.mutant + ".patch"});
  return checks;
}

std::vector<SelftestCheck> seal_lesson(const LessonConfig& lesson, const fs::path& build_dir) {
  std::vector<SelftestCheck> checks;
  const fs::path programs = build_dir / "lessons" / lesson.name;
  auto check = [&](const std::string& subject, const fs::path& program, bool refused) {
    SelftestCheck c{lesson.name, subject, refused ? "refused by the seal" : "passes the seal", false, ""};
    try {
      const auto findings = inspect_program(program, lesson.allowed_calls, lesson.forbidden_calls);
      c.held = findings.empty() != refused;
      c.detail = findings.empty() ? "passed the seal" : describe_findings(findings);
    } catch (const ConfigError& e) {
      c.detail = e.what();
    }
    checks.push_back(c);
  };
  check("solution", programs / "solution", false);
  check("starter", programs / "starter", false);
  const fs::path mutants = mutants_dir(lesson);
  if (present(mutants / "expected.toml"))
    for (const auto& e : load_expectations(mutants / "expected.toml"))
      if (e.mutant.rfind("compile_error", 0) != 0 && fs::exists(mutants / (e.mutant + ".patch")))
        check("mutant " + e.mutant, programs / ("mutant-" + e.mutant), e.reason == reason::forbidden);
  return checks;
}

}  // namespace lab
