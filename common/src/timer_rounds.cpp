// Calls of a timer under test and what they read (lab/timer_rounds.hpp).
#include "lab/timer_rounds.hpp"

#include <cuda_profiler_api.h>
#include <nvtx3/nvtx3.hpp>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <utility>

#include "lab/format.hpp"
#include "lab/timed_calls.hpp"
#include "lab/timing.hpp"

namespace lab {

std::string time_text(double ms) {
  if (ms >= 1.0) return text("%.2f ms", ms);
  return text("%.1f us", ms * 1e3);
}

double timer_error(double reported_ms, double reference_ms) {
  return (std::isfinite(reported_ms) && reported_ms > 0 ? reported_ms : 0) / reference_ms - 1;
}

Reading median_error(const std::vector<double>& errors) {
  std::vector<double> size;
  for (const double e : errors) size.push_back(std::fabs(e));
  const Stats s = summarize(size);
  return absolute_error(s.median, s.median_low, s.median_high);
}

namespace {

double at(const std::vector<double>& v, std::size_t i) { return i < v.size() ? v[i] : 0; }

template <class Of>
double median_over(const std::vector<TimerCall>& calls, Of of) {
  std::vector<double> v;
  for (const TimerCall& c : calls) v.push_back(of(c));
  return summarize(v).median;
}

}  // namespace

std::vector<double> TimerRound::errors(std::size_t part) const {
  std::vector<double> e;
  for (const TimerCall& c : calls)
    e.push_back(timer_error(at(c.reported, part), at(c.reference, part)));
  return e;
}

Reading TimerRound::worst_error() const {
  Reading worst;
  const std::size_t parts = calls.empty() ? 0 : calls.front().reference.size();
  for (std::size_t i = 0; i < parts; ++i) worst = lab::worst(worst, median_error(errors(i)));
  return worst;
}

double TimerRound::median_reported_ms(std::size_t part) const {
  return median_over(calls, [part](const TimerCall& c) { return at(c.reported, part); });
}

double TimerRound::median_reference_ms(std::size_t part) const {
  return median_over(calls, [part](const TimerCall& c) { return at(c.reference, part); });
}

double TimerRound::median_host_ms() const {
  return median_over(calls, [](const TimerCall& c) { return c.host_ms; });
}

std::string TimerRound::medians(const std::vector<std::string>& part_names) const {
  std::string line;
  for (std::size_t i = 0; i < part_names.size(); ++i)
    line += text("%s %s / %s (%+.1f%%)  ", part_names[i].c_str(),
                 time_text(median_reported_ms(i)).c_str(),
                 time_text(median_reference_ms(i)).c_str(), 100 * summarize(errors(i)).median);
  return line;
}

int TimerRound::count(bool TimerCall::*flag) const {
  int k = 0;
  for (const TimerCall& c : calls) k += c.*flag;
  return k;
}

bool query_finished(cudaError_t query) {
  if (query == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  LAB_CHECK(query);
  return true;
}

TimerRounds::TimerRounds(Lesson& lesson, std::string variant, std::string name, cudaStream_t stream,
                         cudaStream_t other, Timer timer)
    : lesson_(lesson),
      variant_(std::move(variant)),
      name_(std::move(name)),
      stream_(stream),
      other_(other),
      timer_(std::move(timer)) {}

TimerRounds::~TimerRounds() {
  if (queued_) cudaEventDestroy(queued_);
}

TimerCall TimerRounds::call(const Work& work, const std::string& case_name, TimerSetup setup,
                            bool with_reference) {
  if (setup.other_busy_ms > 0) spin(setup.other_busy_ms * 1e3, other_);
  TimerCall c;
  try {
    std::vector<Part> parts = work.parts;
    asked_ = false;
    if (setup.queued_ms > 0 && !parts.empty()) {
      // The timer's stream is busy when its first part is enqueued. The first part first asks
      // whether that work has finished: if it has, something in the timer's call before its
      // first part waited for the stream (or the device). An error of the timer's not checked so
      // far is kept aside, so that clearing "not ready" does not hide it.
      if (!queued_) LAB_CHECK(cudaEventCreateWithFlags(&queued_, cudaEventDisableTiming));
      spin(setup.queued_ms * 1e3, stream_);
      LAB_CHECK(cudaEventRecord(queued_, stream_));
      parts.front() = [this, first = parts.front()](cudaStream_t st) {
        if (!asked_) {
          asked_ = true;
          earlier_error_ = cudaGetLastError();
          queued_done_ = query_finished(cudaEventQuery(queued_));
        }
        first(st);
      };
    }
    const std::string range = name_ + (setup.other_busy_ms > 0 ? ", other stream busy"
                                       : setup.queued_ms > 0   ? ", work queued on its stream"
                                                               : "");
    HostTimer wall;
    {
      // Exactly the timer's call, for nsys (nvtx_sum): its host time is how long the timer waited.
      nvtx3::scoped_range scope{range};
      c.reported = timer_(std::move(parts), stream_);
    }
    c.host_ms = wall.elapsed_ms();
    cudaError_t unchecked = cudaGetLastError();  // an error in the timer's code nobody checked
    if (asked_) {
      if (unchecked == cudaSuccess) unchecked = earlier_error_;
      c.waited_at_start = queued_done_;
    }
    if (setup.other_busy_ms > 0) c.other_still_busy = !query_finished(cudaStreamQuery(other_));
    const std::string what = "an earlier CUDA call in " + name_ + " (its error was not checked)";
    check(unchecked, what.c_str(), __FILE__, __LINE__);
    LAB_CHECK(cudaStreamSynchronize(stream_));
  } catch (const std::exception& e) {
    lesson_.check(variant_, case_name, false, name_ + " stopped with an error: " + e.what());
    throw;  // the context may be broken: the harness stops here and reports
  }
  if (work.check) work.check(case_name);
  if (with_reference) c.reference = BetweenCalls(work.parts).time(stream_);
  LAB_CHECK(cudaDeviceSynchronize());  // the other stream's kernel, before the next call
  return c;
}

void TimerRounds::profiled_call(const std::function<Work()>& next_work,
                                const std::string& case_name, TimerSetup setup) {
  LAB_CHECK(cudaProfilerStart());
  call(next_work(), case_name, setup);
  LAB_CHECK(cudaProfilerStop());
}

TimerRound TimerRounds::round(const std::string& range, const std::string& case_prefix,
                              long long calls, TimerSetup setup,
                              const std::function<Work()>& next_work) {
  nvtx3::scoped_range scope{range};
  TimerRound r;
  for (long long k = 0; k < calls; ++k)
    r.calls.push_back(call(next_work(), text("%s, call %lld", case_prefix.c_str(), k + 1), setup,
                           /*with_reference=*/true));
  return r;
}

void TimerRounds::record_other_stream(const TimerRound& busy, const TimerRound& alone) const {
  const int still_busy = busy.count(&TimerCall::other_still_busy);
  const long long calls = static_cast<long long>(busy.calls.size());
  const double waited = 1.0 - double(still_busy) / double(calls);
  lesson_.metric("waited_for_other_stream", waited, waited, waited);
  lesson_.note(
      text("  with the other stream busy, %s took %s on the host clock (alone: %s); the other "
           "stream's kernel was still running when it returned in %d of %lld calls%s",
           name_.c_str(), time_text(busy.median_host_ms()).c_str(),
           time_text(alone.median_host_ms()).c_str(), still_busy, calls,
           still_busy == calls ? " (good: you did not wait for it)"
                               : " (your timer waited for work that is not yours)"));
}

void TimerRounds::record_queued(const TimerRound& queued, const std::string& first_part) const {
  const int waited_first = queued.count(&TimerCall::waited_at_start);
  const long long calls = static_cast<long long>(queued.calls.size());
  const double at_start = double(waited_first) / double(calls);
  lesson_.metric("waited_at_start", at_start, at_start, at_start);
  lesson_.note(text(
      "  with work queued on your stream, it had already finished when %s enqueued %s in %d of "
      "%lld calls%s",
      name_.c_str(), first_part.c_str(), waited_first, calls,
      waited_first == 0 ? " (good: your timer starts without waiting)"
                        : " (something before the first phase waited for the stream: a "
                          "synchronize in your timer's constructor?)"));
}

double outlasting_ms(const std::vector<TimerRounds::Part>& parts, cudaStream_t stream,
                     double added_ms, double least_ms) {
  EventTimer once(stream);
  once.start();
  for (const TimerRounds::Part& part : parts) part(stream);
  once.stop();
  return std::max(least_ms, 4.0 * (once.elapsed_ms() + added_ms) + 20.0);
}

std::vector<double> event_samples(int count, const TimerRounds::Part& work, cudaStream_t stream) {
  Event start, stop;
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    start.record(stream);
    work(stream);
    stop.record(stream);
    ms.push_back(elapsed_ms(start, stop));
  }
  return ms;
}

std::vector<double> host_clock_samples(int count, const TimerRounds::Part& work,
                                       cudaStream_t stream) {
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    HostTimer clock;
    work(stream);
    LAB_CHECK(cudaStreamSynchronize(stream));
    ms.push_back(clock.elapsed_ms());
  }
  return ms;
}

ReadingSteps reading_steps(std::vector<double> readings, double same) {
  ReadingSteps r;
  if (readings.empty()) return r;
  std::sort(readings.begin(), readings.end());
  r.distinct = 1;
  for (std::size_t i = 1; i < readings.size(); ++i) {
    const double gap = readings[i] - readings[i - 1];
    if (gap > same) {
      ++r.distinct;
      r.step = r.step == 0 ? gap : std::min(r.step, gap);
    }
  }
  return r;
}

HostSample::HostSample(std::size_t n, std::size_t all_up_to, std::size_t spread, std::size_t tail,
                       const std::function<float(std::size_t)>& expected)
    : n_(n) {
  const std::size_t step = n <= all_up_to ? 1 : std::max<std::size_t>(1, n / spread);
  for (std::size_t i = 0; i < n; i += step) positions_.push_back(i);
  for (std::size_t i = n > tail ? n - tail : 0; i < n; ++i)
    if (i % step != 0) positions_.push_back(i);
  for (const std::size_t i : positions_) expected_.push_back(expected(i));
}

void HostSample::poison(float* out) const {
  for (const std::size_t i : positions_) out[i] = std::numeric_limits<float>::quiet_NaN();
}

Comparison HostSample::compare(const float* out, Tolerance tol) const {
  std::vector<float> got;
  got.reserve(positions_.size());
  for (const std::size_t i : positions_) got.push_back(out[i]);
  return allclose(got, expected_, tol);
}

std::string HostSample::described() const {
  return positions_.size() == n_ ? "every element"
                                 : std::to_string(positions_.size()) + " elements incl. the tail";
}

}  // namespace lab
