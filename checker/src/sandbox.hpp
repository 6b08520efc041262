// Containment of the processes that build or run a student's code, and isolation between
// grading commands. The mechanism and what it needs from the host: docs/grading-security.md.
//
// run_process applies the policy set here to every process it starts, except those marked
// ProcessKind::tool (the checker's own helpers, such as configuring the grading build).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lab {

namespace fs = std::filesystem;

enum class Containment {
  none,        ///< the process group only (a program that calls setsid escapes it)
  weak,        ///< + the checker is a child subreaper and kills every descendant after each run
  namespaces,  ///< + each run is PID 1's child in its own PID and mount namespace
};
std::string to_string(Containment c);

/// What a student-facing process may see, set once per command (grade, run, selftest).
struct SandboxPolicy {
  Containment mode = Containment::none;
  /// Folders replaced by an empty read-only folder (namespaces mode only). A build needs the
  /// course and its grading build; a lesson program needs only its own binary and work folder,
  /// which stay visible even inside a hidden folder.
  std::vector<fs::path> hide_from_builds;
  std::vector<fs::path> hide_from_programs;
  bool private_tmp = false;    ///< a fresh, empty /tmp and /dev/shm for each lesson program
  bool run_as_nobody = false;  ///< as root: lesson programs run as uid/gid 65534, no new privileges
};

void set_sandbox_policy(SandboxPolicy policy);
const SandboxPolicy& sandbox_policy();

/// Whether this process can give a child its own PID and mount namespaces (as root, or through
/// an unprivileged user namespace). If not, `why` says what the kernel refused. Probed once.
bool namespaces_available(std::string& why);

/// Picks the mode for `requested` ("namespaces", "weak", "none" or "auto": namespaces where
/// available, else weak). Throws ConfigError when namespaces are asked for and unavailable,
/// naming the weaker mode as the way out. `note` gets one line for the user when auto fell back.
Containment choose_containment(const std::string& requested, std::string& note);

/// One line for output and records: "namespaces (PID + mount; programs as uid 65534)".
std::string describe_policy(const SandboxPolicy& policy);

/// An exclusive flock(2) on `path` (created if needed), held until the object dies. The kernel
/// releases it when the process dies however it dies, so a killed checker never leaves it stale.
class FileLock {
 public:
  /// Blocks until the lock is free; if someone else holds it, prints `waiting_message` (when
  /// not empty) on stderr first. Throws std::runtime_error if the file cannot be opened.
  explicit FileLock(const fs::path& path, const std::string& waiting_message = "");
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

namespace sandbox_detail {

/// Which of run_process's processes a policy applies to.
enum class Role { build, program };

/// Everything the forked child needs, computed before the fork (the child may not allocate).
struct ChildPlan {
  Role role = Role::program;
  bool namespaces = false;
  bool drop_to_nobody = false;
  bool private_tmp = false;
  std::vector<std::string> hidden;   ///< canonical, existing folders, none inside another
  std::vector<std::string> reveal;   ///< canonical paths of files and folders
  std::vector<int> reveal_fd;        ///< the child's scratch space, one per reveal
  std::vector<char> hidden_mounted;  ///< the child's scratch space, one per hidden folder
};
/// The plan of the current policy for a process of `role`. `reveal` gets the work folder and every
/// executable file the command line names by absolute path (the program, and the program under
/// compute-sanitizer or ncu): they stay visible even inside a hidden folder.
ChildPlan plan_for(Role role, const std::vector<std::string>& argv, const fs::path& workdir);

/// Called in the forked child (one thread: async-signal-safe calls only) right before exec. Sets
/// up the plan and returns in the process that must exec the program; in namespaces mode that is
/// a grandchild, and the processes in between never return. On a failure it reports on
/// `report_fd` (the exec pipe) and _exits.
void enter(ChildPlan& plan, int report_fd);

/// Weak mode: makes the checker a child subreaper (once) and, after a run, SIGKILLs and reaps
/// every process that descends from the checker (orphans are re-parented to it).
void become_subreaper();
void kill_all_descendants();

/// A failure in the child, sent to the parent over the exec pipe.
struct StartFailure {
  int error = 0;
  char step[160] = {};
};
void report_failure(int report_fd, const char* step, int error);

}  // namespace sandbox_detail

}  // namespace lab
