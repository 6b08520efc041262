// lab::SparseChanges on the host (no GPU): the places and values a timed call's seed gives, the
// writes that bring an input from one call's changes to the next, the input seen through the
// changes, and the check after timing; lab::SparseRoundTrip's change() and its places as a
// check asks for them (Look), and Look::check_part.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lab/harness.hpp"
#include "lab/sparse_changes.cuh"
#include "lab/variant.hpp"

namespace {

float unit(std::mt19937_64& g) { return std::uniform_real_distribution<float>(2.0f, 3.0f)(g); }

std::vector<float> filled(std::size_t n, std::uint64_t seed) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = lab::random_input(seed, i);
  return x;
}

}  // namespace

TEST_CASE("SparseChanges: a call's seed gives its places and values, the same every time") {
  lab::SparseChanges<> a(64), b(64);
  a.filled(100000, lab::RandomInput{7});
  b.filled(100000, lab::RandomInput{7});
  a.draw(11, unit);
  b.draw(11, unit);
  CHECK(a.changed() == b.changed());  // a --replay run makes the same changes
  CHECK(a.new_values() == b.new_values());
  REQUIRE(!a.changed().empty());
  CHECK(a.changed().size() <= 64);
  for (std::size_t k = 1; k < a.changed().size(); ++k) CHECK(a.changed()[k - 1] < a.changed()[k]);
  // Seen through the changes: the new values there (in [2, 3), never a fill's), the fill elsewhere.
  for (std::size_t k = 0; k < a.changed().size(); ++k) CHECK(a(a.changed()[k]) == a.new_values()[k]);
  for (std::size_t i = 0; i < 1000; ++i)
    if (!std::binary_search(a.changed().begin(), a.changed().end(), i))
      CHECK(a(i) == lab::random_input(7, i));
  a.draw(12, unit);
  CHECK(a.changed() != b.changed());
  CHECK(a.restored() == b.changed());  // the last call's places get their filled values back
}

TEST_CASE("SparseChanges: the writes of call after call leave exactly the fill and the last changes") {
  const std::size_t n = 5000;
  lab::SparseChanges<> c(64);
  c.filled(n, lab::RandomInput{3});
  std::vector<float> x = filled(n, 3);
  CHECK(c.changed_host("x", x.data()).empty());
  for (std::uint64_t call = 0; call < 5; ++call) {
    c.draw(100 + call, unit);
    c.write_host(x.data());
    CHECK(c.changed_host("x", x.data()).empty());
    for (std::size_t i = 0; i < n; ++i) REQUIRE(x[i] == c(i));
  }
  // A call's new values without the last call's places given back: found.
  c.draw(200, unit);
  std::vector<float> not_restored = x;
  for (std::size_t k = 0; k < c.changed().size(); ++k) not_restored[c.changed()[k]] = c.new_values()[k];
  CHECK(c.changed_host("x", not_restored.data()).find("x was written") == 0);
  c.write_host(x.data());
  CHECK(c.changed_host("x", x.data()).empty());

  // One element written by the code under test: how many and the first.
  x[1234] = -x[1234] - 1.0f;
  CHECK(c.changed_host("x", x.data()) ==
        "x was written: 1 of its 5000 elements changed, the first at [1234]");
  // A changed place holds its new value, not the fill's: the fill there is wrong.
  x[1234] = c(1234);
  const std::size_t place = c.changed()[0];
  x[place] = lab::random_input(3, place);
  CHECK(c.changed_host("x", x.data()) == "x was written: 1 of its 5000 elements changed, the first at [" +
                                             std::to_string(place) + "]");
}

TEST_CASE("SparseChanges: set() replaces a drawn value; a one-element input; a refill forgets") {
  lab::SparseChanges<> c(64);
  c.filled(1, lab::RandomInput{5});
  c.draw(9, unit);
  REQUIRE(c.changed() == std::vector<std::size_t>{0});  // 64 draws of one place: one change
  c.set(0, -7.0f);
  CHECK(c(0) == -7.0f);
  CHECK_THROWS(c.set(1, 0.0f));
  std::vector<float> x(1, lab::random_input(5, 0));
  c.write_host(x.data());
  CHECK(x[0] == -7.0f);
  c.filled(1, lab::RandomInput{6});  // a full fill: nothing changed, nothing to give back
  CHECK(c.changed().empty());
  CHECK(c.restored().empty());
  CHECK(c(0) == lab::random_input(6, 0));
}

TEST_CASE("SparseRoundTrip: the poisoned places follow the changes; the check looks where they are") {
  const std::size_t n = 100000;
  lab::SparseRoundTrip<> elementwise(64, 256, true), other(64, 256, false);
  elementwise.filled(n, lab::RandomInput{7});
  other.filled(n, lab::RandomInput{7});
  elementwise.draw(11, unit);
  other.draw(11, unit);
  const std::vector<std::size_t> changed = elementwise.input().changed();
  // The input's changes are SparseChanges' of the same seed; the drawn places come next from
  // the same generator, after the changed ones where the trip is elementwise.
  lab::SparseChanges<> alone(64);
  alone.filled(n, lab::RandomInput{7});
  alone.draw(11, unit);
  REQUIRE(changed == alone.changed());
  std::vector<std::size_t> drawn;
  for (int k = 0; k < 256; ++k) drawn.push_back(alone.rng()() % n);
  CHECK(other.poisoned() == drawn);
  std::vector<std::size_t> both = changed;
  both.insert(both.end(), drawn.begin(), drawn.end());
  CHECK(elementwise.poisoned() == both);
  CHECK(elementwise.rng()() == alone.rng()());  // the lesson's own draws continue from there

  // NaN at every poisoned place, nowhere else.
  std::vector<float> out(n, 1.0f);
  elementwise.poison_output(out.data());
  std::size_t nan = 0;
  for (const float v : out) nan += v != v;
  std::vector<std::size_t> distinct = both;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  CHECK(nan == distinct.size());
  for (const std::size_t i : both) CHECK(out[i] != out[i]);

  // The next call: the check looks at its changes, the places given back, the first `limit`
  // drawn places and its own picks, in that order.
  elementwise.draw(12, unit);
  const std::vector<std::size_t> picked = {5, 6};
  const std::vector<std::size_t> at = elementwise.places(3, picked);
  const lab::SparseChanges<>& in = elementwise.input();
  std::vector<std::size_t> want = in.changed();
  want.insert(want.end(), changed.begin(), changed.end());  // restored: the last call's
  for (std::size_t k = 0; k < 3; ++k) want.push_back(elementwise.poisoned()[in.changed().size() + k]);
  want.insert(want.end(), picked.begin(), picked.end());
  CHECK(at == want);
  CHECK(elementwise.places(100000, {}).size() == in.changed().size() + changed.size() + 256);

  // The input as written reads back as the fill with this call's changes.
  std::vector<float> x = filled(n, 7);
  elementwise.write_input(x.data());
  CHECK(elementwise.changed_host("x", x.data()).empty());
  for (const std::size_t i : in.changed()) CHECK(x[i] == elementwise(i));
  elementwise.filled(n, lab::RandomInput{8});  // a full fill: nothing poisoned
  CHECK(elementwise.poisoned().empty());
  CHECK(elementwise.places(10, {}).empty());
}

TEST_CASE("SparseRoundTrip: change() is draw(), write_input() and poison_output() together") {
  const std::size_t n = 20000;
  lab::SparseRoundTrip<> one(64, 256, true), parts(64, 256, true);
  one.filled(n, lab::RandomInput{7});
  parts.filled(n, lab::RandomInput{7});
  std::vector<float> in_one = filled(n, 7), in_parts = in_one, out_one(n, 1.0f), out_parts(n, 1.0f);
  for (std::uint64_t call = 0; call < 3; ++call) {  // the second call gives places back
    one.change(40 + call, unit, in_one.data(), out_one.data());
    parts.draw(40 + call, unit);
    parts.write_input(in_parts.data());
    parts.poison_output(out_parts.data());
    CHECK(one.poisoned() == parts.poisoned());
    CHECK(std::memcmp(in_one.data(), in_parts.data(), n * sizeof(float)) == 0);
    CHECK(std::memcmp(out_one.data(), out_parts.data(), n * sizeof(float)) == 0);
  }
  CHECK(one.changed_host("in", in_one.data()).empty());
  CHECK(!one.poisoned().empty());
  for (const std::size_t i : one.poisoned()) CHECK(out_one[i] != out_one[i]);
}

namespace {

struct Nothing {};

// A lesson with one variant, "given", whose recorded checks a test reads back.
struct Given {
  lab::Lesson lesson{"99-test", "looks"};
  lab::Variants<Nothing> variants{lesson};
  Given() {
    variants.add({"given", lab::Role::Baseline, "a given", [](Nothing&, cudaStream_t) {},
                  [](const Nothing&) { return lab::Work{1, 1}; }});
  }
  const std::vector<lab::CheckResult>& checks() const {
    return lesson.result().variants.at(0).checks;
  }
};

}  // namespace

TEST_CASE("SparseRoundTrip: a check's places: none listed after a validated call, after a timed "
          "call the drawn ones then the check's own picks") {
  const std::size_t n = 20000;
  lab::SparseRoundTrip<> trip(64, 256, true);
  trip.filled(n, lab::RandomInput{7});
  trip.draw(11, unit);
  Given g;
  lab::Look whole(g.lesson, "given", "all", 7, nullptr, nullptr);
  CHECK(trip.places(whole, 10, 5).empty());  // every element: compare_host's empty list
  std::mt19937_64 pick(99), same(99);
  lab::Look after_call(g.lesson, "given", "call", 7, nullptr, &pick);
  lab::Look replayed(g.lesson, "given", "call", 7, nullptr, &same);
  const std::vector<std::size_t> at = trip.places(after_call, 10, 5);
  CHECK(at == trip.places(10, replayed.indices(n, 5)));
  CHECK(at.size() == trip.input().changed().size() + 10 + 5);
}

TEST_CASE("Look::check_part records \"<case>, <part>\": passed when nothing went wrong") {
  Given g;
  lab::Look look(g.lesson, "given", "5000011 floats", 7, nullptr, nullptr);
  look.check_part("ranges", "");
  look.check_part("bounds", "copy_in(offset 9, count 4) reaches past n = 10");
  REQUIRE(g.checks().size() == 2);
  CHECK(g.checks()[0].name == "5000011 floats, ranges");
  CHECK(g.checks()[0].ok);
  CHECK(g.checks()[1].name == "5000011 floats, bounds");
  CHECK(!g.checks()[1].ok);
  CHECK(g.checks()[1].message == "copy_in(offset 9, count 4) reaches past n = 10");
}
