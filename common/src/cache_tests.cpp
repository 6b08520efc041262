// Tests of a disk cache in new processes (lab/cache_tests.hpp).
#include "lab/cache_tests.hpp"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "lab/format.hpp"
#include "lab/harness.hpp"
#include "lab/stats.hpp"

namespace fs = std::filesystem;

namespace lab {

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::map<fs::path, std::string> files_in(const fs::path& dir) {
  std::map<fs::path, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[e.path()] = read_bytes(e.path());
  return out;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

void plant(const fs::path& p, const std::string& bytes) {
  const fs::file_time_type when = fs::last_write_time(p);
  write_bytes(p, bytes);
  fs::last_write_time(p, when);
}

fs::path largest_file(const fs::path& dir) {
  fs::path best;
  std::uintmax_t size = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.file_size() >= size) {
      size = e.file_size();
      best = e.path();
    }
  return best;
}

std::string draw_expression(std::mt19937_64& rng, const std::string& parameter) {
  auto constant = [&](double low, double high) {
    return text("%.4ff", low + (high - low) * std::uniform_real_distribution<>(0, 1)(rng));
  };
  const std::string& a = parameter;
  std::string e = "v";
  for (int step = 0; step < 5; ++step) {
    const std::string v = "(" + e + ")";
    switch (rng() % 10) {
      case 0: e = v + " * " + constant(0.5, 1.5) + " + " + constant(-0.5, 0.5); break;
      case 1: e = "sinf(" + constant(0.5, 2) + " * " + v + ")"; break;
      case 2: e = "tanhf(" + a + " * " + v + ")"; break;
      case 3: e = "expf(-" + constant(0.1, 1) + " * " + v + ")"; break;
      case 4: e = "fmaxf(" + v + ", " + constant(-0.5, 0.5) + ")"; break;
      case 5: e = "sqrtf(fabsf" + v + " + " + constant(0.1, 1) + ")"; break;
      case 6: e = "cosf(" + v + " + " + constant(-1, 1) + ")"; break;
      case 7: e = v + " * " + a + " - " + constant(0, 1); break;
      case 8: e = "rsqrtf(fabsf" + v + " + " + constant(0.1, 1) + ")"; break;
      default: e = "fminf(" + v + " * " + a + ", " + constant(0, 1) + ")"; break;
    }
  }
  return a + " * " + e + " + v";  // the parameter always counts
}

void record_first_calls(Lesson& lesson, const FirstCallTimes& t, int rounds,
                        const std::string& size) {
  if (t.filled.empty()) {  // every filled-folder call failed: checked already
    lesson.metric("first_call_speedup", 0, 0, 0, "x");
    return;
  }
  const Stats a = summarize(t.yardstick), b = summarize(t.filled);
  lesson.metric("first_call_compiled_ms", a.median, a.min, a.max, " ms");
  std::string empty_folder = "-";
  if (!t.empty.empty()) {
    const Stats c = summarize(t.empty);
    lesson.metric("first_call_cold_ms", c.median, c.min, c.max, " ms");
    empty_folder = fixed(c.median, 2);
  }
  lesson.metric("first_call_filled_ms", b.median, b.min, b.max, " ms");
  lesson.note("first call in a new process, " + size + ", median of " + std::to_string(rounds) +
              ": compiled by the harness " + fixed(a.median, 2) +
              " ms, yours on an empty cache folder " + empty_folder + " ms, on the filled folder " +
              fixed(b.median, 2) + " ms: " + fixed(a.median / b.median, 1) +
              "x faster than compiling (the bar: disk_cache in check.toml)");
  if (!t.on_disk) {
    lesson.metric("first_call_speedup", 0, 0, 0, "x");
    lesson.note(
        "the cache folder holds no file after a first call: no disk cache there, so the "
        "speed-up counts as 0");
    return;
  }
  const MedianRatio r = ratio_of_medians(a, b);  // lab::speedup's interval, for Stats
  lesson.metric("first_call_speedup", r.value, r.low, r.high, "x");
}

void report_first_call(double first_call_ms, const std::string& wrong) {
  report_first_call(first_call_ms);
  report("correct", wrong.empty() ? "1" : "0");
  if (!wrong.empty()) report("wrong", wrong);
}

void report_first_call(double first_call_ms) { report("first_call_ms", first_call_ms); }

ScratchFolder::ScratchFolder(const fs::path& parent, bool keep) : keep_(keep) {
  std::mt19937_64 name_rng(std::random_device{}());
  path_ = fs::absolute(parent) / ("run-" + std::to_string(name_rng() % 1000000000));
  fs::create_directories(path_);
}

ScratchFolder::~ScratchFolder() {
  if (keep_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
  fs::remove(path_.parent_path(), ec);  // only if empty: other runs may share it
}

namespace {

std::string describe(Damage d) {
  switch (d) {
    case Damage::truncated: return "cache files cut to half their size";
    case Damage::flipped: return "cache files with 7 bits flipped";
    default: return "program 0's cache file replaced by program 1's";
  }
}

std::string check_name(Damage d) { return "new process, " + describe(d); }

}  // namespace

CacheTests::CacheTests(Lesson& lesson, WriteAudit& audit, fs::path root, bool keep)
    : lesson_(lesson), audit_(audit), root_(std::move(root)), keep_(keep) {}

FirstCallTimes CacheTests::run(int rounds, const FirstCall& call, const Yardstick& yardstick) {
  before_ = audit_.list();
  // Program 1's entry, for the stale-entry round, from a process of its own; kept here, its
  // folder removed.
  {
    const fs::path dir = new_folder();
    const ChildRun setup = first_call(call, dir, 1);
    if (record_call("new process, program 1, empty cache folder", setup)) {
      const fs::path entry = largest_file(dir);
      if (!entry.empty()) {
        other_name_ = fs::relative(entry, dir);
        other_entry_ = read_bytes(entry);
      }
    }
    leave(dir);
  }
  std::vector<Damage> order(static_cast<std::size_t>(rounds), Damage::none);
  order.insert(order.end(), {Damage::truncated, Damage::flipped, Damage::stale});
  std::shuffle(order.begin(), order.end(), rng_);
  FirstCallTimes times;
  int k = 0;
  bool looked = false;  // the first plain round's folder was looked at
  for (const Damage d : order) {
    const ChildRun ref = yardstick();
    if (!ref.ok)  // no code under test runs there: the machine's or the course's problem
      throw std::runtime_error("the harness's own first call in a new process failed: " +
                               ref.why());
    const std::string label = d == Damage::none ? " (" + std::to_string(++k) + ")"
                                                : " (a round of the test: " + describe(d) + ")";
    const fs::path dir = new_folder();
    const ChildRun empty = first_call(call, dir, 0);
    record_call("new process, empty cache folder" + label, empty);
    // A folder the first process left empty is what a second would find: that process would be
    // the first's run again, so the first's stands for it (a cache that writes nothing, as the
    // starter's, needs a third fewer processes).
    const bool left_nothing = files_in(dir).empty();
    const std::map<fs::path, std::string> damaged = damage(d, dir);
    const ChildRun filled = left_nothing ? empty : first_call(call, dir, 0);
    if (d == Damage::none || damaged.empty()) {
      record_call("new process, cache folder filled by an earlier one" + label, filled);
    } else {
      judge(d, filled, damaged);
    }
    if (d == Damage::none) {
      times.yardstick.push_back(ref.number("first_call_ms"));
      if (empty.ok) times.empty.push_back(empty.number("first_call_ms"));
      if (filled.ok) times.filled.push_back(filled.number("first_call_ms"));
      if (!looked) times.on_disk = !files_in(dir).empty();
      looked = true;
    }
    leave(dir);
  }
  lesson_.check("exercise", "new processes wrote only in their cache folder", written_.empty(),
                "written outside the cache folder it was given: " + written_ +
                    " (keep the cache in that folder: the harness tests what it finds there; a file "
                    "another program of yours wrote meanwhile counts too: run this lesson alone, or "
                    "with lab-check run, whose programs have /tmp and the other shared folders to "
                    "themselves)");
  return times;
}

// A folder of its own for the next process, named at random, and allowed by the write audit.
fs::path CacheTests::new_folder() {
  const fs::path dir = root_ / text("%016llx", static_cast<unsigned long long>(rng_()));
  fs::create_directories(dir);
  audit_.allow(dir);
  return dir;
}

// Done with @p dir: removed, so that no later process finds it (kept with keep).
void CacheTests::leave(const fs::path& dir) {
  std::error_code ec;
  if (!keep_) fs::remove_all(dir, ec);
}

// A new process's first call of program @p program on cache folder @p dir; then the places a
// graded run can write are listed again.
ChildRun CacheTests::first_call(const FirstCall& call, const fs::path& dir, int program) {
  const ChildRun c = call(dir, program);
  if (written_.empty()) written_ = WriteAudit::written(before_, audit_.list());
  return c;
}

// Records whether @p c gave the right result; returns it.
bool CacheTests::record_call(const std::string& name, const ChildRun& c) {
  if (!c.ok) {
    lesson_.check("exercise", name, false, c.why());
    return false;
  }
  lesson_.check("exercise", name, c.text("correct") == "1", c.text("wrong"));
  return c.text("correct") == "1";
}

// Damages the files of @p dir in place as @p d says; returns each damaged file with the bytes
// left in it (nothing when there was nothing to damage, with a note).
std::map<fs::path, std::string> CacheTests::damage(Damage d, const fs::path& dir) {
  std::map<fs::path, std::string> damaged;
  if (d == Damage::none) return damaged;
  if (d == Damage::stale) {  // a whole, well-formed entry for program 1, under program 0's name
    const fs::path to = largest_file(dir);
    if (to.empty() || other_entry_.empty()) {
      lesson_.note("the stale-entry test was skipped: no cache file to swap");
    } else if (fs::relative(to, dir) == other_name_) {
      lesson_.note(
          "the stale-entry test was skipped: the cache keeps both programs in a file of "
          "the same name, so there is no other entry's file to swap in");
    } else {
      plant(to, other_entry_);
      damaged[to] = other_entry_;
    }
    return damaged;
  }
  for (const auto& [path, bytes] : files_in(dir)) {
    std::string out = bytes;
    if (d == Damage::truncated) out = bytes.substr(0, bytes.size() / 2);
    for (int k = 1; d == Damage::flipped && k <= 7 && !out.empty(); ++k)
      out[out.size() * k / 8] ^= 0x10;
    plant(path, out);
    damaged[path] = out;
  }
  if (damaged.empty())
    lesson_.note("the test of " + describe(d) + " was skipped: the folder held no file");
  return damaged;
}

// The first call after the damage: right, and no damaged file left as it was planted (it was
// detected and replaced, or removed).
void CacheTests::judge(Damage d, const ChildRun& c,
                       const std::map<fs::path, std::string>& damaged) {
  const std::string name = check_name(d);
  const bool stale = d == Damage::stale;
  if (!c.ok) {
    lesson_.check("exercise", name, false,
                  c.why() + (stale ? "" : ": a damaged cache entry must be detected, not used"));
    return;
  }
  if (c.text("correct") != "1") {
    lesson_.check("exercise", name, false,
                  c.text("wrong") + (stale ? ": the entry was another program's, and was used: "
                                             "store the key in the entry and compare it"
                                           : ": a damaged cache entry was used"));
    return;
  }
  for (const auto& [path, bytes] : damaged) {
    std::error_code ec;
    if (!fs::exists(path, ec) || read_bytes(path) != bytes) continue;
    lesson_.check("exercise", name, false,
                  stale ? "the right result, but the other program's entry still sits under this "
                          "one's name: write the entry again when its key does not match"
                        : "the right result, but the damaged file " + path.filename().string() +
                              " is still there as the harness left it: detect the damage and "
                              "write the entry again");
    return;
  }
  lesson_.check("exercise", name, true, "");
}

}  // namespace lab
