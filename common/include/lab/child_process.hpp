/// @file child_process.hpp
/// @brief This program run again as a new process (a child), for what only a new process can
/// show: a one-time cost, paid once per process, is only honest when measured in a process that
/// has not paid it yet; a disk cache is only tested by a process that did not write it.
///
/// The parent asks for a role and reads what the child reported:
/// @code
/// const lab::ChildRun c = lab::run_self({"context"}, {{"CUDA_MODULE_LOADING", "EAGER"}});
/// if (c.ok) use(c.number("context_ms")); else lesson.note(c.why());
/// @endcode
/// The child starts in main, before anything else:
/// @code
/// if (lab::is_child(argc, argv)) return lab::child_main(argc, argv, run_role);
/// ...
/// void run_role(const std::vector<std::string>& args) {  // args: what run_self was given
///   if (args.at(0) == "context") lab::report("context_ms", time_context());
/// }
/// @endcode
/// A child's readings ("@ name value" lines) travel on a pipe of their own, file descriptor 3,
/// not on its output: code under test runs in the child too and may print, and a line it printed
/// (or left unfinished, onto which the harness's next one would be glued) must not read as the
/// harness's. That code cannot write to the pipe: an exercise may print only to the standard
/// streams (the checker's seal), and it cannot open /proc/self/fd/3, because child_main makes
/// the process non-dumpable before the role runs.
///
/// A program with several roles names each with its arguments' count, and measures a role over
/// new processes in one call (a metric per reading: the median, and the fastest and slowest
/// process as its range; a line per reading in the notes):
/// @code
/// using lab::ChildArgs;
/// if (lab::is_child(argc, argv))
///   return lab::child_main(argc, argv, {{"context", 0, [](const ChildArgs&) { time_context(); }},
///                                       {"compile", 1, [](const ChildArgs& a) { time(a[0]); }}});
/// ...
/// lab::measure_in_processes(lesson, 5, {"context"}, {},
///                           {{"context creation", "context_ms", "context_ms", "ms"}}, "context");
/// @endcode
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lab {

class Lesson;

/// A child role's arguments (after its name).
using ChildArgs = std::vector<std::string>;

/// @brief What one child process did.
struct ChildRun {
  bool ok = false;                              ///< exited 0 and reported no error
  std::string failure;                          ///< why not, in words ("" when ok)
  std::map<std::string, std::string> readings;  ///< its "@ name value" lines, by name
  std::string output;                           ///< the last 64 KiB it printed (for messages)

  /// @param name a reading
  /// @return its value as a number
  /// @throws std::runtime_error when the child did not report it
  double number(const std::string& name) const;
  /// @param name a reading
  /// @return its value, or "" when the child did not report it
  std::string text(const std::string& name) const;
  /// @return the failure and the last lines of the output, for a message
  std::string why() const;
};

/// Environment variables to add to (or replace in) a child's environment: name, value.
using Environment = std::vector<std::pair<std::string, std::string>>;

/// @brief Runs @p program with @p args (argv[0] is @p program) and waits for it: its output
/// (standard output and error together) goes to a pipe read here, its readings to file
/// descriptor 3. Killed after @p timeout_s. The checker's tracer (LAB_TRACE_FILE,
/// CUDA_INJECTION64_PATH) follows the parent only: a child would load it too, and open (so
/// empty) the parent's trace file, so both are left out of the child's environment.
/// @param program the file to run (an absolute path)
/// @param args its arguments after argv[0]
/// @param env added to the parent's environment, replacing variables of the same name
/// @param timeout_s seconds before the child is killed (SIGKILL)
/// @return what it did; a child that could not start throws std::runtime_error instead
ChildRun run_child(const std::string& program, const std::vector<std::string>& args,
                   const Environment& env = {}, double timeout_s = 120.0);

/// @brief run_child() on this program (/proc/self/exe) with the child flag and @p args: in the
/// child, is_child() is true and child_main() hands @p args to the role.
/// @param args the role and its arguments
/// @param env added to the environment
/// @param timeout_s seconds before the child is killed
/// @return what it did
ChildRun run_self(const std::vector<std::string>& args, const Environment& env = {},
                  double timeout_s = 120.0);

/// @param argc from main
/// @param argv from main
/// @return true when this process is a child that run_self() started
bool is_child(int argc, char** argv);

/// @brief The child's whole life: makes the process non-dumpable (close_process_memory), runs
/// @p role on the arguments run_self() was given, and reports an exception it throws as the
/// reading "error" (ChildRun::failure says it).
/// @param argc from main
/// @param argv from main
/// @param role the child's work; reports its readings with report()
/// @return the exit code for main: 0, or 3 (kExitCudaError) after an error
int child_main(int argc, char** argv,
               const std::function<void(const std::vector<std::string>& args)>& role);

/// @brief One role of a program that has several.
struct ChildRole {
  std::string name;                           ///< the first argument run_self() is given
  std::size_t args = 0;                       ///< how many arguments follow the name
  std::function<void(const ChildArgs&)> run;  ///< the work, on the arguments after the name
};

/// @brief child_main() for a program with several roles: runs the one the first argument names
/// on the arguments after it. A name not among @p roles, or another count of arguments, is the
/// child's error "unknown child role (this flag is the harness's own)".
/// @param argc from main
/// @param argv from main
/// @param roles every role the program has
/// @return the exit code for main, as child_main() says
int child_main(int argc, char** argv, const std::vector<ChildRole>& roles);

/// @brief One reading of a role measured over new processes, and where it goes.
struct ProcessReading {
  std::string label;    ///< the start of its line in the notes
  std::string metric;   ///< the metric it is recorded as
  std::string reading;  ///< the name the child reports it under
  std::string unit;     ///< e.g. "ms"
  /// @brief A reading recorded as a metric of another name.
  /// @param label_ the start of its line in the notes
  /// @param metric_ the metric it is recorded as
  /// @param reading_ the name the child reports it under
  /// @param unit_ e.g. "ms"
  ProcessReading(std::string label_, std::string metric_, std::string reading_, std::string unit_)
      : label(std::move(label_)),
        metric(std::move(metric_)),
        reading(std::move(reading_)),
        unit(std::move(unit_)) {}
  /// @brief A reading recorded as the metric of its own name.
  /// @param label_ the start of its line in the notes
  /// @param name the metric's name and the child's
  /// @param unit_ e.g. "ms"
  ProcessReading(const std::string& label_, const std::string& name, const std::string& unit_)
      : ProcessReading(label_, name, name, unit_) {}
};

/// @brief Records @p values (one per process, or per call) as metric @p name: the median, with the
/// smallest and largest value as its range.
/// @param lesson where to record it
/// @param label the line's start, padded to 52 characters
/// @param name the metric's name
/// @param values at least one
/// @param unit e.g. "ms"
/// @return the line for the notes: "  label   median unit  (smallest .. largest)", with 2 decimals
///         below 10, 1 below 100, none above
std::string record_spread(Lesson& lesson, const std::string& label, const std::string& name,
                          const std::vector<double>& values, const std::string& unit);

/// @brief Runs a role in @p processes new processes, one after the other, and records each of
/// @p readings with record_spread() (a line in the notes each). A process that fails ends the
/// measurement: the note "  <what> failed: <why>", and nothing is recorded (the harness's own
/// measurement: the others go on).
/// @param lesson where to record
/// @param processes how many
/// @param args the role and its arguments (run_self)
/// @param env added to each child's environment
/// @param readings what each process reports, and how to record it
/// @param what the measurement, for the failure's note ("measuring compilation")
/// @param timeout_s seconds before a child is killed
/// @return the last process that did not fail (for its text readings), or an empty ChildRun
ChildRun measure_in_processes(Lesson& lesson, int processes, const ChildArgs& args,
                              const Environment& env, const std::vector<ProcessReading>& readings,
                              const std::string& what, double timeout_s = 120.0);

/// @overload
/// @param lesson where to record
/// @param processes how many
/// @param run_one starts one process and waits for it (run_self, or a test's stand-in)
/// @param readings what each process reports
/// @param what the measurement
/// @return the last process that did not fail
ChildRun measure_in_processes(Lesson& lesson, int processes,
                              const std::function<ChildRun()>& run_one,
                              const std::vector<ProcessReading>& readings, const std::string& what);

/// @brief In a child: reports @p value as reading @p name ("%.6f").
/// @param name one word
/// @param value the number
void report(const std::string& name, double value);

/// @brief In a child: reports @p text as reading @p name (line breaks become spaces).
/// @param name one word
/// @param text the value
void report(const std::string& name, const std::string& text);

}  // namespace lab
