/// @file syscall_filter.hpp
/// @brief What a graded lesson program may still ask of the kernel once the exercise can run.
///
/// The seal (docs/grading-security.md) refuses every named way for an exercise to reach the
/// system: it cannot call `open`, `fork` or `system`. Native code can still find such a function
/// without naming it (walking the C library's tables from an allowed function's address) or make
/// a system call from an instruction hidden inside another. This filter closes both at the
/// kernel: installed after the CUDA context, the result file and the record are open, and
/// before the first exercise call, it leaves a program only what computing and printing need.
#pragma once

#include <string>

namespace lab {

/// Installs a seccomp filter on every thread of this process (the CUDA runtime's included), for
/// good. Afterwards:
/// - starting a program (execve, execveat), a process or a thread (fork, vfork, clone, clone3)
///   or tracing one (ptrace, process_vm_readv/writev) kills the whole process with SIGSYS, and
///   so does any system call of another ABI (int 0x80, x32): the CUDA runtime starts its threads
///   with the context, before the filter;
/// - opening a file (open, openat, openat2, creat, open_by_handle_at), linking one (link,
///   symlink, mknod and their *at forms), making an anonymous file (memfd_create), a socket or an
///   io_uring (whose kernel threads would open files unfiltered), mapping or protecting memory
///   as executable (or taking the READ_IMPLIES_EXEC persona, which would make readable memory
///   executable), adding a seccomp filter (seccomp, prctl PR_SET_SECCOMP) and making the
///   process dumpable again (prctl PR_SET_DUMPABLE) fail with EPERM;
/// - everything else (reading and writing open descriptors, memory, ioctl on the GPU's device
///   files, time) is allowed.
/// @param[out] why where the kernel refuses (no seccomp, or a container that forbids it): what
///                 it refused
/// @return true once the filter is in force; false (nothing installed) where the kernel refused,
///         and the caller decides whether to run on
bool restrict_system_calls(std::string& why);

}  // namespace lab
