#include "sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "cgroup.hpp"
#include "files.hpp"
#include "grade.hpp"
#include "inspect.hpp"
#include "process.hpp"
#include "lab/syscall_filter.hpp"
#include "lab/writable_places.hpp"
#include "rules.hpp"

namespace lab {

namespace {

SandboxPolicy g_policy;

// ---- helpers for the forked child: no allocation, no locks, no stdio.

// Appends the decimal digits of `n` to `out` (which has room) and returns the new end.
char* append_number(char* out, long n) {
  char digits[24];
  int k = 0;
  if (n == 0) digits[k++] = '0';
  for (; n > 0; n /= 10) digits[k++] = static_cast<char>('0' + n % 10);
  while (k > 0) *out++ = digits[--k];
  *out = '\0';
  return out;
}

char* append_text(char* out, const char* text) {
  while (*text) *out++ = *text++;
  *out = '\0';
  return out;
}

bool write_small_file(const char* path, const char* text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const auto len = std::strlen(text);
  const bool ok = ::write(fd, text, len) == static_cast<ssize_t>(len);
  ::close(fd);
  return ok;
}

[[noreturn]] void fail(int report_fd, const char* step) {
  sandbox_detail::report_failure(report_fd, step, errno);
  ::_exit(127);
}

// Creates every missing folder above `path` (an absolute path inside a fresh tmpfs).
void make_parents(const char* path) {
  char prefix[4096];
  const std::size_t n = std::strlen(path);
  if (n >= sizeof prefix) return;
  for (std::size_t i = 1; i < n; ++i) {
    if (path[i] != '/') continue;
    std::memcpy(prefix, path, i);
    prefix[i] = '\0';
    ::mkdir(prefix, 0755);  // EEXIST is the common case
  }
}

// Ends the process the way `status` (from waitpid) says another one ended, so that the checker
// sees the program's own exit code or signal. Never returns.
[[noreturn]] void end_like(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);
}

pid_t wait_for(pid_t pid, int& status) {
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, 0);
    if (w >= 0 || errno != EINTR) return w;
  }
}

// Makes the hidden folders empty and read-only, a fresh /tmp and /dev/shm, and the revealed
// paths visible again at their own place. Runs as PID 1 of the new namespaces.
void set_up_mounts(sandbox_detail::ChildPlan& plan, int report_fd) {
  // Nothing mounted here may propagate back to the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    fail(report_fd, "sandbox: making the mounts private");

  // Opened before anything is covered, so they still point at the real files.
  std::vector<int>& reveal_fd = plan.reveal_fd;  // sized before the fork
  const std::size_t reveals = plan.reveal.size();
  for (std::size_t i = 0; i < reveals; ++i)
    reveal_fd[i] = ::open(plan.reveal[i].c_str(), O_PATH | O_CLOEXEC);

  if (plan.private_tmp)
    for (const std::string& dir : plan.private_dirs) {
      struct stat st;
      if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          ::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, plan.tmp_options.c_str()) != 0)
        fail(report_fd, "sandbox: a private /tmp, /dev/shm or other folder anyone may write (tmpfs)");
    }
  // A hidden folder that is gone now was inside the private /tmp: hidden already.
  std::vector<char>& covered = plan.hidden_mounted;  // sized before the fork
  const std::size_t hides = plan.hidden.size();
  for (std::size_t i = 0; i < hides; ++i) {
    struct stat st;
    if (::stat(plan.hidden[i].c_str(), &st) != 0) continue;
    if (::mount("tmpfs", plan.hidden[i].c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0)
      fail(report_fd, "sandbox: hiding a folder (tmpfs)");
    covered[i] = 1;
  }

  for (std::size_t i = 0; i < reveals; ++i) {
    if (reveal_fd[i] < 0) continue;
    const char* path = plan.reveal[i].c_str();
    struct stat real, seen;
    if (::fstat(reveal_fd[i], &real) != 0) continue;
    if (::stat(path, &seen) == 0 && seen.st_dev == real.st_dev && seen.st_ino == real.st_ino)
      continue;  // not covered by anything
    make_parents(path);
    if (S_ISDIR(real.st_mode)) {
      ::mkdir(path, 0755);
    } else {
      const int f = ::open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (f >= 0) ::close(f);
    }
    char source[64];
    append_number(append_text(source, "/proc/self/fd/"), reveal_fd[i]);
    if (::mount(source, path, nullptr, MS_BIND | MS_REC, nullptr) != 0)
      fail(report_fd, "sandbox: showing a file or folder the run needs (bind mount)");
    ::close(reveal_fd[i]);
  }
  // A revealed folder came back whole, with what was hidden inside it (the solutions inside the
  // course, when the course is shown inside a hidden home): covered again, on top.
  for (const auto& again : plan.hidden_again) {
    struct stat st;
    if (::stat(again.c_str(), &st) == 0 &&
        ::mount("tmpfs", again.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0)
      fail(report_fd, "sandbox: hiding a folder inside a shown one (tmpfs)");
  }

  for (std::size_t i = 0; i < hides; ++i)
    if (covered[i] && ::mount(nullptr, plan.hidden[i].c_str(), nullptr,
                              MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0)
      fail(report_fd, "sandbox: making a hidden folder read-only");

  // A /proc of this PID namespace: the program sees no process but its own. Best effort: a
  // container that masks parts of /proc refuses it, and the old /proc names no process the
  // program could signal anyway (PIDs outside the namespace cannot be addressed from it).
  ::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
}

void drop_privileges(const sandbox_detail::ChildPlan& plan, int report_fd) {
  if (plan.user != 0) {
    if (::setgroups(0, nullptr) != 0) fail(report_fd, "sandbox: dropping supplementary groups");
    if (::setgid(plan.user) != 0) fail(report_fd, "sandbox: switching to the unprivileged gid");
    if (::setuid(plan.user) != 0) fail(report_fd, "sandbox: switching to the unprivileged uid");
  }
  // No setuid program (su, mount, ...) can give the student's code its privileges back.
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail(report_fd, "sandbox: setting no_new_privs");
}

// Joins the run's cgroup and sets the plan's rlimits. The first thing the child does, so that
// every process of the run (the namespace's PID 1 included) is inside both.
void apply_limits(const sandbox_detail::ChildPlan& plan, int report_fd) {
  for (int fd : plan.cgroup_procs)
    if (::write(fd, "0", 1) != 1) fail(report_fd, "sandbox: joining the run's cgroup");
  const ResourceLimits& l = plan.limits;
  const std::pair<int, std::uint64_t> limits[] = {{RLIMIT_FSIZE, l.file_bytes}, {RLIMIT_NOFILE, l.open_files},
                                                  {RLIMIT_AS, l.address_space_bytes}, {RLIMIT_NPROC, l.processes}};
  for (const auto& [resource, value] : limits) {
    if (value == 0) continue;
    struct rlimit now;
    if (::getrlimit(resource, &now) != 0) fail(report_fd, "sandbox: getrlimit");
    // Only lowered: an ordinary user cannot raise a hard limit, and a lower one already holds.
    const rlim_t bound = now.rlim_max != RLIM_INFINITY && now.rlim_max < value ? now.rlim_max : value;
    const struct rlimit lowered {bound, bound};
    if (::setrlimit(resource, &lowered) != 0) fail(report_fd, "sandbox: setting a resource limit");
  }
  // A build's tools then say "File too large" where the limit stops them, instead of dying
  // without a word (the default action of SIGXFSZ); a program's end by SIGXFSZ names the limit.
  if (plan.role == sandbox_detail::Role::build) ::signal(SIGXFSZ, SIG_IGN);
}

bool is_under(const fs::path& path, const fs::path& dir) {
  auto p = path.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++p)
    if (p == path.end() || *p != *d) return false;
  return true;
}

fs::path canonical_or_empty(const fs::path& p) {
  std::error_code ec;
  fs::path c = fs::canonical(p, ec);
  return ec ? fs::path() : c;
}

}  // namespace

std::string to_string(Containment c) {
  switch (c) {
    case Containment::none: return "none";
    case Containment::weak: return "weak";
    case Containment::namespaces: return "namespaces";
  }
  return "none";
}

void set_sandbox_policy(SandboxPolicy policy) {
  g_policy = std::move(policy);
  if (g_policy.mode == Containment::weak) sandbox_detail::become_subreaper();
}

const SandboxPolicy& sandbox_policy() { return g_policy; }

namespace {

// A probe that does the real thing in a forked child, which may write a report on `fd` before it
// ends. What it wrote, and how it ended (a wait status); `why` is set where it could not start.
struct Probe {
  bool started = false;
  std::string report;
  int status = 0;
  std::string why;
};
Probe probe_in_child(const std::function<void(int fd)>& child) {
  Probe p;
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    p.why = std::string("pipe: ") + std::strerror(errno);
    return p;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(report[0]);
    child(report[1]);
    ::_exit(0);
  }
  ::close(report[1]);
  if (pid < 0) {
    p.why = std::string("fork: ") + std::strerror(errno);
    ::close(report[0]);
    return p;
  }
  char text[512];
  for (ssize_t n; (n = ::read(report[0], text, sizeof text)) > 0;) p.report.append(text, static_cast<std::size_t>(n));
  ::close(report[0]);
  wait_for(pid, p.status);
  p.started = true;
  return p;
}

}  // namespace

bool namespaces_available(std::string& why) {
  static int known = -1;  // -1: not probed yet
  static std::string known_why;
  if (known < 0) {
    // The probe is the real thing: the same child set-up, with a private /tmp mounted.
    sandbox_detail::ChildPlan plan;
    plan.namespaces = true;
    plan.private_tmp = true;
    plan.private_dirs = sandbox_detail::private_folders();
    const Probe p = probe_in_child([&](int fd) { sandbox_detail::enter(plan, fd); });
    sandbox_detail::StartFailure failure;
    const bool failed = p.report.size() == sizeof failure;
    if (failed) std::memcpy(&failure, p.report.data(), sizeof failure);
    known = p.started && !failed && WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0;
    known_why = !p.started ? p.why
                : failed   ? std::string(failure.step) + ": " + std::strerror(failure.error)
                : known    ? std::string()
                           : "the probe process failed";
  }
  why = known_why;
  return known == 1;
}

bool syscall_filter_available(std::string& why) {
  static int known = -1;  // -1: not probed yet
  static std::string known_why;
  if (known < 0) {
    const Probe p = probe_in_child([](int fd) {
      auto fail = [&](const std::string& said) {
        (void)!::write(fd, said.data(), said.size());
        ::_exit(1);
      };
      std::string failed;
      if (!restrict_system_calls(failed)) fail(failed);
      if (::open("/dev/null", O_RDONLY) >= 0 || errno != EPERM) fail("a file could still be opened under the filter");
      ::fork();  // must end the process
      fail("a process could still be started under the filter");
    });
    known = p.started && WIFSIGNALED(p.status) && WTERMSIG(p.status) == SIGSYS;
    known_why = !p.started ? p.why : known ? std::string() : !p.report.empty() ? p.report : "the probe process failed";
  }
  why = known_why;
  return known == 1;
}

bool use_syscall_filter(bool wanted, bool refuse, const std::function<bool(std::string&)>& probe) {
  if (!wanted) return false;
  std::string why;
  if (probe(why)) return true;
  const std::string what = "this machine cannot filter a lesson program's system calls (" + why +
                           "; seccomp, see docs/grading-security.md, \"The system-call filter\")";
  if (refuse)
    throw ConfigError(what + ": an exercise could then start threads or processes and open files "
                             "by means the seal cannot see. Pass --no-syscall-filter to grade without it");
  std::cerr << "lab-check: " << what << ": running without it\n";
  return false;
}

Containment choose_containment(const std::string& requested, std::string& note) {
  note.clear();
  if (requested == "none") return Containment::none;
  if (requested == "weak") return Containment::weak;
  std::string why;
  if (namespaces_available(why)) return Containment::namespaces;
  const std::string need = ::geteuid() == 0
      ? "root with CAP_SYS_ADMIN (a container needs --cap-add SYS_ADMIN, or seccomp allowing unshare)"
      : "unprivileged user namespaces (kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 "
        "kernel.apparmor_restrict_unprivileged_userns=0), or running as root";
  if (requested == "auto") {
    note = "containment: weak (no PID/mount namespaces here: " + why +
           "); a program's detached processes are killed after it, but it can read and write "
           "what the grader's user can";
    return Containment::weak;
  }
  throw ConfigError("containment needs PID and mount namespaces, which this machine refused (" + why +
                    "). They need " + need + ". See docs/grading-security.md; pass "
                    "--containment=weak to grade with a subreaper only, which kills detached "
                    "processes but cannot hide the output folder, other submissions or the "
                    "solutions from a student's program, nor stop its processes if lab-check "
                    "itself is killed");
}

bool builds_run_as_build_user() {
  return g_policy.mode != Containment::none && g_policy.unprivileged_builds && ::geteuid() == 0;
}

std::string describe_policy(const SandboxPolicy& p) {
  std::string s = to_string(p.mode);
  if (p.mode == Containment::none) return s;
  if (p.mode == Containment::namespaces)
    s += ::geteuid() == 0 ? " (PID + mount)" : " (user + PID + mount)";
  if (p.mode == Containment::weak) s += " (subreaper)";
  if (::geteuid() == 0) {
    if (p.unprivileged_builds) s += "; builds run as uid 65533";
    if (p.run_as_nobody) s += p.unprivileged_builds ? ", lesson programs as uid 65534" : "; lesson programs run as uid 65534";
  }
  const CgroupSupport& cg = cgroup_support();
  if (cg.memory && cg.processes) s += "; memory and processes bounded by " + cg.how;
  else s += "; " + std::string(cg.memory ? "processes" : cg.processes ? "memory" : "memory and processes") +
            " not bounded by a cgroup (" + cg.why_not + ")";
  return s;
}

std::string byte_size(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string limit_hit(const ResourceLimits& limits, int signal, long memory_events, long process_events) {
  std::string said;
  auto add = [&](const std::string& s) { said += (said.empty() ? "" : "; ") + s; };
  if (signal == SIGXFSZ && limits.file_bytes > 0)
    add("it wrote a file of more than " + byte_size(limits.file_bytes) + ", the most one file may hold here");
  if (memory_events > 0)
    add("its processes used more than " + byte_size(limits.memory_bytes) +
        " of memory together, the limit here, and were killed");
  if (process_events > 0)
    add("it tried to run more than " + std::to_string(limits.processes) +
        " processes and threads at once, the limit here, and was refused");
  return said;
}

bool SubmissionReads::allows(const fs::path& file) const {
  if (files.count(file)) return true;
  for (const auto& folder : folders)
    if (is_under(file, folder)) return true;
  return false;
}

std::vector<fs::path> compiler_include_folders(const fs::path& build_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& version : fs::directory_iterator(build_dir / "CMakeFiles", ec)) {
    for (const char* language : {"C", "CXX", "CUDA"}) {
      std::ifstream in(version.path() / ("CMake" + std::string(language) + "Compiler.cmake"));
      for (std::string line; std::getline(in, line);) {
        const std::string lang = language;
        std::string list;
        for (const std::string& key : {"CMAKE_" + lang + "_IMPLICIT_INCLUDE_DIRECTORIES", "CMAKE_" + lang + "_TOOLKIT_INCLUDE_DIRECTORIES"})
          if (line.rfind("set(" + key + " \"", 0) == 0) list = line.substr(key.size() + 6);
        if (list.empty()) continue;
        std::istringstream folders(list.substr(0, list.find('"')));
        for (std::string folder; std::getline(folders, folder, ';');)
          if (const fs::path c = canonical_or_empty(folder); !c.empty()) out.push_back(c);
      }
    }
  }
  return out;
}

std::vector<std::string> depfile_inputs(const std::string& text) {
  // The first rule, its continuation lines joined; names are separated by unescaped blanks.
  std::string rule;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      rule += ' ';
      i += text[i + 1] == '\r' && i + 2 < text.size() && text[i + 2] == '\n' ? 2 : 1;
      continue;
    }
    if (text[i] == '\n') break;
    rule += text[i];
  }
  std::size_t colon = 0;  // the target's colon: followed by a blank or the end
  while ((colon = rule.find(':', colon)) != std::string::npos && colon + 1 < rule.size() &&
         rule[colon + 1] != ' ' && rule[colon + 1] != '\t')
    ++colon;
  std::vector<std::string> out;
  if (colon == std::string::npos) return out;
  std::string name;
  for (std::size_t i = colon + 1; i <= rule.size(); ++i) {
    const char c = i < rule.size() ? rule[i] : ' ';
    if (c == '\\' && i + 1 < rule.size() && (rule[i + 1] == ' ' || rule[i + 1] == '#')) {
      name += rule[++i];
    } else if (c == '$' && i + 1 < rule.size() && rule[i + 1] == '$') {
      name += rule[++i];
    } else if (c == ' ' || c == '\t') {
      if (!name.empty()) out.push_back(name);
      name.clear();
    } else {
      name += c;
    }
  }
  return out;
}

std::optional<std::vector<fs::path>> files_compile_read(const fs::path& build_dir, const fs::path& object,
                                                        const fs::path& ninja, std::string& why) {
  const fs::path obj = object.lexically_normal();
  std::vector<std::string> names;
  if (!ninja.empty() && fs::exists(build_dir / "build.ninja")) {
    // ninja reads the compiler's depfile into its log (.ninja_deps) and deletes the file.
    TempDir t("lab-check-deps");
    ProcessOptions p;
    p.kind = ProcessKind::tool;  // reads the build's log; runs nothing of the student's
    const fs::path relative = obj.is_absolute() ? obj.lexically_relative(build_dir) : obj;
    p.argv = {ninja.string(), "-C", build_dir.string(), "-t", "deps", relative.string()};
    p.stdout_path = p.stderr_path = t.path() / "deps.txt";
    p.timeout_s = 60;
    p.max_output_bytes = 16u << 20;
    const ProcessResult r = run_process(p);
    std::ifstream in(p.stdout_path);
    std::string first;
    std::getline(in, first);
    if (!r.exited_ok() || first.find("#deps") == std::string::npos) {
      why = "ninja's deps log has no list of what " + obj.string() + " read (" + first + ")";
      return std::nullopt;
    }
    for (std::string line; std::getline(in, line);)
      if (line.rfind("    ", 0) == 0) names.push_back(line.substr(4));
  } else {
    const fs::path depfile = obj.string() + ".d";
    std::string error;
    const auto text = read_file_limited(depfile, 64u << 20, error);
    if (!text) {
      why = "no depfile " + depfile.string() + " (" + error + ")";
      return std::nullopt;
    }
    names = depfile_inputs(*text);
  }
  std::vector<fs::path> out;
  for (const auto& n : names) out.push_back(fs::path(n).is_absolute() ? fs::path(n) : build_dir / n);
  return out;
}

SubmissionReads submission_reads(const fs::path& source_dir, const fs::path& build_dir,
                                 const std::string& lesson, const fs::path& staged) {
  SubmissionReads reads;
  const fs::path lesson_dir = source_dir / "lessons" / lesson, library = source_dir / "common" / "include";
  if (const fs::path c = canonical_or_empty(staged); !c.empty()) reads.files.insert(c);
  std::string why;
  const auto starter = program_objects(build_dir / "lessons" / lesson / "starter", why);
  const auto cache = read_cmake_cache(build_dir);
  const fs::path ninja = cache.count("CMAKE_MAKE_PROGRAM") ? fs::path(cache.at("CMAKE_MAKE_PROGRAM")) : fs::path();
  const auto read = starter ? files_compile_read(build_dir, starter->exercise, ninja, why) : std::nullopt;
  if (!read)
    throw ConfigError("the grading build " + build_dir.string() + " kept no list of the files " + lesson +
                      "'s starter read, which a submission's reads are held against: " + why);
  for (const auto& f : *read)
    if (const fs::path c = canonical_or_empty(f); !c.empty()) reads.files.insert(c);
  if (const fs::path c = canonical_or_empty(library); !c.empty()) reads.folders.push_back(c);
  for (const auto& f : compiler_include_folders(build_dir)) reads.folders.push_back(f);
  // Where a name is looked for: beside the file, the lesson's folder and the library's headers
  // (the course's include paths), then the compilers' own folders.
  reads.search = {staged.parent_path(), lesson_dir, library};
  for (const auto& f : reads.folders) reads.search.push_back(f);
  return reads;
}

namespace {

const char* const kMayRead =
    "a submission may read only its own exercise.cu, its lesson's exercise.cuh, the lab library's "
    "headers (lab/...), and the CUDA toolkit's and the system's headers";

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `word` stands at `at` of `text` as a whole identifier.
bool word_at(const std::string& text, std::size_t at, const std::string& word) {
  return text.compare(at, word.size(), word) == 0 && (at == 0 || !identifier_char(text[at - 1])) &&
         (at + word.size() >= text.size() || !identifier_char(text[at + word.size()]));
}

}  // namespace

std::string refuse_unsafe_reads(const std::string& source, const SubmissionReads& reads) {
  const SourceText s = source_text(source, true);
  const std::string& t = s.text;
  auto where = [&](std::size_t at) {
    return "exercise.cu line " + std::to_string(s.line.empty() ? 1 : s.line[std::min(at, s.line.size() - 1)]) + ": ";
  };
  // Reads that no dependency list shows, wherever they stand (a literal, a macro's body).
  std::string lower = t;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* directive : {"incbin", ".include"})
    if (const auto at = lower.find(directive); at != std::string::npos)
      return where(at) + "an assembler ." + std::string(directive[0] == '.' ? directive + 1 : directive) +
             " directive reads a file that the build's list of what it read does not show; " + kMayRead;
  for (std::size_t at = 0; (at = t.find("dependency", at)) != std::string::npos; ++at)
    if (word_at(t, at, "dependency"))
      return where(at) + "#pragma GCC dependency reads a file that the build's list of what it read "
                         "does not show; " + kMayRead;

  // `rest` follows a directive that reads a file: its name must be written out, and be one it may read.
  auto check = [&](std::size_t at, const std::string& how) -> std::string {
    std::size_t i = at;
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t')) ++i;
    const char open = i < t.size() ? t[i] : '\0';
    const char close = open == '"' ? '"' : open == '<' ? '>' : '\0';
    const auto end = close ? t.find(close, i + 1) : std::string::npos;
    if (end == std::string::npos || t.find('\n', i) < end)
      return where(at) + how + " names its file through a macro (or not at all): write the header's "
                               "name in quotes or angle brackets, so it can be checked before the build";
    const std::string name = t.substr(i + 1, end - i - 1);
    const std::string shown = how + " " + open + name + close;
    const fs::path path(name);
    if (name.empty() || path.is_absolute())
      return where(at) + shown + " names a file by its absolute path; " + kMayRead;
    for (const auto& part : path)
      if (part == "..")
        return where(at) + shown + " climbs out of the folders a submission includes from (..); " + kMayRead;
    for (const auto& folder : reads.search) {
      std::error_code ec;
      const fs::path candidate = folder / path;
      const auto st = fs::status(candidate, ec);
      if (ec || !fs::exists(st)) continue;
      if (!fs::is_regular_file(st))
        return where(at) + shown + " is not a regular file (a device, a FIFO or a folder); " + kMayRead;
      if (!reads.allows(canonical_or_empty(candidate)))
        return where(at) + shown + " is " + candidate.string() + ", which a submission may not read; " + kMayRead;
    }
    return "";
  };
  std::size_t line_start = 0;
  while (line_start < t.size()) {
    const std::size_t line_end = std::min(t.find('\n', line_start), t.size());
    std::size_t i = line_start;
    while (i < line_end && (t[i] == ' ' || t[i] == '\t')) ++i;
    std::size_t after = std::string::npos;  // just past the # (or its digraph, %:)
    if (t.compare(i, 1, "#") == 0) after = i + 1;
    else if (t.compare(i, 2, "%:") == 0) after = i + 2;
    else if (t.compare(i, 3, "?\?=") == 0) after = i + 3;
    if (after != std::string::npos) {
      while (after < line_end && (t[after] == ' ' || t[after] == '\t')) ++after;
      // Line control renames the source lines compute-sanitizer reports, and racecheck judges
      // only findings with the course's source lines (a race without one is a library's).
      if (word_at(t, after, "line") || (after < line_end && std::isdigit(static_cast<unsigned char>(t[after]))))
        return where(after) + "a #line directive renames the source lines the sanitizers report: remove it";
      for (const std::string directive : {"include_next", "include", "import", "embed"})
        if (word_at(t, after, directive))
          if (auto why = check(after + directive.size(), "#" + directive); !why.empty()) return why;
    }
    line_start = line_end + 1;
  }
  for (const std::string probe : {"__has_include_next", "__has_include", "__has_embed"})
    for (std::size_t at = 0; (at = t.find(probe, at)) != std::string::npos; at += probe.size()) {
      if (!word_at(t, at, probe)) continue;
      std::size_t i = at + probe.size();
      while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
      const std::string why = i < t.size() && t[i] == '(' ? check(i + 1, probe) : where(at) + probe +
                              " without a written-out name cannot be checked before the build";
      if (!why.empty()) return why;
    }
  return "";
}

std::string refuse_what_compile_read(const fs::path& build_dir, const fs::path& program,
                                     const SubmissionReads& reads) {
  std::string why;
  const auto objects = program_objects(program, why);
  const auto cache = read_cmake_cache(build_dir);
  const fs::path ninja = cache.count("CMAKE_MAKE_PROGRAM") ? fs::path(cache.at("CMAKE_MAKE_PROGRAM")) : fs::path();
  const auto read = objects ? files_compile_read(build_dir, objects->exercise, ninja, why) : std::nullopt;
  if (!read)
    throw ConfigError("the grading build " + build_dir.string() + " kept no list of the files " +
                      program.string() + "'s exercise read: " + why);
  for (const auto& f : *read) {
    std::error_code ec;
    const fs::path c = fs::weakly_canonical(f, ec);
    if (ec || !reads.allows(c))
      return "your exercise.cu read " + f.lexically_normal().string() +
             " (the compiler's own list of the files it read says so); " + kMayRead;
  }
  return "";
}

FileLock::FileLock(const fs::path& path, const std::string& waiting_message) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::runtime_error("cannot open the lock file " + path.string() + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  if (!waiting_message.empty()) std::cerr << waiting_message << "\n" << std::flush;
  while (::flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) {
      const std::string why = std::strerror(errno);
      ::close(fd_);
      throw std::runtime_error("cannot lock " + path.string() + ": " + why);
    }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

namespace sandbox_detail {

void report_failure(int report_fd, const char* step, int error) {
  StartFailure f;
  f.error = error;
  std::size_t i = 0;
  for (; step && step[i] && i + 1 < sizeof f.step; ++i) f.step[i] = step[i];
  f.step[i] = '\0';
  (void)!::write(report_fd, &f, sizeof f);
}

const std::vector<std::string>& private_folders() {
  // Every folder anyone may write: each run gets its own, empty, so nothing one student's
  // program leaves there reaches the next, and nothing needs listing.
  return world_writable_folders();
}

ChildPlan plan_for(Role role, const std::vector<std::string>& argv, const fs::path& workdir) {
  const SandboxPolicy& policy = g_policy;
  ChildPlan plan;
  plan.role = role;
  plan.namespaces = policy.mode == Containment::namespaces;
  if (::geteuid() == 0) {
    if (role == Role::program && policy.run_as_nobody) plan.user = kProgramUser;
    if (role == Role::build && policy.unprivileged_builds) plan.user = kBuildUser;
  }
  const ResourceLimits& limits = role == Role::build ? policy.build_limits : policy.program_limits;
  plan.limits = limits;
  // RLIMIT_NPROC counts every process of the real user, not the run's: only a bound where the
  // run has a user of its own, and only where no cgroup bounds the run's processes.
  if (plan.user == 0 || cgroup_support().processes) plan.limits.processes = 0;
  if (!plan.namespaces) return plan;
  // A fresh /tmp for each run, with the folders it needs shown in it: the grading build may
  // live in /tmp, and so may a program's work folder. Four of the largest files fit in it.
  plan.private_tmp = policy.private_tmp;
  if (plan.private_tmp) plan.private_dirs = private_folders();
  plan.tmp_options = "mode=1777";
  if (limits.file_bytes > 0) plan.tmp_options += ",size=" + std::to_string(4 * limits.file_bytes);

  // Canonical, existing, and none inside another (the outer tmpfs already covers it).
  std::vector<fs::path> hidden;
  for (const auto& h : role == Role::build ? policy.hide_from_builds : policy.hide_from_programs) {
    const fs::path c = canonical_or_empty(h);
    if (c.empty() || !fs::is_directory(c) || c == c.root_path()) continue;
    hidden.push_back(c);
  }
  for (const auto& c : hidden) {
    bool nested = false;
    for (const auto& other : hidden)
      if (other != c && is_under(c, other)) nested = true;
    if (!nested) plan.hidden.push_back(c.string());
  }
  std::vector<fs::path> reveal;
  if (!workdir.empty()) reveal.push_back(workdir);
  if (role == Role::build) reveal.insert(reveal.end(), policy.show_to_builds.begin(), policy.show_to_builds.end());
  // The program, and the program a tool runs (compute-sanitizer, ncu): the executable files the
  // checker put on the command line. Data files named there stay hidden.
  for (const auto& a : argv)
    if (!a.empty() && a[0] == '/' && fs::is_regular_file(a) && ::access(a.c_str(), X_OK) == 0)
      reveal.push_back(a);
  for (const auto& r : reveal) {
    const fs::path c = canonical_or_empty(r);
    if (c.empty()) continue;
    plan.reveal.push_back(c.string());
    for (const auto& h : hidden)
      if (h != c && is_under(h, c)) plan.hidden_again.push_back(h.string());
  }
  plan.reveal_fd.assign(plan.reveal.size(), -1);
  plan.hidden_mounted.assign(plan.hidden.size(), 0);
  return plan;
}

void enter(ChildPlan& plan, int report_fd) {
  apply_limits(plan, report_fd);
  if (!plan.namespaces) {
    drop_privileges(plan, report_fd);
    return;
  }
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const bool user_ns = ::geteuid() != 0;
  if (::unshare(CLONE_NEWPID | CLONE_NEWNS | (user_ns ? CLONE_NEWUSER : 0)) != 0)
    fail(report_fd, user_ns ? "sandbox: unshare(user, PID and mount namespaces)"
                            : "sandbox: unshare(PID and mount namespaces)");
  if (user_ns) {
    // The same ids inside: the program stays an ordinary user there and keeps no capability
    // after exec, so it cannot unmount what hides the folders.
    char map[64];
    append_text(append_number(append_text(append_number(map, uid), " "), uid), " 1\n");
    if (!write_small_file("/proc/self/setgroups", "deny") || !write_small_file("/proc/self/uid_map", map))
      fail(report_fd, "sandbox: writing the user namespace's uid_map");
    append_text(append_number(append_text(append_number(map, gid), " "), gid), " 1\n");
    if (!write_small_file("/proc/self/gid_map", map))
      fail(report_fd, "sandbox: writing the user namespace's gid_map");
  }

  int alive[2], status_pipe[2];
  if (::pipe2(alive, O_CLOEXEC) != 0 || ::pipe2(status_pipe, O_CLOEXEC) != 0)
    fail(report_fd, "sandbox: pipe");
  const pid_t init = ::fork();
  if (init < 0) fail(report_fd, "sandbox: fork (the namespace's PID 1)");
  if (init > 0) {
    // The outer process: waits, then ends as the program ended. A timeout's SIGTERM is for the
    // program; this process goes with the SIGKILL that follows (and PID 1 with it).
    ::close(report_fd);
    ::close(alive[0]);
    ::close(status_pipe[1]);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::signal(sig, SIG_IGN);
    int init_status = 0;
    wait_for(init, init_status);
    int program_status = 0;
    if (::read(status_pipe[0], &program_status, sizeof program_status) == sizeof program_status)
      end_like(program_status);
    if (WIFSIGNALED(init_status)) end_like(init_status);
    ::_exit(127);  // PID 1 failed before the program ran; it reported why
  }

  // PID 1 of the new namespace. When it exits the kernel kills every process left in it, and
  // it dies with the outer process, which dies with the checker (PR_SET_PDEATHSIG both).
  ::close(alive[1]);
  ::close(status_pipe[0]);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  pollfd parent_gone{alive[0], POLLIN, 0};
  if (::poll(&parent_gone, 1, 0) > 0) ::_exit(127);  // the outer process died before prctl
  ::close(alive[0]);
  set_up_mounts(plan, report_fd);

  const pid_t program = ::fork();
  if (program < 0) fail(report_fd, "sandbox: fork (the program)");
  if (program == 0) {
    ::close(status_pipe[1]);
    drop_privileges(plan, report_fd);
    return;  // the caller execs the program
  }
  ::close(report_fd);
  for (;;) {
    int status = 0;
    const pid_t w = ::waitpid(-1, &status, 0);  // reaps orphans of the namespace too
    if (w == program) {
      (void)!::write(status_pipe[1], &status, sizeof status);
      ::_exit(0);
    }
    if (w < 0 && errno != EINTR) ::_exit(127);
  }
}

void become_subreaper() {
  static bool done = false;
  if (!done) done = ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
}

void kill_all_descendants() {
  const pid_t self = ::getpid();
  for (int round = 0; round < 200; ++round) {
    // Who is whose parent, from /proc/<pid>/stat: "pid (comm) state ppid ...".
    std::multimap<pid_t, pid_t> children;
    if (DIR* proc = ::opendir("/proc")) {
      while (dirent* e = ::readdir(proc)) {
        const pid_t pid = static_cast<pid_t>(std::atol(e->d_name));
        if (pid <= 0) continue;
        std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
        std::string line;
        if (!std::getline(stat, line)) continue;
        const auto close = line.rfind(')');
        if (close == std::string::npos || close + 4 > line.size()) continue;
        const pid_t ppid = static_cast<pid_t>(std::atol(line.c_str() + close + 4));
        children.emplace(ppid, pid);
      }
      ::closedir(proc);
    }
    std::vector<pid_t> found, frontier{self};
    while (!frontier.empty()) {
      const pid_t p = frontier.back();
      frontier.pop_back();
      auto range = children.equal_range(p);
      for (auto it = range.first; it != range.second; ++it) {
        found.push_back(it->second);
        frontier.push_back(it->second);
      }
    }
    if (found.empty()) return;
    for (pid_t pid : found) ::kill(pid, SIGKILL);
    // Orphans were re-parented to us (the subreaper): reap the ones that are ours by now.
    for (pid_t pid : found) ::waitpid(pid, nullptr, WNOHANG);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace sandbox_detail

}  // namespace lab
