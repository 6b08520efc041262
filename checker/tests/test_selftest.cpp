// selftest without a GPU: the "programs" are scripts that run the fake lesson in some mode.
#include <doctest/doctest.h>

#include "helpers.hpp"
#include "selftest.hpp"

using namespace lab;
using namespace lab::test;

namespace {

void program(const fs::path& path, const std::string& args) {
  write_text(path, "#!/bin/sh\nexec " + std::string(LAB_TEST_FAKE_LESSON) + " " + args + " \"$@\"\n");
  fs::permissions(path, fs::perms::owner_all);
}

// The fake lesson in a course of its own below `dir`: its folder (src/lessons/90-fake), its
// mutants' folder (src/solutions/90-fake/mutants), its programs' folder (build/lessons/90-fake, a
// solution at 0.5 ms and a starter at 2.0 ms) and its rules.
struct FakeLesson {
  fs::path dir, mutants, build, programs;
  LessonConfig config;
  explicit FakeLesson(const fs::path& root)
      : dir(root / "src" / "lessons" / "90-fake"), mutants(root / "src" / "solutions" / "90-fake" / "mutants"),
        build(root / "build"), programs(build / "lessons" / "90-fake") {
    fs::create_directories(dir);
    fs::create_directories(mutants);
    write_text(mutants.parent_path() / "exercise.cu", "// the solution\n");
    fs::copy_file(fs::path(LAB_TEST_DATA_DIR) / "fake-course" / "lessons" / "90-fake" / "check.toml",
                  dir / "check.toml");
    config = load_lesson(dir / "check.toml");
    program(programs / "solution", "--exercise-ms 0.5");
    program(programs / "starter", "--exercise-ms 2.0");
  }
  /// mutants/<name>.patch: one line of the solution changed.
  void mutant(const std::string& name) const {
    write_text(mutants / (name + ".patch"), "--- solutions/90-fake/exercise.cu\n+++ " + name +
                                                ".cu\n@@ -1 +1 @@\n-// the solution\n+// " + name + "\n");
  }
  /// One mutant, <name>.patch, built as the fake lesson run with `args`; `expected` is all of
  /// expected.toml.
  void only_mutant(const std::string& name, const std::string& args, const std::string& expected) const {
    mutant(name);
    program(programs / ("mutant-" + name), args);
    write_text(mutants / "expected.toml", expected);
  }
  /// Options for these programs: stand-ins, with no object files to inspect.
  SelftestOptions options() const {
    SelftestOptions opt;
    opt.build_dir = build;
    opt.inspect = false;
    return opt;
  }
};

const SelftestCheck& find(const std::vector<SelftestCheck>& checks, const std::string& subject) {
  for (const auto& c : checks)
    if (c.subject == subject) return c;
  FAIL("no check for " << subject);
  return checks.front();
}

}  // namespace

TEST_SUITE("selftest") {

TEST_CASE("solution, starter and mutants are held to their promises") {
  TempDir dir;
  const FakeLesson fake(dir.path());
  const fs::path& programs = fake.programs;
  const LessonConfig& lesson = fake.config;
  for (const char* m : {"racy", "crashy", "hang", "forged", "unlisted"}) fake.mutant(m);
  program(programs / "mutant-racy", "--exercise-ms 0.5 --wrong");
  program(programs / "mutant-crashy", "--mode segv");
  program(programs / "mutant-hang", "--mode sleep");
  program(programs / "mutant-forged", "--mode wrong-nonce");
  write_text(fake.mutants / "expected.toml",
             "[racy]\nrule = \"correct\"\nverdict = \"fail\"\n"
             "[crashy]\nverdict = \"error\"\nreason = \"crash\"\n"
             "[hang]\nverdict = \"error\"\nreason = \"crash\"\ntimeout_s = 1\n"  // wrong on purpose
             "[forged]\nverdict = \"error\"\nreason = \"result\"\n"
             "[ghost]\nverdict = \"fail\"\n");

  SelftestOptions opt = fake.options();
  std::vector<std::string> seen;  // what a caller is shown as each check is made, in order
  const auto checks = selftest_lesson(lesson, opt, nullptr,
                                      [&](const SelftestCheck& c) { seen.push_back(c.subject); });
  REQUIRE(checks.size() == 8);
  REQUIRE(seen.size() == checks.size());
  for (std::size_t i = 0; i < checks.size(); ++i) CHECK(seen[i] == checks[i].subject);
  CHECK(find(checks, "solution").held);
  const SelftestCheck& starter = find(checks, "starter");
  CHECK(starter.held);
  CHECK(contains(starter.detail, "Only 2.00x faster than the naive version, needs 3.00x."));
  CHECK(contains(starter.detail, "speedup fails: 2.00x faster than \"naive\""));
  CHECK(find(checks, "mutant racy").held);
  CHECK(find(checks, "mutant crashy").held);
  CHECK(find(checks, "mutant forged").held);
  const SelftestCheck& hang = find(checks, "mutant hang");
  CHECK_FALSE(hang.held);
  CHECK(contains(hang.detail, "got error (timeout): timed out after 1 s"));
  const SelftestCheck& unlisted = find(checks, "mutant unlisted");
  CHECK_FALSE(unlisted.held);
  CHECK(unlisted.detail == "mutants/unlisted.patch has no [unlisted] in expected.toml");
  const SelftestCheck& ghost = find(checks, "mutant ghost");
  CHECK_FALSE(ghost.held);
  CHECK(contains(ghost.detail, "expected.toml:14: no mutants/ghost.patch"));

  // A starter that already meets the bar is a broken lesson, and selftest says so.
  program(programs / "starter", "--exercise-ms 0.5");
  const auto again = selftest_lesson(lesson, opt, nullptr);
  CHECK_FALSE(find(again, "starter").held);
  CHECK(contains(find(again, "starter").detail, "no performance rule failed with its hint"));
}

TEST_CASE("a mutant whose patch no longer fits its base is a failed check naming the hunk") {
  TempDir dir;
  const FakeLesson fake(dir.path());
  fake.only_mutant("racy", "--exercise-ms 0.5 --wrong", "[racy]\nrule = \"correct\"\nverdict = \"fail\"\n");
  const SelftestOptions opt = fake.options();
  CHECK(find(selftest_lesson(fake.config, opt, nullptr), "mutant racy").held);
  // The solution moved on; the mutant was not made again from it.
  write_text(fake.mutants.parent_path() / "exercise.cu", "// the solution, improved\n");
  const auto checks = selftest_lesson(fake.config, opt, nullptr);
  const SelftestCheck& stale = find(checks, "mutant racy");
  CHECK_FALSE(stale.held);
  CHECK(stale.detail ==
        "solutions/90-fake/mutants/racy.patch: hunk 1 (@@ -1 +1 @@) does not apply: line 1 of "
        "solutions/90-fake/exercise.cu is \"// the solution, improved\" where the patch has \"// the "
        "solution\"");
}

TEST_CASE("with pristine baselines, a mutant that slows its own baseline gains nothing") {
  TempDir dir;
  const FakeLesson fake(dir.path());
  // The starter's speed, its in-process baseline slowed tenfold: 20x over it, where the bar is 3x.
  fake.only_mutant("slows_baseline", "--exercise-ms 2.0 --baseline-ms 40",
                   "[slows_baseline]\nrule = \"speedup\"\nverdict = \"fail\"\n");
  SelftestOptions opt = fake.options();
  CHECK_FALSE(find(selftest_lesson(fake.config, opt, nullptr), "mutant slows_baseline").held);
  opt.pristine = true;  // the baseline timed again by the lesson's starter (4 ms): 2x, a fail
  const auto checks = selftest_lesson(fake.config, opt, nullptr);
  CHECK(find(checks, "mutant slows_baseline").held);
  CHECK(find(checks, "solution").held);
  CHECK(find(checks, "starter").held);
}

TEST_CASE("mutants expected to pass run in every round, and passing subjects report their narrowest margin") {
  TempDir dir;
  const FakeLesson fake(dir.path());
  const fs::path& programs = fake.programs;
  const LessonConfig& lesson = fake.config;
  program(programs / "mutant-taught_path", "--exercise-ms 0.6");
  program(programs / "mutant-racy", "--exercise-ms 0.5 --wrong");
  program(programs / "mutant-alt_design", "--exercise-ms 0.5");
  for (const char* m : {"taught_path", "racy", "alt_design"}) fake.mutant(m);
  write_text(fake.mutants / "expected.toml",
             "[taught_path]\nverdict = \"pass\"\n[racy]\nrule = \"correct\"\nverdict = \"fail\"\n"
             "[alt_design]\nverdict = \"pass\"\n");
  SelftestOptions opt = fake.options();

  const auto all = selftest_lesson(lesson, opt, nullptr);
  REQUIRE(all.size() == 5);
  const SelftestCheck& solution = find(all, "solution");
  const SelftestCheck& taught = find(all, "mutant taught_path");
  CHECK(solution.held);
  CHECK(taught.held);
  CHECK_FALSE(solution.margin_rule.empty());
  CHECK(solution.margin > 1.0);
  CHECK_FALSE(taught.margin_rule.empty());
  CHECK(taught.margin > 1.0);
  CHECK(taught.margin < solution.margin);  // slower: a narrower margin
  CHECK(find(all, "starter").margin_rule.empty());      // expected to fail: no margin
  CHECK(find(all, "mutant racy").margin_rule.empty());  // expected to fail: no margin

  opt.mutants = false;  // a later round of --repeat --mutants-once
  const auto later = selftest_lesson(lesson, opt, nullptr);
  REQUIRE(later.size() == 4);  // every mutant expected to pass, by its expectation, not its name
  CHECK(find(later, "mutant taught_path").held);
  CHECK(find(later, "mutant alt_design").held);
  for (const auto& c : later) CHECK(c.subject != "mutant racy");
}

}  // TEST_SUITE
