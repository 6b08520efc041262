#include "cgroup.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

namespace lab {

namespace {

std::string read_small(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` to a cgroup file; false (errno set) where the kernel refused it.
bool write_small(const fs::path& p, const std::string& text) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

// Whether `word` is one of the words of `text` ("cpu memory pids\n", "rw,memory").
bool has_word(std::string text, const std::string& word, char separator = ' ') {
  for (char& c : text)
    if (c == '\n') c = separator;
  std::istringstream in(text);
  for (std::string w; std::getline(in, w, separator);)
    if (w == word) return true;
  return false;
}

// The value of "key N" in a flat-keyed cgroup file (memory.events, memory.oom_control, pids.events).
long keyed_value(const fs::path& p, const std::string& key) {
  std::istringstream in(read_small(p));
  std::string k;
  long v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

std::string why_errno(const std::string& what) { return what + ": " + std::strerror(errno); }

struct Mount {
  std::string root, point, type, options;
};

std::vector<Mount> cgroup_mounts() {
  std::vector<Mount> out;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "id parent major:minor root mount-point options [optional fields] - type source super-options"
    std::istringstream f(line);
    std::string id, parent, dev, root, point, options, field, type, source, super;
    f >> id >> parent >> dev >> root >> point >> options;
    while (f >> field && field != "-") {
    }
    f >> type >> source >> super;
    if (type == "cgroup" || type == "cgroup2") out.push_back({root, point, type, super});
  }
  return out;
}

// The folder of the checker's cgroup `path` (from /proc/self/cgroup) on mount `m`; empty if
// that mount does not reach it.
fs::path own_folder(const Mount& m, const std::string& path) {
  std::string below;
  if (m.root == "/") below = path;
  else if (path == m.root || path.rfind(m.root + "/", 0) == 0) below = path.substr(m.root.size());
  else return {};
  std::string folder = m.point + below;
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();
  return folder;
}

// Whether the checker can make cgroups in `dir`: by making one. Also removes the empty run
// cgroups a killed checker left there ("lab-check-<pid>-<n>": its process is gone, or its pid
// is this process's own, which has made none yet).
bool can_create_in(const fs::path& dir, std::string& why) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("lab-check-", 0) != 0) continue;
    const auto pid = static_cast<pid_t>(std::atol(name.c_str() + 10));
    if (pid > 0 && (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH))) ::rmdir(e.path().c_str());
  }
  const fs::path probe = dir / ("lab-check-" + std::to_string(::getpid()) + "-probe");
  if (::mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) {
    why = why_errno("cannot create a cgroup in " + dir.string());
    return false;
  }
  ::rmdir(probe.c_str());
  return true;
}

// Makes the v2 cgroup `dir` hand the `wanted` controllers to its children. A cgroup with
// processes of its own cannot (cgroup v2's "no internal processes" rule), so the checker first
// moves itself into a leaf below it. That fails where other processes share its cgroup.
// `enabled` gets what it enabled, for restore_v2.
bool delegate_v2(const fs::path& dir, const std::vector<std::string>& wanted, std::string& enabled,
                 std::string& why) {
  std::string missing;
  const std::string already = read_small(dir / "cgroup.subtree_control");
  for (const auto& c : wanted)
    if (!has_word(already, c)) missing += (missing.empty() ? "+" : " +") + c;
  if (missing.empty()) return true;
  const fs::path leaf = dir / "lab-check";
  const std::string pid = std::to_string(::getpid());
  if ((::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) || !write_small(leaf / "cgroup.procs", pid)) {
    why = why_errno("cannot move lab-check into the cgroup " + leaf.string());
    return false;
  }
  if (write_small(dir / "cgroup.subtree_control", missing)) {
    enabled = missing;
    return true;
  }
  why = why_errno("cannot enable " + missing + " in " + dir.string() + "/cgroup.subtree_control") +
        (errno == EBUSY ? " (other processes share lab-check's cgroup)" : "");
  write_small(dir / "cgroup.procs", pid);  // back where it was
  ::rmdir(leaf.c_str());
  return false;
}

struct Places {
  fs::path memory, pids;  // the parents of the run cgroups
  bool memory_v2 = false, pids_v2 = false;
  CgroupSupport support;
  fs::path delegated;    // the v2 cgroup whose controllers delegate_v2 enabled, if it did
  std::string enabled;   // "+memory +pids"
};

// When lab-check exits, the v2 cgroup it found is put back as it was: a cgroup that hands on
// controllers can take no process, which a container's later `exec` would need.
struct RestoreAtExit {
  const Places& places;
  ~RestoreAtExit() {
    if (places.delegated.empty()) return;
    std::string off = places.enabled;
    for (char& c : off)
      if (c == '+') c = '-';
    write_small(places.delegated / "cgroup.subtree_control", off);
    write_small(places.delegated / "cgroup.procs", std::to_string(::getpid()));
    ::rmdir((places.delegated / "lab-check").c_str());
  }
};

Places find_places() {
  Places p;
  std::vector<std::string> why;
  // "0::/path" for v2; "N:memory:/path" (or "N:cpu,cpuacct:/path") for each v1 hierarchy.
  std::string v2_path;
  std::map<std::string, std::string> v1_path;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) v2_path = path;
    std::istringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');) v1_path[c] = path;
  }
  const std::vector<Mount> mounts = cgroup_mounts();

  for (const auto& m : mounts) {
    if (m.type != "cgroup2" || v2_path.empty()) continue;
    const fs::path dir = own_folder(m, v2_path);
    if (dir.empty()) continue;
    const std::string available = read_small(dir / "cgroup.controllers");
    std::vector<std::string> wanted;
    for (const char* c : {"memory", "pids"})
      if (has_word(available, c)) wanted.push_back(c);
    std::string problem;
    if (wanted.empty())
      why.push_back("cgroup v2 gives " + dir.string() + " neither the memory nor the pids controller");
    else if (!delegate_v2(dir, wanted, p.enabled, problem) || !can_create_in(dir, problem))
      why.push_back(problem);
    else
      for (const auto& c : wanted) (c == "memory" ? p.memory : p.pids) = dir;
    if (!p.enabled.empty()) p.delegated = dir;
    p.memory_v2 = !p.memory.empty();
    p.pids_v2 = !p.pids.empty();
    break;
  }
  for (const char* c : {"memory", "pids"}) {
    fs::path& place = std::string(c) == "memory" ? p.memory : p.pids;
    if (!place.empty() || !v1_path.count(c)) continue;
    for (const auto& m : mounts) {
      if (m.type != "cgroup" || !has_word(m.options, c, ',')) continue;
      const fs::path dir = own_folder(m, v1_path[c]);
      std::string problem;
      if (dir.empty()) continue;
      if (can_create_in(dir, problem)) place = dir;
      else why.push_back(problem);
      break;
    }
  }

  CgroupSupport& s = p.support;
  s.memory = !p.memory.empty();
  s.processes = !p.pids.empty();
  auto version = [](bool v2) { return std::string(v2 ? "cgroup v2" : "cgroup v1"); };
  if (s.memory && s.processes && p.memory_v2 == p.pids_v2) {
    s.how = version(p.memory_v2);
  } else {
    if (s.memory) s.how = version(p.memory_v2) + " (memory)";
    if (s.processes) s.how += (s.how.empty() ? "" : ", ") + version(p.pids_v2) + " (processes)";
  }
  if (s.memory && s.processes) return p;
  if (why.empty()) why.push_back("no cgroup hierarchy with the memory and pids controllers is mounted");
  for (const auto& w : why) s.why_not += (s.why_not.empty() ? "" : "; ") + w;
  return p;
}

const Places& places() {
  static const Places p = find_places();
  static const RestoreAtExit restore{p};
  return p;
}

}  // namespace

const CgroupSupport& cgroup_support() { return places().support; }

RunCgroup::RunCgroup(const ResourceLimits& limits) {
  const Places& p = places();
  static int runs = 0;
  const std::string name = "lab-check-" + std::to_string(::getpid()) + "-" + std::to_string(++runs);
  auto make = [&](const fs::path& parent) -> fs::path {
    for (const auto& g : groups_)
      if (g.dir.parent_path() == parent) return g.dir;  // v2, or v1 with both in one hierarchy
    const fs::path dir = parent / name;
    if (::mkdir(dir.c_str(), 0755) != 0) return {};
    groups_.push_back({dir, ::open((dir / "cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC)});
    return dir;
  };
  if (limits.memory_bytes > 0 && !p.memory.empty()) {
    memory_dir_ = make(p.memory);
    memory_v2_ = p.memory_v2;
    const std::string bytes = std::to_string(limits.memory_bytes);
    if (memory_v2_ && !memory_dir_.empty()) {
      write_small(memory_dir_ / "memory.max", bytes);
      write_small(memory_dir_ / "memory.swap.max", "0");  // not a way around the bound
      write_small(memory_dir_ / "memory.oom.group", "1");  // the whole run goes, not one process
    } else if (!memory_dir_.empty()) {
      write_small(memory_dir_ / "memory.limit_in_bytes", bytes);
      write_small(memory_dir_ / "memory.memsw.limit_in_bytes", bytes);  // where swap is counted
    }
  }
  if (limits.processes > 0 && !p.pids.empty()) {
    pids_dir_ = make(p.pids);
    if (!pids_dir_.empty()) write_small(pids_dir_ / "pids.max", std::to_string(limits.processes));
  }
}

RunCgroup::~RunCgroup() {
  for (const auto& g : groups_) {
    if (g.procs_fd >= 0) ::close(g.procs_fd);
    // Empty by now but in weak containment's rare leftovers: whatever is still in it goes.
    for (int attempt = 0; attempt < 400; ++attempt) {
      if (::rmdir(g.dir.c_str()) == 0 || errno != EBUSY) break;
      std::istringstream pids(read_small(g.dir / "cgroup.procs"));
      for (long pid = 0; pids >> pid;) ::kill(static_cast<pid_t>(pid), SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

std::vector<int> RunCgroup::join_fds() const {
  std::vector<int> fds;
  for (const auto& g : groups_)
    if (g.procs_fd >= 0) fds.push_back(g.procs_fd);
  return fds;
}

long RunCgroup::memory_events() const {
  if (memory_dir_.empty()) return 0;
  return keyed_value(memory_dir_ / (memory_v2_ ? "memory.events" : "memory.oom_control"), "oom_kill");
}

long RunCgroup::process_events() const {
  return pids_dir_.empty() ? 0 : keyed_value(pids_dir_ / "pids.events", "max");
}

}  // namespace lab
