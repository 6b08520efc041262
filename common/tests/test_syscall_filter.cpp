// The system-call filter (lab/syscall_filter.hpp), each promise tried in a child process of its
// own: the filter is for good, and some of what it forbids ends the process.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>

#include "lab/syscall_filter.hpp"

namespace {

// How a child that installs the filter and then runs `attempt` ends: its exit code (0-255), or
// 1000 + the signal that ended it. Exit 100: the filter could not be installed.
int under_filter(const std::function<int()>& attempt) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::string why;
    if (!lab::restrict_system_calls(why)) _exit(100);
    _exit(attempt());
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  return WIFSIGNALED(status) ? 1000 + WTERMSIG(status) : WEXITSTATUS(status);
}

// 0 if the call failed with EPERM, 1 if it succeeded, 2 if it failed otherwise.
int refused(long result) { return result >= 0 ? 1 : errno == EPERM ? 0 : 2; }

constexpr int kKilled = 1000 + SIGSYS;

}  // namespace

TEST_SUITE("syscall_filter") {
  TEST_CASE("what computing and printing need still works under the filter") {
    CHECK(under_filter([] {
            // Memory, writing an open descriptor, the time, naming its own thread.
            void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (page == MAP_FAILED || mprotect(page, 4096, PROT_READ) != 0) return 3;
            struct timespec ts;
            if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 4;
            if (write(STDOUT_FILENO, "", 0) != 0) return 5;
            return prctl(PR_SET_NAME, "exercise", 0, 0, 0) == 0 ? 0 : 6;
          }) == 0);
  }

  TEST_CASE("new files, sockets and executable memory are refused with EPERM") {
    CHECK(under_filter([] { return refused(open("/dev/null", O_RDONLY)); }) == 0);
    CHECK(under_filter([] { return refused(openat(AT_FDCWD, "forged.json", O_WRONLY | O_CREAT, 0600)); }) == 0);
    CHECK(under_filter([] { return refused(syscall(SYS_memfd_create, "x", 0)); }) == 0);
    CHECK(under_filter([] { return refused(socket(AF_UNIX, SOCK_STREAM, 0)); }) == 0);
    CHECK(under_filter([] { return refused(symlinkat("/etc/passwd", AT_FDCWD, "result.json")); }) == 0);
    CHECK(under_filter([] { return refused(syscall(SYS_io_uring_setup, 8, nullptr)); }) == 0);
    // The filter stays as installed: no filter of the program's own, no dumpable process.
    CHECK(under_filter([] {
            sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
            sock_fprog program{1, &allow};
            return refused(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program));
          }) == 0);
    CHECK(under_filter([] {
            sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
            sock_fprog program{1, &allow};
            return refused(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0));
          }) == 0);
    CHECK(under_filter([] { return refused(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)); }) == 0);
    CHECK(under_filter([] {
            void* p = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            return p == MAP_FAILED ? refused(-1) : 1;
          }) == 0);
    CHECK(under_filter([] {
            void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            return p == MAP_FAILED ? 3 : refused(mprotect(p, 4096, PROT_READ | PROT_EXEC));
          }) == 0);
    // Nor through the persona that makes readable memory executable; asking for it still works.
    CHECK(under_filter([] { return refused(personality(PER_LINUX | READ_IMPLIES_EXEC)); }) == 0);
    CHECK(under_filter([] {
            const int persona = personality(0xffffffff);
            return persona >= 0 && (persona & READ_IMPLIES_EXEC) == 0 ? 0 : 3;
          }) == 0);
  }

  TEST_CASE("starting a thread, a process or a program, or another ABI's call, ends the process") {
    CHECK(under_filter([] {
            int value = 0;
            std::thread t([&] { value = 42; });  // clone3, or clone with CLONE_THREAD
            t.join();
            return value == 42 ? 0 : 3;
          }) == kKilled);
    CHECK(under_filter([] {
            // clone with CLONE_THREAD itself (the C library falls back to it without clone3).
            static char stack[16384];
            const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD;
            return clone([](void*) { return 0; }, stack + sizeof stack, flags, nullptr) >= 0 ? 0 : 3;
          }) == kKilled);
    CHECK(under_filter([] { return fork() >= 0 ? 0 : 3; }) == kKilled);
    CHECK(under_filter([] { return std::system("true") == 0 ? 0 : 3; }) == kKilled);
    CHECK(under_filter([] {
            char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
            execv("/bin/true", argv);
            return 3;
          }) == kKilled);
    CHECK(under_filter([] { return static_cast<int>(syscall(SYS_ptrace, 0, 0, 0, 0)) == 0 ? 0 : 3; }) == kKilled);
#if defined(__x86_64__)
    // getpid by the 32-bit table's number, from a 64-bit process (int 0x80).
    CHECK(under_filter([] {
            long r = 20;
            asm volatile("int $0x80" : "+a"(r) : : "memory");
            return r > 0 ? 0 : 3;
          }) == kKilled);
#endif
  }
}
