#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "cgroup.hpp"
#include "sandbox.hpp"

namespace lab {

namespace {

std::atomic<pid_t> g_running_group{0};
volatile std::sig_atomic_t g_interrupted = 0;

// First signal: kill the running group and let run_process throw Interrupted, so temporary
// folders are removed and results already written stay. A second one ends the checker at once.
void interrupt_handler(int sig) {
  const pid_t group = g_running_group.load();
  if (group > 0) ::kill(-group, SIGKILL);
  if (g_interrupted) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
  g_interrupted = sig;
}

/// Receives a pipe's bytes into a file, keeping at most `limit` of them.
struct Sink {
  int read_fd = -1;
  int file_fd = -1;
  std::size_t kept = 0;
  std::size_t limit = 0;
  bool truncated = false;

  // Returns false at end of stream.
  bool pump() {
    char buf[65536];
    const ssize_t n = ::read(read_fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) return false;
    std::size_t take = static_cast<std::size_t>(n);
    if (kept + take > limit) {
      take = limit > kept ? limit - kept : 0;
      truncated = true;
    }
    if (file_fd >= 0 && take > 0) {
      // Short writes to a local file are not worth a loop's complexity here; count what landed.
      const ssize_t w = ::write(file_fd, buf, take);
      if (w > 0) kept += static_cast<std::size_t>(w);
    }
    return true;
  }
};

int open_output(const fs::path& path) {
  if (path.empty()) return -1;
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void install_interrupt_cleanup() {
  struct sigaction sa {};
  sa.sa_handler = interrupt_handler;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

ProcessResult run_process(const ProcessOptions& options) {
  if (g_interrupted) throw Interrupted(g_interrupted);
  ProcessResult result;
  if (options.argv.empty()) {
    result.start_error = "no program given";
    return result;
  }
  const bool merged = !options.stderr_path.empty() && options.stderr_path == options.stdout_path;

  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    result.start_error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }

  // The record and the result: each descriptor's number is the one the checker got, so it
  // collides with nothing the child opens or inherits; the child only clears its close-on-exec
  // flag.
  int handed[2] = {-1, -1};  // record, result
  std::vector<std::string> handed_args;
  const std::pair<const fs::path*, const char*> files[2] = {{&options.record_path, "--record-fd"},
                                                            {&options.result_path, "--result-fd"}};
  for (int k = 0; k < 2; ++k) {
    if (files[k].first->empty()) continue;
    handed[k] = ::open(files[k].first->c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (handed[k] < 0) {
      result.start_error = "cannot create " + files[k].first->string() + ": " + std::strerror(errno);
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1], handed[0]})
        if (fd >= 0) ::close(fd);
      return result;
    }
    handed_args.insert(handed_args.end(), {files[k].second, std::to_string(handed[k])});
  }

  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  for (const auto& a : handed_args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The checker's environment with options.env's entries in place of any of the same name,
  // built before the fork (the child may not allocate).
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) {
    bool replaced = false;
    for (const auto& own : options.env) {
      const auto name = own.find('=');
      replaced = replaced || (name != std::string::npos && std::strncmp(*e, own.c_str(), name + 1) == 0);
    }
    if (!replaced) envp.push_back(*e);
  }
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();

  // The containment is planned here, before the fork: the child may not allocate.
  std::string own_home = "HOME=" + options.workdir.string();
  const SandboxPolicy& policy = sandbox_policy();
  const bool contained = options.kind != ProcessKind::tool && policy.mode != Containment::none;
  const bool build = options.kind == ProcessKind::build;
  sandbox_detail::ChildPlan plan;
  std::optional<RunCgroup> cgroup;  // memory and processes of the whole run; removed after it
  if (contained) {
    plan = sandbox_detail::plan_for(build ? sandbox_detail::Role::build : sandbox_detail::Role::program,
                                    options.argv, options.workdir);
    cgroup.emplace(build ? policy.build_limits : policy.program_limits);
    plan.cgroup_procs = cgroup->join_fds();
    // The program writes its result into its work folder, as its own user.
    if (plan.user != 0 && !options.workdir.empty() && ::chown(options.workdir.c_str(), plan.user, plan.user) != 0) {
      result.start_error = "cannot give the work folder to uid " + std::to_string(plan.user) + ": " +
                           std::strerror(errno);
      for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]})
        ::close(fd);
      return result;
    }
    auto set_env = [&envp](char* entry) {  // "NAME=value", in place of any NAME
      const std::size_t name = std::strchr(entry, '=') - entry + 1;
      envp.pop_back();  // the terminating nullptr
      envp.erase(std::remove_if(envp.begin(), envp.end(),
                                [&](const char* e) { return std::strncmp(e, entry, name) == 0; }),
                 envp.end());
      envp.push_back(entry);
      envp.push_back(nullptr);
    };
    // The private /tmp is the run's temporary space (the checker's own TMPDIR may be hidden).
    static char private_tmpdir[] = "TMPDIR=/tmp";
    if (plan.private_tmp) set_env(private_tmpdir);
    // A user of its own has no use of the grader's home, which it may not even look into (ncu,
    // as uid 65534 with HOME=/root, could not start): its home is its work folder.
    if (plan.user != 0 && !options.workdir.empty()) set_env(own_home.data());
  }

  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.start_error = std::string("fork: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1], handed[0], handed[1]})
      if (fd >= 0) ::close(fd);
    return result;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec.
    ::setsid();                                   // new session => new process group, no tty
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);           // if the checker dies, so does the lesson
    if (::getppid() != parent) ::_exit(127);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
    struct rlimit no_core {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);           // a segfault leaves no core file behind
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(merged ? out_pipe[1] : err_pipe[1], 2);
    for (int fd : handed)
      if (fd >= 0) ::fcntl(fd, F_SETFD, 0);  // open across exec
    // In namespaces mode this returns in a grandchild, PID 1's child in new namespaces.
    if (contained) sandbox_detail::enter(plan, exec_pipe[1]);
    if (!options.workdir.empty() && ::chdir(options.workdir.c_str()) != 0) {
      sandbox_detail::report_failure(exec_pipe[1], "", errno);
      ::_exit(127);
    }
    ::execve(argv[0], argv.data(), envp.data());
    sandbox_detail::report_failure(exec_pipe[1], "", errno);
    ::_exit(127);
  }

  // Parent. The group id equals the child's pid (setsid). Set it here too, to close the race
  // with a kill before the child ran setsid (EPERM/EACCES then are harmless).
  ::setpgid(pid, pid);
  g_running_group = pid;
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  for (int fd : handed)
    if (fd >= 0) ::close(fd);

  sandbox_detail::StartFailure failure;
  if (::read(exec_pipe[0], &failure, sizeof failure) == sizeof failure) {
    result.start_error = std::strerror(failure.error);
    if (failure.step[0]) result.start_error = std::string(failure.step) + ": " + result.start_error;
  }
  ::close(exec_pipe[0]);

  Sink out{out_pipe[0], open_output(options.stdout_path), 0, options.max_output_bytes};
  Sink err{err_pipe[0], merged ? -1 : open_output(options.stderr_path), 0,
           options.max_output_bytes};
  bool out_open = true, err_open = true;

  int status = 0;
  bool reaped = false;
  bool term_sent = false;
  std::chrono::steady_clock::time_point term_time;

  while (!reaped) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out.read_fd, POLLIN, 0};
    if (err_open) fds[n++] = {err.read_fd, POLLIN, 0};
    if (n > 0) {
      ::poll(fds, n, 20);
      for (nfds_t i = 0; i < n; ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Sink& s = fds[i].fd == out.read_fd ? out : err;
        bool& open = fds[i].fd == out.read_fd ? out_open : err_open;
        if (!s.pump()) open = false;
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }

    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      reaped = true;
      break;
    }
    const double elapsed = seconds_since(t0);
    if (!term_sent && elapsed > options.timeout_s) {
      result.timed_out = true;
      ::kill(-pid, SIGTERM);
      term_sent = true;
      term_time = std::chrono::steady_clock::now();
    } else if (term_sent && seconds_since(term_time) > options.grace_s) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      reaped = true;
    }
  }
  result.wall_s = seconds_since(t0);

  // The leader is gone; whatever is left in its group (background children) goes too.
  ::kill(-pid, SIGKILL);
  // Weak mode: and whatever detached from it (orphans come to us, the subreaper). In namespaces
  // mode they are gone already: the namespace's PID 1 ended before the child did.
  if (contained && policy.mode == Containment::weak) sandbox_detail::kill_all_descendants();
  g_running_group = 0;

  // Drain what is still buffered in the pipes (bounded in time: a process that escaped the
  // group by starting its own session could hold them open).
  const auto drain_start = std::chrono::steady_clock::now();
  while ((out_open || err_open) && seconds_since(drain_start) < 1.0) {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open) fds[n++] = {out.read_fd, POLLIN, 0};
    if (err_open) fds[n++] = {err.read_fd, POLLIN, 0};
    if (::poll(fds, n, 50) <= 0) continue;
    for (nfds_t i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Sink& s = fds[i].fd == out.read_fd ? out : err;
      bool& open = fds[i].fd == out.read_fd ? out_open : err_open;
      if (!s.pump()) open = false;
    }
  }
  for (int fd : {out.read_fd, err.read_fd, out.file_fd, err.file_fd})
    if (fd >= 0) ::close(fd);
  result.output_truncated = out.truncated || err.truncated;
  if (g_interrupted) throw Interrupted(g_interrupted);

  if (!result.start_error.empty()) return result;
  result.started = true;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (contained)
    result.limit = limit_hit(build ? policy.build_limits : policy.program_limits, result.signal,
                             cgroup->memory_events(), cgroup->process_events());
  return result;
}

std::string describe(const ProcessResult& r, double timeout_s) {
  if (!r.started) return "could not start: " + r.start_error;
  std::string how;
  if (r.timed_out) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", timeout_s);
    how = std::string("timed out after ") + buf + " s (its process group was killed)";
  } else if (r.signal != 0) {
    const char* name = ::strsignal(r.signal);
    how = "killed by signal " + std::to_string(r.signal) + " (" + (name ? name : "?") + ")";
  } else {
    how = "exited with code " + std::to_string(r.exit_code);
  }
  return r.limit.empty() ? how : how + ": " + r.limit;
}

}  // namespace lab
