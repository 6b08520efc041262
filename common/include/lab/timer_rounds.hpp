/// @file timer_rounds.hpp
/// @brief Judging a timer the student writes (the timer lessons, 01 and 02): calls of it on work
/// the harness hands over, each made the same way, and what its reported times read against the
/// harness's own timing of the same work.
///
/// One call (TimerRounds::call): the GPU set up as asked (TimerSetup: alone, an unrelated kernel
/// on another stream, or work already queued on the timer's own stream), then exactly the
/// timer's call inside an NVTX range and a host clock, then the probes (was the other stream
/// still busy when it returned? had the queued work already finished when the timer enqueued its
/// first part?), any CUDA error it left unchecked, the lesson's check of the outputs, and, if
/// asked, the same parts once more between the harness's own events (lab::BetweenCalls) for a
/// reference. A round (TimerRounds::round) is such calls one after the other, each with a
/// reference; TimerRound then reads per-call errors and their median with its interval.
///
/// What the lesson keeps: the work (its parts, drawn afresh per call, e.g. with
/// lab::fresh_log_uniform, so that only a measurement can know its time), the poisoning of its
/// outputs, the check of them, and the notes and metrics it prints from the readings.
/// @code
/// lab::TimerRounds yours(l, "exercise", "time_phases", stream, other, timer);
/// const lab::TimerRound alone = yours.round("exercise: alone", "alone", 9, {}, next_work);
/// lab::metric(l, "phase_error", alone.worst_error());
/// @endcode
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "lab/ratio.hpp"
#include "lab/validate.hpp"

namespace lab {

/// @param ms a time in milliseconds
/// @return how the timer lessons print a time: "12.34 ms" from 1 ms up, else "567.8 us"
std::string time_text(double ms);

/// @brief What one call of a timer reported and what the harness saw around it.
struct TimerCall {
  std::vector<double> reported;   ///< the timer's time of each part (ms), as it returned them
  std::vector<double> reference;  ///< the harness's time of each part right after (ms); empty
                                  ///< for a call made without a reference
  double host_ms = 0;             ///< the call on the host clock
  bool other_still_busy = false;  ///< the other stream's kernel was still running at its return
  bool waited_at_start = false;   ///< the queued work had finished before its first part began
};

/// @param reported_ms a time the timer reported
/// @param reference_ms the harness's time of the same work (positive)
/// @return reported / reference - 1; a reported time that is not a finite positive number counts
///         as 0, an error of -100%
double timer_error(double reported_ms, double reference_ms);

/// @param errors signed errors, one per call (timer_error)
/// @return the median of their sizes |e| with the median's 95% order-statistic interval
///         (lab::summarize; for 9 calls the 2nd and 8th smallest, 96%): one call that chance
///         slowed does not make the reading ambiguous. The size of each call's own error counts,
///         not the median of the signed ones: a constant near the typical time would pass that.
Reading median_error(const std::vector<double>& errors);

/// @brief The calls of one round and what they read.
struct TimerRound {
  std::vector<TimerCall> calls;  ///< in the order they were made

  /// @param part an index into the parts
  /// @return timer_error of that part, call by call (a time missing from a call counts as 0)
  std::vector<double> errors(std::size_t part) const;
  /// @return the worst over the parts the reference timed, part by part (lab::worst), of
  ///         median_error(errors(part)): a rule on the largest error of the parts
  Reading worst_error() const;
  /// @param part an index into the parts
  /// @return the median over the calls of the timer's time of that part (ms)
  double median_reported_ms(std::size_t part) const;
  /// @param part an index into the parts
  /// @return the median over the calls of the reference's time of that part (ms)
  double median_reference_ms(std::size_t part) const;
  /// @return the median over the calls of the host time of the call (ms)
  double median_host_ms() const;
  /// @param part_names the parts' names, in order
  /// @return the round's line under the table: for each part its name, the median reported
  ///         time / the median reference time, and the median of the signed errors, e.g.
  ///         "kernel 4.12 ms / 4.10 ms (+0.4%)  "
  std::string medians(const std::vector<std::string>& part_names) const;
  /// @param flag &TimerCall::other_still_busy or &TimerCall::waited_at_start
  /// @return in how many calls it was set
  int count(bool TimerCall::*flag) const;
};

/// @brief How the GPU is set up before a call.
struct TimerSetup {
  double other_busy_ms = 0;  ///< a one-thread kernel (lab::spin) this long on the other stream
  double queued_ms = 0;      ///< a one-thread kernel this long queued on the timer's own stream

  /// @return nothing else on the GPU
  static TimerSetup alone() { return {}; }
  /// @param ms how long the unrelated kernel on the other stream runs
  /// @return that setup
  static TimerSetup other_stream_busy(double ms) { return {ms, 0}; }
  /// @param ms how long the work queued on the timer's stream runs
  /// @return that setup
  static TimerSetup work_queued(double ms) { return {0, ms}; }
};

/// @param query what cudaStreamQuery or cudaEventQuery returned
/// @return true when the work has finished, false for cudaErrorNotReady ("not ready" is an
///         answer, not an error: it is cleared from cudaGetLastError); any other error throws
///         lab::CudaError
bool query_finished(cudaError_t query);

/// @brief Makes the calls of a timer under test, each the same way (see the file's comment).
class TimerRounds {
 public:
  /// One part of the work: enqueues it on the given stream and returns.
  using Part = std::function<void(cudaStream_t)>;
  /// The timer under test, called on the parts (given by value: handed on by moving, no copy in
  /// the timed call) and the stream; returns its time of each part (ms).
  using Timer = std::function<std::vector<double>(std::vector<Part> parts, cudaStream_t stream)>;

  /// @brief The work of one call, made by the lesson for each call (outputs poisoned already).
  struct Work {
    std::vector<Part> parts;  ///< what the timer times, part by part
    /// After the call has returned and its stream has finished, before anything runs the parts
    /// again: the lesson checks the outputs and records it under the case name it is given.
    std::function<void(const std::string& case_name)> check;
  };

  /// @param lesson where failed calls are recorded
  /// @param variant the timer's variant (its checks go there)
  /// @param name the timer's name, for messages and NVTX ranges (e.g. "time_phases")
  /// @param stream the lesson's stream, which the timer is given
  /// @param other the stream an unrelated kernel keeps busy (TimerSetup::other_busy_ms); a
  ///        harness's own lab::Stream, or nullptr when no call asks for it
  /// @param timer calls the timer under test
  TimerRounds(Lesson& lesson, std::string variant, std::string name, cudaStream_t stream,
              cudaStream_t other, Timer timer);
  /// @brief Frees the event of the queued-work probe.
  ~TimerRounds();
  TimerRounds(const TimerRounds&) = delete;
  TimerRounds& operator=(const TimerRounds&) = delete;

  /// @brief One call of the timer. An error in it (an exception, or a CUDA error it left
  /// unchecked) is recorded as a failed check "NAME stopped with an error: ..." and thrown on:
  /// the context may be broken, the harness stops there. Waits for the whole device at the end.
  /// @param work the parts and the check of their outputs
  /// @param case_name the check's case
  /// @param setup the GPU before the call
  /// @param with_reference also time the parts between the harness's events right after it
  /// @return what the call reported and what the harness saw
  TimerCall call(const Work& work, const std::string& case_name, TimerSetup setup = {},
                 bool with_reference = false);

  /// @brief One call as call() makes it, without a reference, for a profiler (--profile):
  /// between cudaProfilerStart and cudaProfilerStop, so that the capture holds the work's making
  /// (@p next_work), the set-up, the call and the harness's wait for the device after it.
  /// @param next_work makes the call's work
  /// @param case_name the check's case
  /// @param setup the GPU before the call
  void profiled_call(const std::function<Work()>& next_work, const std::string& case_name,
                     TimerSetup setup);

  /// @brief @p calls calls, each on new work from @p next_work and with a reference, inside the
  /// NVTX range @p range; their cases are "CASE, call K".
  /// @param range the round's NVTX range
  /// @param case_prefix the start of each call's case
  /// @param calls how many
  /// @param setup the GPU before each call
  /// @param next_work makes the next call's work
  /// @return the round
  TimerRound round(const std::string& range, const std::string& case_prefix, long long calls,
                   TimerSetup setup, const std::function<Work()>& next_work);

  /// @brief Records whether the timer waited for work that is not its own, from a round made
  /// with TimerSetup::other_stream_busy: the metric `waited_for_other_stream`, the fraction of
  /// the calls that returned only after the other stream's kernel had finished (a timer that
  /// waits for its own stream only reads 0; the kernel must outlast any honest call by far), and
  /// a note with the round's host time next to @p alone's.
  /// @param busy the round with the other stream busy
  /// @param alone a round with nothing else on the GPU
  void record_other_stream(const TimerRound& busy, const TimerRound& alone) const;
  /// @brief Records whether the timer waited when it started, from a round made with
  /// TimerSetup::work_queued: the metric `waited_at_start`, the fraction of the calls in which
  /// the work queued before the call had already finished when the timer enqueued its first part
  /// (a timer that only records an event there reads 0), and a note.
  /// @param queued the round with work queued on the timer's stream
  /// @param first_part the first part's name, for the note
  void record_queued(const TimerRound& queued, const std::string& first_part) const;

 private:
  Lesson& lesson_;
  std::string variant_, name_;
  cudaStream_t stream_, other_;
  Timer timer_;
  cudaEvent_t queued_ = nullptr;  // recorded right after the queued work (made at first use)
  // What the first part's first call saw in a call with queued work (set inside the timer's call;
  // members, not locals: the parts may outlive the call in the timer's hands).
  bool asked_ = false, queued_done_ = false;
  cudaError_t earlier_error_ = cudaSuccess;
};

/// @brief How long the unrelated kernel of a round with the other stream busy runs
/// (TimerSetup::other_stream_busy): far past a whole call, so that a timer that does not wait for
/// it returns long before it ends, whatever the noise.
/// @param parts the work of a call, run once now between two events on @p stream (waited for)
/// @param stream the timer's stream
/// @param added_ms the most a call's work can take beyond that (a wait drawn per call)
/// @param least_ms the least it runs
/// @return max(least_ms, 4 (the parts' time + added_ms) + 20) in milliseconds
double outlasting_ms(const std::vector<TimerRounds::Part>& parts, cudaStream_t stream,
                     double added_ms, double least_ms);

/// @brief Single samples of @p work, each between two events recorded on @p stream around it and
/// waited for: what a timer that records an event pair reads (with work that enqueues nothing,
/// the event pair's own floor).
/// @param count how many samples
/// @param work enqueues the work once
/// @param stream where it runs
/// @return each sample's time (ms)
std::vector<double> event_samples(int count, const TimerRounds::Part& work, cudaStream_t stream);

/// @brief Single samples of @p work by the host clock: the clock started, the work enqueued,
/// cudaStreamSynchronize(@p stream), the clock read: what a host-clock timer that waits for its
/// stream reads (the launch call and the wake-up after the wait included).
/// @param count how many samples
/// @param work enqueues the work once
/// @param stream where it runs
/// @return each sample's time (ms)
std::vector<double> host_clock_samples(int count, const TimerRounds::Part& work,
                                       cudaStream_t stream);

/// @brief The elements of a large output in host memory that a check after each call looks at:
/// every element up to @p all_up_to; of a longer output, every (n / spread)-th plus the last
/// @p tail elements (where a grid that is too small or too large goes wrong), each once. Their
/// expected values are kept; poison() writes NaN there before a call, so that work that did not
/// run leaves NaN behind.
class HostSample {
 public:
  /// @brief No elements.
  HostSample() = default;
  /// @param n elements of the output
  /// @param all_up_to an output this long or shorter is checked whole
  /// @param spread about how many elements of a longer one are checked over its length
  /// @param tail how many of its last elements are checked too
  /// @param expected the expected value of element i
  HostSample(std::size_t n, std::size_t all_up_to, std::size_t spread, std::size_t tail,
             const std::function<float(std::size_t)>& expected);
  /// @return the elements looked at: the evenly spaced ones, then those of the tail not among them
  const std::vector<std::size_t>& positions() const { return positions_; }
  /// @param out the output: NaN is written at every position
  void poison(float* out) const;
  /// @param out the output
  /// @param tol tolerances
  /// @return the output at the positions against the expected values (lab::allclose)
  Comparison compare(const float* out, Tolerance tol) const;
  /// @return "every element", or "N elements incl. the tail"
  std::string described() const;

 private:
  std::size_t n_ = 0;
  std::vector<std::size_t> positions_;
  std::vector<float> expected_;
};

/// @brief What a timer's readings show of its resolution.
struct ReadingSteps {
  int distinct = 0;  ///< how many different readings
  double step = 0;   ///< the smallest difference between two different ones (0 when all agree)
};

/// @param readings a timer's readings (any order)
/// @param same readings at most this far apart count as one (a rounding far below the step)
/// @return how many different readings there are, and the smallest step between them
ReadingSteps reading_steps(std::vector<double> readings, double same);

}  // namespace lab
