// A cgroup for each build and lesson program, where the checker can make one: it bounds the
// memory and the number of processes of all the run's processes together, which rlimits (per
// process, or per user) cannot, and the kernel counts how often each bound was hit, which is
// how the checker can tell a student which limit ended their run. What it needs from the
// machine: docs/grading-security.md, "Resource limits".
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sandbox.hpp"

namespace lab {

namespace fs = std::filesystem;

/// Where the checker can bound memory and processes, found once per process: cgroup v2 where
/// the memory and pids controllers reach the checker's own cgroup (it then moves itself into a
/// leaf, `lab-check`, so that its cgroup may hand them on), else the cgroup v1 memory and pids
/// hierarchies where it can create a cgroup in them.
struct CgroupSupport {
  bool memory = false;
  bool processes = false;
  std::string how;      ///< "cgroup v2", "cgroup v1", "cgroup v2 (memory), cgroup v1 (pids)"
  std::string why_not;  ///< what is missing, when either is
};
const CgroupSupport& cgroup_support();

/// The cgroup of one run: created with the limits' memory and process bounds, removed (with
/// anything still in it killed) when the object dies.
class RunCgroup {
 public:
  explicit RunCgroup(const ResourceLimits& limits);
  ~RunCgroup();
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;

  /// Open cgroup.procs files (one per hierarchy): the run's first process writes "0" to each to
  /// join, before it starts anything. Empty where no cgroup could be made.
  std::vector<int> join_fds() const;
  /// How often the run was killed for memory, and refused a new process or thread, so far.
  long memory_events() const;
  long process_events() const;

 private:
  struct Group {
    fs::path dir;
    int procs_fd = -1;
  };
  std::vector<Group> groups_;
  fs::path memory_dir_, pids_dir_;
  bool memory_v2_ = false;
};

}  // namespace lab
