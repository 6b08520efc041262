// This program run again as a child process (lab/child_process.hpp).
#include "lab/child_process.hpp"

#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "lab/format.hpp"
#include "lab/harness.hpp"
#include "lab/stats.hpp"

extern char** environ;

namespace lab {

namespace {

constexpr const char* kChildFlag = "--lab-child";
constexpr int kReadingsFd = 3;                  // a child's readings (see the header)
constexpr std::size_t kOutputKept = 64 * 1024;  // the tail of a child's output kept for messages
constexpr std::size_t kReadingsKept = 1 << 20;  // the start of its readings (a few lines are usual)

// The parent's environment without the variables @p env sets and without the tracer's, then
// @p env.
std::vector<std::string> child_environment(const Environment& env) {
  std::vector<std::string> drop;
  for (const auto& [name, value] : env) drop.push_back(name + "=");
  if (std::getenv("LAB_TRACE_FILE"))
    drop.insert(drop.end(), {"LAB_TRACE_FILE=", "CUDA_INJECTION64_PATH="});
  std::vector<std::string> out;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    bool dropped = false;
    for (const std::string& prefix : drop) dropped = dropped || entry.rfind(prefix, 0) == 0;
    if (!dropped) out.push_back(entry);
  }
  for (const auto& [name, value] : env) out.push_back(name + "=" + value);
  return out;
}

// The "@ name value" lines of @p said, by name.
std::map<std::string, std::string> parse_readings(const std::string& said) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start < said.size()) {
    std::size_t end = said.find('\n', start);
    if (end == std::string::npos) end = said.size();
    const std::string line = said.substr(start, end - start);
    if (line.rfind("@ ", 0) == 0) {
      const std::size_t space = line.find(' ', 2);
      if (space != std::string::npos) out[line.substr(2, space - 2)] = line.substr(space + 1);
    }
    start = end + 1;
  }
  return out;
}

// The child's readings pipe, as a stream.
std::FILE* readings_pipe() {
  static std::FILE* f = fdopen(kReadingsFd, "w");
  if (!f) throw std::runtime_error("no readings pipe (the child flag is the harness's own)");
  return f;
}

}  // namespace

double ChildRun::number(const std::string& name) const {
  const auto it = readings.find(name);
  if (it == readings.end())
    throw std::runtime_error("a child process did not report '" + name + "'");
  return std::strtod(it->second.c_str(), nullptr);
}

std::string ChildRun::text(const std::string& name) const {
  const auto it = readings.find(name);
  return it == readings.end() ? "" : it->second;
}

std::string ChildRun::why() const {
  std::string tail = output.size() > 600 ? "..." + output.substr(output.size() - 600) : output;
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return failure + (tail.empty() ? "" : "; its output ends with: " + tail);
}

ChildRun run_child(const std::string& program, const std::vector<std::string>& args,
                   const Environment& env, double timeout_s) {
  std::vector<std::string> argv_s = {program};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<std::string> env_s = child_environment(env);
  std::vector<char*> argv, envp;
  for (std::string& a : argv_s) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  for (std::string& e : env_s) envp.push_back(&e[0]);
  envp.push_back(nullptr);

  int fds[2], readings[2];  // its output; its readings (kReadingsFd in the child)
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (pipe(readings) != 0) {
    const int e = errno;
    close(fds[0]);
    close(fds[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(e));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  posix_spawn_file_actions_addclose(&actions, readings[0]);
  posix_spawn_file_actions_adddup2(&actions, readings[1], kReadingsFd);
  if (readings[1] != kReadingsFd) posix_spawn_file_actions_addclose(&actions, readings[1]);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  close(readings[1]);
  if (spawned != 0) {
    close(fds[0]);
    close(readings[0]);
    throw std::runtime_error("cannot run " + program + ": " + std::strerror(spawned));
  }

  ChildRun c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  bool timed_out = false;
  // Both pipes read as they fill: a child that writes more than a pipe holds to either would
  // otherwise wait for a reader that waits for it to end.
  std::string said;
  pollfd open[2] = {{fds[0], POLLIN, 0}, {readings[0], POLLIN, 0}};
  char buf[4096];
  while (open[0].fd >= 0 || open[1].fd >= 0) {
    const double left =
        std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    const int ready = poll(open, 2, static_cast<int>(std::min(left, 1000.0)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    for (int k = 0; k < 2; ++k) {
      if (open[k].fd < 0 || open[k].revents == 0) continue;
      const ssize_t got = read(open[k].fd, buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {  // its end: the child closed it, or is exiting
        close(open[k].fd);
        open[k].fd = -1;
        continue;
      }
      std::string& into = k == 0 ? c.output : said;
      // The output keeps its tail; the readings their start (the numbers come first).
      if (k == 0 || into.size() < kReadingsKept) into.append(buf, static_cast<std::size_t>(got));
      if (k == 0 && into.size() > 2 * kOutputKept) into.erase(0, into.size() - kOutputKept);
    }
  }
  for (const pollfd& f : open)
    if (f.fd >= 0) close(f.fd);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (c.output.size() > kOutputKept) c.output.erase(0, c.output.size() - kOutputKept);
  if (timed_out)
    c.failure = "the process did not finish within " + fixed(timeout_s, 0) + " s (killed)";
  else if (WIFSIGNALED(status))
    c.failure = "the process was killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                strsignal(WTERMSIG(status)) + ")";
  else if (WEXITSTATUS(status) != 0)
    c.failure = "the process exited with code " + std::to_string(WEXITSTATUS(status));
  c.readings = parse_readings(said);
  if (!c.text("error").empty())
    c.failure = (c.failure.empty() ? "" : c.failure + ": ") + c.text("error");
  c.ok = c.failure.empty();
  return c;
}

ChildRun run_self(const std::vector<std::string>& args, const Environment& env, double timeout_s) {
  char exe[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) throw std::runtime_error("cannot find this program (/proc/self/exe)");
  std::vector<std::string> all = {kChildFlag};
  all.insert(all.end(), args.begin(), args.end());
  return run_child(std::string(exe, static_cast<std::size_t>(len)), all, env, timeout_s);
}

bool is_child(int argc, char** argv) { return argc >= 2 && std::strcmp(argv[1], kChildFlag) == 0; }

int child_main(int argc, char** argv,
               const std::function<void(const std::vector<std::string>& args)>& role) {
  close_process_memory();  // before any code under test runs in this process
  try {
    role(std::vector<std::string>(argv + 2, argv + argc));
  } catch (const std::exception& e) {
    try {
      report("error", e.what());
    } catch (const std::exception&) {  // no readings pipe: the error was that
    }
    std::fflush(nullptr);
    return kExitCudaError;
  }
  std::fflush(nullptr);
  return kExitOk;
}

int child_main(int argc, char** argv, const std::vector<ChildRole>& roles) {
  return child_main(argc, argv, [&](const ChildArgs& a) {
    for (const ChildRole& r : roles)
      if (!a.empty() && a[0] == r.name && a.size() == r.args + 1)
        return r.run(ChildArgs(a.begin() + 1, a.end()));
    throw std::invalid_argument("unknown child role (this flag is the harness's own)");
  });
}

std::string record_spread(Lesson& lesson, const std::string& label, const std::string& name,
                          const std::vector<double>& values, const std::string& unit) {
  const Stats st = summarize(values);
  lesson.metric(name, st.median, st.min, st.max, " " + unit);
  const int digits = st.median < 10 ? 2 : st.median < 100 ? 1 : 0;
  return "  " + label + std::string(label.size() < 52 ? 52 - label.size() : 1, ' ') +
         fixed(st.median, digits) + " " + unit + "  (" + fixed(st.min, digits) + " .. " +
         fixed(st.max, digits) + ")";
}

ChildRun measure_in_processes(Lesson& lesson, int processes, const ChildArgs& args,
                              const Environment& env, const std::vector<ProcessReading>& readings,
                              const std::string& what, double timeout_s) {
  return measure_in_processes(
      lesson, processes, [&] { return run_self(args, env, timeout_s); }, readings, what);
}

ChildRun measure_in_processes(Lesson& lesson, int processes,
                              const std::function<ChildRun()>& run_one,
                              const std::vector<ProcessReading>& readings,
                              const std::string& what) {
  std::map<std::string, std::vector<double>> values;
  ChildRun last;
  for (int i = 0; i < processes; ++i) {
    const ChildRun c = run_one();
    if (!c.ok) {
      lesson.note("  " + what + " failed: " + c.why());
      return last;
    }
    for (const ProcessReading& r : readings) values[r.reading].push_back(c.number(r.reading));
    last = c;
  }
  for (const ProcessReading& r : readings)
    lesson.note(record_spread(lesson, r.label, r.metric, values[r.reading], r.unit));
  return last;
}

void report(const std::string& name, double value) {
  std::fprintf(readings_pipe(), "@ %s %.6f\n", name.c_str(), value);
}

void report(const std::string& name, const std::string& text) {
  std::string line = text;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(readings_pipe(), "@ %s %s\n", name.c_str(), line.c_str());
}

}  // namespace lab
