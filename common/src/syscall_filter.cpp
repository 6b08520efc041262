#include "lab/syscall_filter.hpp"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace lab {

namespace {

#if defined(__x86_64__)
constexpr unsigned kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kArch = AUDIT_ARCH_AARCH64;
#else
#error "the system-call filter knows x86-64 and AArch64 only"
#endif

// A filter program, written the way the kernel reads it: after each test of the system call's
// number comes the instruction that answers it.
struct Program {
  std::vector<sock_filter> code;

  void load(std::uint32_t offset) { code.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void answer(std::uint32_t action) { code.push_back(BPF_STMT(BPF_RET | BPF_K, action)); }
  // If the number is `nr`, answer `action`; otherwise go on.
  void on(long nr, std::uint32_t action) {
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 1));
    answer(action);
  }
  // If the number is `nr`, answer `when_set` if argument `arg` has any of `bits`, else
  // `when_clear`; otherwise go on, the number still loaded. (The argument's low 32 bits: flags
  // and protections live there.)
  void on_bits(long nr, int arg, std::uint32_t bits, std::uint32_t when_set, std::uint32_t when_clear) {
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 4));
    load(offsetof(seccomp_data, args) + 8 * arg);
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, bits, 0, 1));
    answer(when_set);
    answer(when_clear);
  }
  // If the number is `nr`, answer `action` when argument `arg` is one of `values`, else allow;
  // otherwise go on, the number still loaded.
  void on_values(long nr, int arg, std::initializer_list<std::uint32_t> values, std::uint32_t action) {
    const auto n = static_cast<unsigned char>(values.size());
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0,
                            static_cast<unsigned char>(n + 3)));  // past the load, tests, answers
    load(offsetof(seccomp_data, args) + 8 * arg);
    unsigned char after = n;  // tests after this one; a match jumps past them and the allow
    for (std::uint32_t v : values)
      code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, v, static_cast<unsigned char>(--after + 1), 0));
    answer(SECCOMP_RET_ALLOW);
    answer(action);
  }
  // If the number is `nr`, answer `action` when argument `arg` has any of `bits` and is not
  // `except`, else allow; otherwise go on, the number still loaded.
  void on_bits_except(long nr, int arg, std::uint32_t bits, std::uint32_t except, std::uint32_t action) {
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, 5));
    load(offsetof(seccomp_data, args) + 8 * arg);
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, except, 2, 0));
    code.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, bits, 0, 1));
    answer(action);
    answer(SECCOMP_RET_ALLOW);
  }
};

}  // namespace

bool restrict_system_calls(std::string& why) {
  constexpr std::uint32_t kill = SECCOMP_RET_KILL_PROCESS, allow = SECCOMP_RET_ALLOW;
  constexpr std::uint32_t refuse = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  Program p;
  p.load(offsetof(seccomp_data, arch));
  p.code.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0));
  p.answer(kill);  // int 0x80 reaches the 32-bit table, where the numbers mean other calls
  p.load(offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  p.code.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __X32_SYSCALL_BIT, 0, 1));
  p.answer(kill);  // the x32 ABI's numbers
  for (long nr : {SYS_fork, SYS_vfork}) p.on(nr, kill);
  for (long nr : {SYS_open, SYS_creat, SYS_link, SYS_symlink, SYS_mknod}) p.on(nr, refuse);
#endif
  for (long nr : {SYS_execve, SYS_execveat, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev})
    p.on(nr, kill);
  // No new thread or process: the CUDA runtime's threads are started with its context, before
  // the filter (measured on an H200: every lesson runs with none after it).
  p.on(SYS_clone, kill);
  p.on(SYS_clone3, kill);
  // The filter stays as it is: no second filter of the program's own (one that answered the
  // record's writes from a signal handler), and the process memory stays closed.
  p.on(SYS_seccomp, refuse);
  p.on_values(SYS_prctl, 0, {PR_SET_SECCOMP, PR_SET_DUMPABLE}, refuse);
  // io_uring opens files in the kernel's own threads, where no filter looks.
  for (long nr : {SYS_openat, SYS_openat2, SYS_open_by_handle_at, SYS_linkat, SYS_symlinkat,
                  SYS_mknodat, SYS_memfd_create, SYS_socket, SYS_socketpair, SYS_io_uring_setup,
                  SYS_io_uring_enter, SYS_io_uring_register})
    p.on(nr, refuse);
  for (long nr : {SYS_mmap, SYS_mprotect, SYS_pkey_mprotect}) p.on_bits(nr, 2, PROT_EXEC, refuse, allow);
  // READ_IMPLIES_EXEC would make every readable mapping executable, past the rule above; asking
  // for the persona (0xffffffff, every bit) changes nothing and stays allowed.
  p.on_bits_except(SYS_personality, 0, READ_IMPLIES_EXEC, 0xffffffffu, refuse);
  p.answer(allow);

  sock_fprog program{static_cast<unsigned short>(p.code.size()), p.code.data()};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    why = std::string("prctl(PR_SET_NO_NEW_PRIVS) failed: ") + std::strerror(errno);
    return false;
  }
  // Every thread at once: the CUDA runtime's threads exist already.
  const long r = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
  if (r != 0) {
    why = r > 0 ? "thread " + std::to_string(r) + " could not take the seccomp filter"
                : std::string("seccomp refused the filter: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace lab
