// This program run again as a child (lab/child_process.hpp), tried on /bin/sh; and the audit of
// files written outside given folders (lab/write_audit.hpp), on folders of a test's own.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>

#include "lab/child_process.hpp"
#include "lab/writable_places.hpp"
#include "lab/write_audit.hpp"

namespace fs = std::filesystem;

namespace {

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
  int readings[2];
  REQUIRE(pipe(readings) == 0);
  std::fflush(nullptr);  // nothing buffered here may be written twice
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(readings[1], 3);
    _exit(lab::child_main(4, argv, [](const std::vector<std::string>& args) {
      lab::report("got", args.at(0) + "/" + args.at(1));
      lab::report("value", 2.5);
      throw std::runtime_error("bad\nthing");
    }));
  }
  close(readings[1]);
  std::string said;
  char buf[256];
  for (ssize_t got; (got = read(readings[0], buf, sizeof buf)) > 0;) said.append(buf, got);
  close(readings[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
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
