#include "grade.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include "files.hpp"
#include "inspect.hpp"
#include "process.hpp"
#include "report.hpp"
#include "sandbox.hpp"

namespace lab {

namespace {

constexpr std::uintmax_t kMaxExerciseBytes = 1u << 20;
constexpr double kConfigureTimeout = 900;

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A limit the build went over, in words for the student. Where a cgroup bounds memory and
// processes the kernel says so (r.limit); the rlimits leave only what the tool that ran into one
// said about the call that failed (the compiler's own "out of memory" names no file of theirs).
std::string build_limit_hit(const ProcessResult& r, const std::string& log, const ResourceLimits& l) {
  if (!r.limit.empty()) return r.limit;
  auto said = [&](const char* text) { return log.find(text) != std::string::npos; };
  if (l.file_bytes > 0 && (said("File too large") || said("File size limit exceeded")))
    return "a file it wrote grew past " + byte_size(l.file_bytes) +
           ", the most one file may hold here (a huge initialised array?)";
  if (l.address_space_bytes > 0 && (said("out of memory") || said("memory exhausted") ||
                                    said("Cannot allocate memory") || said("bad_alloc")))
    return "a compiler needed more than " + byte_size(l.address_space_bytes) +
           " of memory, the limit of each build process (code that grows without end at compile time?)";
  if (l.open_files > 0 && said("Too many open files"))
    return "a compiler had more than " + std::to_string(l.open_files) + " files open at once, the limit here";
  return "";
}

// Whoever owns the grading build can change what every later student is built with, so it
// belongs to the build user, which runs no student code (programs run as another user).
void give_to_build_user(const fs::path& dir) {
  std::error_code ec;
  ::lchown(dir.c_str(), kBuildUser, kBuildUser);
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    ::lchown(it->path().c_str(), kBuildUser, kBuildUser);
}

// As root, builds run as the build user (docs/grading-security.md). The grading build is brought
// up to date as root first (a changed course re-runs CMake, which may write outside the build),
// then given to that user, and one real compile as it (a lesson's starter) shows that it can
// build here. Where it cannot (the course or a compiler out of its reach), builds run as root
// from then on, and lab-check says so and why.
void hand_to_build_user(const fs::path& cmake, const fs::path& dir, const std::string& lesson) {
  const fs::path log = dir / "build-user.log";
  if (fs::exists(dir / "build.ninja")) {
    ProcessOptions regenerate;
    regenerate.kind = ProcessKind::tool;  // the course's own CMake code
    regenerate.argv = {cmake.string(), "--build", dir.string(), "--target", "build.ninja"};
    regenerate.stdout_path = regenerate.stderr_path = log;
    regenerate.timeout_s = kConfigureTimeout;
    if (const ProcessResult r = run_process(regenerate); !r.exited_ok())
      throw ConfigError("re-running CMake in the grading build " + dir.string() + " failed (" +
                        describe(r, kConfigureTimeout) + "); the end of " + log.string() + ":\n" +
                        file_tail(log, 3000));
  }
  give_to_build_user(dir);
  ProcessOptions p;
  p.kind = ProcessKind::build;
  p.argv = {cmake.string(), "--build", dir.string(), "--target", lesson + "-starter-exercise"};
  p.stdout_path = p.stderr_path = log;
  p.timeout_s = GradingBuild::kBuildTimeoutS;
  p.max_output_bytes = 4u << 20;
  const ProcessResult r = run_process(p);
  if (r.exited_ok()) return;
  SandboxPolicy policy = sandbox_policy();
  policy.unprivileged_builds = false;
  set_sandbox_policy(policy);
  std::cerr << "lab-check: builds run as root: as uid " << kBuildUser << " the grading build could not "
            << "compile " << lesson << "'s starter (" << describe(r, GradingBuild::kBuildTimeoutS) << "); the end of "
            << log.string() << ":\n" << file_tail(log, 1500) << "\nlab-check: to build as uid " << kBuildUser
            << ", every folder a build reads (the course, its dependencies, the compilers, the grading "
               "build) must be reachable by other users (docs/grading-security.md)\n";
}

fs::path cmake_program(const std::map<std::string, std::string>& cache) {
  auto it = cache.find("CMAKE_COMMAND");
  if (it != cache.end() && fs::exists(it->second)) return it->second;
  if (auto found = find_on_path("cmake")) return *found;
  throw ConfigError("cmake is not on PATH, and the build's CMakeCache.txt names none");
}

}  // namespace

std::map<std::string, std::string> read_cmake_cache(const fs::path& build_dir) {
  std::map<std::string, std::string> out;
  std::ifstream in(build_dir / "CMakeCache.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == '/') continue;
    const auto colon = line.find(':');
    const auto eq = line.find('=');
    if (colon == std::string::npos || eq == std::string::npos || colon > eq) continue;
    out[line.substr(0, colon)] = line.substr(eq + 1);
  }
  return out;
}

namespace {

// The course's own targets in the instructor's build (no student file is in them).
void build_targets(const fs::path& build_dir, const std::vector<std::string>& targets, const std::string& what) {
  TempDir t("lab-check-course-build");
  const fs::path log = t.path() / "build.log";
  ProcessOptions p;
  p.kind = ProcessKind::tool;
  p.argv = {cmake_program(read_cmake_cache(build_dir)).string(), "--build", build_dir.string(), "--target"};
  p.argv.insert(p.argv.end(), targets.begin(), targets.end());
  p.stdout_path = p.stderr_path = log;
  p.timeout_s = GradingBuild::kBuildTimeoutS;
  p.max_output_bytes = 4u << 20;
  const ProcessResult r = run_process(p);
  if (!r.exited_ok())
    throw ConfigError("building " + what + " in " + build_dir.string() + " failed (" +
                      describe(r, GradingBuild::kBuildTimeoutS) + "); the end of its output:\n" +
                      file_tail(log, 3000));
}

}  // namespace

void build_pristine_programs(const fs::path& build_dir, const std::vector<std::string>& lessons) {
  if (lessons.empty()) return;
  std::vector<std::string> targets;
  for (const auto& lesson : lessons) targets.push_back(lesson + "-starter");
  build_targets(build_dir, targets, "the course's starters, which time the speedup rules' baselines,");
}

void build_mutant_programs(const fs::path& build_dir) {
  if (!fs::exists(build_dir / "CMakeCache.txt")) return;  // not a CMake build: nothing to make
  build_targets(build_dir, {"mutants"}, "the mutant programs (target mutants)");
}

namespace {

bool blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// The file a diagnostic line is located in (gcc "path:line:", nvcc "path(line):", "In file
// included from path:line", "from path:line"), or nothing. Scanned by hand, once over the line:
// a backtracking regex here overflowed the stack on a caret line of 40,000 spaces.
std::optional<std::string> located_in(const std::string& l) {
  std::size_t at = 0;
  while (at < l.size() && blank(l[at])) ++at;
  for (const std::string_view prefix : {"In file included from ", "from "})
    if (l.compare(at, prefix.size(), prefix) == 0) {
      at += prefix.size();
      break;
    }
  const std::size_t first = at;
  while (at < l.size() && !blank(l[at]) && l[at] != ':' && l[at] != '(' && l[at] != ')') ++at;
  if (at == first || at + 1 >= l.size() || !std::isdigit(static_cast<unsigned char>(l[at + 1])))
    return std::nullopt;
  if (l[at] == '(') {
    std::size_t end = at + 1;
    while (end < l.size() && std::isdigit(static_cast<unsigned char>(l[end]))) ++end;
    if (end >= l.size() || l[end] != ')') return std::nullopt;
  } else if (l[at] != ':') {
    return std::nullopt;
  }
  return l.substr(first, at - first);
}

// Whether a line is a compiler's, linker's or make's error: "error" as a word after the start,
// a blank, ':' or '(' ("fatal error", "error:", "(error)"), a linker's "undefined reference" or
// "multiple definition", or make's "Error 1".
bool error_line(const std::string& l) {
  for (std::size_t at = l.find("error"); at != std::string::npos; at = l.find("error", at + 1)) {
    const bool starts = at == 0 || blank(l[at - 1]) || l[at - 1] == ':' || l[at - 1] == '(';
    const std::size_t after = at + 5;
    const bool ends = after == l.size() ||
                      !(std::isalnum(static_cast<unsigned char>(l[after])) || l[after] == '_');
    if (starts && ends) return true;
  }
  if (l.find(": undefined reference") != std::string::npos ||
      l.find(": multiple definition") != std::string::npos)
    return true;
  for (std::size_t at = l.find("Error "); at != std::string::npos; at = l.find("Error ", at + 1))
    if (at + 6 < l.size() && std::isdigit(static_cast<unsigned char>(l[at + 6]))) return true;
  return false;
}

// Keeps only what the compiler said about `own_file`: a diagnostic located in any other file
// could quote that file's lines, a host file or someone else's code, so it becomes one neutral
// line, and the indented source and caret lines under it go with it.
std::vector<std::string> own_file_lines(const std::vector<std::string>& lines, const std::string& own_file) {
  static const std::string hidden = "(a message about another file than your exercise.cu is not shown)";
  std::vector<std::string> out;
  bool in_foreign = false;
  for (const auto& l : lines) {
    if (const auto file = located_in(l)) {
      in_foreign = *file != own_file;
      if (!in_foreign) out.push_back(l);
      else if (out.empty() || out.back() != hidden) out.push_back(hidden);
      continue;
    }
    const bool indented = !l.empty() && (l[0] == ' ' || l[0] == '\t');
    if (in_foreign && indented) continue;  // the foreign file's source line and caret
    in_foreign = false;
    out.push_back(l);
  }
  return out;
}

// The architectures CMake detected for "native" when it configured @p main_build (recorded in
// CMakeFiles/<version>/CMakeCUDACompiler.cmake, e.g. "90-real"); none if it found none.
std::optional<std::string> native_architectures(const fs::path& main_build) {
  const std::string prefix = "set(CMAKE_CUDA_ARCHITECTURES_NATIVE \"";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(main_build / "CMakeFiles", ec)) {
    std::ifstream in(e.path() / "CMakeCUDACompiler.cmake");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(prefix, 0) != 0) continue;
      const auto end = line.find('"', prefix.size());
      if (end != std::string::npos && end > prefix.size()) return line.substr(prefix.size(), end - prefix.size());
    }
  }
  return std::nullopt;
}

}  // namespace

std::string compiler_errors(const std::string& log, const std::string& staging_prefix,
                            std::size_t max_lines, const std::string& own_file) {
  // The staging folder's path taken out in one pass (an erase per occurrence was quadratic).
  std::string text;
  if (staging_prefix.empty()) {
    text = log;
  } else {
    text.reserve(log.size());
    std::size_t from = 0;
    for (auto at = log.find(staging_prefix); at != std::string::npos; at = log.find(staging_prefix, from)) {
      text.append(log, from, at - from);
      from = at + staging_prefix.size();
    }
    text.append(log, from, std::string::npos);
  }
  // Every line cut to kMaxParsedLine before anything looks at it.
  std::vector<std::string> lines = bounded_lines(text);
  if (!own_file.empty()) lines = own_file_lines(lines, own_file);

  std::vector<std::string> picked;
  for (std::size_t i = 0; i < lines.size() && picked.size() < max_lines; ++i) {
    const std::string& l = lines[i];
    if (l.rfind("FAILED:", 0) == 0 || l.rfind("ninja:", 0) == 0 || l.rfind("gmake", 0) == 0) continue;
    if (!error_line(l)) continue;
    picked.push_back(l);
    // The source line and caret nvcc and gcc print under an error.
    const std::size_t last = std::min(i + 2, lines.size() - 1);
    std::size_t k = i + 1;
    for (; k <= last && picked.size() < max_lines; ++k) {
      if (lines[k].empty() || error_line(lines[k]) ||
          lines[k].rfind("FAILED:", 0) == 0 || lines[k].rfind("ninja:", 0) == 0)
        break;
      picked.push_back(lines[k]);
    }
    i = k - 1;
  }
  if (picked.empty()) {  // no recognisable error line: the end of the log says most
    const std::size_t from = lines.size() > max_lines ? lines.size() - max_lines : 0;
    picked.assign(lines.begin() + static_cast<std::ptrdiff_t>(from), lines.end());
  }
  std::string out;
  for (const auto& p : picked) out += p + "\n";
  return printable(out);
}

GradingBuild::GradingBuild(fs::path source_dir, fs::path main_build, fs::path dir, int jobs)
    : source_(std::move(source_dir)), main_build_(std::move(main_build)), dir_(std::move(dir)),
      jobs_(jobs < 1 ? 1 : jobs) {}

void GradingBuild::stage(const std::string& lesson, const std::string& content) {
  const fs::path target = dir_ / "staging" / lesson / "exercise.cu";
  // Unchanged content keeps its timestamp, so the build skips it.
  if (fs::exists(target) && read_all(target) == content) return;
  write_file_atomic(target, content);
}

std::vector<std::string> GradingBuild::lessons_with_starter() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(source_ / "lessons", ec))
    if (fs::exists(entry.path() / "exercise.cu")) out.push_back(entry.path().filename().string());
  return out;
}

void GradingBuild::clear_student_files() {
  steps_deadline_.reset();
  std::error_code ec;
  fs::remove_all(dir_ / "staging", ec);
  fs::remove_all(dir_ / "logs", ec);
  for (const auto& lesson : lessons_with_starter()) {
    stage(lesson, read_all(source_ / "lessons" / lesson / "exercise.cu"));
    fs::remove(dir_ / "lessons" / lesson / "submission", ec);
    // Its object files, in CMakeFiles/<lesson>-submission*.dir (where, depends on the lesson's
    // CMakeLists and on how LabLesson.cmake splits the program); the build redoes them.
    std::vector<fs::path> doomed;
    for (const fs::path& cmake_files :
         {dir_ / "lessons" / lesson / "CMakeFiles", dir_ / "lessons" / "CMakeFiles", dir_ / "CMakeFiles"}) {
      for (const auto& target : fs::directory_iterator(cmake_files, ec)) {
        if (target.path().filename().string().rfind(lesson + "-submission", 0) != 0) continue;
        for (const auto& f : fs::recursive_directory_iterator(target.path(), ec)) {
          const std::string ext = f.path().extension().string();
          if (ext == ".o" || ext == ".obj") doomed.push_back(f.path());
        }
      }
    }
    for (const auto& f : doomed) fs::remove(f, ec);
  }
}

std::vector<fs::path> shown_to_builds(const fs::path& source, const fs::path& grading_dir,
                                      const fs::path& main_build) {
  std::vector<fs::path> shown = {fs::absolute(source), fs::absolute(grading_dir),
                                 fs::absolute(main_build) / "_deps"};
  if (const auto cache = read_cmake_cache(main_build); cache.count("LAB_DEPS_DIR"))
    shown.push_back(cache.at("LAB_DEPS_DIR"));
  return shown;
}

void GradingBuild::prepare() {
  if (prepared_) return;
  fs::create_directories(dir_);
  if (!lock_)
    lock_ = std::make_unique<FileLock>(dir_ / "lab-check.lock",
        "lab-check: waiting for another lab-check that uses the grading build " + dir_.string() +
        " (each grading command needs its own: --grading-dir)");
  bool staged_new = false;
  for (const auto& lesson : lessons_with_starter()) {
    if (!fs::exists(dir_ / "staging" / lesson / "exercise.cu")) {
      stage(lesson, read_all(source_ / "lessons" / lesson / "exercise.cu"));
      staged_new = true;
    }
  }
  const auto main_cache = read_cmake_cache(main_build_);
  const auto cache = read_cmake_cache(dir_);
  const fs::path staging = fs::absolute(dir_ / "staging");
  auto cached = [&](const std::string& key) { return cache.count(key) ? cache.at(key) : std::string(); };
  const auto lessons = lessons_with_starter();
  if (!staged_new && cached("LAB_SUBMISSION_DIR") == staging.string() && cached("LAB_GRADING_BUILD") == "ON") {
    // Configured by an earlier run; the build re-runs CMake if needed.
    if (builds_run_as_build_user() && !lessons.empty())
      hand_to_build_user(cmake_program(main_cache), dir_, lessons.front());
    time_pristine_compile();
    prepared_ = true;
    return;
  }
  ProcessOptions p;
  p.kind = ProcessKind::tool;  // the course's own CMake code, before any student file is there
  p.argv = {cmake_program(main_cache).string(), "-S", source_.string(), "-B", dir_.string()};
  auto generator = main_cache.find("CMAKE_GENERATOR");
  p.argv.push_back("-G");
  p.argv.push_back(generator != main_cache.end() ? generator->second : "Ninja");
  p.argv.push_back("-DLAB_SUBMISSION_DIR=" + staging.string());
  p.argv.push_back("-DLAB_BUILD_TESTS=OFF");
  p.argv.push_back("-DLAB_GRADING_BUILD=ON");  // no solution or mutant programs in this tree
  // Same compilers, architectures, build type and dependency sources as the current build.
  for (const char* key : {"CMAKE_CUDA_ARCHITECTURES", "CMAKE_BUILD_TYPE", "CMAKE_CUDA_COMPILER",
                          "CMAKE_CXX_COMPILER", "LAB_DEPS_DIR", "FETCHCONTENT_FULLY_DISCONNECTED"}) {
    auto it = main_cache.find(key);
    if (it == main_cache.end() || it->second.empty()) continue;
    std::string value = it->second;
    // "native" would be resolved again where the build runs, and a contained build may see no
    // GPU (nvcc then falls back to its default architecture): use what the main build found.
    if (std::string(key) == "CMAKE_CUDA_ARCHITECTURES" && value == "native")
      value = native_architectures(main_build_).value_or(value);
    p.argv.push_back(std::string("-D") + key + "=" + value);
  }
  if (fs::is_directory(main_build_ / "_deps"))
    p.argv.push_back("-DFETCHCONTENT_BASE_DIR=" + (main_build_ / "_deps").string());
  const fs::path log = dir_ / "configure.log";
  p.stdout_path = p.stderr_path = log;
  p.timeout_s = kConfigureTimeout;
  p.max_output_bytes = 8u << 20;
  const ProcessResult r = run_process(p);
  if (!r.exited_ok())
    throw ConfigError("configuring the grading build " + dir_.string() + " failed (" +
                      describe(r, kConfigureTimeout) + "); the end of " + log.string() + ":\n" +
                      file_tail(log, 3000));
  if (builds_run_as_build_user() && !lessons.empty())
    hand_to_build_user(cmake_program(main_cache), dir_, lessons.front());
  time_pristine_compile();
  prepared_ = true;
}

// The course's own compile time here, which a student's build limits are in proportion to:
// the starters (harness and library with them) brought up to date untimed, then every lesson's
// starter exercise compiled and linked again, timed. Its list of what it read is then there too.
void GradingBuild::time_pristine_compile() {
  std::vector<std::string> starters;
  for (const auto& lesson : lessons_with_starter()) starters.push_back(lesson + "-starter");
  if (starters.empty()) return;
  const fs::path log = dir_ / "pristine-build.log";
  auto build_starters = [&] {
    const ProcessResult r = run_build(starters, {}, log, kBuildTimeoutS);
    if (!r.exited_ok())
      throw ConfigError("building the course's starters in the grading build " + dir_.string() + " failed (" +
                        describe(r, kBuildTimeoutS) + "); the end of " + log.string() + ":\n" + file_tail(log, 3000));
  };
  build_starters();
  for (const auto& target : starters) {
    std::string why;
    std::error_code ec;
    const fs::path program = dir_ / "lessons" / target.substr(0, target.size() - 8) / "starter";
    if (const auto objects = program_objects(program, why)) fs::remove(objects->exercise, ec);
  }
  const auto t0 = std::chrono::steady_clock::now();
  build_starters();
  pristine_compile_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!fixed_limits_)
    all_lessons_timeout_s_ = lesson_timeout_s_ = std::max(time_floor_s_, time_factor_ * pristine_compile_s_);
}

SubmissionReads GradingBuild::reads(const std::string& lesson) const {
  return submission_reads(source_, dir_, lesson, dir_ / "staging" / lesson / "exercise.cu");
}

void GradingBuild::set_time_limits(double all_lessons_s, double lesson_s) {
  all_lessons_timeout_s_ = all_lessons_s;
  lesson_timeout_s_ = lesson_s;
  fixed_limits_ = true;
}

void GradingBuild::set_time_proportion(double factor, double floor_s) {
  time_factor_ = factor;
  time_floor_s_ = floor_s;
  if (!fixed_limits_ && pristine_compile_s_ > 0)
    all_lessons_timeout_s_ = lesson_timeout_s_ = std::max(time_floor_s_, time_factor_ * pristine_compile_s_);
}

namespace {

// A handed-in exercise.cu's text: only a regular file (a link is not followed), at most
// kMaxExerciseBytes. nullopt, with `why` for the student, where it cannot be read.
std::optional<std::string> read_exercise(const fs::path& exercise, std::string& why) {
  std::error_code ec;
  const auto st = fs::symlink_status(exercise, ec);
  if (ec || !fs::is_regular_file(st)) {
    why = exercise.filename().string() + " is not a regular file (links are not followed)";
    return std::nullopt;
  }
  auto content = read_file_limited(exercise, kMaxExerciseBytes, why);
  if (!content) why = "exercise.cu " + why;
  return content;
}

}  // namespace

std::string GradingBuild::stage_submission(const LessonConfig& lesson, const fs::path& exercise) {
  std::string why;
  const auto content = read_exercise(exercise, why);
  return content ? stage_content(lesson, *content) : why;
}

std::string GradingBuild::stage_content(const LessonConfig& lesson, const std::string& content) {
  prepare();
  // Before any compiler sees it: a file it names that it may not read, or one that would block
  // the compiler (a device, a FIFO), is refused here.
  if (std::string unsafe = refuse_unsafe_reads(content, reads(lesson.name)); !unsafe.empty()) return unsafe;
  stage(lesson.name, content);
  std::error_code ec;
  fs::remove(dir_ / "lessons" / lesson.name / "submission", ec);  // never run a previous student's program
  return "";
}

ProcessResult GradingBuild::run_build(const std::vector<std::string>& targets, const std::vector<std::string>& tool_flags,
                                      const fs::path& log, double timeout_s) const {
  fs::create_directories(log.parent_path());
  ProcessOptions p;
  p.argv = {cmake_program(read_cmake_cache(main_build_)).string(), "--build", dir_.string(), "--target"};
  p.argv.insert(p.argv.end(), targets.begin(), targets.end());
  p.argv.push_back("-j");
  p.argv.push_back(std::to_string(jobs_));
  if (!tool_flags.empty()) {
    p.argv.push_back("--");
    p.argv.insert(p.argv.end(), tool_flags.begin(), tool_flags.end());
  }
  p.kind = ProcessKind::build;
  p.stdout_path = p.stderr_path = log;
  p.timeout_s = timeout_s;
  p.max_output_bytes = 4u << 20;
  const ProcessResult r = run_process(p);
  if (!r.started)  // not the student's doing: the build tool or its sandbox would not start
    throw ConfigError("could not run the grading build " + dir_.string() + ": " + r.start_error);
  return r;
}

void GradingBuild::build_all(const std::vector<std::string>& lessons) {
  if (lessons.empty()) return;
  prepare();
  std::vector<std::string> targets;
  for (const auto& lesson : lessons) {
    targets.push_back(lesson + "-submission");
    // The starter's object: the interface the inspection holds the exercise against.
    targets.push_back(lesson + "-starter-exercise");
  }
  // Past a lesson that does not compile, so the others still build now, in parallel. Another
  // generator stops there; the lesson steps then build what is left.
  const auto cache = read_cmake_cache(dir_);
  const std::string generator = cache.count("CMAKE_GENERATOR") ? cache.at("CMAKE_GENERATOR") : "";
  std::vector<std::string> keep_going;
  if (generator.find("Ninja") != std::string::npos) keep_going = {"-k", "0"};
  else if (generator == "Unix Makefiles") keep_going = {"-k"};
  // Whatever it ends with (errors, a limit, the time limit) is no verdict; each lesson's own step
  // says that to the student.
  run_build(targets, keep_going, dir_ / "logs" / "all-lessons.log", all_lessons_timeout_s_);
  steps_deadline_ = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(lesson_timeout_s_));
}

namespace {

// Whether the configured build in @p dir defines @p target: a line of a top-level .ninja file
// (Ninja, Ninja Multi-Config) or of the top Makefile (make) that declares it.
bool has_target(const fs::path& dir, const std::string& target) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const bool ninja = e.path().extension() == ".ninja";
    if (!ninja && e.path().filename() != "Makefile") continue;
    const std::string declares = ninja ? "build " + target + ":" : target + ":";
    std::ifstream in(e.path());
    for (std::string l; std::getline(in, l);)
      if (l.rfind(declares, 0) == 0) return true;
  }
  return false;
}

}  // namespace

GradingBuild::Built GradingBuild::build(const LessonConfig& lesson) {
  Built b;
  b.program = dir_ / "lessons" / lesson.name / "submission";
  prepare();
  const fs::path log = dir_ / "logs" / (lesson.name + ".log");
  double limit_s = lesson_timeout_s_;  // after build_all, what is left of the steps' shared limit
  if (steps_deadline_)
    limit_s = std::min(limit_s, std::max(kLeastStepS, std::chrono::duration<double>(
                                                          *steps_deadline_ - std::chrono::steady_clock::now()).count()));
  const ProcessResult r =
      run_build({lesson.name + "-submission", lesson.name + "-starter-exercise"}, {}, log, limit_s);
  if (r.exited_ok() && fs::exists(b.program)) {
    // The compiler's own list of the files it read: one a submission may not read is an error.
    b.message = refuse_what_compile_read(dir_, b.program, reads(lesson.name));
    b.ok = b.message.empty();
    std::error_code ec;
    if (!b.ok) fs::remove(b.program, ec);  // never run what was built from a file it may not read
    return b;
  }
  const std::string text = read_all(log);
  // Not the student's doing: the grading build has no such program (it was configured without
  // this lesson's staged file, or LAB_SUBMISSION_DIR was not honoured). Asked of the build's own
  // files, never of the log, which holds the student's compiler messages: an error message of
  // theirs that reads "unknown target" must not stop the grading of everyone after them.
  if (!has_target(dir_, lesson.name + "-submission"))
    throw ConfigError("the grading build " + dir_.string() + " has no target " + lesson.name +
                      "-submission: is LAB_SUBMISSION_DIR honoured by cmake/LabLesson.cmake? (see " +
                      log.string() + ")");
  const std::string prefix = fs::absolute(dir_ / "staging").string() + "/";
  b.output = compiler_errors(text, prefix, 25, lesson.name + "/exercise.cu");
  const bool limited = sandbox_policy().mode != Containment::none && !r.timed_out;
  const std::string limit = limited ? build_limit_hit(r, text, sandbox_policy().build_limits) : "";
  b.message = r.timed_out ? "building your exercise.cu " + describe(r, limit_s)
              : !limit.empty() ? "building your exercise.cu went over a limit: " + limit + "; the first errors are below"
                               : "your exercise.cu did not compile; the first errors are below";
  return b;
}

GradingBuild::Built GradingBuild::build(const LessonConfig& lesson, const fs::path& exercise) {
  if (std::string refused = stage_submission(lesson, exercise); !refused.empty()) {
    Built b;
    b.message = refused;
    return b;
  }
  return build(lesson);
}

std::optional<fs::path> submitted_file(const fs::path& submission, const LessonConfig& lesson) {
  for (const fs::path& p : {submission / lesson.name / "exercise.cu",
                            submission / "lessons" / lesson.name / "exercise.cu"}) {
    std::error_code ec;
    if (fs::exists(fs::symlink_status(p, ec))) return p;
  }
  return std::nullopt;
}

std::string link_out_of_submission(const fs::path& submission, const fs::path& file) {
  std::error_code ec;
  const fs::path root = fs::canonical(submission, ec);
  if (ec) return "the submission folder " + submission.string() + " cannot be read: " + ec.message();
  fs::path at = submission;
  for (const auto& part : file.lexically_relative(submission)) {
    at /= part;
    if (!fs::is_symlink(fs::symlink_status(at, ec))) continue;
    const std::string link = printable(at.lexically_relative(submission).string());
    const std::string target = printable(fs::read_symlink(at, ec).string());
    const fs::path real = fs::canonical(at, ec);
    if (ec) return link + " is a link to " + target + ", which leads nowhere (links are not followed)";
    const fs::path inside = real.lexically_relative(root);
    if (inside.empty() || *inside.begin() == "..")
      return link + " is a link to " + target + ", outside the submission folder: nothing outside "
             "a submission is graded as its own";
  }
  return "";
}

std::string submission_folder(const fs::path& submission) {
  const fs::path p = fs::absolute(submission).lexically_normal();  // "alice/", "." named too
  return (p.has_filename() ? p : p.parent_path()).filename().string();
}

std::string submission_slug(const fs::path& submission) {
  std::string name = submission_folder(submission);
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  if (name.empty() || name == "." || name == "..") name = "submission";
  return name;
}

namespace {

// What the grading of a submission's output folder says of itself: the submission folder it
// graded and the hash of what was handed in (both "" where no usable record says).
struct EarlierGrading {
  bool complete = false;
  std::string folder, path, content_hash;
};

// The submission folder's absolute path: two sections' "alice" have one name, two paths.
std::string submission_path(const fs::path& submission) {
  fs::path p = fs::absolute(submission).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.string();
}

// Where the earlier grading `e` in the output folder `out` was of another submission folder than
// `submission`, by its name (`a b` and `a_b`) or by its path where the record has one (sec1/alice
// and sec2/alice): "<out> holds the grading of the submission folder ...", naming it by its name,
// and its path where only that differs. Else "".
std::string graded_another(const fs::path& out, const EarlierGrading& e, const fs::path& submission) {
  const bool same_name = e.folder.empty() || e.folder == submission_folder(submission);
  if (same_name && (e.path.empty() || e.path == submission_path(submission))) return "";
  return out.string() + " holds the grading of the submission folder \"" + printable(e.folder) + "\"" +
         (same_name ? " at " + printable(e.path) : "");
}

EarlierGrading earlier_grading(const fs::path& out) {
  EarlierGrading e;
  std::string why;
  const auto doc = read_grade_record(out / "result.json", why);
  if (!doc) return e;  // none, or damaged: graded again
  e.complete = grade_record_complete(*doc);
  e.folder = doc->value("folder", "");
  e.path = doc->value("folder_path", "");
  e.content_hash = doc->value("content_hash", "");
  return e;
}

// A submission's lesson as handed in: its file, or why it is not graded, and what it holds.
// Read once: what is hashed, staged and reviewed is this one reading of the file.
struct HandedIn {
  std::optional<fs::path> file;  ///< none: not submitted
  std::string refused;           ///< why the file is not read, for the student
  std::string unread;            ///< why it could not be read (a link, too large), for the student
  std::string content;
};

std::vector<HandedIn> handed_in(const fs::path& submission, const std::vector<LessonConfig>& lessons) {
  std::vector<HandedIn> out;
  for (const auto& lesson : lessons) {
    HandedIn h;
    h.file = submitted_file(submission, lesson);
    if (h.file) {
      h.refused = link_out_of_submission(submission, *h.file);
      if (h.refused.empty()) {
        std::string why;
        if (auto text = read_exercise(*h.file, why)) h.content = std::move(*text);
        else h.unread = why;
      }
    }
    out.push_back(std::move(h));
  }
  return out;
}

// SHA-256 of everything that decides a submission's grading, lesson by lesson: whether it was
// handed in, refused (and why), and the bytes of its file, each with its length.
std::string content_hash(const std::vector<LessonConfig>& lessons, const std::vector<HandedIn>& handed) {
  std::string all;
  for (std::size_t i = 0; i < lessons.size(); ++i) {
    const HandedIn& h = handed[i];
    const std::string state = !h.file              ? "absent"
                              : !h.refused.empty() ? "refused " + h.refused
                              : !h.unread.empty()  ? "unread " + h.unread
                                                   : "file";
    for (const std::string* part : {&lessons[i].name, &state, &h.content})
      all += std::to_string(part->size()) + ":" + *part + "\n";
  }
  return sha256_hex(all);
}

// What went wrong in the checker, on one line a student can read.
std::string checker_failure(const std::string& what) {
  std::string line = printable(what);
  line = line.substr(0, line.find('\n'));
  if (line.size() > 300) line = line.substr(0, 300) + "...";
  return "the checker failed while grading this lesson, not because of your code (" + line +
         "); it is graded again when the instructor re-runs the grading";
}

}  // namespace

void check_output_folders(const std::vector<fs::path>& submissions, const fs::path& out) {
  std::map<std::string, fs::path> by_slug;
  for (const auto& s : submissions) {
    const std::string slug = submission_slug(s);
    const auto [first, fresh] = by_slug.emplace(slug, s);
    if (!fresh)
      throw ConfigError("two submissions would both be graded into " + (out / slug).string() + ": " +
                        first->second.string() + " and " + s.string() + " (rename one folder)");
    if (const std::string clash = graded_another(out / slug, earlier_grading(out / slug), s); !clash.empty())
      throw ConfigError(clash + ", and " + s.string() +
                        " would be graded into it too (rename one folder, or move that grading away)");
  }
}

std::optional<Report> grade_submission(const fs::path& submission, const std::vector<LessonConfig>& lessons,
                                       GradingBuild& build, const GradeOptions& opt) {
  const fs::path out = opt.out / submission_slug(submission);
  const std::string folder = submission_folder(submission);
  const std::vector<HandedIn> handed = handed_in(submission, lessons);
  const std::string hash = content_hash(lessons, handed);
  // Another grading command on this output folder (another GPU, an instructor re-running one
  // student) waits here, then finds the record complete and skips it.
  FileLock student_lock(out / ".lock", "lab-check: waiting for another lab-check that is grading into " + out.string());
  // check_output_folders() looked before anything was graded; another command may have graded
  // another folder of this slug since.
  const EarlierGrading earlier = earlier_grading(out);
  if (const std::string clash = graded_another(out, earlier, submission); !clash.empty())
    throw SubmissionRefused(clash + ": " + submission.string() + " is not graded into it (rename one folder)");
  // Only a complete record of this very submission is kept; a damaged one (any damage), or one
  // of other files than those handed in now, is graded again.
  if (!opt.force && earlier.complete && earlier.content_hash == hash) return std::nullopt;
  build.prepare();
  // Only this student's files in the grading build while theirs build and run, and none after.
  build.clear_student_files();
  struct ClearAfter {
    GradingBuild& b;
    ~ClearAfter() {
      try {
        b.clear_student_files();
      } catch (const std::exception&) {
        // Unwinding already (an interruption): the next command clears them before it builds.
      }
    }
  } clear_after{build};

  Report report;
  report.name = submission_slug(submission);
  report.folder = folder;
  report.folder_path = submission_path(submission);
  report.content_hash = hash;
  report.containment = describe_policy(sandbox_policy());
  report.baselines = opt.baselines;
  report.system_calls = describe_syscall_filter(opt.judge.syscall_filter);
  report.started_at = utc_now();
  // Any failure while one lesson is staged, built or judged is that lesson's: the grader's setup
  // (ConfigError) and an interruption still stop the command, with this record incomplete.
  std::map<std::string, std::string> failed;  // lesson -> what failed in the checker
  auto contain = [&](const LessonConfig& lesson, const std::function<void()>& step) {
    try {
      step();
    } catch (const Interrupted&) {
      throw;
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      failed[lesson.name] = checker_failure(e.what());
    } catch (...) {
      failed[lesson.name] = checker_failure("an exception of an unknown type");
    }
  };
  // Every submitted lesson staged first and built together (one build on every job), so the
  // lesson steps below only finish what it left or repeat a lesson's errors for its own log.
  std::map<std::string, std::string> refused;  // lesson -> why its file was not staged
  std::vector<std::string> staged;
  for (std::size_t i = 0; i < lessons.size(); ++i) {
    const LessonConfig& lesson = lessons[i];
    if (!handed[i].file) continue;
    if (const std::string& why = handed[i].refused.empty() ? handed[i].unread : handed[i].refused; !why.empty()) {
      refused[lesson.name] = why;
      continue;
    }
    contain(lesson, [&] {
      if (std::string why = build.stage_content(lesson, handed[i].content); !why.empty()) refused[lesson.name] = why;
      else staged.push_back(lesson.name);
    });
  }
  const auto all_t0 = std::chrono::steady_clock::now();
  try {
    build.build_all(staged);
  } catch (const Interrupted&) {
    throw;
  } catch (const ConfigError&) {
    throw;
  } catch (const std::exception&) {
    // Like anything it ends with, no verdict: each lesson's own build step below says.
  }
  // Its time, in equal shares, is part of each built lesson's build_s: the sum stays the total.
  const double shared_build_s =
      staged.empty() ? 0 : std::chrono::duration<double>(std::chrono::steady_clock::now() - all_t0).count() / staged.size();

  for (std::size_t i = 0; i < lessons.size(); ++i) {
    const LessonConfig& lesson = lessons[i];
    LessonOutcome outcome;
    if (!handed[i].file) {
      outcome = lesson_outcome(lesson, "submission", Verdict::fail, reason::not_submitted,
                               "not submitted (no " + lesson.name + "/exercise.cu)");
    } else if (refused.count(lesson.name)) {
      outcome = lesson_outcome(lesson, "submission", Verdict::error, reason::compile, refused[lesson.name]);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      if (!failed.count(lesson.name)) {
        contain(lesson, [&] {
          auto built = build.build(lesson);
          const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (!built.ok) {
            outcome = lesson_outcome(lesson, "submission", Verdict::error, reason::compile, built.message);
            outcome.output = built.output;
          } else {
            JudgeOptions j = opt.judge;
            j.build = "submission";
            if (const auto it = opt.pristine.find(lesson.name); it != opt.pristine.end()) j.pristine = it->second;
            outcome = opt.judge_lesson(lesson, built.program, j);
          }
          outcome.build_s = shared_build_s + build_s;
        });
      }
      if (failed.count(lesson.name)) {
        outcome = lesson_outcome(lesson, "submission", Verdict::error, reason::checker, failed[lesson.name]);
        outcome.build_s = shared_build_s;
        outcome.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
    }
    if (handed[i].file) outcome.review = review_flags(handed[i].content);  // whatever its verdict
    report.lessons.push_back(outcome);
    report.finished_at = utc_now();
    write_report_files(out, report);  // a killed grading run keeps every lesson graded so far
    if (opt.on_lesson) opt.on_lesson(report.name, outcome);
  }
  report.complete = true;
  report.finished_at = utc_now();
  write_report_files(out, report);
  return report;
}

}  // namespace lab
