// The strict patch applier (patch.hpp): what `diff -u` writes applies; anything that does not fit
// its base exactly is an error naming the patch and the hunk.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "helpers.hpp"
#include "patch.hpp"

using namespace lab;
using namespace lab::test;

namespace {

const std::string kBase = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

std::string applied(const std::string& patch, const std::string& base = kBase) {
  return apply_patch(parse_patch(patch, "m.patch"), base);
}

std::string error_of(const std::string& patch, const std::string& base = kBase) {
  try {
    applied(patch, base);
  } catch (const PatchError& e) {
    return e.what();
  }
  return "(applied)";
}

}  // namespace

TEST_SUITE("patch") {

TEST_CASE("hunks as diff -u writes them apply exactly") {
  // One line changed, with three lines of context either side (diff -u's default).
  CHECK(applied("--- base.cu\n+++ m.cu\n@@ -2,7 +2,7 @@\n two\n three\n four\n-five\n+FIVE\n six\n"
                " seven\n eight\n") == "one\ntwo\nthree\nfour\nFIVE\nsix\nseven\neight\nnine\nten\n");
  // Two hunks, one adding lines at the top, one removing the last line; a date after a tab.
  CHECK(applied("--- base.cu\t2026-01-01 10:00:00\n+++ m.cu\t2026-01-02 10:00:00\n"
                "@@ -1,2 +1,4 @@\n+// a\n+// b\n one\n two\n@@ -8,3 +10,2 @@\n eight\n nine\n-ten\n") ==
        "// a\n// b\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n");
  // An insertion into an empty file ("-0,0"), and a file emptied ("+0,0").
  CHECK(applied("--- a\n+++ b\n@@ -0,0 +1,2 @@\n+x\n+y\n", "") == "x\ny\n");
  CHECK(applied("--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n", "x\ny\n") == "");
  // A count of 1 may be left out; lines before "---" (git's) are read past, its a/ b/ dropped.
  const Patch git = parse_patch("diff --git a/s/e.cu b/s/m.cu\nindex 1..2 100644\n--- a/s/e.cu\n"
                                "+++ b/s/m.cu\n@@ -3 +3 @@\n-three\n+3\n", "g.patch");
  CHECK(git.old_path == "s/e.cu");
  CHECK(git.new_path == "s/m.cu");
  CHECK(apply_patch(git, kBase) == "one\ntwo\n3\nfour\nfive\nsix\nseven\neight\nnine\nten\n");
}

TEST_CASE("a missing newline at the end of a file is kept, taken away or given") {
  CHECK(applied("--- a\n+++ b\n@@ -2 +2 @@\n-y\n\\ No newline at end of file\n+z\n"
                "\\ No newline at end of file\n", "x\ny") == "x\nz");
  CHECK(applied("--- a\n+++ b\n@@ -2 +2 @@\n-y\n\\ No newline at end of file\n+y\n", "x\ny") == "x\ny\n");
  CHECK(applied("--- a\n+++ b\n@@ -2 +2 @@\n-y\n+y\n\\ No newline at end of file\n", "x\ny\n") == "x\ny");
  // The newline is part of the line: a patch written for "y\n" does not apply to "y".
  CHECK(contains(error_of("--- a\n+++ b\n@@ -2 +2 @@\n-y\n+z\n", "x\ny"),
                 "line 2 of a is \"y\" (no newline at end of file) where the patch has \"y\""));
}

TEST_CASE("a hunk applies only where its header says, with its context as written") {
  // Context that differs: the patch, the hunk and the line are named.
  CHECK(error_of("--- base.cu\n+++ m.cu\n@@ -2,3 +2,3 @@\n two\n-three\n+3\n fuor\n") ==
        "m.patch: hunk 1 (@@ -2,3 +2,3 @@) does not apply: line 4 of base.cu is \"four\" where "
        "the patch has \"fuor\"");
  // The same hunk one line off: no fuzz, no search for a better place.
  CHECK(contains(error_of("--- base.cu\n+++ m.cu\n@@ -3,3 +3,3 @@\n two\n-three\n+3\n four\n"),
                 "hunk 1 (@@ -3,3 +3,3 @@) does not apply: line 3 of base.cu is \"three\""));
  CHECK(contains(error_of("--- base.cu\n+++ m.cu\n@@ -9,3 +9,3 @@\n nine\n-ten\n+10\n eleven\n"),
                 "base.cu ends at line 10 where the patch has \"eleven\""));
  CHECK(contains(error_of("--- a\n+++ b\n@@ -20 +20 @@\n-x\n+y\n"), "starts past the end of a (10 lines)"));
  // Hunks out of order, overlapping, or with a result line number that does not add up.
  CHECK(contains(error_of("--- a\n+++ b\n@@ -5 +5 @@\n-five\n+5\n@@ -2 +2 @@\n-two\n+2\n"),
                 "m.patch: hunk 2 (@@ -2 +2 @@) overlaps the hunk before it"));
  CHECK(contains(error_of("--- a\n+++ b\n@@ -2 +3 @@\n-two\n+2\n"),
                 "hunk 1 (@@ -2 +3 @@) says it makes line 3 of the result, but lands at line 2"));
}

TEST_CASE("a patch that is not one well-formed unified diff is refused with its line") {
  auto parse_error = [](const std::string& text) -> std::string {
    try {
      parse_patch(text, "m.patch");
    } catch (const PatchError& e) {
      return e.what();
    }
    return "(parsed)";
  };
  // Each text, and the one line that refuses it.
  const std::pair<std::string, std::string> refused[] = {
      {"just text\n",
       "m.patch: not a unified diff (no \"--- <file>\" line)"},
      {"--- a\n@@ -1 +1 @@\n",
       "m.patch:2: a \"+++ <file>\" line must follow the \"---\" line"},
      {"--- a\n+++ b\n",
       "m.patch: no hunks (the patch changes nothing)"},
      {"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-one\n+1\n",
       "m.patch: hunk 1 (@@ -1,2 +1,2 @@) is cut short: the patch ends 1 old and 1 new lines "
       "before its header's counts"},
      {"--- a\n+++ b\n@@ -1 +1 @@\n-one\n+1\n+2\n",
       "m.patch:6: expected a hunk header \"@@ -a,b +c,d @@\", found \"+2\""},
      {"--- a\n+++ b\n@@ -1,2 +1,2 @@\n-one\n+1\n\n",
       "m.patch:6: a line of hunk 1 (@@ -1,2 +1,2 @@) must start with ' ', '-' or '+', found \"\""},
      {"--- a\n+++ b\n@@ -1 +1 @@\n-one\n+1\n--- c\n+++ d\n",
       "m.patch:6: a second file: a patch holds one file"},
      {"--- a\n+++ b\n@@ -1 +x @@\n",
       "m.patch:3: expected a hunk header \"@@ -a,b +c,d @@\", found \"@@ -1 +x @@\""},
      {"--- a\n+++ b\n@@ -0,1 +1 @@\n-one\n+1\n",
       "m.patch:3: expected a hunk header \"@@ -a,b +c,d @@\", found \"@@ -0,1 +1 @@\""},
      {"--- a\n+++ b\n@@ -1 +1 @@\n\\ No newline at end of file\n-one\n+1\n",
       "m.patch:4: \"\\ No newline at end of file\" follows no line of hunk 1 (@@ -1 +1 @@)"},
  };
  for (const auto& [text, error] : refused) {
    CAPTURE(text);
    CHECK(parse_error(text) == error);
  }
}

TEST_CASE("a mutant is a patch of its lesson's solution or starter") {
  TempDir dir;
  const fs::path src = dir.path();
  write_text(src / "solutions" / "90-fake" / "exercise.cu", "solution\n");
  write_text(src / "lessons" / "90-fake" / "exercise.cu", "starter\n");
  write_text(mutant_patch(src, "90-fake", "of_solution"),
             "--- solutions/90-fake/exercise.cu\n+++ m\n@@ -1 +1 @@\n-solution\n+wrong\n");
  write_text(mutant_patch(src, "90-fake", "of_starter"),
             "--- lessons/90-fake/exercise.cu\n+++ m\n@@ -1 +1 @@\n-starter\n+faster\n");
  write_text(mutant_patch(src, "90-fake", "elsewhere"),
             "--- common/x.cu\n+++ m\n@@ -1 +1 @@\n-x\n+y\n");
  write_text(mutant_patch(src, "90-fake", "stale"),
             "--- solutions/90-fake/exercise.cu\n+++ m\n@@ -1 +1 @@\n-old solution\n+wrong\n");
  CHECK(materialise_mutant(src, "90-fake", "of_solution") == "wrong\n");
  CHECK(materialise_mutant(src, "90-fake", "of_starter") == "faster\n");
  CHECK_THROWS_WITH_AS(materialise_mutant(src, "90-fake", "elsewhere"),
                       "solutions/90-fake/mutants/elsewhere.patch: patches \"common/x.cu\"; a mutant is "
                       "a patch of solutions/90-fake/exercise.cu or lessons/90-fake/exercise.cu",
                       PatchError);
  CHECK_THROWS_WITH_AS(materialise_mutant(src, "90-fake", "stale"),
                       "solutions/90-fake/mutants/stale.patch: hunk 1 (@@ -1 +1 @@) does not apply: "
                       "line 1 of solutions/90-fake/exercise.cu is \"solution\" where the patch has "
                       "\"old solution\"",
                       PatchError);
  std::string absent;
  try {
    materialise_mutant(src, "90-fake", "absent");
  } catch (const PatchError& e) {
    absent = e.what();
  }
  CHECK(contains(absent, "solutions/90-fake/mutants/absent.patch: cannot read"));
}

TEST_CASE("every mutant of the course applies to its base") {
  const fs::path src = LAB_SOURCE_DIR;
  int applied_count = 0;
  for (const auto& lesson : fs::directory_iterator(src / "solutions")) {
    const fs::path mutants = lesson.path() / "mutants";
    if (!fs::is_directory(mutants)) continue;
    for (const auto& f : fs::directory_iterator(mutants)) {
      if (f.path().extension() != ".patch") continue;
      const std::string name = f.path().stem().string();
      CAPTURE(f.path());
      CHECK_NOTHROW(materialise_mutant(src, lesson.path().filename().string(), name));
      ++applied_count;
    }
  }
  CHECK(applied_count > 100);
}

}  // TEST_SUITE
