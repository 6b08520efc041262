#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/record.hpp"

namespace {

std::uint64_t bits(double x) {
  std::uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The message parse_record throws for `text`, or "" if it does not throw std::runtime_error.
std::string refusal(const std::string& text) {
  try {
    lab::parse_record(text);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// Refused, and the message names line `n` ("line n:" so that "line 1" is not found in "line 12").
void check_refused_at(const std::string& text, int n) {
  const std::string msg = refusal(text);
  INFO("text: ", text);
  INFO("message: ", msg);
  CHECK_FALSE(msg.empty());
  CHECK(msg.find("line " + std::to_string(n) + ":") != std::string::npos);
}

const std::string kCall = "call\tv\t0\tc\t1\t2\n";  // a valid one-line entry

}  // namespace

TEST_CASE("record: checks and calls round trip in order, values bit for bit") {
  const double inf = std::numeric_limits<double>::infinity();
  const double denorm_min = std::numeric_limits<double>::denorm_min();
  const std::vector<double> values = {
      std::numeric_limits<double>::quiet_NaN(),
      -0.0,
      0.0,
      inf,
      -inf,
      denorm_min,
      -denorm_min,
      std::numeric_limits<double>::min() / 3,  // a denormal with many bits
      std::numeric_limits<double>::min(),
      std::numeric_limits<double>::max(),
      std::numeric_limits<double>::lowest(),
      1.0 / 3.0,
      -2.0 / 3.0,
      0.1,
      static_cast<double>(1.0f / 3.0f),
      1e300,
  };

  lab::RecordedCheck a;
  a.variant = "my variant";
  a.case_name = "1000 x 777";
  a.count = 1'000'000'000'000ULL;
  for (std::size_t k = 0; k < values.size(); ++k) {
    a.index.push_back(k == 0 ? a.count - 1 : k * 12345);
    a.got.push_back(values[k]);
  }
  lab::RecordedCheck b;  // no values at all
  b.variant = "v2";
  b.case_name = "empty";
  b.count = 0;
  lab::RecordedCheck c;  // repeated indices, in the order sampled
  c.variant = "v2";
  c.case_name = "timed call 17";
  c.count = 10;
  c.index = {9, 0, 9, 3};
  c.got = {1.5, -1.5, 1.5, 2e-310};

  const std::uint64_t max64 = std::numeric_limits<std::uint64_t>::max();
  const lab::RecordedCall x{"my variant", 0, "timed call 1", max64, max64 - 1};
  const lab::RecordedCall y{"v2", 3, "timed call 2 of 5", 0, 18446744073709551557ULL};
  const lab::RecordedCall z{"v2", std::numeric_limits<int>::max(), "", 1, 9223372036854775808ULL};

  const std::string text = lab::record_text(a) + lab::record_text(x) + lab::record_text(b) +
                           lab::record_text(y) + lab::record_text(c) + lab::record_text(z);
  const lab::Record r = lab::parse_record(text);

  REQUIRE(r.checks.size() == 3);
  REQUIRE(r.calls.size() == 3);
  const lab::RecordedCheck* want_checks[] = {&a, &b, &c};
  for (int i = 0; i < 3; ++i) {
    const lab::RecordedCheck& got = r.checks[i];
    const lab::RecordedCheck& want = *want_checks[i];
    CAPTURE(i);
    CHECK(got.variant == want.variant);
    CHECK(got.case_name == want.case_name);
    CHECK(got.count == want.count);
    CHECK(got.index == want.index);
    REQUIRE(got.got.size() == want.got.size());
    for (std::size_t k = 0; k < want.got.size(); ++k) {
      CAPTURE(k);
      CHECK(bits(got.got[k]) == bits(want.got[k]));
    }
  }
  // spot checks that do not rely on bits(): the special values really came back as such
  CHECK(std::isnan(r.checks[0].got[0]));
  CHECK(r.checks[0].got[1] == 0.0);
  CHECK(std::signbit(r.checks[0].got[1]));
  CHECK_FALSE(std::signbit(r.checks[0].got[2]));
  CHECK(r.checks[0].got[3] == inf);
  CHECK(r.checks[0].got[4] == -inf);
  CHECK(r.checks[0].got[5] == denorm_min);
  CHECK(std::fpclassify(r.checks[0].got[7]) == FP_SUBNORMAL);
  CHECK(r.checks[0].got[11] == 1.0 / 3.0);
  CHECK(r.checks[0].index[0] == 999'999'999'999ULL);

  const lab::RecordedCall* want_calls[] = {&x, &y, &z};
  for (int i = 0; i < 3; ++i) {
    const lab::RecordedCall& got = r.calls[i];
    const lab::RecordedCall& want = *want_calls[i];
    CAPTURE(i);
    CHECK(got.variant == want.variant);
    CHECK(got.measure == want.measure);
    CHECK(got.case_name == want.case_name);
    CHECK(got.call_seed == want.call_seed);
    CHECK(got.pick_seed == want.pick_seed);
  }
  CHECK(r.calls[0].call_seed == max64);
}

TEST_CASE("record: a negative NaN keeps its sign") {
  lab::RecordedCheck c{"v", "c", 2, {0, 1}, {-std::numeric_limits<double>::quiet_NaN(), 1.0}};
  const lab::Record r = lab::parse_record(lab::record_text(c));
  REQUIRE(r.checks.size() == 1);
  REQUIRE(r.checks[0].got.size() == 2);
  CHECK(std::isnan(r.checks[0].got[0]));
  CHECK(std::signbit(r.checks[0].got[0]));
  CHECK(r.checks[0].got[1] == 1.0);
}

TEST_CASE("record: tabs and line breaks in names are written as spaces") {
  lab::RecordedCheck c{"var\tiant", "case\nwith\ttabs\r", 4, {1, 2}, {1.0, 2.0}};
  const lab::RecordedCall call{"a\nb", 1, "timed\tcall\n3", 7, 8};
  const std::string text = lab::record_text(c) + lab::record_text(call);
  // two lines for the check, one for the call: nothing more
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);

  const lab::Record r = lab::parse_record(text);
  REQUIRE(r.checks.size() == 1);
  REQUIRE(r.calls.size() == 1);
  CHECK(r.checks[0].variant == "var iant");
  CHECK(r.checks[0].case_name == "case with tabs ");
  CHECK(r.checks[0].count == 4);
  CHECK(r.checks[0].index == std::vector<std::size_t>{1, 2});
  CHECK(r.checks[0].got == std::vector<double>{1.0, 2.0});
  CHECK(r.calls[0].variant == "a b");
  CHECK(r.calls[0].case_name == "timed call 3");
  CHECK(r.calls[0].measure == 1);
  CHECK(r.calls[0].call_seed == 7);
  CHECK(r.calls[0].pick_seed == 8);
}

TEST_CASE("record: empty text is an empty record; blank lines are ignored") {
  lab::Record r = lab::parse_record("");
  CHECK(r.checks.empty());
  CHECK(r.calls.empty());
  r = lab::parse_record("\n\n");
  CHECK(r.checks.empty());
  CHECK(r.calls.empty());

  lab::RecordedCheck c{"v", "c", 3, {0, 1, 2}, {0.5, 0.25, 0.125}};
  const std::string text =
      "\n" + lab::record_text(c) + "\n\n" + kCall + "\n" + lab::record_text(c) + kCall + "\n";
  r = lab::parse_record(text);
  REQUIRE(r.checks.size() == 2);
  REQUIRE(r.calls.size() == 2);
  CHECK(r.checks[1].got == std::vector<double>{0.5, 0.25, 0.125});
  CHECK(r.calls[1].pick_seed == 2);
  // a blank line still counts for the line numbers: the bad entry is on line 5
  check_refused_at("\n" + lab::record_text(c) + "\n" + std::string("bogus\n"), 5);
}

TEST_CASE("record: malformed entries are refused, naming the line") {
  const lab::RecordedCheck good{"v", "c", 10, {1, 2}, {1.0, 2.0}};
  const std::string check = lab::record_text(good);  // lines 1 and 2
  // sanity: the prefix itself parses
  CHECK(lab::parse_record(check + kCall).checks.size() == 1);

  SUBCASE("unknown entry kind") {
    check_refused_at("bogus\tv\t0\tc\t1\t2\n", 1);
    check_refused_at(kCall + "Call\tv\t0\tc\t1\t2\n", 2);
    check_refused_at(check + "checks\tv\tc\t10\t0\n\n", 3);
    check_refused_at(check + kCall + " \n", 4);  // not blank: a space
  }
  SUBCASE("wrong field count") {
    check_refused_at("call\tv\t0\tc\t1\n", 1);
    check_refused_at("call\tv\t0\tc\t1\t2\t3\n", 1);
    check_refused_at(kCall + "call\tv\t0\tc\t1\t2\t\n", 2);  // a trailing tab is a seventh field
    check_refused_at(check + "check\tv\tc\t10\n1:0x1p+0\n", 3);
    check_refused_at(check + "check\tv\tc\t10\t1\t1\n1:0x1p+0\n", 3);
  }
  SUBCASE("negative numbers") {
    check_refused_at("call\tv\t-1\tc\t1\t2\n", 1);
    check_refused_at("call\tv\t0\tc\t-1\t2\n", 1);
    check_refused_at(kCall + "call\tv\t0\tc\t1\t-1\n", 2);
    check_refused_at(check + "check\tv\tc\t-1\t0\n\n", 3);
    check_refused_at(check + "check\tv\tc\t10\t-1\n\n", 3);
    check_refused_at(check + "check\tv\tc\t10\t1\n-1:0x1p+0\n", 4);
    // a sign behind a space is still a sign
    check_refused_at("call\tv\t -1\tc\t1\t2\n", 1);
    check_refused_at("call\tv\t0\tc\t -1\t2\n", 1);
    check_refused_at(check + "check\tv\tc\t -1\t0\n\n", 3);
  }
  SUBCASE("non-numeric fields") {
    check_refused_at("call\tv\tx\tc\t1\t2\n", 1);
    check_refused_at("call\tv\t0\tc\t\t2\n", 1);         // empty
    check_refused_at("call\tv\t0\tc\t1\t2x\n", 1);       // garbage after the digits
    check_refused_at("call\tv\t0\tc\t0x10\t2\n", 1);     // not decimal
    check_refused_at("call\tv\t1.5\tc\t1\t2\n", 1);
    check_refused_at(check + "check\tv\tc\tten\t0\n\n", 3);
    check_refused_at(check + "check\tv\tc\t10\t1 \n1:0x1p+0\n", 3);
    check_refused_at(check + "check\tv\tc\t10\t\n\n", 3);
  }
  SUBCASE("numbers out of range") {
    check_refused_at("call\tv\t0\tc\t18446744073709551616\t2\n", 1);  // 2^64
    check_refused_at("call\tv\t0\tc\t1\t99999999999999999999\n", 1);
    check_refused_at("call\tv\t2147483648\tc\t1\t2\n", 1);  // INT_MAX + 1: not a measure
    check_refused_at("call\tv\t4294967296\tc\t1\t2\n", 1);  // would wrap to 0
  }
  SUBCASE("the value line is missing at the end of the text") {
    check_refused_at("check\tv\tc\t10\t2\n", 1);
    check_refused_at("check\tv\tc\t10\t0\n", 1);  // even with nothing to announce
    check_refused_at(check + kCall + "check\tv\tc\t10\t1", 4);
  }
  SUBCASE("fewer or more values than announced") {
    check_refused_at(check + "check\tv\tc\t10\t3\n1:0x1p+0 2:0x1p+1\n", 4);
    check_refused_at(check + "check\tv\tc\t10\t1\n1:0x1p+0 2:0x1p+1\n", 4);
    check_refused_at(check + "check\tv\tc\t10\t1\n\n", 4);
    check_refused_at(check + "check\tv\tc\t10\t0\n1:0x1p+0\n", 4);
    // the values line must not be taken from the next entry
    check_refused_at("check\tv\tc\t10\t1\n" + kCall, 2);
  }
  SUBCASE("an index at or past the count") {
    check_refused_at(check + "check\tv\tc\t10\t1\n10:0x1p+0\n", 4);
    check_refused_at(check + "check\tv\tc\t10\t2\n0:0x1p+0 11:0x1p+0\n", 4);
    check_refused_at("check\tv\tc\t1\t1\n18446744073709551615:0x1p+0\n", 2);
  }
  SUBCASE("index:value pairs that are not") {
    check_refused_at(check + "check\tv\tc\t10\t1\n10x1p+0\n", 4);   // no colon
    check_refused_at(check + "check\tv\tc\t10\t1\n1;0x1p+0\n", 4);
    check_refused_at(check + "check\tv\tc\t10\t1\n1:0x1p+0zz\n", 4);  // garbage after the number
    check_refused_at(check + "check\tv\tc\t10\t1\n1:0x1p+0:2\n", 4);
    check_refused_at(check + "check\tv\tc\t10\t1\n1:\n", 4);          // no number
    check_refused_at(check + "check\tv\tc\t10\t1\n1:abc\n", 4);
    check_refused_at(check + "check\tv\tc\t10\t1\n:0x1p+0\n", 4);     // no index
    check_refused_at(check + "check\tv\tc\t10\t1\nx:0x1p+0\n", 4);
    check_refused_at(check + "check\tv\tc\t10\t1\n1x:0x1p+0\n", 4);
  }
  SUBCASE("more values announced than a record keeps, or than were compared") {
    const std::string big = std::to_string(lab::kRecordSample + 1);
    check_refused_at("check\tv\tc\t100000\t" + big + "\n\n", 1);
    check_refused_at(check + "check\tv\tc\t3\t4\n0:0x1p+0 1:0x1p+0 2:0x1p+0 0:0x1p+0\n", 3);
    check_refused_at(check + "check\tv\tc\t0\t1\n0:0x1p+0\n", 3);
  }
}

TEST_CASE("record: exactly kRecordSample values are accepted") {
  lab::RecordedCheck c{"v", "c", 1'000'000, {}, {}};
  c.index = lab::sample_indices(c.count, 5);
  for (std::size_t k = 0; k < c.index.size(); ++k) c.got.push_back(static_cast<double>(k) / 7);
  const lab::Record r = lab::parse_record(lab::record_text(c));
  REQUIRE(r.checks.size() == 1);
  CHECK(r.checks[0].index.size() == lab::kRecordSample);
  CHECK(r.checks[0].index == c.index);
  CHECK(r.checks[0].got == c.got);
}

TEST_CASE("record: sample_indices keeps everything up to kRecordSample, else a seeded sample") {
  CHECK(lab::kRecordSample == 4096);
  CHECK(lab::sample_indices(0, 1).empty());

  for (std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{4095}, std::size_t{4096}}) {
    CAPTURE(n);
    const std::vector<std::size_t> s = lab::sample_indices(n, 12345);
    REQUIRE(s.size() == n);
    for (std::size_t i = 0; i < n; ++i) CHECK_MESSAGE(s[i] == i, "at ", i);
    CHECK(lab::sample_indices(n, 999) == s);  // the seed does not matter
  }

  for (std::size_t n : {std::size_t{4097}, std::size_t{1'000'000'000}}) {
    CAPTURE(n);
    const std::vector<std::size_t> s = lab::sample_indices(n, 42);
    REQUIRE(s.size() == lab::kRecordSample);
    std::size_t below = 0;
    for (std::size_t i : s) below += i < n;
    CHECK(below == s.size());
    CHECK(lab::sample_indices(n, 42) == s);
    CHECK(lab::sample_indices(n, 43) != s);
    // a sample, not a prefix: indices spread over the whole range
    const std::set<std::size_t> distinct(s.begin(), s.end());
    CHECK(distinct.size() > lab::kRecordSample / 2);
    CHECK(*distinct.rbegin() > n / 2);
  }
  // n = 4097: the one index above 4095 can come up
  const std::vector<std::size_t> s = lab::sample_indices(4097, 7);
  CHECK(*std::max_element(s.begin(), s.end()) <= 4096);
  // After a timed call, the smaller sample: everything up to it, else that many drawn.
  CHECK(lab::sample_indices(lab::kRecordTimedSample, 7, lab::kRecordTimedSample).size() ==
        lab::kRecordTimedSample);
  CHECK(lab::sample_indices(4096, 7, lab::kRecordTimedSample).size() == lab::kRecordTimedSample);
  CHECK(lab::sample_indices(4096, 7, lab::kRecordTimedSample) !=
        lab::sample_indices(4096, 8, lab::kRecordTimedSample));
}

TEST_CASE("record: a run-time parameter round-trips, a malformed one is refused") {
  const std::string text = lab::record_text(lab::RecordedParameter{"steps", 2437}) +
                           lab::record_text(lab::RecordedParameter{"big", 18446744073709551615ull});
  const lab::Record r = lab::parse_record(text);
  REQUIRE(r.parameters.size() == 2);
  CHECK(r.parameters[0].name == "steps");
  CHECK(r.parameters[0].value == 2437);
  CHECK(r.parameters[1].value == 18446744073709551615ull);
  CHECK(r.checks.empty());
  CHECK(r.calls.empty());
  CHECK_THROWS_WITH_AS(lab::parse_record("param\tsteps\t-3\n"), doctest::Contains("line 1:"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(lab::parse_record("param\tsteps\n"), doctest::Contains("line 1:"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(lab::parse_record("param\tsteps\t12x\n"), doctest::Contains("line 1:"),
                       std::runtime_error);
}
