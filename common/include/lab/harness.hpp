/// @file harness.hpp
/// @brief The lesson harness: a lesson's main.cu declares its variants, then validates and
/// measures them; the harness parses options, prints the table and writes the result file.
///
/// A lesson's main.cu, in outline (lessons/_template/main.cu is the whole of one):
/// @code
/// int main(int argc, char** argv) {
///   lab::Lesson lesson("04-coalescing", "Coalescing: neighbouring threads, neighbouring addresses");
///   lab::Variants<Problem> variants(lesson);   // each way of doing the work (lab/variant.hpp)
///   add_variants(variants);
///   return lesson.run(argc, argv, [&](lab::Lesson& l) {
///     lab::Protocol<Problem> protocol(l, variants, checks());  // lab/protocol.cuh
///     // for each validation size: protocol.validate(problem, case_name)
///     // at the timing size: protocol.measure(problem), then protocol.validate(problem, "... after timing")
///     // then the lesson's notes and metrics from variants.measurement(name)
///   });
/// }
/// @endcode
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "lab/device.hpp"
#include "lab/result.hpp"
#include "lab/timing.hpp"
#include "lab/validate.hpp"

namespace lab {

/// @brief Work done by one launch, declared by the lesson: the basis of GB/s and GFLOP/s.
struct Work {
  double bytes = 0;  ///< global-memory bytes read plus written (count every one, once)
  double flops = 0;  ///< floating-point operations
  /// true when the bytes cross the host link (cudaMemcpy host<->device) rather than device
  /// memory: their ceiling is the pinned transfer rate, not the copy kernel
  bool host_link = false;
};

/// @brief How the exercise's timed calls are held to account: a timed call must be as checkable
/// as a validated one, so an exercise cannot tell them apart and skip the work when timed.
struct TimedCallChecks {
  /// Before every timed call (warm-up included), outside the timed window: re-poison the outputs
  /// and give the call new inputs made from @p call_seed (a seed drawn by the harness, unknown to
  /// the exercise), so that a call is only right if it does the work on this call's data.
  std::function<void(cudaStream_t stream, std::uint64_t call_seed)> prepare;
  /// After every timed call (warm-up included; none after one that failed), once it has
  /// finished: check that call's outputs against the inputs prepare() made (regenerated, not read
  /// back: the inputs are read-only) and record it with Lesson::compare or Lesson::check under @p case_name. What it
  /// picks to look at (rows, elements) comes from @p pick_seed, drawn only now (and replayed by
  /// a --replay run, which must look at the same ones).
  std::function<void(cudaStream_t stream, const std::string& case_name, std::uint64_t pick_seed)>
      verify;
};

/// The most timed calls of a checked variant (Lesson::measure lowers BenchmarkOptions::max_samples
/// to it): far more than a median needs, and few enough that checking each, and recording each
/// for the out-of-process replay, stays bounded (lab/record.hpp). The checks stop at the first
/// call that fails: the variant is wrong from then on.
inline constexpr std::size_t kMaxCheckedCalls = 4000;

/// @brief Makes this process non-dumpable (prctl PR_SET_DUMPABLE 0), so that its files in /proc
/// belong to root: code in it can no longer open /proc/self/mem, through which a write ignores
/// page protections and reaches the harness's code and data (docs/grading-security.md). Lesson's
/// constructor calls it, before any exercise code can run; a program that runs exercise code
/// without a Lesson (lesson 11's child processes) calls it first thing in main. The cost: no core
/// file, and no debugger can attach to a running program (one that starts it still can).
void close_process_memory();

/// @brief A number no state in this process predicts, for what a timer lesson hands over (a
/// kernel's length, a wait): drawn from std::random_device now, log-uniform in [@p low, @p high).
/// A constant answer lands within 10% of it with probability log(1.1 / 0.9) / log(high / low).
/// @param low the least value (> 0)
/// @param high the bound above it
/// @return the draw
double fresh_log_uniform(double low, double high);

/// What a tensor-core roof multiplies (Lesson::measure_tensor_roof).
enum class TensorInput { bf16, tf32 };

/// Exit codes of a lesson program (also in docs/result-file.md).
enum ExitCode : int {
  kExitOk = 0,          ///< every variant correct
  kExitIncorrect = 1,   ///< at least one variant gave a wrong result
  kExitUsage = 2,       ///< bad command-line option
  kExitCudaError = 3,   ///< a CUDA or other runtime error stopped the run
  kExitNoGpu = 77,      ///< no usable GPU (CTest reports the test as skipped)
};

/// @brief The values an integer option accepts, from least to most (both included), e.g.
/// `lesson.option("--chunks", &chunks, "pieces", {1, 4096})`.
struct Accepted {
  long long least = std::numeric_limits<long long>::min();  ///< the smallest value accepted
  long long most = std::numeric_limits<long long>::max();   ///< the largest value accepted
};

/// @brief One lesson program: its options, its variants, its results.
class Lesson {
 public:
  /// @param id the lesson folder's name, e.g. "04-coalescing"
  /// @param title one line saying what it teaches
  Lesson(std::string id, std::string title);
  /// @brief Releases the lesson's stream and state.
  ~Lesson();
  Lesson(const Lesson&) = delete;
  Lesson& operator=(const Lesson&) = delete;

  /// @brief Declares a variant (before run()) so --list can show it and --variant can pick it.
  /// @param name unique name (the student's is always "exercise")
  /// @param role what it is
  /// @param description one line for the table's legend
  void declare(const std::string& name, Role role, const std::string& description);

  /// @brief Adds an integer option of this lesson (before run()).
  /// @param flag e.g. "--rows"
  /// @param value its default on entry, the parsed value after run() starts
  /// @param help one line for --help
  /// @param accepted the values accepted (none below least, none above most): any other is a
  ///        usage error naming the option, before the lesson runs
  void option(const std::string& flag, long long* value, const std::string& help,
              Accepted accepted = {});
  /// @brief Adds a size option of this lesson whose default depends on --quick (before run()).
  /// @param flag e.g. "--rows"
  /// @param value 0 on entry; after run() starts, the parsed value, or the default if it is 0
  /// @param what one line for --help, which adds the defaults
  /// @param normal the default
  /// @param quick the default with --quick
  /// @param accepted the values accepted once the default has replaced a 0 (see above)
  void option(const std::string& flag, long long* value, const std::string& what, long long normal,
              long long quick, Accepted accepted = {});

  /// @brief Parses the options, checks for a GPU, measures the ceilings, runs @p body, prints the
  /// table and writes the result file. Catches every error so a partial result is still written.
  /// @param argc from main
  /// @param argv from main
  /// @param body the lesson: validations and measurements through this object
  /// @return the process exit code (see ExitCode)
  int run(int argc, char** argv, const std::function<void(Lesson&)>& body);

  /// @return true with --quick: small sizes and short timing, for tests
  bool quick() const;
  /// @return the seed of this run's inputs (--seed; the checker picks a fresh one each run)
  std::uint64_t seed() const;
  /// @return the stream every variant runs on
  cudaStream_t stream() const;
  /// @return the ceilings measured in this process (with the tensor roof, once measured); every
  /// roof 0 under --no-ceilings (a note that divides by one checks for 0 first)
  const Ceilings& ceilings() const;
  /// @param variant a declared variant (an undeclared name throws std::logic_error)
  /// @return false if --variant left it out or --skip-variant named it
  bool selected(const std::string& variant) const;
  /// @return true in --profile mode (measure() then makes a few calls as if timing them and runs
  ///         one of them, picked at random, between cudaProfilerStart/Stop)
  bool profiling() const;

  /// @brief Records the problem sizes for the table and the result file.
  /// @param text e.g. "A 16384x16384 (1 GiB)"
  void size(const std::string& text);

  /// @brief Records a validation of @p variant.
  /// @param variant a declared variant
  /// @param case_name the case, e.g. "1000x777"
  /// @param comparison the outcome of lab::allclose
  void check(const std::string& variant, const std::string& case_name,
             const Comparison& comparison);

  /// @brief Compares the exercise's values with a reference, as lab::allclose does, and makes the
  /// comparison checkable out of process. Under the checker (--record-fd) a sample of @p got,
  /// drawn now, goes into the record; in a --replay run (the course's own program) the
  /// comparison is made instead between the recorded values and this process's @p expected
  /// (lab/record.hpp). For any other variant it is lab::allclose.
  /// @param variant a declared variant
  /// @param case_name the case it will be checked under (Lesson::check)
  /// @param got the variant's values, as it left them
  /// @param expected the reference, computed by the harness
  /// @param n elements of each
  /// @param tol tolerances
  /// @return the comparison, for Lesson::check (after any guard check of the lesson's)
  Comparison compare(const std::string& variant, const std::string& case_name, const float* got,
                     const float* expected, std::size_t n, Tolerance tol);
  /// @overload
  /// @param variant a declared variant
  /// @param case_name the case it will be checked under
  /// @param got the variant's values
  /// @param expected the reference
  /// @param n elements of each
  /// @param tol tolerances
  /// @return the comparison
  Comparison compare(const std::string& variant, const std::string& case_name, const double* got,
                     const double* expected, std::size_t n, Tolerance tol);
  /// @overload
  /// @param variant a declared variant
  /// @param case_name the case it will be checked under
  /// @param got the variant's values
  /// @param expected the reference (a different size fails the comparison, saying so)
  /// @param tol tolerances
  /// @return the comparison
  template <class T>
  Comparison compare(const std::string& variant, const std::string& case_name,
                     const std::vector<T>& got, const std::vector<T>& expected, Tolerance tol) {
    if (got.size() != expected.size()) return allclose(got, expected, tol);  // says why
    return compare(variant, case_name, got.data(), expected.data(), got.size(), tol);
  }

  /// @brief A count the harness chose at run time that the exercise's results depend on (a
  /// calibration), made the same in a --replay run: under the checker it goes into the record;
  /// a --replay run gets the recorded value back instead of @p value. Call it before any exercise
  /// code runs.
  /// @param name unique in the lesson, e.g. "steps"
  /// @param value this run's choice
  /// @return @p value, or in a --replay run the recorded one
  std::uint64_t run_parameter(const std::string& name, std::uint64_t value);

  /// @brief Records a validation that is a yes/no fact rather than an array comparison.
  /// @param variant a declared variant
  /// @param case_name the case
  /// @param ok passed
  /// @param message what went wrong (shown when not ok)
  void check(const std::string& variant, const std::string& case_name, bool ok,
             const std::string& message);

  /// @brief Measures @p launch with lab::benchmark and records it for @p variant. With --profile
  /// it makes the same calls but stops after one of the first eight samples, picked at random,
  /// which runs between cudaProfilerStart/Stop and is verified like every call; nothing is
  /// recorded as measured. Work is per launch.
  /// @param variant a declared variant
  /// @param work bytes and FLOPs of one launch
  /// @param launch enqueues the variant's work once on the given stream
  /// @param options measurement options (defaults: cold, the course's stopping rule; --quick
  ///        shortens them)
  /// @param checks for the exercise: how its timed calls are prepared and spot-checked (every
  ///        call prepared, and every call verified once it has finished)
  /// @return the measurement, or nullptr when profiling or when the variant is not selected
  const Measurement* measure(const std::string& variant, Work work,
                             const std::function<void(cudaStream_t)>& launch,
                             BenchmarkOptions options = {}, const TimedCallChecks& checks = {});

  /// @brief Measures a tensor-core roof of this run: @p gemm, a large matrix product on the
  /// tensor cores doing @p flops per launch (a library's, e.g. cuBLAS), timed back to back; its
  /// rate becomes ceilings().bf16_tensor_gflops or tf32_tensor_gflops in the table and the result
  /// file, and the checker's bound on a plausible FLOP rate. Only lessons whose exercise may use
  /// the tensor cores call it (it costs tens of milliseconds), first thing in their body, before
  /// any exercise code has run. Does nothing with --profile.
  /// @param input BF16 inputs (FP32 accumulation), or TF32 from FP32 inputs
  /// @param gemm enqueues one product on the given stream
  /// @param flops floating-point operations of one product (2 M N K)
  void measure_tensor_roof(TensorInput input, const std::function<void(cudaStream_t)>& gemm,
                           double flops);

  /// @brief Records a lesson-specific number for the checker's rules.
  /// @param name e.g. "overlap_efficiency"
  /// @param value from medians
  /// @param low pessimistic reading
  /// @param high optimistic reading
  /// @param unit for display
  void metric(const std::string& name, double value, double low, double high,
              const std::string& unit = "");

  /// @brief Adds a line printed under the table (an observation the lesson wants to show).
  /// @param text the line
  void note(const std::string& text);

  /// @return the results recorded so far
  const Result& result() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
  void replay_timed_calls(const std::string& variant, const TimedCallChecks& checks);
  void read_replay();
  void summarize_replay();
  template <class T>
  Comparison compare_values(const std::string& variant, const std::string& case_name,
                            const T* got, const T* expected, std::size_t n, Tolerance tol);
};

}  // namespace lab
