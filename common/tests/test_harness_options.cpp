// The harness's command line, without a GPU: usage errors, --list, --help, and the no-GPU path.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "lab/harness.hpp"
#include "lab/result_reader.hpp"

namespace {

int run_with(std::vector<std::string> args, bool* body_ran = nullptr) {
  lab::Lesson lesson("99-test", "harness test");
  lesson.declare("baseline", lab::Role::Baseline, "the given one");
  lesson.declare("exercise", lab::Role::Exercise, "yours");
  long long rows = 10;
  lesson.option("--rows", &rows, "rows");
  args.insert(args.begin(), "/some/dir/solution");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return lesson.run(static_cast<int>(argv.size()), argv.data(), [&](lab::Lesson& l) {
    if (body_ran) *body_ran = true;
    CHECK(rows == 20);
    l.check("baseline", "trivial", true, "");
    l.check("exercise", "trivial", true, "");
  });
}

// The result file at @p path, read by the checker's own reader (REQUIREs that it can be).
nlohmann::json result_in(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  const auto doc = lab::read_result(text.str(), error);
  REQUIRE_MESSAGE(doc, error);
  return *doc;
}

}  // namespace

TEST_CASE("usage errors exit 2 and never run the lesson") {
  bool ran = false;
  CHECK(run_with({"--bogus"}, &ran) == lab::kExitUsage);
  CHECK(run_with({"--mode", "lukewarm"}, &ran) == lab::kExitUsage);
  CHECK(run_with({"--seed", "not-a-number"}, &ran) == lab::kExitUsage);
  CHECK(run_with({"--variant", "nope"}, &ran) == lab::kExitUsage);
  CHECK(run_with({"--skip-variant", "nope"}, &ran) == lab::kExitUsage);  // a misspelt baseline
  CHECK(run_with({"--skip-variant", "baseline,nope"}, &ran) == lab::kExitUsage);  // in a list too
  CHECK_FALSE(ran);
}

TEST_CASE("--list and --help exit 0 without a GPU and without running the lesson") {
  bool ran = false;
  CHECK(run_with({"--list"}, &ran) == lab::kExitOk);
  CHECK(run_with({"--skip-variant", "baseline,exercise", "--list"}, &ran) == lab::kExitOk);
  CHECK(run_with({"--variant", "baseline,exercise", "--list"}, &ran) == lab::kExitOk);
  CHECK(run_with({"--help"}, &ran) == lab::kExitOk);
  CHECK_FALSE(ran);
}

TEST_CASE("a run writes the result file; without a GPU it says so and exits 77") {
  const std::string path = "harness_test_result.json";
  bool ran = false;
  const int code = run_with({"--rows", "20", "--seed", "5", "--nonce", "n1", "--json", path,
                             "--quick", "--mode", "graph"}, &ran);
  const nlohmann::json r = result_in(path);
  CHECK(r["nonce"] == "n1");
  CHECK(r["config"]["seed"] == 5);
  CHECK(r["build"] == "solution");  // from the program's name
  CHECK(r["config"]["mode"] == "graph");
  if (lab::gpu_available()) {
    CHECK(code == lab::kExitOk);
    CHECK(ran);
    CHECK(r["complete"] == true);
  } else {
    CHECK(code == lab::kExitNoGpu);
    CHECK_FALSE(ran);
    CHECK(r["complete"] == false);
    REQUIRE_FALSE(r["diagnostics"].empty());
    CHECK(r["diagnostics"][0].get<std::string>().find("GPU") != std::string::npos);
  }
  std::remove(path.c_str());
}

TEST_CASE("--result-fd: the result goes to the descriptor, closed with the record's before run returns") {
  // What runs after the lesson (code at exit, a static's destructor) must find nothing of the run
  // to change: the checker's files lie where the program cannot open them, and their
  // descriptors are gone.
  const std::string path = "harness_test_result_fd.json", record = "harness_test_record_fd.txt";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  const int record_fd = ::open(record.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(record_fd >= 0);
  // What exercise code could write through the descriptor while it runs: a forged result, then
  // padding, the offset left far into the file. The harness's result replaces all of it.
  const std::string forged = "{\"forged\": true}" + std::string(100000, ' ');
  REQUIRE(::write(fd, forged.data(), forged.size()) == static_cast<ssize_t>(forged.size()));
  const int code = run_with({"--rows", "20", "--nonce", "fd1", "--result-fd", std::to_string(fd),
                             "--record-fd", std::to_string(record_fd), "--quick"});
  CHECK((code == lab::kExitOk || code == lab::kExitNoGpu));
  errno = 0;
  CHECK(::fcntl(fd, F_GETFD) == -1);
  CHECK(errno == EBADF);
  CHECK(::fcntl(record_fd, F_GETFD) == -1);
  CHECK(result_in(path)["nonce"] == "fd1");
  std::remove(path.c_str());
  std::remove(record.c_str());
  CHECK(run_with({"--result-fd", "987"}) == lab::kExitUsage);  // not an open file
}

TEST_CASE("--profile --json writes the result file: the checks of the profiled calls, no times") {
  // The checker runs the program under ncu with --json and judges the call ncu read by it.
  const std::string path = "harness_test_profile.json";
  const int code = run_with({"--rows", "20", "--profile", "--nonce", "p1", "--json", path});
  const nlohmann::json doc = result_in(path);
  CHECK(doc["nonce"] == "p1");
  for (const auto& v : doc["variants"]) CHECK_FALSE(v.contains("time_ms"));
  CHECK_FALSE(std::ifstream(path + ".tmp").good());
  if (lab::gpu_available()) {
    CHECK(code == lab::kExitOk);
    CHECK(doc["variants"][1]["checks"].size() == 1);
  } else {
    CHECK(code == lab::kExitNoGpu);
  }
  std::remove(path.c_str());
}

TEST_CASE("--no-ceilings: the checker's pristine runs measure no roofs, and notes read them as 0") {
  // The ceilings take most of a second of each process; a run that only times baselines or
  // checks a record needs none (the rules use the student's run's).
  const std::string path = "harness_test_no_ceilings.json";
  lab::Lesson lesson("99-test", "harness test");
  lesson.declare("exercise", lab::Role::Exercise, "yours");
  std::vector<std::string> args = {"/some/dir/solution", "--no-ceilings", "--json", path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  double copy = -1;
  const int code = lesson.run(static_cast<int>(argv.size()), argv.data(), [&](lab::Lesson& l) {
    copy = l.ceilings().copy_gbs;
    l.check("exercise", "trivial", true, "");
  });
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json doc = nlohmann::json::parse(in);
  CHECK_FALSE(doc.contains("ceilings"));
  if (lab::gpu_available()) {
    CHECK(code == lab::kExitOk);
    CHECK(copy == 0);  // not measured on demand either
  } else {
    CHECK(code == lab::kExitNoGpu);
  }
  std::remove(path.c_str());
}

TEST_CASE("a size option's 0 means its default, which --quick changes; a given size stays") {
  auto size_after = [](std::vector<std::string> args) {
    lab::Lesson lesson("99-test", "harness test");
    lesson.declare("exercise", lab::Role::Exercise, "yours");
    long long n = 0;
    lesson.option("--n", &n, "floats", 4096, 64);
    args.insert(args.begin(), "/some/dir/solution");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    lesson.run(static_cast<int>(argv.size()), argv.data(), [&](lab::Lesson&) { CHECK(n > 0); });
    return n;  // resolved right after parsing, with or without a GPU
  };
  CHECK(size_after({}) == 4096);
  CHECK(size_after({"--quick"}) == 64);
  CHECK(size_after({"--n", "100", "--quick"}) == 100);
  CHECK(size_after({"--n", "0"}) == 4096);

  lab::Lesson lesson("99-test", "harness test");
  long long n = 0, m = 0;
  lesson.option("--n", &n, "floats", 1LL << 28, 1LL << 22);
  lesson.option("--m", &m, "rows", 4096, 1000);
  std::string program = "/some/dir/solution", flag = "--help";
  std::vector<char*> argv = {program.data(), flag.data()};
  std::ostringstream out;
  std::streambuf* was = std::cout.rdbuf(out.rdbuf());
  lesson.run(2, argv.data(), [](lab::Lesson&) {});
  std::cout.rdbuf(was);
  CHECK(out.str().find("floats (0: 2^28, or 2^22 with --quick)") != std::string::npos);
  CHECK(out.str().find("rows (0: 4096, or 1000 with --quick)") != std::string::npos);
}

TEST_CASE("an option's accepted range: outside it, a usage error naming the option, and no lesson") {
  auto run_n = [](const std::string& n, std::string* error, const std::string& flag = "--n") {
    lab::Lesson lesson("99-test", "harness test");
    lesson.declare("exercise", lab::Role::Exercise, "yours");
    long long size = 0, steps = 0;
    lesson.option("--n", &size, "floats", 1LL << 26, 1LL << 22, {1, 1LL << 31});
    lesson.option("--steps", &steps, "kernels", {0, 100000});
    std::vector<std::string> args = {"/some/dir/solution", flag, n, "--list"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    std::ostringstream err, out;
    std::streambuf* was_err = std::cerr.rdbuf(err.rdbuf());
    std::streambuf* was_out = std::cout.rdbuf(out.rdbuf());
    const int code = lesson.run(static_cast<int>(argv.size()), argv.data(), [](lab::Lesson&) {});
    std::cerr.rdbuf(was_err);
    std::cout.rdbuf(was_out);
    *error = err.str();
    return code;
  };
  std::string error;
  CHECK(run_n(std::to_string(1LL << 31), &error) == lab::kExitOk);  // the largest is accepted
  CHECK(error.empty());
  CHECK(run_n(std::to_string((1LL << 31) + 1), &error) == lab::kExitUsage);
  CHECK(error == "error: --n: from 1 to 2^31\n");
  CHECK(run_n("-5", &error) == lab::kExitOk);  // a size below 1 takes the default, as 0 does
  CHECK(run_n("100000", &error, "--steps") == lab::kExitOk);
  CHECK(run_n("-1", &error, "--steps") == lab::kExitUsage);
  CHECK(error == "error: --steps: from 0 to 100000\n");
  CHECK(run_n("100001", &error, "--steps") == lab::kExitUsage);
}

namespace {

// Whether a forked child, as a user that is not root (root reads any file), can open its own
// memory for writing, with or without a Lesson made first.
bool child_opens_own_memory(bool make_lesson) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    // As a program is after exec (a change of user, or an earlier Lesson here, cleared it).
    ::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    if (make_lesson) lab::Lesson lesson("99-test", "harness test");
    std::FILE* f = std::fopen("/proc/self/mem", "r+");
    ::_exit(f != nullptr ? 1 : 0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) != 3);
  return WEXITSTATUS(status) == 1;
}

}  // namespace

TEST_CASE("a Lesson closes its process's memory before any exercise code runs") {
  // Without it, a process opens /proc/self/mem for writing (page protections do not apply there:
  // an exercise with file calls could rewrite the harness's code); with it, it cannot.
  CHECK(child_opens_own_memory(false));
  CHECK_FALSE(child_opens_own_memory(true));
  lab::Lesson lesson("99-test", "harness test");
  CHECK(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0);
}
