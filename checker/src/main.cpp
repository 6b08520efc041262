// lab-check: the CUDA Performance Lab's checker. See checker/README.md.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <CLI/CLI.hpp>

#include "doctor.hpp"
#include "files.hpp"
#include "gpu_watch.hpp"
#include "grade.hpp"
#include "handout.hpp"
#include "process.hpp"
#include "report.hpp"
#include "roofline.hpp"
#include "rules.hpp"
#include "sandbox.hpp"
#include "selftest.hpp"

namespace {

using namespace lab;

// Exit codes of lab-check itself.
constexpr int kOk = 0;
constexpr int kFailed = 1;     // a rule failed / a submission could not be graded / selftest failed
constexpr int kUsage = 2;      // bad options, bad check.toml or overrides, nothing built
constexpr int kNoGpu = 3;      // doctor: no usable GPU
constexpr int kSkip = 77;      // selftest: no usable GPU (CTest's SKIP_RETURN_CODE)

struct Common {
  std::string source_dir = LAB_SOURCE_DIR;
  std::string build_dir;
  std::string format = "table";
  double timeout_s = 0;
  bool counters = true;  // counter rules read through ncu (--no-counters: reported as skipped)
  bool corroborate = true;  // times checked against the checker's tracer (--no-corroborate: not)
  std::string baselines;    // --baselines; "" = the verb's default (run: in-process, else pristine)
  std::string containment;  // --containment; "" = the verb's default (grade: namespaces, else auto)
  bool syscall_filter = true;  // --no-syscall-filter: lesson programs run without the filter
};

/// Sets how the command's student-facing processes are contained (docs/grading-security.md) and
/// returns it in words. Throws ConfigError where the mode asked for cannot be had.
std::string set_containment(const Common& c, const std::string& default_mode, SandboxPolicy policy) {
  std::string note;
  policy.mode = choose_containment(c.containment.empty() ? default_mode : c.containment, note);
  if (!note.empty()) std::cerr << "lab-check: " << note << "\n";
  set_sandbox_policy(policy);
  return describe_policy(policy);
}

/// The build tree this binary was built in: the nearest folder above it with a CMakeCache.txt.
fs::path own_build_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (fs::path d = exe.parent_path(); d.has_relative_path(); d = d.parent_path())
    if (fs::exists(d / "CMakeCache.txt")) return d;
  return {};
}

fs::path build_dir_of(const Common& c) {
  fs::path d = c.build_dir.empty() ? own_build_dir() : fs::path(c.build_dir);
  if (d.empty())
    throw ConfigError("cannot tell which build to use: pass --build-dir (the folder you configured with cmake)");
  if (!fs::is_directory(d)) throw ConfigError("--build-dir " + d.string() + " does not exist");
  return fs::absolute(d);
}

std::vector<LessonConfig> lessons_of(const Common& c, const std::vector<std::string>& names,
                               const std::string& overrides) {
  std::vector<LessonConfig> all = load_lessons(c.source_dir);
  if (all.empty()) throw ConfigError("no lessons with a check.toml in " + c.source_dir + "/lessons");
  if (!overrides.empty()) apply_overrides(all, overrides);
  return select_lessons(all, names);
}

std::string points(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Where a graded lesson's time went: "12.3 s (build 2.0, program 5.1, pristine 4.0, ncu 3.2)".
std::string seconds_split(const LessonOutcome& o) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%.1f s (build %.1f, program %.1f, pristine %.1f, ncu %.1f)",
                o.build_s + o.wall_s, o.build_s, o.program_s - o.pristine_s, o.pristine_s,
                o.counters_s);
  return buf;
}

std::string threshold(const Rule& r) {
  std::string s;
  if (r.min) s += ">= " + format_value(r.kind, *r.min);
  if (r.max) s += std::string(s.empty() ? "" : ", ") + "<= " + format_value(r.kind, *r.max);
  return s;
}

/// Refuses, before any work, an output file option whose path exists and is not a regular file:
/// outputs are written next to it and renamed over it, which would replace a link, a device or
/// a FIFO with a plain file (as root, `--csv /dev/null` would replace /dev/null).
void check_output_file(const std::string& option, const std::string& path) {
  if (const std::string problem = output_path_problem(path); !problem.empty())
    throw ConfigError(option + " " + path + " " + problem + ", not a regular file: lab-check writes "
                      "its outputs only as new files or over regular files (name another path)");
}

/// The same for a folder lab-check writes into: where it exists, it is a folder (or a link to one).
void check_output_folder(const std::string& option, const std::string& path) {
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (!fs::exists(st) || fs::is_directory(st)) return;
  throw ConfigError(option + " " + path + " exists and is not a folder (name a folder)");
}

// ------------------------------------------------------------------ verbs

int cmd_doctor(const Common& c, bool quick) {
  const DoctorReport rep = run_doctor(build_dir_of(c), c.timeout_s > 0 ? c.timeout_s : 300, quick);
  if (c.format == "json") {
    json j = rep.info;
    j["ok"] = rep.exit_code == 0;
    if (rep.exit_code != 0) j["problem"] = rep.problem;
    std::cout << dump_json(j);
  } else {
    (rep.exit_code == 0 ? std::cout : std::cerr) << doctor_text(rep);
  }
  return rep.exit_code;
}

// Where an overrides file changed a rule ("overrides.toml:3"), or "".
std::string overridden_at(const Rule& r) {
  const std::string mark = " (overridden at ";
  const auto at = r.origin.find(mark);
  if (at == std::string::npos) return "";
  std::string where = r.origin.substr(at + mark.size());
  if (!where.empty() && where.back() == ')') where.pop_back();
  return where;
}

int cmd_list(const Common& c, const std::string& overrides) {
  const auto lessons = lessons_of(c, {}, overrides);
  if (c.format == "json") {
    json out = json::array();
    for (const auto& l : lessons) {
      json rules = json::array();
      for (const auto& r : l.rules) {
        json j = {{"id", r.id}, {"kind", to_string(r.kind)}, {"points", r.points}, {"hint", r.hint}};
        if (!r.variant.empty()) j["variant"] = r.variant;
        if (!r.over.empty()) j["over"] = r.over;
        if (!r.metric.empty()) j["metric"] = r.metric;
        if (!r.counter.empty()) j["counter"] = r.counter;
        if (r.min) j["min"] = *r.min;
        if (r.max) j["max"] = *r.max;
        if (auto at = overridden_at(r); !at.empty()) j["overridden_at"] = at;
        rules.push_back(j);
      }
      out.push_back({{"lesson", l.name}, {"title", l.title}, {"timeout_s", l.timeout_s},
                     {"args", l.args}, {"max_score", l.max_points()}, {"rules", rules}});
    }
    std::cout << dump_json(out);
    return kOk;
  }
  double total = 0;
  for (const auto& l : lessons) {
    total += l.max_points();
    std::cout << l.name << "  " << l.title << "  (" << points(l.max_points()) << " points, timeout "
              << points(l.timeout_s) << " s)\n";
    if (!l.args.empty()) {  // every run of the lesson's programs gets them
      std::cout << "    args:";
      for (const auto& a : l.args) std::cout << " " << a;
      std::cout << "\n";
    }
    for (const auto& r : l.rules) {
      std::string what = to_string(r.kind);
      if (r.kind == RuleKind::metric) what += " " + r.metric;
      if (r.kind == RuleKind::counter) what += " " + r.counter + " (ncu)";
      if (!r.variant.empty()) what += " of " + r.variant;
      if (!r.over.empty()) what += " over " + r.over;
      std::cout << "    " << r.id << ": " << what << (r.min || r.max ? " " + threshold(r) : "")
                << "  [" << points(r.points) << " pt]";
      if (auto at = overridden_at(r); !at.empty()) std::cout << "  (overridden at " << at << ")";
      std::cout << "\n";
    }
  }
  std::cout << lessons.size() << " lessons, " << points(total) << " points\n";
  return kOk;
}

/// The course's program that tells a missing trace from a tracer that does not work here
/// (JudgeOptions::tracer_probe): lab-doctor, where the build has it.
fs::path tracer_probe(const fs::path& bdir) {
  const fs::path doctor = doctor_program(bdir);
  return fs::exists(doctor) ? fs::absolute(doctor) : fs::path();
}

/// Whether the speedup rules' baselines are timed by the course's own program (--baselines
/// pristine) rather than in the student's (in-process); `default_mode` is the verb's.
bool pristine_baselines(const Common& c, const std::string& default_mode) {
  return (c.baselines.empty() ? default_mode : c.baselines) == "pristine";
}

/// Per lesson, the program that times its speedup rules' baselines and checks the exercise's
/// results from its record (LessonConfig::replay) with no student code: the course's own starter
/// in the main build, brought up to date first, before any lesson runs (a missing one stops
/// nothing midway); "" for a lesson with neither, or every lesson where the baselines are timed
/// in-process. Throws ConfigError where one cannot be had.
std::vector<fs::path> pristine_programs(bool pristine, const fs::path& bdir,
                                        const std::vector<LessonConfig>& lessons) {
  std::vector<fs::path> programs(lessons.size());
  std::vector<std::string> needed;
  for (const auto& l : lessons)
    if (pristine && (!speedup_baselines(l).empty() || l.replay)) needed.push_back(l.name);
  build_pristine_programs(bdir, needed);
  for (std::size_t i = 0; i < lessons.size(); ++i) {
    if (std::find(needed.begin(), needed.end(), lessons[i].name) == needed.end()) continue;
    programs[i] = bdir / "lessons" / lessons[i].name / "starter";
    if (!fs::exists(programs[i]))
      throw ConfigError("--baselines pristine times " + lessons[i].name + "'s baselines with the "
                        "course's starter program, which is not built: " + programs[i].string() +
                        " (cmake --build " + bdir.string() + "; or --baselines in-process)");
  }
  return programs;
}

int cmd_run(const Common& c, const std::vector<std::string>& names, const std::string& build,
            bool quick, bool sanitize, const std::string& overrides, bool report_only,
            const std::string& keep) {
  const fs::path bdir = build_dir_of(c);
  const auto lessons = lessons_of(c, names, overrides);
  // A student's own machine: no one else's files to hide, but no stray process left behind, and
  // a /tmp of the run's own: what else runs here (a build, another run) cannot reach a program's
  // files, nor show in lesson 11's audit of the files its processes wrote.
  SandboxPolicy policy;
  policy.private_tmp = true;
  set_containment(c, "auto", policy);
  JudgeOptions j;
  j.build = build;
  j.quick = quick;
  j.sanitize = sanitize;
  j.timeout_s = c.timeout_s;
  j.counters = c.counters;
  // One's own machine may not load the tracer: the times are judged anyway, and the output says so.
  j.corroborate = c.corroborate ? Corroborate::if_available : Corroborate::off;
  j.syscall_filter = use_syscall_filter(c.syscall_filter, false);
  j.keep = keep;
  const bool table = c.format == "table";
  const bool colour = table && use_colour(stdout);
  Report report;
  report.name = build;
  report.started_at = utc_now();
  bool all_pass = true, all_judged = true;
  const std::vector<fs::path> pristine =
      pristine_programs(pristine_baselines(c, "in-process"), bdir, lessons);
  for (std::size_t i = 0; i < lessons.size(); ++i) {
    const LessonConfig& l = lessons[i];
    j.pristine = pristine[i];
    LessonOutcome o = judge_program(l, bdir / "lessons" / l.name / build, j);
    all_pass = all_pass && earns_points(o.verdict);
    all_judged = all_judged && o.verdict != Verdict::error;
    if (table) std::cout << table_text({o}, colour) << std::flush;
    report.lessons.push_back(std::move(o));
  }
  report.complete = true;
  report.finished_at = utc_now();
  if (table) {
    if (lessons.size() > 1)
      std::cout << "total " << points(report.score()) << "/" << points(report.max_score()) << "\n";
    if (quick) std::cout << "(--quick: small sizes; performance verdicts are only indicative)\n";
  } else {
    std::cout << dump_json(report_json(report));
  }
  if (report_only) return all_judged ? kOk : kFailed;
  return all_pass ? kOk : kFailed;
}

int cmd_grade(const Common& c, const std::vector<std::string>& submissions, const std::string& out,
              const std::string& overrides, bool sanitize, int jobs, bool force,
              const std::string& grading_dir, const std::pair<double, double>& build_time) {
  const fs::path bdir = build_dir_of(c);
  const auto lessons = lessons_of(c, {}, overrides);
  check_output_folder("--out", out);
  if (!grading_dir.empty()) check_output_folder("--grading-dir", grading_dir);
  // Every student graded under a name of their own: no two share an output folder.
  check_output_folders(std::vector<fs::path>(submissions.begin(), submissions.end()), out);
  // Without a GPU, say so first: the submissions are still built and inspected (compile errors
  // and the seal get their real verdicts), which lets an instructor pre-check a class anywhere.
  if (const GpuObservation gpu = probe_gpu(); !gpu.gpu_present)
    std::cerr << "lab-check: no usable GPU here (" << (gpu.why_not.empty() ? "the driver sees none" : gpu.why_not)
              << "): each submission is still built and inspected, but no lesson program can run, "
                 "so every timed or validated rule will read `environment`\n";
  for (const auto& s : submissions) {
    bool any = false;
    for (const auto& l : lessons) any = any || submitted_file(s, l).has_value();
    if (!any)
      std::cerr << "lab-check: warning: " << s << " holds no NN-topic/exercise.cu (nor "
                   "lessons/NN-topic/exercise.cu): every lesson is graded \"not submitted\"\n";
  }
  const fs::path gdir = fs::absolute(grading_dir.empty() ? bdir / "grading" : fs::path(grading_dir));
  // What a student's build and program must not see (they are hidden behind empty read-only
  // folders; a program still sees its own binary and work folder, a build what it reads).
  SandboxPolicy policy;
  policy.private_tmp = true;
  policy.run_as_nobody = true;
  policy.unprivileged_builds = true;
  const fs::path source = fs::absolute(c.source_dir);
  policy.hide_from_builds = {fs::absolute(out), source / "solutions", bdir / "lessons"};
  policy.hide_from_programs = {fs::absolute(out), source, bdir, gdir};
  for (const auto& s : submissions) {
    policy.hide_from_builds.push_back(fs::absolute(s));
    policy.hide_from_programs.push_back(fs::absolute(s));
  }
  for (const char* var : {"HOME", "TMPDIR"})
    if (const char* dir = std::getenv(var); dir && *dir) {
      policy.hide_from_builds.push_back(dir);
      policy.hide_from_programs.push_back(dir);
    }
  policy.show_to_builds = shown_to_builds(source, gdir, bdir);
  const std::string containment = set_containment(c, "namespaces", policy);
  GradingBuild build(c.source_dir, bdir, gdir,
                     jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  build.set_time_proportion(build_time.first, build_time.second);
  GradeOptions opt;
  opt.out = out;
  opt.force = force;
  opt.judge.sanitize = sanitize;
  opt.judge.timeout_s = c.timeout_s;
  opt.judge.counters = c.counters;
  opt.judge.corroborate = c.corroborate ? Corroborate::required : Corroborate::off;
  opt.judge.tracer_probe = tracer_probe(bdir);
  opt.judge.syscall_filter = use_syscall_filter(c.syscall_filter, true);
  const bool use_pristine = pristine_baselines(c, "pristine");
  const std::vector<fs::path> pristine = pristine_programs(use_pristine, bdir, lessons);
  for (std::size_t i = 0; i < lessons.size(); ++i)
    if (!pristine[i].empty()) opt.pristine[lessons[i].name] = pristine[i];
  opt.baselines = use_pristine
                      ? "timed, and results checked, in a process of their own by the course's starter (--baselines pristine)"
                      : "timed in the student's program, which also judges its results (--baselines in-process)";
  const bool table = c.format == "table";
  const bool colour = table && use_colour(stdout);
  opt.on_lesson = [&](const std::string& name, const LessonOutcome& o) {
    if (!table) return;
    std::string v = to_string(o.verdict);
    if (colour) v = std::string(o.verdict == Verdict::pass ? "\033[32m" : "\033[31m") + v + "\033[0m";
    std::cout << "  " << name << "  " << o.lesson << "  " << v << "  " << points(o.score) << "/"
              << points(o.max_score) << (o.reason.empty() ? "" : "  (" + o.reason + ")") << "  "
              << seconds_split(o) << "\n";
    // Constructs that deliberate corruption of the harness needs: an instructor looks first.
    for (const auto& flag : o.review) std::cout << "    review: " << flag << "\n";
    std::cout << std::flush;
  };
  if (table)
    std::cout << "containment: " << containment << "\nbaselines: " << opt.baselines
              << "\nsystem calls: " << describe_syscall_filter(opt.judge.syscall_filter) << "\n";
  // Configure the grading build once, up front, so each submission's time below is its own.
  const auto configure_t0 = std::chrono::steady_clock::now();
  build.prepare();
  const double configure_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - configure_t0).count();
  if (table)
    std::printf("grading build ready in %.1f s (configured once)\n", configure_s);
  json summary = json::array();
  int refused = 0;
  for (const auto& s : submissions) {
    if (table) std::cout << "grading " << s << "\n" << std::flush;
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<Report> report;
    try {
      report = grade_submission(s, lessons, build, opt);
    } catch (const SubmissionRefused& e) {  // not this one; the others are still graded
      std::cerr << "lab-check: " << e.what() << "\n";
      summary.push_back({{"submission", submission_slug(s)}, {"refused", e.what()}});
      ++refused;
      continue;
    }
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const fs::path where = fs::path(out) / submission_slug(s);
    if (!report) {
      if (table) std::cout << "  already graded: " << where.string() << " (--force grades it again)\n";
      summary.push_back({{"submission", submission_slug(s)}, {"skipped", true}});
      continue;
    }
    // Where the time went: compiling, the lesson programs themselves, and the rest (the checker).
    double build_s = 0, program_s = 0;
    for (const auto& l : report->lessons) {
      build_s += l.build_s;
      program_s += l.program_s;
    }
    const double checker_s = std::max(0.0, total_s - build_s - program_s);
    if (table) {
      std::cout << "  " << report->name << ": " << points(report->score()) << "/"
                << points(report->max_score()) << "  -> " << where.string() << "\n";
      char line[200];
      std::snprintf(line, sizeof line,
                    "  took %.1f s: builds %.1f s, lesson programs %.1f s, the checker itself %.1f s "
                    "(%.1f%% of the total)\n",
                    total_s, build_s, program_s, checker_s,
                    total_s > 0 ? 100 * checker_s / total_s : 0.0);
      std::cout << line << std::flush;
    }
    summary.push_back({{"submission", report->name}, {"score", report->score()},
                       {"max_score", report->max_score()}, {"out", where.string()},
                       {"seconds", {{"total", total_s}, {"builds", build_s},
                                    {"programs", program_s}, {"checker", checker_s}}}});
  }
  if (!table) std::cout << dump_json(summary);
  return refused == 0 ? kOk : kFailed;
}

int cmd_merge(const std::vector<std::string>& dirs, const std::string& csv, const std::string& json_out) {
  check_output_file("--csv", csv);
  if (!json_out.empty()) check_output_file("--json", json_out);
  std::vector<fs::path> paths(dirs.begin(), dirs.end());
  const Gradebook book = merge_results(paths);
  for (const auto& e : book.errors) std::cerr << "lab-check: " << e << "\n";
  for (const auto& w : book.warnings) std::cerr << "warning: " << w << "\n";
  if (book.doc["students"].empty()) {
    std::cerr << "lab-check: no usable grade record, so no gradebook was written\n";
    return kFailed;
  }
  // The good records still make a gradebook; the exit code says some were left out.
  write_file_atomic(csv, book.csv);
  if (!json_out.empty()) write_file_atomic(json_out, dump_json(book.doc));
  std::cout << book.doc["students"].size() << " students -> " << csv
            << (json_out.empty() ? "" : " and " + json_out)
            << (book.errors.empty() ? "" : " (" + std::to_string(book.errors.size()) +
                                              " record(s) left out: see above)")
            << "\n";
  return book.errors.empty() ? kOk : kFailed;
}

// selftest --seal-only: what every lesson program's object file defines and calls. No GPU.
int cmd_seal(const fs::path& bdir, const std::vector<LessonConfig>& lessons) {
  std::size_t held = 0, total = 0;
  for (const auto& l : lessons)
    for (const auto& check : seal_lesson(l, bdir)) {
      ++total;
      held += check.held ? 1 : 0;
      std::cout << (check.held ? "ok    " : "FAIL  ") << check.lesson << "  " << check.subject << ": "
                << check.expected << (check.held ? "" : "\n      " + check.detail) << "\n";
    }
  std::cout << (held == total ? "seal passed: " : "seal FAILED: ") << held << " of " << total
            << " expectations held\n";
  return held == total ? kOk : kFailed;
}

int cmd_selftest(const Common& c, const std::vector<std::string>& names, int repeat, int jobs,
                 bool mutants_once, bool no_mutants, bool seal_only, const std::string& grading_dir) {
  const fs::path bdir = build_dir_of(c);
  const auto lessons = lessons_of(c, names, "");
  build_mutant_programs(bdir);  // not in the default build (--no-mutants still runs taught paths)
  if (seal_only) return cmd_seal(bdir, lessons);
  // Programs judged as grade judges them: as root, as uid 65534 with a /tmp of their own (a
  // mutant that tries what only root could, such as opening its own /proc/self/mem, gets the
  // verdict a student's would). The compile_error mutants' builds see what grade's builds see:
  // without it, a course under /tmp was hidden from them by their private /tmp.
  if (!grading_dir.empty()) check_output_folder("--grading-dir", grading_dir);
  const fs::path gdir = grading_dir.empty() ? bdir / "grading-selftest" : fs::absolute(grading_dir);
  SandboxPolicy policy;
  policy.private_tmp = true;
  policy.run_as_nobody = true;
  policy.show_to_builds = shown_to_builds(c.source_dir, gdir, bdir);
  set_containment(c, "auto", policy);
  // No GPU: say so and let CTest count the test as skipped.
  const fs::path doctor = doctor_program(bdir);
  if (fs::exists(doctor)) {
    TempDir t("lab-selftest");
    ProcessOptions p;
    p.argv = {doctor.string(), "--json", (t.path() / "d.json").string()};
    p.workdir = t.path();  // its own to write in, as uid 65534 too
    p.timeout_s = 300;
    p.stderr_path = t.path() / "err.txt";
    const ProcessResult r = run_process(p);
    if (r.started && !r.timed_out && r.signal == 0 && r.exit_code == 77) {
      std::string said = printable(file_tail(t.path() / "err.txt", 300));
      while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
      std::cerr << "selftest skipped: no usable GPU (" << said << ")\n";
      return kSkip;
    }
  }
  SelftestOptions opt;
  opt.build_dir = bdir;
  opt.timeout_s = c.timeout_s;
  opt.counters = c.counters;
  opt.corroborate = c.corroborate ? Corroborate::required : Corroborate::off;
  opt.tracer_probe = tracer_probe(bdir);
  opt.syscall_filter = use_syscall_filter(c.syscall_filter, false);
  opt.pristine = pristine_baselines(c, "pristine");
  opt.jobs = jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  GradingBuild grading(c.source_dir, bdir, gdir, opt.jobs);
  const bool table = c.format == "table";
  const bool colour = table && use_colour(stdout);

  // Each check is printed as it is made: a lesson's mutants can take minutes.
  auto print = [&](const SelftestCheck& check) {
    if (!table) return;
    std::string mark = check.held ? "ok  " : "FAIL";
    if (colour) mark = (check.held ? "\033[32m" : "\033[31m") + mark + "\033[0m";
    std::cout << mark << "  " << check.lesson << "  " << check.subject << ": " << check.expected
              << "  [" << check.runs << (check.runs == 1 ? " run, " : " runs, ")
              << static_cast<int>(check.seconds + 0.5) << " s]";
    if (!check.margin_rule.empty())
      std::cout << "  narrowest: " << check.margin_rule << " " << fixed(check.margin, 2) << "x its bar";
    if (!check.held) std::cout << "\n      " << check.detail;
    std::cout << "\n" << std::flush;
  };
  std::map<std::string, std::vector<bool>> history;  // "lesson subject" -> held per repetition
  std::vector<SelftestCheck> all;
  bool ok = true;
  for (int rep = 0; rep < std::max(1, repeat); ++rep) {
    if (table && repeat > 1) std::cout << "repetition " << rep + 1 << "/" << repeat << "\n";
    opt.mutants = !no_mutants && (rep == 0 || !mutants_once);
    for (const auto& l : lessons) {
      for (auto& check : selftest_lesson(l, opt, &grading, print)) {
        ok = ok && check.held;
        history[check.lesson + " " + check.subject].push_back(check.held);
        all.push_back(check);
      }
    }
  }
  std::vector<std::string> flips;
  for (const auto& [key, held] : history)
    if (std::count(held.begin(), held.end(), true) != 0 && std::count(held.begin(), held.end(), false) != 0)
      flips.push_back(key + ": held " + std::to_string(std::count(held.begin(), held.end(), true)) + " of " +
                      std::to_string(held.size()) + " times");
  if (table) {
    for (const auto& f : flips) std::cout << "FLIP  " << f << "\n";
    if (repeat > 1) {  // per subject that must pass, over every round: what a README records
      std::map<std::string, const SelftestCheck*> narrowest;
      for (const auto& chk : all) {
        if (chk.margin_rule.empty()) continue;
        const SelftestCheck*& n = narrowest[chk.lesson + " " + chk.subject];
        if (!n || chk.margin < n->margin) n = &chk;
      }
      for (const auto& [key, n] : narrowest)
        std::cout << "narrowest over " << repeat << " rounds  " << key << ": " << n->margin_rule << " "
                  << fixed(n->margin, 2) << "x its bar\n";
    }
    std::size_t failed = 0;
    for (const auto& chk : all) failed += chk.held ? 0 : 1;
    std::cout << (ok ? "selftest passed: " : "selftest FAILED: ") << all.size() - failed << " of "
              << all.size() << " expectations held\n";
  } else {
    json checks = json::array();
    for (const auto& chk : all) {
      json j = {{"lesson", chk.lesson}, {"subject", chk.subject}, {"expected", chk.expected},
                {"held", chk.held}, {"detail", chk.detail}, {"runs", chk.runs}, {"seconds", chk.seconds}};
      if (!chk.margin_rule.empty()) j["narrowest"] = {{"rule", chk.margin_rule}, {"reading_over_bar", chk.margin}};
      checks.push_back(j);
    }
    std::cout << dump_json({{"ok", ok}, {"checks", checks}, {"flips", flips}});
  }
  return ok ? kOk : kFailed;
}

// handout DEST: the student's tree of this course (handout.hpp).
int cmd_handout(const Common& c, const std::string& dest) {
  const std::size_t files = write_handout(c.source_dir, dest);
  std::cout << "handout: " << files << " files -> " << dest
            << " (no solutions, mutants, answer keys or instructor notes)\n";
  return kOk;
}

int cmd_roofline(const Common& c, const std::vector<std::string>& files, const std::string& svg) {
  if (!svg.empty()) check_output_file("--svg", svg);
  const Roofline r = load_roofline(std::vector<fs::path>(files.begin(), files.end()));
  for (const auto& e : r.errors) std::cerr << "lab-check: " << e << "\n";
  for (const auto& w : r.warnings) std::cerr << "warning: " << w << "\n";
  if (r.runs.empty()) return kFailed;  // nothing usable: the errors above say why
  if (c.format == "json")
    std::cout << dump_json(roofline_json(r));
  else
    std::cout << roofline_table(r);
  if (!svg.empty()) {
    write_file_atomic(svg, roofline_svg(r));
    if (c.format == "table") std::cout << "roofline of " << r.runs.front().device << " -> " << svg << "\n";
  }
  return r.errors.empty() ? kOk : kFailed;
}

}  // namespace

int main(int argc, char** argv) {
  pin_to_one_gpu();
  install_interrupt_cleanup();
  CLI::App app{"lab-check: judges the CUDA Performance Lab's lessons by the rules in each "
               "lessons/NN-topic/check.toml. Lesson programs run as separate processes, each in "
               "its own process group with a time limit."};
  app.require_subcommand(1);
  app.fallthrough();
  Common c;
  app.add_option("--source-dir", c.source_dir, "The course repository (default: the one this lab-check was built from)")
      ->capture_default_str();
  app.add_flag("!--no-counters", c.counters,
               "Do not run ncu for the counter rules (they are reported as skipped, out of the total)");
  app.add_flag("!--no-corroborate", c.corroborate,
               "Do not check the reported times against the checker's tracer (its own CUDA events); every "
               "record then says its times were not corroborated (docs/grading-security.md)");
  app.add_flag("!--no-syscall-filter", c.syscall_filter,
               "Run lesson programs without the system-call filter (lab/syscall_filter.hpp; grade "
               "refuses to run without it where the machine cannot filter, unless this is given)");
  app.add_option("--baselines", c.baselines,
                 "Where the speedup rules' baselines are timed and the exercise's results judged "
                 "(docs/grading-security.md): pristine (a second process with no student code, the "
                 "course's starter, right after each run of the lesson: it times the baselines, "
                 "which the student's program leaves out, and checks the exercise's results from "
                 "the record that program wrote) or in-process (the student's program times them "
                 "and judges its results itself). Default: pristine for grade and selftest, "
                 "in-process for run")
      ->check(CLI::IsMember({"pristine", "in-process"}));
  app.add_option("--build-dir", c.build_dir, "The configured build folder (default: the one lab-check lives in)");
  app.add_option("--format", c.format, "Output on stdout: table or json")
      ->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  app.add_option("--containment", c.containment,
                 "How to contain the processes of student code (docs/grading-security.md): "
                 "namespaces (PID + mount namespaces; refused where the kernel does not allow "
                 "them), weak (a subreaper only), or auto (namespaces where possible, else weak). "
                 "Default: namespaces for grade, auto for run and selftest")
      ->check(CLI::IsMember({"auto", "namespaces", "weak"}));
  app.add_option("--timeout", c.timeout_s, "Seconds each lesson run may take (default: timeout_s in check.toml)")
      ->check(CLI::Validator(
          [](std::string& text) {  // CLI::PositiveNumber lets nan through (nan <= 0 is false)
            char* end = nullptr;
            const double s = std::strtod(text.c_str(), &end);
            return end != text.c_str() && *end == '\0' && std::isfinite(s) && s > 0
                       ? std::string()
                       : "must be a positive number of seconds, not " + text;
          },
          "SECONDS"));

  auto* doctor = app.add_subcommand("doctor", "What this machine has: GPU, driver, clocks, measured ceilings, "
                                              "nsys/ncu/compute-sanitizer, readable counters. Exit 3 without a GPU.");
  bool doctor_quick = false;
  doctor->add_flag("--quick", doctor_quick,
                   "The GPU, driver, clocks and tools only: no ceilings, no counter probe (the main "
                   "command's: each lesson measures its own ceilings)");
  auto* list = app.add_subcommand("list", "The lessons, their rules and points (with --overrides: "
                                          "the thresholds in force)");
  std::string list_overrides;
  list->add_option("--overrides", list_overrides, "A TOML file of threshold/points overrides")
      ->check(CLI::ExistingFile);

  auto* run = app.add_subcommand("run", "Run built lessons (starter by default) and judge them. Exit 0 only if every rule passes.");
  std::vector<std::string> run_lessons;
  std::string run_build = "starter", overrides;
  bool quick = false, sanitize = false;
  run->add_option("lessons", run_lessons, "Lessons to run, e.g. 04-coalescing or 04 (default: all)");
  run->add_option("--build", run_build, "Which program: starter, solution or submission")
      ->check(CLI::IsMember({"starter", "solution", "submission"}))->capture_default_str();
  bool report_only = false;
  run->add_flag("--report", report_only,
                "Exit 0 once every lesson was judged, passed or not; non-zero only if a lesson "
                "could not be run (missing program, crash, timeout, bad result)");
  run->add_flag("--quick", quick, "Small sizes, one run (a smoke test; performance verdicts only indicative)");
  run->add_flag("--sanitize", sanitize, "Also run compute-sanitizer memcheck and racecheck");
  run->add_option("--overrides", overrides, "A TOML file of threshold/points overrides")->check(CLI::ExistingFile);
  std::string keep;
  run->add_option("--keep", keep, "A folder for each lesson's result file and printed output "
                  "(NN-topic-BUILD.json, .txt), as the program wrote them in its last run (with re-runs, the "
                  "verdict may rest on several): numbers from a judged run, to commit");

  auto* grade = app.add_subcommand("grade", "Grade submission folders (each holds NN-topic/exercise.cu files); "
                                            "writes <out>/<name>/{result.json,gradescope.json,junit.xml}");
  std::vector<std::string> submissions;
  std::string out, grading_dir;
  int jobs = 0;
  bool force = false, grade_sanitize = false;
  grade->add_option("submissions", submissions, "Submission folders")->required()->check(CLI::ExistingDirectory);
  grade->add_option("--out", out, "Folder for the results")->required();
  grade->add_option("--overrides", overrides, "A TOML file of threshold/points overrides")->check(CLI::ExistingFile);
  grade->add_flag("--sanitize", grade_sanitize, "Also run compute-sanitizer memcheck and racecheck");
  grade->add_option("--jobs,-j", jobs, "Compiler jobs (lesson runs are always one at a time)");
  grade->add_flag("--force", force, "Grade again submissions that already have a complete result.json");
  grade->add_option("--grading-dir", grading_dir, "The grading build folder (default: <build>/grading)");
  std::pair<double, double> build_time{GradingBuild::kTimeFactor, GradingBuild::kTimeFloorS};
  grade->add_option("--build-time-factor", build_time.first,
                    "A student's build may take this many times the course's own compile time here "
                    "(the starters, timed when the grading build is prepared)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  grade->add_option("--build-time-floor", build_time.second, "... and at least this many seconds")
      ->check(CLI::PositiveNumber)->capture_default_str();

  auto* merge = app.add_subcommand("merge", "Merge graded results into one gradebook");
  std::vector<std::string> result_dirs;
  std::string csv, merge_json;
  merge->add_option("results", result_dirs, "--out folders of grade (or single submission folders)")
      ->required()->check(CLI::ExistingDirectory);
  merge->add_option("--csv", csv, "The gradebook CSV to write (student, one column per lesson, total)")->required();
  merge->add_option("--json", merge_json, "Also write the gradebook as JSON");

  auto* selftest = app.add_subcommand("selftest", "Check the checker on each lesson: the solution passes, the starter fails "
                                                  "a performance rule with its hint, each mutant gets its expected verdict "
                                                  "(the mutant programs, left out of the default build, are built first). "
                                                  "Exit 77 without a GPU.");
  std::vector<std::string> self_lessons;
  int repeat = 1;
  selftest->add_option("lessons", self_lessons, "Lessons (default: all)");
  selftest->add_option("--repeat", repeat, "Repeat N times and report expectations that flip")->check(CLI::PositiveNumber);
  bool mutants_once = false;
  selftest->add_flag("--mutants-once", mutants_once,
                     "With --repeat: judge the mutants in the first round only (solutions, "
                     "starters and the mutants expected to pass every round)");
  bool no_mutants = false;
  selftest->add_flag("--no-mutants", no_mutants, "Solutions, starters and the mutants expected to pass (taught paths, other correct designs) only");
  selftest->add_option("--jobs,-j", jobs, "Compiler jobs for compile_error mutants");
  selftest->add_option("--grading-dir", grading_dir,
                       "The build folder for compile_error mutants (default: <build>/grading-selftest; "
                       "two selftests at once, one per GPU, each need their own)");
  bool seal_only = false;
  selftest->add_flag("--seal-only", seal_only,
                     "Only the seal: every program's exercise object passes it, and the mutants "
                     "expected to be `forbidden` are refused (reads object files, needs no GPU)");

  auto* handout = app.add_subcommand("handout", "Write the tree a student receives: everything to build and run "
                                                "the lessons, without solutions/, mutants, answer keys or "
                                                "instructor notes");
  std::string handout_dest;
  handout->add_option("dest", handout_dest, "A folder that does not exist yet, or an empty one")->required();

  auto* roofline = app.add_subcommand("roofline", "Place the measured variants of lesson result files "
                                                  "(written with --json) on the roofline of their GPU; "
                                                  "optionally draw it as SVG. Exit 1 if a file was unusable.");
  std::vector<std::string> roofline_files;
  std::string svg;
  roofline->add_option("results", roofline_files, "Result files of lesson programs (--json PATH)")->required();
  roofline->add_option("--svg", svg, "Also draw the roofline into this SVG file");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kOk : kUsage;
  }
  try {
    if (*doctor) return cmd_doctor(c, doctor_quick);
    if (*list) return cmd_list(c, list_overrides);
    if (*run) return cmd_run(c, run_lessons, run_build, quick, sanitize, overrides, report_only, keep);
    if (*grade) return cmd_grade(c, submissions, out, overrides, grade_sanitize, jobs, force, grading_dir, build_time);
    if (*merge) return cmd_merge(result_dirs, csv, merge_json);
    if (*selftest) return cmd_selftest(c, self_lessons, repeat, jobs, mutants_once, no_mutants, seal_only, grading_dir);
    if (*roofline) return cmd_roofline(c, roofline_files, svg);
    if (*handout) return cmd_handout(c, handout_dest);
  } catch (const Interrupted& e) {
    std::cerr << "lab-check: interrupted; results written so far are kept\n";
    return 128 + e.signal;
  } catch (const ConfigError& e) {
    std::cerr << "lab-check: " << e.what() << "\n";
    return kUsage;
  } catch (const fs::filesystem_error& e) {
    // One line of ours, not the library's "filesystem error: ... [path]" (a link loop, a path
    // too long): the reason, and the path cut to a readable length.
    const std::string path = printable(e.path1().string());
    std::cerr << "lab-check: " << (path.size() > 200 ? path.substr(0, 200) + "..." : path) << ": "
              << e.code().message() << "\n";
    return kUsage;
  } catch (const std::exception& e) {
    std::cerr << "lab-check: " << e.what() << "\n";
    return kUsage;
  }
  return kUsage;
}
