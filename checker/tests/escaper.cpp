// A stand-in for a student's program that tries to get out of its lesson, for the containment
// tests. argv[1] is a token the test looks for in /proc/*/cmdline (forked children keep it).
//   escaper TOKEN detach HOW LATE_FILE DELAY_MS   start a detached process (HOW: setsid,
//                 double-fork, daemon) that writes LATE_FILE after DELAY_MS and then stays; exit 0
//   escaper TOKEN hold HOW                        the same detached process (no file), and stay too
//   escaper TOKEN read PATH                       print PATH's content, or why it cannot be read
//   escaper TOKEN write PATH                      create PATH; say whether it worked
// and, for the resource limits, each stopping at a bound of its own so that it is safe to run
// without any limit (that is how the tests fail on a checker that sets none):
//   escaper TOKEN fork-many MAX                   start up to MAX children that wait; say how many
//   escaper TOKEN write-big PATH MIB              write MIB MiB to PATH; say how much
//   escaper TOKEN open-many MAX                   open /dev/null up to MAX times; say how often
//   escaper TOKEN allocate MIB                    allocate and touch MIB MiB; say so
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>
#include <iostream>
#include <sstream>
#include <string>

namespace {

[[noreturn]] void stay() {
  for (;;) pause();
}

// Runs `body` in a process that is no longer this one's child, by the technique `how`; returns
// once that process is running.
template <class Body>
void detach(const std::string& how, Body body) {
  int ready[2];
  if (pipe(ready) != 0) std::exit(3);
  const auto started = [&] {
    close(ready[0]);
    (void)!write(ready[1], "x", 1);
    close(ready[1]);
    body();
  };
  if (how == "daemon") {
    if (fork() == 0) {
      if (daemon(1, 1) != 0) _exit(3);  // forks again and starts a session
      started();
    }
  } else if (how == "setsid") {
    if (fork() == 0) {
      setsid();
      started();
    }
  } else if (how == "double-fork") {
    if (fork() == 0) {
      if (fork() == 0) started();
      _exit(0);  // the grandchild is an orphan now
    }
  } else {
    std::exit(2);
  }
  close(ready[1]);
  char c;
  (void)!read(ready[0], &c, 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const std::string mode = argv[2], arg = argv[3];
  signal(SIGPIPE, SIG_IGN);
  if (mode == "detach" && argc >= 6) {
    const std::string late_file = argv[4];
    const int delay_ms = std::atoi(argv[5]);
    detach(arg, [&] {
      usleep(static_cast<useconds_t>(delay_ms) * 1000);
      std::ofstream(late_file) << "escaped\n";
      stay();
    });
    return 0;
  }
  if (mode == "hold") {
    detach(arg, [] { stay(); });
    stay();
  }
  if (mode == "read") {
    std::ifstream in(arg);
    if (!in) {
      std::cout << "cannot read " << arg << ": " << std::strerror(errno) << "\n";
      return 0;
    }
    std::ostringstream text;
    text << in.rdbuf();
    std::cout << text.str();
    return 0;
  }
  if (mode == "write") {
    const int fd = open(arg.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      std::cout << "cannot write " << arg << ": " << std::strerror(errno) << "\n";
      return 0;
    }
    close(fd);
    std::cout << "wrote " << arg << "\n";
    return 0;
  }
  if (mode == "fork-many") {
    const int max = std::atoi(arg.c_str());
    int started = 0;
    for (; started < max; ++started) {
      const pid_t pid = fork();
      if (pid < 0) {
        std::cout << "started " << started << " processes, then fork: " << std::strerror(errno) << "\n";
        return 0;
      }
      if (pid == 0) stay();
    }
    std::cout << "started " << started << " processes\n";
    return 0;
  }
  if (mode == "write-big" && argc >= 5) {
    const long mib = std::atol(argv[4]);
    const int fd = open(arg.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      std::cout << "cannot write " << arg << ": " << std::strerror(errno) << "\n";
      return 0;
    }
    const std::vector<char> block(1 << 20, 'x');
    for (long i = 0; i < mib; ++i)
      if (write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) {
        std::cout << "wrote " << i << " MiB, then: " << std::strerror(errno) << "\n";
        return 0;
      }
    std::cout << "wrote " << mib << " MiB\n";
    return 0;
  }
  if (mode == "open-many") {
    const int max = std::atoi(arg.c_str());
    int opened = 0;
    for (; opened < max; ++opened)
      if (open("/dev/null", O_RDONLY) < 0) {
        std::cout << "opened " << opened << " files, then: " << std::strerror(errno) << "\n";
        return 0;
      }
    std::cout << "opened " << opened << " files\n";
    return 0;
  }
  if (mode == "allocate") {
    const std::size_t bytes = static_cast<std::size_t>(std::atol(arg.c_str())) << 20;
    char* p = static_cast<char*>(std::malloc(bytes));
    if (!p) {
      std::cout << "malloc failed\n";
      return 0;
    }
    std::memset(p, 1, bytes);  // touched, so it is really used
    std::cout << "allocated " << (bytes >> 20) << " MiB\n" << static_cast<int>(p[bytes / 2]) << "\n";
    return 0;
  }
  return 2;
}
