// The cache tests in new processes (lab/cache_tests.hpp), with stand-ins for the processes: a
// disk cache written here, in the folder each call is handed, as a graded exercise would.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "lab/cache_tests.hpp"
#include "lab/harness.hpp"
#include "lab/stats.hpp"

namespace fs = std::filesystem;

namespace {

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct Temp {
  fs::path path;
  Temp() {
    path = fs::temp_directory_path() / ("lab-cache-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~Temp() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// An old time of change for every file the stand-in writes: a planted file must keep it.
const fs::file_time_type kWritten = fs::file_time_type::clock::now() - std::chrono::hours(5);

// One new process of the code under test, in this process: a cache of one file per program,
// "entry-P" (or one "entry" for both), holding the program's key and a body; the right result
// only from the right, whole entry.
struct Cache {
  bool checks = true;        // an entry that is damaged or another key's is not used
  bool writes_again = true;  // ... and is written again
  bool writes = true;        // false: no cache at all
  bool one_name = false;     // one file name for every program
  fs::path elsewhere;        // also writes a file here
  fs::path root;             // where the folders are made
  int calls = 0;
  std::vector<std::string> troubles;  // what a process found that it should not have
  std::vector<int> damaged_at;        // the calls that met a damaged entry

  static std::string entry(int program) {
    return "key " + std::to_string(program) + "\n" + std::string(1000, char('a' + program));
  }

  lab::ChildRun operator()(const fs::path& dir, int program) {
    ++calls;
    int folders = 0;
    for (const auto& e : fs::directory_iterator(root)) folders += e.is_directory() ? 1 : 0;
    if (folders != 1) troubles.push_back("call " + std::to_string(calls) + " saw other folders");
    const fs::path file = dir / (one_name ? "entry" : "entry-" + std::to_string(program));
    const std::string want = entry(program);
    lab::ChildRun c;
    c.ok = true;
    c.readings["first_call_ms"] = "20";
    bool right = true;
    if (fs::exists(file)) {
      if (fs::last_write_time(file) != kWritten) troubles.push_back("a file lost its time");
      const std::string got = lab::read_bytes(file);
      if (got != want) damaged_at.push_back(calls);
      c.readings["first_call_ms"] = "2";
      if (got == want || !checks) {
        right = got == want;
      } else if (writes_again) {
        fs::remove(file);
      }
    }
    if (writes && !fs::exists(file)) {
      lab::write_bytes(file, want);
      fs::last_write_time(file, kWritten);
    }
    if (!elsewhere.empty()) lab::write_bytes(elsewhere / "side-cache", want);
    c.readings["correct"] = right ? "1" : "0";
    if (!right) c.readings["wrong"] = "1000 of 4096 differ";
    return c;
  }
};

lab::ChildRun yardstick() {
  lab::ChildRun c;
  c.ok = true;
  c.readings["first_call_ms"] = "30";
  return c;
}

// A lesson with an exercise to record checks on.
struct Graded {
  lab::Lesson lesson{"99-test", "cache tests"};
  Graded() { lesson.declare("exercise", lab::Role::Exercise, "a cache"); }
  const std::vector<lab::CheckResult>& checks() const { return lesson.result().variants[0].checks; }
  const lab::CheckResult* find(const std::string& name) const {
    for (const lab::CheckResult& c : checks())
      if (c.name == name) return &c;
    return nullptr;
  }
};

const char* kTruncated = "new process, cache files cut to half their size";
const char* kFlipped = "new process, cache files with 7 bits flipped";
const char* kStale = "new process, program 0's cache file replaced by program 1's";
const char* kAudit = "new processes wrote only in their cache folder";

// Runs the tests with @p cache on folders under @p t, the audit over @p t only.
lab::FirstCallTimes run(Graded& g, Cache& cache, const Temp& t, int rounds, bool keep = false) {
  cache.root = t.path / "run";
  fs::create_directories(cache.root);
  lab::WriteAudit audit({t.path});
  lab::CacheTests tests(g.lesson, audit, cache.root, keep);
  return tests.run(rounds, std::ref(cache), yardstick);
}

}  // namespace

TEST_CASE("a cache that detects damage and writes its entry again passes every round") {
  Temp t;
  Graded g;
  Cache cache;
  const lab::FirstCallTimes times = run(g, cache, t, 3);
  // Program 1's process, then 3 plain rounds and 3 damaged ones of two processes each.
  CHECK(cache.calls == 1 + 2 * 6);
  CHECK(cache.troubles.empty());
  CHECK(cache.damaged_at.size() == 3);
  REQUIRE(g.checks().size() == 1 + 6 + 3 + 3 + 1);
  for (const lab::CheckResult& c : g.checks()) {
    INFO(c.name << ": " << c.message);
    CHECK(c.ok);
  }
  for (const char* name : {kTruncated, kFlipped, kStale, kAudit}) CHECK(g.find(name));
  CHECK(g.find("new process, empty cache folder (3)"));
  CHECK(g.find("new process, cache folder filled by an earlier one (3)"));
  CHECK(
      g.find("new process, empty cache folder (a round of the test: cache files cut to half "
             "their size)"));
  CHECK(times.yardstick == std::vector<double>{30, 30, 30});
  CHECK(times.empty == std::vector<double>{20, 20, 20});
  CHECK(times.filled == std::vector<double>{2, 2, 2});
  CHECK(times.on_disk);
  CHECK(fs::is_empty(cache.root));  // every folder removed once its round was over
}

TEST_CASE("a cache that trusts its files fails the damaged rounds, each saying why") {
  Temp t;
  Graded g;
  Cache cache;
  cache.checks = false;
  run(g, cache, t, 2);
  for (const char* name : {kTruncated, kFlipped}) {
    const lab::CheckResult* c = g.find(name);
    REQUIRE(c);
    CHECK_FALSE(c->ok);
    CHECK(c->message == "1000 of 4096 differ: a damaged cache entry was used");
  }
  const lab::CheckResult* stale = g.find(kStale);
  REQUIRE(stale);
  CHECK_FALSE(stale->ok);
  CHECK(stale->message ==
        "1000 of 4096 differ: the entry was another program's, and was used: store the key in "
        "the entry and compare it");
  CHECK(g.find(kAudit)->ok);
}

TEST_CASE("a right result with the damaged file left as it was planted fails") {
  Temp t;
  Graded g;
  Cache cache;
  cache.writes_again = false;
  run(g, cache, t, 1);
  const lab::CheckResult* cut = g.find(kTruncated);
  REQUIRE(cut);
  CHECK_FALSE(cut->ok);
  CHECK(cut->message ==
        "the right result, but the damaged file entry-0 is still there as the harness left it: "
        "detect the damage and write the entry again");
  const lab::CheckResult* stale = g.find(kStale);
  REQUIRE(stale);
  CHECK_FALSE(stale->ok);
  CHECK(stale->message ==
        "the right result, but the other program's entry still sits under this one's name: write "
        "the entry again when its key does not match");
}

TEST_CASE("a process that writes outside its folder fails the write audit") {
  Temp t;
  Graded g;
  Cache cache;
  cache.elsewhere = t.path / "beside";
  fs::create_directories(cache.elsewhere);
  run(g, cache, t, 1);
  const lab::CheckResult* audit = g.find(kAudit);
  REQUIRE(audit);
  CHECK_FALSE(audit->ok);
  CHECK(audit->message == "written outside the cache folder it was given: " +
                              (cache.elsewhere / "side-cache").string() +
                              " (keep the cache in that folder: the harness tests what it finds "
                              "there; a file another program of yours wrote meanwhile counts too: "
                              "run this lesson alone, or with lab-check run, whose programs have "
                              "/tmp and the other shared folders to themselves)");
}

TEST_CASE("with nothing on disk the damage is skipped, and the times say so") {
  Temp t;
  Graded g;
  Cache cache;
  cache.writes = false;
  const lab::FirstCallTimes times = run(g, cache, t, 2);
  for (const char* name : {kTruncated, kFlipped, kStale}) CHECK_FALSE(g.find(name));
  // The setup's process and one a round: the empty folder's second process would repeat its first.
  CHECK(cache.calls == 1 + 5);
  CHECK_FALSE(times.on_disk);
  CHECK(times.filled == std::vector<double>{20, 20});
  // The damaged rounds' second calls are recorded as plain ones.
  CHECK(
      g.find("new process, cache folder filled by an earlier one (a round of the test: cache "
             "files with 7 bits flipped)"));
}

TEST_CASE("the disk cache rule's metrics: the yardstick over the filled folder, 0 with no file") {
  lab::FirstCallTimes t;
  t.yardstick = {30, 28, 35};
  t.empty = {40, 60, 50};
  t.filled = {3, 2, 5};
  t.on_disk = true;
  lab::Lesson lesson("99-test", "first calls");
  lab::record_first_calls(lesson, t, 3, "n = 4096");
  const auto& m = lesson.result().metrics;
  CHECK(m.at("first_call_compiled_ms").value == 30);
  CHECK(m.at("first_call_compiled_ms").low == 28);
  CHECK(m.at("first_call_compiled_ms").high == 35);
  CHECK(m.at("first_call_compiled_ms").unit == " ms");
  CHECK(m.at("first_call_cold_ms").value == 50);
  CHECK(m.at("first_call_filled_ms").value == 3);
  CHECK(m.at("first_call_filled_ms").high == 5);
  const lab::MedianRatio r =
      lab::ratio_of_medians(lab::summarize(t.yardstick), lab::summarize(t.filled));
  const lab::Metric& speedup = m.at("first_call_speedup");
  CHECK(speedup.value == 10);  // over the filled folder's median, not the empty one's
  CHECK(speedup.low == r.low);
  CHECK(speedup.high == r.high);
  CHECK(speedup.unit == "x");

  // No file in the folder: the times, but no speed-up; no empty-folder call that succeeded: no
  // cold time.
  t.on_disk = false;
  t.empty.clear();
  lab::Lesson no_file("99-test", "first calls");
  lab::record_first_calls(no_file, t, 3, "n = 4096");
  CHECK(no_file.result().metrics.at("first_call_speedup").value == 0);
  CHECK(no_file.result().metrics.at("first_call_speedup").high == 0);
  CHECK(no_file.result().metrics.at("first_call_filled_ms").value == 3);
  CHECK(no_file.result().metrics.count("first_call_cold_ms") == 0);

  // No filled-folder call succeeded: the speed-up 0 and nothing else.
  t.filled.clear();
  lab::Lesson none("99-test", "first calls");
  lab::record_first_calls(none, t, 3, "n = 4096");
  CHECK(none.result().metrics.size() == 1);
  CHECK(none.result().metrics.at("first_call_speedup").value == 0);
}

TEST_CASE("one file name for every program: the stale entry is skipped, the others are not") {
  Temp t;
  Graded g;
  Cache cache;
  cache.one_name = true;
  run(g, cache, t, 1);
  CHECK_FALSE(g.find(kStale));
  CHECK(g.find(kTruncated));
  CHECK(g.find(kFlipped));
}

TEST_CASE("damaged rounds fall anywhere among the plain ones; every folder's name is drawn") {
  std::set<int> first_damaged;
  std::set<std::string> names;
  for (int run_k = 0; run_k < 12; ++run_k) {
    Temp t;
    Graded g;
    Cache cache;
    cache.root = t.path / "run";
    fs::create_directories(cache.root);
    lab::WriteAudit audit({t.path});
    lab::CacheTests tests(g.lesson, audit, cache.root, true);  // kept: to read their names
    tests.run(5, std::ref(cache), yardstick);
    REQUIRE_FALSE(cache.damaged_at.empty());
    first_damaged.insert(cache.damaged_at.front());
    std::size_t folders = 0;
    for (const auto& e : fs::directory_iterator(cache.root)) {
      ++folders;
      const std::string name = e.path().filename().string();
      CHECK(name.size() == 16);
      CHECK(name.find_first_not_of("0123456789abcdef") == std::string::npos);
      names.insert(name);
    }
    CHECK(folders == 1 + 8);
  }
  CHECK(first_damaged.size() > 1);  // all 12 alike: about 1 in 100,000
  CHECK(names.size() == 12 * 9);
}

TEST_CASE("the yardstick's process failing ends the tests: no code under test ran there") {
  Temp t;
  Graded g;
  Cache cache;
  cache.root = t.path / "run";
  fs::create_directories(cache.root);
  lab::WriteAudit audit({t.path});
  lab::CacheTests tests(g.lesson, audit, cache.root, false);
  CHECK_THROWS_WITH_AS(tests.run(1, std::ref(cache),
                                 [] {
                                   lab::ChildRun c;
                                   c.failure = "killed by signal 9";
                                   return c;
                                 }),
                       "the harness's own first call in a new process failed: killed by signal 9",
                       std::runtime_error);
}

TEST_CASE("files: read whole, listed recursively, written over in place keeping their time") {
  Temp t;
  fs::create_directories(t.path / "a" / "b");
  lab::write_bytes(t.path / "small", "12");
  lab::write_bytes(t.path / "a" / "b" / "big", std::string(100, 'x'));
  CHECK(lab::read_bytes(t.path / "small") == "12");
  CHECK(lab::read_bytes(t.path / "missing").empty());
  const auto files = lab::files_in(t.path);
  REQUIRE(files.size() == 2);
  CHECK(files.at(t.path / "a" / "b" / "big").size() == 100);
  CHECK(lab::largest_file(t.path) == t.path / "a" / "b" / "big");
  CHECK(lab::largest_file(t.path / "a" / "b" / "..").filename() == "big");
  CHECK_THROWS_AS(lab::write_bytes(t.path / "a", "x"), std::runtime_error);  // a folder

  fs::last_write_time(t.path / "small", kWritten);
  lab::plant(t.path / "small", "345");
  CHECK(lab::read_bytes(t.path / "small") == "345");
  CHECK(fs::last_write_time(t.path / "small") == kWritten);
  fs::create_directories(t.path / "empty");
  CHECK(lab::largest_file(t.path / "empty").empty());
}

TEST_CASE("a scratch folder is drawn under its parent and removed with it, unless kept") {
  Temp t;
  fs::path made;
  {
    lab::ScratchFolder f(t.path / "cache", false);
    made = f.path();
    CHECK(made.is_absolute());
    CHECK(made.parent_path() == t.path / "cache");
    CHECK(made.filename().string().rfind("run-", 0) == 0);
    CHECK(fs::is_directory(made));
    lab::write_bytes(made / "entry", "x");
  }
  CHECK_FALSE(fs::exists(t.path / "cache"));  // the parent too: nothing else was in it
  {
    lab::ScratchFolder other(t.path / "cache", false);
    lab::ScratchFolder f(t.path / "cache", false);
    CHECK(f.path() != other.path());
  }
  CHECK_FALSE(fs::exists(t.path / "cache"));
  {
    lab::ScratchFolder f(t.path / "cache", true);
    made = f.path();
  }
  CHECK(fs::is_directory(made));
}

TEST_CASE("a drawn expression nests five steps, uses its parameter, and differs draw to draw") {
  std::mt19937_64 rng(7);
  std::set<std::string> drawn, outer;
  for (int k = 0; k < 200; ++k) {
    const std::string e = lab::draw_expression(rng, "BETA");
    INFO(e);
    CHECK(e.rfind("BETA * ", 0) == 0);
    CHECK(e.size() > 4);
    CHECK(e.substr(e.size() - 4) == " + v");
    CHECK(e.find("ALPHA") == std::string::npos);
    // Five steps: each of the four around the innermost (v) opens at least one more parenthesis.
    const std::size_t v = e.find("(v)");
    REQUIRE(v != std::string::npos);
    CHECK(std::count(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(v), '(') >= 4);
    drawn.insert(e);
    outer.insert(e.substr(7, 4));
  }
  CHECK(drawn.size() == 200);
  CHECK(outer.size() >= 8);      // the outermost step takes many forms
  std::mt19937_64 a(11), b(11);  // the draw is the generator's alone
  CHECK(lab::draw_expression(a, "X") == lab::draw_expression(b, "X"));
}
