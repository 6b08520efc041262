// Containment of the processes that build or run a student's code, and isolation between
// grading commands. The mechanism and what it needs from the host: docs/grading-security.md.
//
// run_process applies the policy set here to every process it starts, except those marked
// ProcessKind::tool (the checker's own helpers, such as configuring the grading build).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
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

/// Bounds on one build or one lesson program, for all of its processes (docs/grading-security.md,
/// "Resource limits"). 0 = no bound.
struct ResourceLimits {
  std::uint64_t memory_bytes = 0;         ///< together, through a cgroup where one can be made
  std::uint64_t address_space_bytes = 0;  ///< RLIMIT_AS of each process (never a CUDA program's)
  std::uint64_t file_bytes = 0;           ///< RLIMIT_FSIZE: the largest file a process may write
  std::uint64_t processes = 0;            ///< at once, threads too: pids.max, else RLIMIT_NPROC
  std::uint64_t open_files = 0;           ///< RLIMIT_NOFILE of each process
};
/// A lesson program, alone or under compute-sanitizer or ncu. CUDA reserves address space far
/// beyond the memory it uses (the GPU's memory is mapped into it), so RLIMIT_AS would break it:
/// only a cgroup bounds its memory.
inline constexpr ResourceLimits kProgramLimits{16ull << 30, 0, 256ull << 20, 1024, 4096};
/// A build of a student's file: cmake, ninja and several nvcc and host compilers at once.
inline constexpr ResourceLimits kBuildLimits{32ull << 30, 8ull << 30, 1ull << 30, 2048, 4096};

/// The users student-facing processes run as when the checker is root: lesson programs as
/// nobody, builds as a second user that owns only the grading build (so a program, which runs
/// the student's code, can never change what the next student is built with).
inline constexpr uid_t kProgramUser = 65534;
inline constexpr uid_t kBuildUser = 65533;

/// What a student-facing process may see, set once per command (grade, run, selftest).
struct SandboxPolicy {
  Containment mode = Containment::none;
  /// Folders replaced by an empty read-only folder (namespaces mode only). A lesson program needs
  /// only its own binary and work folder, which stay visible even inside a hidden folder.
  std::vector<fs::path> hide_from_builds;
  std::vector<fs::path> hide_from_programs;
  /// What a build reads or writes (the course, the grading build, its dependencies): shown to
  /// it even inside a hidden folder or the private /tmp.
  std::vector<fs::path> show_to_builds;
  bool private_tmp = false;    ///< a fresh, empty /tmp and /dev/shm for each build and program
  bool run_as_nobody = false;  ///< as root: lesson programs run as uid/gid 65534, no new privileges
  bool unprivileged_builds = false;  ///< as root: builds run as uid/gid 65533, no new privileges
  ResourceLimits program_limits = kProgramLimits;
  ResourceLimits build_limits = kBuildLimits;
};

void set_sandbox_policy(SandboxPolicy policy);
const SandboxPolicy& sandbox_policy();

/// Whether this process can give a child its own PID and mount namespaces (as root, or through
/// an unprivileged user namespace). If not, `why` says what the kernel refused. Probed once.
bool namespaces_available(std::string& why);

/// Whether a lesson program here can filter its own system calls (lab/syscall_filter.hpp). The
/// probe is the real thing: a child installs the filter, must be refused a file, and must be
/// killed when it then starts a process. If not, `why` says what failed. Probed once.
bool syscall_filter_available(std::string& why);

/// Whether lesson programs filter their system calls: `wanted` (false: --no-syscall-filter) and
/// the machine can (`probe`). Where it cannot, `refuse` (grade) throws ConfigError naming what
/// failed and the way out (it would grade without the guarantee and not say so); otherwise a
/// line on stderr and false (run, selftest).
bool use_syscall_filter(bool wanted, bool refuse,
                        const std::function<bool(std::string&)>& probe = syscall_filter_available);

/// Picks the mode for `requested` ("namespaces", "weak", "none" or "auto": namespaces where
/// available, else weak). Throws ConfigError when namespaces are asked for and unavailable,
/// naming the weaker mode as the way out. `note` gets one line for the user when auto fell back.
Containment choose_containment(const std::string& requested, std::string& note);

/// Whether builds run as kBuildUser under the current policy (root, and the policy asks for it).
bool builds_run_as_build_user();

/// One line for output and records: "namespaces (PID + mount); builds run as uid 65533, lesson
/// programs as uid 65534; memory and processes bounded by cgroup v2".
std::string describe_policy(const SandboxPolicy& policy);

/// A limit a run went over, in words a student can act on ("it wrote a file of more than
/// 256 MiB, ..."), or "". From what the kernel says: the signal that ended the process, and the
/// run's cgroup events (`memory_events`, `process_events`: how often each limit was hit).
std::string limit_hit(const ResourceLimits& limits, int signal, long memory_events, long process_events);

/// "256 MiB", "8 GiB".
std::string byte_size(std::uint64_t bytes);

/// What the compile of a student's exercise.cu may read (docs/grading-security.md, "A build reads
/// only what a student may read"): its own file, what the course's starter of the lesson read
/// (the lesson's exercise.cuh, the library's headers it uses), and anything in the library's
/// public headers or the compilers' own include folders (the CUDA toolkit's and the system's).
struct SubmissionReads {
  std::set<fs::path> files;         ///< canonical
  std::vector<fs::path> folders;    ///< canonical
  std::vector<fs::path> search;     ///< where a name in exercise.cu is looked for, in order
  bool allows(const fs::path& file) const;  ///< `file` canonical
};

/// For `lesson` of the grading build `build_dir` of the course `source_dir`, with the student's
/// file staged at `staged`. The starter's own list of what it read must be there (built first).
/// @throws ConfigError when the build kept no such list (not the student's doing)
SubmissionReads submission_reads(const fs::path& source_dir, const fs::path& build_dir,
                                 const std::string& lesson, const fs::path& staged);

/// Why `source` may not be compiled, in words for the student, or "". Before any compiler runs:
/// every file a directive names (#include, #include_next, #import, #embed, __has_include,
/// __has_embed) must be written out (not made by a macro), relative, without "..", and wherever
/// `reads.search` finds it, a regular file that `reads` allows (a device file or a FIFO would
/// block the compiler). Assembler .incbin and .include and #pragma GCC dependency are refused:
/// they read files that no dependency list shows. Line control (#line, # N "file") is refused too:
/// it would hide the source lines compute-sanitizer names.
std::string refuse_unsafe_reads(const std::string& source, const SubmissionReads& reads);

/// After a build of `program` in `build_dir`: why its exercise is refused, for the student
/// ("your exercise.cu read /x/y, which ..."), or "". From the compiler's own list of the files
/// it read (files_compile_read).
/// @throws ConfigError when the build kept no such list
std::string refuse_what_compile_read(const fs::path& build_dir, const fs::path& program,
                                     const SubmissionReads& reads);

/// The files the compile of `object` read, from the build's own record of it: ninja's deps log
/// (`ninja -t deps`, where `ninja` is given and the build has a build.ninja), else the
/// compiler's depfile beside the object (<object>.d, as CMake's Makefiles keep it). Relative
/// names are taken from `build_dir`. nullopt, with `why`, when there is no record.
std::optional<std::vector<fs::path>> files_compile_read(const fs::path& build_dir, const fs::path& object,
                                                        const fs::path& ninja, std::string& why);

/// The inputs of a make-style depfile's first rule ("x.o: a.cu b.h \\\n c.h" -> a.cu, b.h, c.h).
std::vector<std::string> depfile_inputs(const std::string& text);

/// The include folders CMake found for the compilers of `build_dir` (CMAKE_<LANG>_IMPLICIT_
/// INCLUDE_DIRECTORIES, CMAKE_CUDA_TOOLKIT_INCLUDE_DIRECTORIES), canonical.
std::vector<fs::path> compiler_include_folders(const fs::path& build_dir);

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

/// @return /tmp, /dev/shm and every folder anyone may write one level below /, /var, /run, /dev
/// (/var/tmp, /run/lock, ...): each gets a private, empty tmpfs in a run with namespaces.
/// Found once per process (the first run), not once per run.
const std::vector<std::string>& private_folders();

/// Everything the forked child needs, computed before the fork (the child may not allocate).
struct ChildPlan {
  Role role = Role::program;
  bool namespaces = false;
  uid_t user = 0;  ///< 0: stays the checker's user; else uid = gid = user, no groups
  bool private_tmp = false;
  std::string tmp_options;           ///< the private /tmp's mount options (its size)
  std::vector<std::string> private_dirs;  ///< /tmp, /dev/shm and every world-writable folder
  ResourceLimits limits;             ///< set as rlimits in the child (the cgroup's are set outside)
  std::vector<int> cgroup_procs;     ///< the run's cgroup.procs files; the child joins them first
  std::vector<std::string> hidden;   ///< canonical, existing folders, none inside another
  std::vector<std::string> reveal;   ///< canonical paths of files and folders
  std::vector<std::string> hidden_again;  ///< hidden folders inside a revealed one: covered after
  std::vector<int> reveal_fd;        ///< the child's scratch space, one per reveal
  std::vector<char> hidden_mounted;  ///< the child's scratch space, one per hidden folder
};
/// The plan of the current policy for a process of `role`. `reveal` gets the work folder, every
/// executable file the command line names by absolute path (the program, and the program under
/// compute-sanitizer or ncu) and, for a build, the policy's show_to_builds: they stay visible even
/// inside a hidden folder or the private /tmp.
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
