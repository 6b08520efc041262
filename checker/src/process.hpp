// Running untrusted programs: each in its own session and process group, no shell, output
// captured to bounded files, a wall-clock limit that kills the whole group, and the containment
// of the current sandbox policy (sandbox.hpp): nothing the program starts outlives it.
#pragma once

#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace lab {

namespace fs = std::filesystem;

/// What a process is, for the sandbox policy: the checker's own helper (not contained), a build
/// of a student's code, or a program that runs a student's code.
enum class ProcessKind { tool, build, program };

struct ProcessOptions {
  std::vector<std::string> argv;       ///< argv[0] is the program's path; it is exec'd directly
  fs::path workdir;                    ///< empty = the checker's own working directory
  double timeout_s = 60;               ///< wall-clock limit for the whole process group
  double grace_s = 2;                  ///< between SIGTERM and SIGKILL on a timeout
  fs::path stdout_path;                ///< empty = discard
  fs::path stderr_path;                ///< empty = discard; equal to stdout_path = merged
  std::size_t max_output_bytes = 1 << 20;  ///< per stream; the rest is read and dropped
  ProcessKind kind = ProcessKind::program;  ///< contained unless it is the checker's own tool
  std::vector<std::string> env;        ///< NAME=VALUE entries added to the checker's environment
  /// Created (mode 0600, the checker's) before the program starts and handed to it open for
  /// writing, its number appended to argv as "--record-fd N": the program writes its record
  /// there (lab/record.hpp) without being able to open the file by name. Empty: none.
  fs::path record_path;
  /// The same for the result file, as "--result-fd N": the harness writes it there at its end
  /// and closes it, so code that runs at exit cannot change it. Empty: none (--json instead).
  fs::path result_path;
};

struct ProcessResult {
  bool started = false;
  std::string start_error;   ///< why exec failed ("No such file or directory")
  int exit_code = -1;        ///< valid when it exited normally
  int signal = 0;            ///< the signal that ended it (0 = it exited)
  bool timed_out = false;    ///< killed by the checker at the wall-clock limit
  double wall_s = 0;
  bool output_truncated = false;
  /// A resource limit it went over, in words ("it wrote a file of more than 256 MiB, ..."), from
  /// what the kernel says (the signal that ended it, the run's cgroup); "" if none is known.
  std::string limit;

  bool exited_ok() const { return started && !timed_out && signal == 0 && exit_code == 0; }
};

/// Runs a program to completion or to its time limit. Every process left in its group is killed
/// once it ends, in every case; with the sandbox policy's containment (weak or namespaces), so is
/// every process it started however it detached (setsid, double fork, daemon).
ProcessResult run_process(const ProcessOptions& options);

/// One line about how it ended: "exited with code 3", "killed by signal 11 (Segmentation
/// fault)", "timed out after 10 s (the process group was killed)", "could not start: ...", and
/// the limit it went over, if any ("killed by signal 25 (File size limit exceeded): it wrote ...").
std::string describe(const ProcessResult& result, double timeout_s);

/// Installs SIGINT/SIGTERM/SIGHUP handlers that kill the running child's process group (if any)
/// at once, so Ctrl-C never leaves a student's program on the GPU; run_process then throws
/// Interrupted (and so does any later call), which unwinds and removes temporary folders.
void install_interrupt_cleanup();

/// Thrown by run_process after the checker received SIGINT, SIGTERM or SIGHUP.
struct Interrupted : std::runtime_error {
  explicit Interrupted(int sig) : std::runtime_error("interrupted"), signal(sig) {}
  int signal;
};

}  // namespace lab
