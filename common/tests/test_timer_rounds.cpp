// The timer lessons' calls and readings (lab/timer_rounds.hpp), without a GPU: the per-call
// error, the median error and its interval, a round's readings, the query probe, and what a call
// records when the timer under test stops with an error.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/harness.hpp"
#include "lab/timer_rounds.hpp"

namespace {

lab::TimerCall call_of(std::vector<double> reported, std::vector<double> reference) {
  lab::TimerCall c;
  c.reported = std::move(reported);
  c.reference = std::move(reference);
  return c;
}

}  // namespace

TEST_CASE("a call's error is reported / reference - 1; what is no time counts as 0") {
  CHECK(lab::timer_error(1.1, 1.0) == doctest::Approx(0.1));
  CHECK(lab::timer_error(0.5, 2.0) == doctest::Approx(-0.75));
  CHECK(lab::timer_error(0.0, 2.0) == -1);
  CHECK(lab::timer_error(-3.0, 2.0) == -1);  // a negative time is no time
  CHECK(lab::timer_error(std::numeric_limits<double>::quiet_NaN(), 2.0) == -1);
  CHECK(lab::timer_error(std::numeric_limits<double>::infinity(), 2.0) == -1);
}

TEST_CASE("the median error is the median of the sizes, inside the 2nd and 8th of 9") {
  // Sizes sorted: 0.01 0.02 0.03 0.04 0.05 0.06 0.07 0.30 0.50.
  const lab::Reading r =
      lab::median_error({0.30, -0.01, 0.02, -0.03, 0.04, 0.05, -0.06, 0.07, -0.50});
  CHECK(r.value == doctest::Approx(0.05));
  CHECK(r.low == doctest::Approx(0.02));
  CHECK(r.high == doctest::Approx(0.30));  // one call slowed by chance stays outside

  // A constant near the typical time: signed errors whose median is 0, each call far off.
  const lab::Reading constant = lab::median_error({-0.5, -0.4, -0.3, -0.2, 0, 0.2, 0.3, 0.4, 0.5});
  // Sizes sorted: 0 0.2 0.2 0.3 0.3 0.4 0.4 0.5 0.5.
  CHECK(constant.value == doctest::Approx(0.3));
  CHECK(constant.low == doctest::Approx(0.2));
  CHECK(constant.high == doctest::Approx(0.5));
  // An interval that reaches an exact reading reads 0 at its low end: as good as can be known.
  CHECK(lab::median_error({0, 0, 0.01, -0.02, 0.03, 0.04, 0.05, 0.06, 0.07}).low == 0);
}

TEST_CASE("a round reads each part's errors, the worst median error and its counts") {
  lab::TimerRound round;
  // Part 0 within 10% in every call; part 1 twice as long in most calls.
  round.calls.push_back(call_of({1.1, 4.0}, {1.0, 2.0}));
  round.calls.push_back(call_of({0.9, 4.0}, {1.0, 2.0}));
  round.calls.push_back(call_of({1.0, 2.0}, {1.0, 2.0}));
  round.calls.push_back(call_of({1.05}, {1.0, 2.0}));  // part 1 missing: counts as 0
  round.calls.push_back(call_of({1.0, 6.0}, {1.0, 2.0}));
  round.calls[0].host_ms = 3;
  round.calls[1].host_ms = 1;
  round.calls[2].host_ms = 2;
  round.calls[3].host_ms = 9;
  round.calls[4].host_ms = 4;
  round.calls[1].other_still_busy = true;
  round.calls[3].other_still_busy = true;
  round.calls[4].waited_at_start = true;

  const std::vector<double> e1 = round.errors(1);
  REQUIRE(e1.size() == 5);
  CHECK(e1[0] == doctest::Approx(1.0));
  CHECK(e1[2] == 0);
  CHECK(e1[3] == -1);
  CHECK(e1[4] == doctest::Approx(2.0));

  // Part 0's median error is 0.05, part 1's 1.0 (sizes 0 1 1 1 2): the worst is part 1's,
  // with its interval (5 calls: the range, 0 to 2).
  const lab::Reading worst = round.worst_error();
  CHECK(worst.value == doctest::Approx(1.0));
  CHECK(worst.low == 0);
  CHECK(worst.high == doctest::Approx(2.0));

  CHECK(round.median_reported_ms(0) == doctest::Approx(1.0));
  CHECK(round.median_reported_ms(1) == doctest::Approx(4.0));
  CHECK(round.median_reference_ms(1) == doctest::Approx(2.0));
  CHECK(round.median_host_ms() == doctest::Approx(3.0));
  CHECK(round.count(&lab::TimerCall::other_still_busy) == 2);
  CHECK(round.count(&lab::TimerCall::waited_at_start) == 1);

  CHECK(lab::TimerRound{}.worst_error().value == 0);  // no calls, nothing to judge
}

TEST_CASE("a query that is not ready is an answer; another error is an error") {
  CHECK(lab::query_finished(cudaSuccess));
  CHECK_FALSE(lab::query_finished(cudaErrorNotReady));
  CHECK_THROWS_AS(lab::query_finished(cudaErrorInvalidValue), lab::CudaError);
}

TEST_CASE("the setups say what runs beside the timer") {
  CHECK(lab::TimerSetup::alone().other_busy_ms == 0);
  CHECK(lab::TimerSetup::alone().queued_ms == 0);
  CHECK(lab::TimerSetup::other_stream_busy(100).other_busy_ms == 100);
  CHECK(lab::TimerSetup::other_stream_busy(100).queued_ms == 0);
  CHECK(lab::TimerSetup::work_queued(50).queued_ms == 50);
  CHECK(lab::TimerSetup::work_queued(50).other_busy_ms == 0);
}

TEST_CASE("a timer that stops with an error fails its call's check, and the error goes on") {
  lab::Lesson lesson("99-test", "timer rounds");
  lesson.declare("exercise", lab::Role::Exercise, "the timer");
  int timed = 0, checked = 0, made = 0;
  lab::TimerRounds yours(
      lesson, "exercise", "time_phases", nullptr, nullptr,
      [&timed](std::vector<lab::TimerRounds::Part> parts, cudaStream_t) -> std::vector<double> {
        ++timed;
        CHECK(parts.size() == 2);
        throw std::runtime_error("cudaEventElapsedTime: invalid resource handle");
      });
  auto next_work = [&] {
    ++made;
    lab::TimerRounds::Work w;
    w.parts = {[](cudaStream_t) {}, [](cudaStream_t) {}};
    w.check = [&checked](const std::string&) { ++checked; };
    return w;
  };

  CHECK_THROWS_WITH_AS(yours.call(next_work(), "1000003 floats"),
                       "cudaEventElapsedTime: invalid resource handle", std::runtime_error);
  // A round stops at its first call that fails; that call's case names the round and the call.
  CHECK_THROWS_AS(yours.round("exercise: alone", "alone", 9, lab::TimerSetup::alone(), next_work),
                  std::runtime_error);
  CHECK(timed == 2);
  CHECK(made == 2);
  CHECK(checked == 0);  // no outputs are judged after an error: the run stops

  const std::vector<lab::CheckResult>& checks = lesson.result().variants.at(0).checks;
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].name == "1000003 floats");
  CHECK_FALSE(checks[0].ok);
  CHECK(checks[0].message ==
        "time_phases stopped with an error: cudaEventElapsedTime: invalid resource handle");
  CHECK(checks[1].name == "alone, call 1");
  CHECK_FALSE(checks[1].ok);
}

TEST_CASE("a round's line: each part's medians, yours / the reference's, and the signed error") {
  CHECK(lab::time_text(12.345) == "12.35 ms");
  CHECK(lab::time_text(1.0) == "1.00 ms");
  CHECK(lab::time_text(0.0567) == "56.7 us");
  lab::TimerRound round;
  round.calls.push_back(call_of({2.2, 0.05}, {2.0, 0.05}));
  round.calls.push_back(call_of({2.0, 0.04}, {2.0, 0.05}));
  round.calls.push_back(call_of({1.9, 0.05}, {2.0, 0.05}));
  CHECK(round.medians({"copy_in", "kernel"}) ==
        "copy_in 2.00 ms / 2.00 ms (+0.0%)  kernel 50.0 us / 50.0 us (+0.0%)  ");
  round.calls.push_back(call_of({3.0, 0.1}, {2.0, 0.05}));  // medians of 4: the middle two
  CHECK(round.medians({"copy_in", "kernel"}) ==
        "copy_in 2.10 ms / 2.00 ms (+5.0%)  kernel 50.0 us / 50.0 us (+0.0%)  ");
}

TEST_CASE("the elements a check looks at: all of a short output, a spread and the tail of a long") {
  auto twice = [](std::size_t i) { return 2.0f * static_cast<float>(i); };
  const lab::HostSample all(1000, 1000, 10, 4, twice);
  CHECK(all.positions().size() == 1000);
  CHECK(all.described() == "every element");

  // 1000 elements, every 100th (1000 / 10) and the last 4: 0, 100, ..., 900, 996 .. 999.
  const lab::HostSample some(1000, 999, 10, 4, twice);
  const std::vector<std::size_t> expected_positions = {0,   100, 200, 300, 400, 500, 600,
                                                       700, 800, 900, 996, 997, 998, 999};
  CHECK(some.positions() == expected_positions);
  CHECK(some.described() == "14 elements incl. the tail");
  // The tail adds only what the spread missed: 1001 elements, every 100th, the last 2 (999, 1000).
  CHECK(lab::HostSample(1001, 999, 10, 2, twice).positions().back() == 999);
  CHECK(lab::HostSample(1001, 999, 10, 2, twice).positions().size() == 12);
  // More spread than elements still moves on (a step of at least 1).
  CHECK(lab::HostSample(20, 10, 1000, 0, twice).positions().size() == 20);

  std::vector<float> out(1000);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = twice(i);
  CHECK(some.compare(out.data(), {1e-6, 0.0}).ok);
  some.poison(out.data());
  CHECK(std::isnan(out[900]));
  CHECK(std::isnan(out[999]));
  CHECK(out[901] == 1802.0f);  // only the positions are poisoned
  const lab::Comparison poisoned = some.compare(out.data(), {1e-6, 0.0});
  CHECK_FALSE(poisoned.ok);
  CHECK(poisoned.mismatches == 14);
  out[999] = 1998.0f * (1 + 1e-5f);  // a wrong value in the tail
  for (const std::size_t i : some.positions())
    if (i != 999) out[i] = twice(i);
  CHECK(some.compare(out.data(), {1e-6, 0.0}).mismatches == 1);
}

TEST_CASE("a timer's readings: how many differ, and the smallest step between them") {
  // Readings in steps of 32 ns, with float rounding far below 0.5 ns in some of them.
  const lab::ReadingSteps r = lab::reading_steps({1024, 1056.0001, 1024.0002, 1120, 1056}, 0.5);
  CHECK(r.distinct == 3);
  CHECK(r.step == doctest::Approx(32).epsilon(1e-4));
  const lab::ReadingSteps same = lab::reading_steps({1024, 1024.1, 1024}, 0.5);
  CHECK(same.distinct == 1);
  CHECK(same.step == 0);
  CHECK(lab::reading_steps({}, 0.5).distinct == 0);
}
