// This program run again as a child (lab/child_process.hpp), tried on /bin/sh and forked, with its
// roles and the record of a role over processes; and the audit of
// files written outside given folders (lab/write_audit.hpp), on folders of a test's own.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lab/cache_tests.hpp"
#include "lab/child_process.hpp"
#include "lab/harness.hpp"
#include "lab/writable_places.hpp"
#include "lab/write_audit.hpp"

namespace fs = std::filesystem;

namespace {

// Runs @p body in a forked child whose descriptor 3 is a pipe (where lab::report writes); returns
// the child's exit code (body's return value) and what it reported.
std::pair<int, std::string> in_child(const std::function<int()>& body) {
  int readings[2];
  REQUIRE(pipe(readings) == 0);
  std::fflush(nullptr);  // nothing buffered here may be written twice
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(readings[1], 3);
    _exit(body());
  }
  close(readings[1]);
  std::string said;
  char buf[256];
  for (ssize_t got; (got = read(readings[0], buf, sizeof buf)) > 0;) said.append(buf, got);
  close(readings[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), said};
}

lab::ChildRun shell(const std::string& script, const lab::Environment& env = {},
                    double timeout_s = 30.0) {
  return lab::run_child("/bin/sh", {"-c", script}, env, timeout_s);
}

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct TempFolder {
  fs::path path;
  TempFolder() {
    path = fs::temp_directory_path() / ("lab-audit-test-" + std::to_string(std::random_device{}()));
    fs::create_directories(path);
  }
  ~TempFolder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
}

}  // namespace

TEST_CASE("a child's readings come from its readings pipe, not from its output") {
  const lab::ChildRun c = shell(
      "echo '@ first_call_ms 0.001'; printf '@ '; echo '@ first_call_ms 12.5' >&3; "
      "echo '@ mode lazy loading' >&3; echo hello");
  CHECK(c.ok);
  CHECK(c.failure.empty());
  CHECK(c.number("first_call_ms") == doctest::Approx(12.5));
  CHECK(c.text("mode") == "lazy loading");
  CHECK(c.text("missing").empty());
  CHECK_THROWS_AS(c.number("missing"), std::runtime_error);
  CHECK(c.output.find("hello") != std::string::npos);
}

TEST_CASE("a child's exit code, signal and reported error are its failure") {
  const lab::ChildRun code = shell("echo oops; exit 5");
  CHECK_FALSE(code.ok);
  CHECK(code.failure == "the process exited with code 5");
  CHECK(code.why() == "the process exited with code 5; its output ends with: oops");

  const lab::ChildRun killed = shell("kill -9 $$");
  CHECK_FALSE(killed.ok);
  CHECK(killed.failure.find("killed by signal 9") != std::string::npos);

  const lab::ChildRun error = shell("echo '@ error the GPU is gone' >&3");
  CHECK_FALSE(error.ok);
  CHECK(error.failure == "the GPU is gone");
}

TEST_CASE("a child that runs past its time is killed") {
  const lab::ChildRun c = shell("sleep 30", {}, 0.5);
  CHECK_FALSE(c.ok);
  CHECK(c.failure == "the process did not finish within 0 s (killed)");
}

TEST_CASE("a child's environment: variables set, the tracer's left out") {
  setenv("LAB_TRACE_FILE", "/nonexistent/trace", 1);
  setenv("CUDA_INJECTION64_PATH", "/nonexistent/tracer.so", 1);
  setenv("LAB_TEST_REPLACED", "old", 1);
  const lab::ChildRun c = shell(
      "echo \"@ trace ${LAB_TRACE_FILE:-none}\" >&3; echo \"@ tracer "
      "${CUDA_INJECTION64_PATH:-none}\" >&3;"
      "echo \"@ set $LAB_TEST_REPLACED\" >&3",
      {{"LAB_TEST_REPLACED", "new"}});
  unsetenv("LAB_TRACE_FILE");
  unsetenv("CUDA_INJECTION64_PATH");
  unsetenv("LAB_TEST_REPLACED");
  CHECK(c.ok);
  CHECK(c.text("trace") == "none");
  CHECK(c.text("tracer") == "none");
  CHECK(c.text("set") == "new");
}

TEST_CASE("a child keeps only the tail of a long output") {
  const lab::ChildRun c = shell("yes 0123456789 | head -c 1000000; echo end");
  CHECK(c.ok);
  CHECK(c.output.size() == 64 * 1024);
  CHECK(c.output.substr(c.output.size() - 4) == "end\n");
}

TEST_CASE("a program that does not exist is an error, not a child that failed") {
  CHECK_THROWS_AS(lab::run_child("/nonexistent/program", {}), std::runtime_error);
}

TEST_CASE("child_main runs the role on its arguments and reports its error") {
  char* argv[] = {const_cast<char*>("program"), const_cast<char*>("--lab-child"),
                  const_cast<char*>("role"), const_cast<char*>("arg"), nullptr};
  CHECK(lab::is_child(4, argv));
  CHECK_FALSE(lab::is_child(1, argv));
  const auto [code, said] = in_child([&] {
    return lab::child_main(4, argv, [](const std::vector<std::string>& args) {
      lab::report("got", args.at(0) + "/" + args.at(1));
      lab::report("value", 2.5);
      throw std::runtime_error("bad\nthing");
    });
  });
  CHECK(code == 3);
  CHECK(said == "@ got role/arg\n@ value 2.500000\n@ error bad thing\n");
}

TEST_CASE("the write audit lists files new or changed outside the allowed folders") {
  TempFolder t;
  fs::create_directories(t.path / "given" / "deep");
  fs::create_directories(t.path / "other");
  write_file(t.path / "kept", "unchanged");
  write_file(t.path / "changed", "one");
  lab::WriteAudit audit({t.path});
  audit.allow(t.path / "given");
  const lab::FileStamps before = audit.list();
  CHECK(before.count(t.path / "kept") == 1);
  CHECK(lab::WriteAudit::written(before, audit.list()).empty());

  write_file(t.path / "given" / "entry", "cache");
  write_file(t.path / "given" / "deep" / "entry", "cache");
  CHECK(lab::WriteAudit::written(before, audit.list()).empty());

  write_file(t.path / "other" / "side-cache", "cache");
  write_file(t.path / "changed", "three");
  CHECK(lab::WriteAudit::written(before, audit.list()) ==
        (t.path / "changed").string() + ", " + (t.path / "other" / "side-cache").string());
}

TEST_CASE("the write audit leaves out the files this process held when it began") {
  TempFolder t;
  std::FILE* held = std::fopen((t.path / "output").c_str(), "w");
  REQUIRE(held);
  lab::WriteAudit audit({t.path});
  const lab::FileStamps before = audit.list();
  std::fputs("the harness's own output\n", held);
  std::fflush(held);
  write_file(t.path / "new", "x");
  CHECK(lab::WriteAudit::written(before, audit.list()) == (t.path / "new").string());
  std::fclose(held);
}

TEST_CASE("a listing that passes its limit is a failure, not a partial list") {
  TempFolder t;
  for (int k = 0; k < 5; ++k) write_file(t.path / ("f" + std::to_string(k)), "x");
  lab::WriteAudit audit({t.path}, 3);
  const lab::FileStamps listed = audit.list();
  CHECK(lab::WriteAudit::written(listed, listed) ==
        (t.path / "(more than 3 entries: not all were read)").string());
}

TEST_CASE("the audit lists every folder anyone may write: the same list the checker makes private") {
  // Machines have more than /tmp and /dev/shm (/var/tmp, /run/lock, ...): a cache kept in one the
  // audit did not list escaped it. One scan serves both (lab/writable_places.hpp).
  const std::vector<std::string>& anyone = lab::world_writable_folders();
  CHECK(std::is_sorted(anyone.begin(), anyone.end()));
  CHECK(std::find(anyone.begin(), anyone.end(), "/tmp") != anyone.end());
  std::error_code ec;
  if (fs::is_directory("/var/tmp", ec) && (fs::status("/var/tmp").permissions() & fs::perms::others_write) != fs::perms::none)
    CHECK(std::find(anyone.begin(), anyone.end(), "/var/tmp") != anyone.end());
  for (const std::string& f : anyone) {
    INFO(f);
    CHECK((fs::status(f).permissions() & fs::perms::others_write) != fs::perms::none);
    CHECK_FALSE(fs::is_symlink(f));
  }
  const std::vector<fs::path> places = lab::WriteAudit::writable_places();
  CHECK(places.front() == fs::current_path());
  CHECK(places.size() == anyone.size() + 1);
  for (const std::string& f : anyone) CHECK(std::find(places.begin(), places.end(), fs::path(f)) != places.end());
}

TEST_CASE("a child that reports more than a pipe holds is read as it writes, not waited on") {
  // 200 KB of readings (a long error message, say) and 200 KB of output: before, the readings
  // were read only once the child ended, and a child blocked on a full pipe never ended.
  const lab::ChildRun c = shell(
      "head -c 200000 /dev/zero | tr '\\0' x; echo; echo '@ first_call_ms 3.5' >&3; "
      "{ printf '@ error '; head -c 200000 /dev/zero | tr '\\0' e; echo; } >&3", {}, 20.0);
  CHECK(c.failure.find("did not finish") == std::string::npos);
  CHECK(c.number("first_call_ms") == doctest::Approx(3.5));
  CHECK(c.text("error").size() >= 200000);
  CHECK_FALSE(c.ok);  // an error was reported
}

namespace {

// Runs child_main(roles) in a forked child on @p args (after the child flag); returns its exit
// code and its readings.
std::pair<int, std::string> play(const std::vector<std::string>& args,
                                 const std::vector<lab::ChildRole>& roles) {
  std::vector<std::string> all = {"program", "--lab-child"};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  return in_child([&] { return lab::child_main(static_cast<int>(all.size()), argv.data(), roles); });
}

lab::ChildRun ran(double a, double b) {
  lab::ChildRun c;
  c.ok = true;
  c.readings = {{"a_ms", std::to_string(a)}, {"b_us", std::to_string(b)}, {"mode", "lazy"}};
  return c;
}

}  // namespace

TEST_CASE("child_main with roles runs the one named, on the arguments after its name") {
  const std::vector<lab::ChildRole> roles = {
      {"none", 0, [](const lab::ChildArgs& a) { lab::report("none", std::to_string(a.size())); }},
      {"two", 2, [](const lab::ChildArgs& a) { lab::report("two", a.at(0) + "/" + a.at(1)); }}};
  CHECK(play({"two", "x", "y"}, roles) == std::make_pair(0, std::string("@ two x/y\n")));
  CHECK(play({"none"}, roles) == std::make_pair(0, std::string("@ none 0\n")));
  const std::string unknown = "@ error unknown child role (this flag is the harness's own)\n";
  CHECK(play({"two", "x"}, roles) == std::make_pair(3, unknown));  // too few arguments
  CHECK(play({"none", "x"}, roles) == std::make_pair(3, unknown));
  CHECK(play({"three"}, roles) == std::make_pair(3, unknown));
  CHECK(play({}, roles) == std::make_pair(3, unknown));
}

TEST_CASE("a first call is reported under the names the cache tests read") {
  const std::vector<lab::ChildRole> roles = {
      {"right", 0, [](const lab::ChildArgs&) { lab::report_first_call(12.5, ""); }},
      {"wrong", 0, [](const lab::ChildArgs&) { lab::report_first_call(3, "2 of 8 differ"); }},
      {"yardstick", 0, [](const lab::ChildArgs&) { lab::report_first_call(30); }}};
  CHECK(play({"right"}, roles) ==
        std::make_pair(0, std::string("@ first_call_ms 12.500000\n@ correct 1\n")));
  CHECK(play({"wrong"}, roles) ==
        std::make_pair(0, std::string("@ first_call_ms 3.000000\n@ correct 0\n"
                                      "@ wrong 2 of 8 differ\n")));
  CHECK(play({"yardstick"}, roles) ==
        std::make_pair(0, std::string("@ first_call_ms 30.000000\n")));
}

TEST_CASE("a spread is recorded as its median, with the smallest and largest as its range") {
  lab::Lesson lesson("99-test", "spread");
  CHECK(lab::record_spread(lesson, "cudaMalloc", "malloc_us", {30, 10, 20.5}, "us") ==
        "  cudaMalloc" + std::string(42, ' ') + "20.5 us  (10.0 .. 30.0)");
  const lab::Metric& m = lesson.result().metrics.at("malloc_us");
  CHECK(m.value == 20.5);
  CHECK(m.low == 10);
  CHECK(m.high == 30);
  CHECK(m.unit == " us");
  CHECK(lab::record_spread(lesson, "x", "small", {1.234, 5}, "ms") ==
        "  x" + std::string(51, ' ') + "3.12 ms  (1.23 .. 5.00)");
  CHECK(lab::record_spread(lesson, std::string(60, 'l'), "big", {250}, "ms") ==
        "  " + std::string(60, 'l') + " 250 ms  (250 .. 250)");
}

TEST_CASE("a role measured over processes: every reading's median and range, or nothing") {
  const std::vector<lab::ProcessReading> readings = {
      {"first", "a_ms", "ms"},  // recorded under its own name
      {"second", "b_metric", "b_us", "us"}};
  lab::Lesson lesson("99-test", "processes");
  int runs = 0;
  const std::vector<double> a = {3, 1, 2, 9, 5};
  const lab::ChildRun last = lab::measure_in_processes(
      lesson, 5,
      [&] {
        ++runs;
        return ran(a[runs - 1], 100.0 * runs);
      },
      readings, "measuring");
  CHECK(runs == 5);
  CHECK(last.ok);
  CHECK(last.text("mode") == "lazy");
  CHECK(last.number("b_us") == 500);
  const auto& metrics = lesson.result().metrics;
  CHECK(metrics.at("a_ms").value == 3);
  CHECK(metrics.at("a_ms").low == 1);
  CHECK(metrics.at("a_ms").high == 9);
  CHECK(metrics.at("b_metric").value == 300);
  CHECK(metrics.count("b_us") == 0);

  // A process that fails ends the measurement, with nothing recorded.
  lab::Lesson failing("99-test", "processes");
  runs = 0;
  const lab::ChildRun before = lab::measure_in_processes(
      failing, 5,
      [&] {
        lab::ChildRun c = ran(1, 2);
        if (++runs == 3) c = lab::ChildRun{};
        return c;
      },
      readings, "measuring");
  CHECK(runs == 3);
  CHECK(before.ok);  // the last one that did not fail
  CHECK(failing.result().metrics.empty());

  // A process that does not report a reading is the harness's error.
  lab::Lesson silent("99-test", "processes");
  CHECK_THROWS_AS(lab::measure_in_processes(
                      silent, 2,
                      [] {
                        lab::ChildRun c;
                        c.ok = true;
                        return c;
                      },
                      readings, "m"),
                  std::runtime_error);
}
