// Hostile files for every reader of the checker: a bounded, deterministic mutation fuzzer.
//
// Each reader (roofline results, grade records, check.toml, overrides, a lesson's expected.toml,
// lab-doctor's report, and the filters of what a student's build and program print: compiler
// output and compute-sanitizer logs) reads its seeds as they are (among them the inputs that
// once crashed it), then a few hundred mutations of them: truncated, bits flipped, nested thousands deep, numbers like
// 1e400 / nan / inf / 1e-9, values of the wrong type, huge strings. Each input is read in a
// forked child (the reader function itself, not the command line) with a time and a memory
// limit. The test fails if the child crashes, hangs, lets an exception other than the checker's
// own ConfigError out, or rejects a file with a message that does not name the file; and, for
// the readers that take several files, if a bad file hides the good one beside it.
//
// Fixed seeds: a failure is reproducible, and is reported with its input's first bytes (the
// whole input is kept under $TMPDIR/lab-fuzz-failures-*). LAB_FUZZ_ITERATIONS=N reads N inputs
// per reader instead of the default 300.
#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <typeinfo>

#include "doctor.hpp"
#include "grade.hpp"
#include "helpers.hpp"
#include "judge.hpp"
#include "report.hpp"
#include "roofline.hpp"
#include "selftest.hpp"

using namespace lab;
using namespace lab::test;

namespace {

constexpr double kTimeLimitS = 3;                  // per input; a healthy read takes milliseconds
constexpr rlim_t kMemoryLimit = rlim_t(2) << 30;   // address space of the child, bytes

int iterations() {
  const char* n = std::getenv("LAB_FUZZ_ITERATIONS");
  return n && std::atoi(n) > 0 ? std::atoi(n) : 300;
}

// ------------------------------------------------------------------ running the inputs

// One input's verdict from `read`: "" when the reader behaved, else what was wrong.
std::string guarded(const std::function<std::string(int)>& read, int i) {
  try {
    return read(i);
  } catch (const ConfigError& e) {
    return std::string("ConfigError escaped where it should not: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("an exception that is not the checker's own escaped (") + typeid(e).name() +
           "): " + e.what();
  } catch (...) {
    return "an unknown exception escaped";
  }
}

void write_all(int fd, const void* data, std::size_t size) {
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, static_cast<const char*>(data) + done, size - done);
    if (n <= 0) ::_exit(3);
    done += static_cast<std::size_t>(n);
  }
}

// Runs read(i) for every i in [0, n) in forked children (a crash or a hang there must not take
// the test with it), with a time limit per input and a memory limit. A child reads inputs in
// order and reports each through a pipe (a length, then the problem); when one crashes or
// hangs, that input is blamed and a new child takes the rest. Few forks keep it fast on a
// loaded machine. Returns the problems by input.
std::map<int, std::string> run_isolated(int n, const std::function<std::string(int)>& read,
                                        double limit_s = kTimeLimitS) {
  std::map<int, std::string> problems;
  int next = 0;
  while (next < n) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      // doctest's crash handlers would report the child's crash as the test's own: restore the
      // defaults, so that the parent sees the signal.
      for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, SIG_DFL);
      ::close(fds[0]);
      const rlimit mem{kMemoryLimit, kMemoryLimit};
      ::setrlimit(RLIMIT_AS, &mem);
      for (int i = next; i < n; ++i) {
        const std::string problem = guarded(read, i);
        const std::uint32_t size = static_cast<std::uint32_t>(problem.size());
        write_all(fds[1], &size, sizeof size);
        write_all(fds[1], problem.data(), problem.size());
      }
      ::_exit(0);  // no destructors, no atexit: the parent's temporary folders stay
    }
    ::close(fds[1]);
    std::string buffer;
    bool hung = false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    for (;;) {
      // Every complete report moves on to the next input, with a fresh time limit.
      while (buffer.size() >= 4) {
        std::uint32_t size;
        std::memcpy(&size, buffer.data(), 4);
        if (buffer.size() < 4 + size) break;
        if (size) problems[next] = buffer.substr(4, size);
        buffer.erase(0, 4 + size);
        ++next;
        deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) {
        hung = true;
        break;
      }
      pollfd p{fds[0], POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 200))) <= 0) continue;
      char chunk[65536];
      const ssize_t got = ::read(fds[0], chunk, sizeof chunk);
      if (got <= 0) break;  // end of file: the child is gone
      buffer.append(chunk, static_cast<std::size_t>(got));
    }
    ::close(fds[0]);
    if (hung) ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (next >= n) break;
    // The child stopped at input `next`: that one is to blame.
    if (hung)
      problems[next] = "hang: still reading after " + std::to_string(limit_s) + " s";
    else if (WIFSIGNALED(status))
      problems[next] = "crash: killed by signal " + std::to_string(WTERMSIG(status)) + " (" +
                       ::strsignal(WTERMSIG(status)) + ")";
    else
      problems[next] = "the reading process ended abnormally";
    ++next;
  }
  return problems;
}

// ------------------------------------------------------------------ mutations

const char* const kJsonNumbers[] = {
    "1e400", "-1e400", "1e-400", "4.9e-324", "1.7976931348623157e308", "2.2250738585072014e-308",
    "99999999999999999999999999999", "-0", "0", "-1", "1e-9", "1e300", "-1e300", "1e-320",
    "nan", "NaN", "inf", "-inf", "Infinity"};
const char* const kJsonValues[] = {
    "\"text\"", "\"\"", "true", "false", "null", "[]", "{}", "[1,2,3]", "{\"a\":1}",
    "\"\\u0000\\u001b[31m\\u0007\"", "\"\\ud800\"", "[[[[[[[[[[[[]]]]]]]]]]]]", "\"\xff\xfe\"",
    "{\"schema\":\"cuda-perf-lab/result/1\"}", "[{\"name\":1}]", "-5", "1e400", "1e-320"};
const char* const kTomlValues[] = {
    "\"text\"", "\"\"", "true", "[1, 2]", "[]", "{ a = 1 }", "1979-05-27", "07:32:00", "nan",
    "+nan", "-nan", "inf", "+inf", "-inf", "1e-9", "1e400", "-1e400", "0", "-5", "1e300",
    "1e-320", "9223372036854775807", "99999999999999999999", "0x7fffffff", "\"\\u0000\\u001b\"",
    "'''multi\nline'''", "[[[[[[[1]]]]]]]", "0.0000001", "86401", "1e308"};
// Lines an instructor (or a fuzzer) might add to a TOML file.
const char* const kTomlLines[] = {
    "[\"90-fake\"]\nmin = 0.5\n", "[\"90-fake\"]\npoints = 3\n", "[\"90-fake\".speedup]\ntimeout_s = 5\n",
    "[\"90-fake\".speedup]\nmin = nan\n", "[\"90-fake\".speedup]\npoints = inf\n",
    "[\"90-fake\"]\ntimeout_s = 1e-9\n", "timeout_s = 1e-9\n", "[[rule]]\nid = \"x\"\n",
    "[[rule]]\nid = \"y\"\nkind = \"speedup\"\nvariant = \"a\"\nover = \"b\"\nmin = -inf\n",
    "[\"90-fake\".bandwidth]\nmax = 1e308\nmin = -1e308\n", "lesson = \"other\"\n",
    "[\"90-fake\".correct]\nhint = \"\\u001b[2J\"\n", "a.b.c.d = 1\n", "[x]\n[x]\n",
    "[\"90-fake\"]\nspeedup = 3\n", "[\"99-none\"]\ntimeout_s = 5\n"};

struct Mutator {
  std::mt19937_64 rng;
  bool json_text;  // JSON or TOML: which hostile values make sense

  std::size_t pick(std::size_t n) { return n ? static_cast<std::size_t>(rng() % n) : 0; }
  template <std::size_t N>
  const char* any(const char* const (&list)[N]) { return list[pick(N)]; }

  // Starts of number tokens and of values (after ':' or '='), outside nothing in particular:
  // a mutation need not keep the file valid.
  std::vector<std::size_t> numbers(const std::string& s) {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (std::isdigit(static_cast<unsigned char>(s[i])) &&
          (i == 0 || std::string(" :,[=\n").find(s[i - 1]) != std::string::npos))
        at.push_back(i);
    return at;
  }
  static std::size_t token_end(const std::string& s, std::size_t i) {
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) ||
                            std::string(".+-").find(s[i]) != std::string::npos))
      ++i;
    return i;
  }
  static std::size_t value_end(const std::string& s, std::size_t i) {
    while (i < s.size() && std::string(",}]\n").find(s[i]) == std::string::npos) ++i;
    return i;
  }

  std::string deep(std::size_t n, bool closed) {
    std::string open(n, pick(2) ? '[' : '{'), close;
    if (closed) close.assign(n, open[0] == '[' ? ']' : '}');
    return open + close;
  }

  // A valid JSON document with one node replaced, removed or multiplied.
  std::string structural(const std::string& text, std::string& what) {
    std::string error;
    auto limited = parse_json_limited(text, error);
    if (!limited) return text;  // broken or nested too deep to walk: leave it as it is
    json doc = std::move(*limited);
    std::vector<json*> nodes;
    std::function<void(json&)> collect = [&](json& j) {
      nodes.push_back(&j);
      if (j.is_structured())
        for (auto& child : j) collect(child);
    };
    collect(doc);
    json& target = *nodes[pick(nodes.size())];
    const std::string marker = "@@hostile@@";
    switch (pick(4)) {
      case 0:
        what += "+replace-node";
        target = marker;
        break;
      case 1:
        if (target.is_object() && !target.empty()) {
          what += "+erase-key";
          auto it = target.begin();
          std::advance(it, pick(target.size()));
          target.erase(it);
          break;
        }
        [[fallthrough]];
      case 2: {
        what += "+wrong-type";
        const char* const kinds[] = {"\"a string\"", "{\"x\":[]}", "false", "null", "[1]", "-3.5"};
        target = json::parse(kinds[pick(std::size(kinds))]);
        break;
      }
      default:
        what += "+many";
        target = json::array();
        for (int i = 0; i < 2000; ++i) target.push_back(i % 3 ? json(1e-300 * i) : json("x"));
    }
    std::string out = doc.dump();
    const std::string quoted = "\"" + marker + "\"";
    if (auto at = out.find(quoted); at != std::string::npos) {
      const std::string raw = pick(3) == 0 ? deep(5000 + pick(130000), pick(2)) :
                              pick(2)      ? any(kJsonNumbers)
                                           : any(kJsonValues);
      out.replace(at, quoted.size(), raw);
    }
    return out;
  }

  std::string mutate_once(std::string s, std::string& what) {
    const std::size_t size = s.size();
    switch (pick(10)) {
      case 0:
        what += "+truncate";
        return s.substr(0, pick(size + 1));
      case 1: {
        what += "+flip";
        for (std::size_t k = 1 + pick(4); k-- > 0 && size;) s[pick(size)] ^= char(1u << pick(8));
        return s;
      }
      case 2: {
        what += "+insert";
        const std::string chars = json_text ? "[]{}:,\"\\\n-." : "[]{}=,\"'\\\n#.";
        std::string bytes(1 + pick(3), ' ');
        for (char& c : bytes) c = pick(4) ? chars[pick(chars.size())] : char(pick(256));
        return s.insert(pick(size + 1), bytes);
      }
      case 3: {
        what += "+delete";
        const std::size_t at = pick(size + 1);
        return s.erase(at, pick(size - at + 1));
      }
      case 4: {
        what += "+duplicate";
        const std::size_t at = pick(size + 1), len = pick(size - at + 1);
        const std::string chunk = s.substr(at, len);
        return s.insert(pick(size + 1), chunk);
      }
      case 5: {
        what += "+deep";
        if (json_text) {
          const auto values = numbers(s);
          const std::string nest = deep(100 + pick(130000), pick(3) != 0);
          if (values.empty()) return nest + s;
          const std::size_t at = values[pick(values.size())];
          return s.replace(at, token_end(s, at) - at, nest);
        }
        // TOML: deep inline arrays, or a key or header of thousands of dotted parts.
        std::string line;
        switch (pick(3)) {
          case 0: line = "deep = " + deep(100 + pick(5000), true) + "\n"; break;
          case 1:
            for (std::size_t k = 100 + pick(50000); k-- > 0;) line += k ? "a." : "a = 1\n";
            break;
          default:
            line = "[";
            for (std::size_t k = 100 + pick(50000); k-- > 0;) line += k ? "t." : "t]\n";
        }
        return pick(2) ? line + s : s + "\n" + line;
      }
      case 6: {
        what += "+number";
        const auto values = numbers(s);
        if (values.empty()) return s;
        const std::size_t at = values[pick(values.size())];
        return s.replace(at, token_end(s, at) - at, json_text ? any(kJsonNumbers) : any(kTomlValues));
      }
      case 7: {
        what += "+value";
        std::vector<std::size_t> at;
        for (std::size_t i = 0; i < size; ++i)
          if (s[i] == (json_text ? ':' : '=')) at.push_back(i + 1);
        if (at.empty()) return s;
        const std::size_t from = at[pick(at.size())];
        const std::string value = std::string(" ") + (json_text ? any(kJsonValues) : any(kTomlValues));
        return s.replace(from, value_end(s, from) - from, value);
      }
      case 8:
        if (json_text) return structural(s, what);
        what += "+lines";
        return s + "\n" + any(kTomlLines);
      default: {
        what += "+huge-string";
        const std::string big(100000 + pick(200000), pick(2) ? 'x' : '.');
        if (json_text) {
          const auto values = numbers(s);
          if (values.empty()) return s;
          const std::size_t at = values[pick(values.size())];
          return s.replace(at, token_end(s, at) - at, "\"" + big + "\"");
        }
        return s + "\nhint = \"" + big + "\"\n";
      }
    }
  }

  std::string mutate(const std::string& seed, std::string& what) {
    std::string s = seed;
    for (std::size_t n = 1 + pick(3); n-- > 0;) s = mutate_once(std::move(s), what);
    return s;
  }
};

// Besides the random ones: every number of a JSON seed replaced by each of these, and every
// value of a TOML seed by each of those. Random mutations hit a given field rarely; the
// ceilings and the thresholds are where the worst bugs were.
const char* const kSystematicJson[] = {"1e400", "1e-320", "4.9e-324", "0", "-1", "1e300", "-0"};
const char* const kSystematicToml[] = {"nan", "inf", "-inf", "1e-9", "0", "-5", "1e300",
                                       "\"text\"", "true", "[]"};

std::vector<std::pair<std::string, std::string>> systematic(const std::string& seed, bool json_text) {
  std::vector<std::pair<std::string, std::string>> out;  // (what, input)
  if (json_text) {
    std::string error;
    const auto limited = parse_json_limited(seed, error);
    if (!limited) return out;  // a seed that is itself a hostile input
    const json& doc = *limited;
    const json flat = doc.flatten();
    for (const auto& [path, value] : flat.items()) {
      if (!value.is_number()) continue;
      for (const char* raw : kSystematicJson) {
        json copy = doc;
        copy[json::json_pointer(path)] = "@@hostile@@";
        std::string text = copy.dump();
        text.replace(text.find("\"@@hostile@@\""), 13, raw);
        out.emplace_back("+set " + path + "=" + raw, text);
      }
    }
    return out;
  }
  for (std::size_t at = seed.find('='); at != std::string::npos; at = seed.find('=', at + 1)) {
    const std::size_t end = seed.find_first_of("#\n", at);
    for (const char* raw : kSystematicToml) {
      std::string text = seed;
      text.replace(at + 1, (end == std::string::npos ? seed.size() : end) - at - 1, std::string(" ") + raw + " ");
      out.emplace_back("+line " + std::to_string(std::count(seed.begin(), seed.begin() + at, '\n') + 1) +
                           " = " + raw, text);
    }
  }
  return out;
}

// ------------------------------------------------------------------ the driver

struct Failures {
  std::vector<std::string> lines;
  std::unique_ptr<TempDir> kept;
  void add(const std::string& reader, int i, const std::string& what, const std::string& input,
           const std::string& problem) {
    if (!kept) {
      kept = std::make_unique<TempDir>("lab-fuzz-failures");
      kept->keep();
    }
    const fs::path copy = kept->path() / (reader + "-" + std::to_string(i));
    write_text(copy, input);
    if (lines.size() < 12)
      lines.push_back(reader + " input " + std::to_string(i) + " (" + what.substr(1) + "): " +
                      problem.substr(0, 400) + "\n    input: " + printable(input.substr(0, 160)) +
                      (input.size() > 160 ? "..." : "") + "\n    whole input: " + copy.string());
  }
  std::string report() const {
    std::string s;
    for (const auto& l : lines) s += l + "\n";
    return s;
  }
};

// Feeds `iterations()` mutations of the seeds to `read_one(input, index)`.
void fuzz(const std::string& reader, std::uint64_t seed, bool json_text,
          const std::vector<std::string>& seeds,
          const std::function<std::string(const std::string&, int)>& read_one) {
  Mutator m{std::mt19937_64(seed), json_text};
  std::vector<std::string> inputs = seeds, whats(seeds.size(), "+seed");
  for (int i = 0; i < iterations(); ++i) {
    std::string what;
    inputs.push_back(m.mutate(seeds[m.pick(seeds.size())], what));
    whats.push_back(what);
  }
  for (const auto& seed : seeds)
    for (auto& [what, input] : systematic(seed, json_text)) {
      whats.push_back(what);
      inputs.push_back(std::move(input));
    }
  const int n = static_cast<int>(inputs.size());
  const auto problems = run_isolated(n, [&](int i) { return read_one(inputs[i], i); });
  Failures failures;
  for (const auto& [i, problem] : problems) failures.add(reader, i, whats[i], inputs[i], problem);
  INFO(failures.report());
  CHECK_MESSAGE(problems.empty(), problems.size() << " of " << n << " " << reader
                                                  << " inputs were mishandled");
}

// Every message must name the file it is about.
std::string unnamed(const std::vector<std::string>& messages, const fs::path& file) {
  for (const auto& m : messages)
    if (!contains(m, file.string())) return "a message does not name " + file.string() + ": " + m;
  return "";
}

// ------------------------------------------------------------------ seeds

json result_variant(const std::string& name, double bytes, double flops, double ms, bool host = false) {
  const double s = ms * 1e-3;
  return {{"name", name}, {"role", "exercise"}, {"correct", true},
          {"checks", json::array({{{"case", "1000x777"}, {"ok", true}, {"max_rel_error", 1e-7}}})},
          {"time_ms", {{"median", ms}, {"q1", ms * 0.99}, {"q3", ms * 1.01}, {"n", 30}}},
          {"bytes", bytes}, {"flops", flops}, {"gbs", bytes / s * 1e-9}, {"gflops", flops / s * 1e-9},
          {"host_link", host}};
}

std::vector<std::string> result_seeds() {
  json a = {{"schema", "cuda-perf-lab/result/1"}, {"lesson", "05-shared-memory"}, {"nonce", ""},
            {"complete", true},
            {"device", {{"name", "Test GPU"}, {"peak_bandwidth_gbs", 3352.3}}},
            {"ceilings", {{"copy_gbs", 2000.0}, {"fp32_gflops", 50000.0}, {"h2d_pinned_gbs", 50.0}}},
            {"variants", json::array({result_variant("triad", 1e9, 2.5e9, 1.0),
                                      result_variant("sgemm", 1e8, 1e11, 4.0),
                                      result_variant("copy", 1e9, 0, 0.6),
                                      result_variant("upload", 1e9, 0, 20, true)})},
            {"metrics", {{"overlap", {{"value", 0.8}, {"low", 0.7}, {"high", 0.9}, {"unit", ""}}}}},
            {"diagnostics", json::array({"a note"})},
            {"environment_ok", true}};
  json b = sample_result();
  b["ceilings"]["fp32_gflops"] = 60000.0;
  b["variants"][0]["flops"] = 2e9;
  return {a.dump(2), b.dump()};
}

std::string grade_record(const std::string& name) {
  Report r;
  r.name = name;
  r.started_at = r.finished_at = "2024-01-01T00:00:00Z";
  r.complete = true;
  for (const char* lesson : {"90-fake", "91-other"}) {
    LessonOutcome o;
    o.lesson = lesson;
    o.title = "Fake";
    o.build = "submission";
    o.verdict = Verdict::fail;
    o.score = 4;
    o.max_score = 4;  // what its one rule earns of its 4 (merge recomputes every score)
    o.runs = 1;
    RuleOutcome rule;
    rule.id = "correct";
    rule.kind = "correct";
    rule.verdict = Verdict::pass;
    rule.points = rule.max_points = 4;
    rule.message = "ok";
    o.rules = {rule};
    o.diagnostics = {"a note"};
    r.lessons.push_back(o);
  }
  return dump_json(report_json(r));
}

const char* const kOverridesSeed =
    "[\"90-fake\"]\ntimeout_s = 300\n\n"
    "[\"90-fake\".speedup]\nmin = 2.5\nmax = 10\npoints = 5\nhint = \"faster: {value}\"\n\n"
    "[\"90-fake\".bandwidth]\nmin = 0.5  # a comment\n";

// What a build of one long source line prints (nvcc's caret line of 40,000 spaces overflowed the
// stack of the regex that read it), a 1 MB line, and an ordinary failed build.
std::vector<std::string> compiler_seeds() {
  std::string numbers;
  for (int i = 0; i < 20000; ++i) numbers += "1,";
  return {"FAILED: lessons/CMakeFiles/01-x-submission.dir/exercise.cu.o\n"
          "In file included from /g/staging/01-x/exercise.cu:2:\n"
          "/usr/include/x.h:3:1: error: unknown type name 'y'\n    y z;\n    ^\n"
          "/g/staging/01-x/exercise.cu(7): error: expected a \";\"\n    return 1.0;\n    ^\n\n"
          "/usr/bin/ld: exercise.cu.o: in function `main':\nexercise.cu:(.text+0x0): multiple definition of `main'\n"
          "ninja: build stopped: subcommand failed.\ngmake: *** [all] Error 2\n",
          "/g/staging/01-x/exercise.cu(1): error: expected a \"}\"\n  int a[] = {" + numbers + "1 1};\n" +
              std::string(40000, ' ') + "^\n",
          std::string(1 << 20, ' ') + "error: " + std::string(1 << 20, '(') + "\n"};
}

std::vector<std::string> sanitizer_seeds() {
  return {"========= COMPUTE-SANITIZER\n========= Invalid __global__ write of size 4 bytes\n"
          "=========     at transpose(float *)+0x70 in /g/staging/05-shared/exercise.cu:31\n"
          "=========     by thread (0,0,0) in block (3,0,0)\n"
          "========= Error: Race reported between Write access at k+0x1a0 in /s/05-shared/exercise.cu:12\n"
          "========= ERROR SUMMARY: 2 errors\n",
          "========= " + std::string(40000, ' ') + "in x.cu:1\n",
          "========= Invalid read in " + std::string(1 << 20, 'a') + ".cu:7\n"};
}

// Every line of a filter's output within the cut (and its marker).
std::string overlong_line(const std::string& text) {
  for (const std::string& line : bounded_lines(text, std::string::npos))
    if (line.size() > kMaxParsedLine + 6) return "a line of " + std::to_string(line.size()) + " bytes came out";
  return "";
}

// lab-doctor's report as the course's program writes it, one with a number past a double
// (out_of_range.406 escaped) and one nested 200,000 deep (bad_alloc escaped).
std::vector<std::string> doctor_seeds() {
  return {R"({"device": {"name": "Fake GPU", "cc": "9.0", "sms": 132, "l2_bytes": 52428800,
              "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "bus_width_bits": 5120,
              "peak_bandwidth_gbs": 3352.3, "driver": 13000, "runtime": 12080, "debug_build": false},
              "ceilings": {"copy_gbs": 2850.1, "launch_us": 2.3, "fp32_gflops": null}})",
          R"({"device": {"name": "GPU", "l2_bytes": 1e400}, "ceilings": {}})",
          "{\"device\": " + std::string(200000, '[') + std::string(200000, ']') + "}"};
}

// What a loaded lesson may hold after check.toml and overrides: all finite and in range.
std::string insane(const LessonConfig& l) {
  if (!(l.timeout_s >= 1 && l.timeout_s <= 86400)) return "timeout_s " + std::to_string(l.timeout_s) + " accepted";
  for (const auto& r : l.rules) {
    if (!(std::isfinite(r.points) && r.points >= 0 && r.points <= 10000))
      return "points " + std::to_string(r.points) + " accepted";
    if ((r.min && !std::isfinite(*r.min)) || (r.max && !std::isfinite(*r.max)))
      return "a non-finite threshold was accepted in rule " + r.id;
  }
  return "";
}

}  // namespace

TEST_SUITE("fuzz") {
  TEST_CASE("the harness blames the right input for a crash, a hang and an escaped exception") {
    std::function<int(int)> recurse = [&](int depth) { return depth + recurse(depth + 1); };
    const auto problems = run_isolated(8, [&](int i) -> std::string {
      if (i == 1) ::raise(SIGSEGV);
      if (i == 3) recurse(0);  // a stack overflow
      if (i == 4) for (;;) ::pause();
      if (i == 5) throw std::runtime_error("raw");
      if (i == 6) return "a message without the file";
      return "";
    }, 0.5);
    REQUIRE(problems.size() == 5);
    CHECK(contains(problems.at(1), "crash: killed by signal 11"));
    CHECK(contains(problems.at(3), "crash: killed by signal 11"));
    CHECK(contains(problems.at(4), "hang"));
    CHECK(contains(problems.at(5), "not the checker's own escaped"));
    CHECK(problems.at(6) == "a message without the file");
  }

  TEST_CASE("roofline: result files") {
    TempDir dir("lab-fuzz-roofline");
    const fs::path good = dir.path() / "good.json";
    write_text(good, result_seeds()[0]);
    fuzz("roofline", 0x5eed0001, true, result_seeds(), [&](const std::string& input, int i) {
      const fs::path bad = dir.path() / ("fuzz-" + std::to_string(i) + ".json");
      write_text(bad, input);
      const Roofline r = load_roofline({bad, good});
      if (auto e = unnamed(r.errors, bad); !e.empty()) return e;
      if (r.runs.empty() || r.runs.back().file != good.string())
        return std::string("the good file beside it was not shown");
      // Whatever was accepted must also be shown and drawn, in bounded time and size.
      const std::string table = roofline_table(r), doc = dump_json(roofline_json(r)),
                        svg = roofline_svg(r);
      if (svg.size() > (8u << 20)) return "the SVG is " + std::to_string(svg.size()) + " bytes";
      return std::string();
    });
  }

  TEST_CASE("merge: grade records") {
    TempDir dir("lab-fuzz-merge");
    const fs::path good_dir = dir.path() / "bob";
    write_text(good_dir / "result.json", grade_record("bob"));
    fuzz("merge", 0x5eed0002, true, {grade_record("alice")}, [&](const std::string& input, int i) {
      const fs::path bad_dir = dir.path() / ("alice-" + std::to_string(i));
      const fs::path bad = bad_dir / "result.json";
      write_text(bad, input);
      grade_record_complete(bad);  // grade's resume check: must not throw either
      try {
        const Gradebook book = merge_results({bad_dir, good_dir});
        if (auto e = unnamed(book.errors, bad); !e.empty()) return e;
        bool bob = false;
        for (const auto& s : book.doc["students"]) bob = bob || s["name"] == "bob";
        if (!bob) return std::string("the good record beside it was not merged");
        dump_json(book.doc);
      } catch (const ConfigError& e) {
        return std::string("merge gave up on every record: ") + e.what();
      }
      return std::string();
    });
  }

  TEST_CASE("check.toml") {
    TempDir dir("lab-fuzz-check-toml");
    const std::string seed = read_text(fs::path(LAB_TEST_DATA_DIR) / "fake-course" / "lessons" /
                                       "90-fake" / "check.toml");
    REQUIRE(!seed.empty());
    fuzz("check.toml", 0x5eed0003, false, {seed}, [&](const std::string& input, int i) {
      const fs::path file = dir.path() / std::to_string(i) / "90-fake" / "check.toml";
      write_text(file, input);
      try {
        return insane(load_lesson(file));
      } catch (const ConfigError& e) {
        return contains(e.what(), file.string()) ? std::string()
                                                 : std::string("message without the file: ") + e.what();
      }
    });
  }

  TEST_CASE("compiler output (grade's filter of a student's build log)") {
    fuzz("compiler", 0x5eed0005, false, compiler_seeds(), [&](const std::string& input, int) {
      for (const char* own : {"01-x/exercise.cu", ""}) {
        const std::string shown = compiler_errors(input, "/g/staging/", 25, own);
        if (std::count(shown.begin(), shown.end(), '\n') > 25) return std::string("more than 25 lines shown");
        if (auto e = overlong_line(shown); !e.empty()) return e;
      }
      return std::string();
    });
  }

  TEST_CASE("compute-sanitizer logs") {
    fuzz("sanitizer", 0x5eed0006, false, sanitizer_seeds(), [&](const std::string& input, int) {
      const auto found = parse_sanitizer_log("memcheck", input);
      if (found.size() > 10) return std::to_string(found.size()) + " findings kept";
      for (const auto& f : found)
        if (auto e = overlong_line(f.what + "\n" + f.location); !e.empty()) return e;
      return std::string();
    });
  }

  TEST_CASE("expected.toml (selftest's mutants)") {
    TempDir dir;
    const std::string seed = read_text(fs::path(LAB_SOURCE_DIR) / "solutions" / "01-timing-pitfalls" /
                                       "mutants" / "expected.toml");
    REQUIRE(!seed.empty());
    std::string key;
    for (int i = 0; i < 40000; ++i) key += "a.";
    fuzz("expected.toml", 0x5eed0007, false, {seed, key + "a = 1\n"}, [&](const std::string& input, int i) {
      const fs::path file = dir.path() / std::to_string(i) / "expected.toml";
      write_text(file, input);
      try {
        for (const Expectation& e : load_expectations(file))
          if (e.timeout_s != 0 && !(e.timeout_s >= 1 && e.timeout_s <= 86400))
            return "timeout_s " + std::to_string(e.timeout_s) + " accepted";
        return std::string();
      } catch (const ConfigError& e) {
        return contains(e.what(), file.string()) ? std::string()
                                                 : std::string("message without the file: ") + e.what();
      }
    });
  }

  TEST_CASE("lab-doctor's report") {
    fuzz("doctor", 0x5eed0008, true, doctor_seeds(), [&](const std::string& input, int) {
      std::string error;
      const auto info = read_doctor_report(input, error);
      if (!info) return error.empty() ? std::string("refused without a reason") : std::string();
      DoctorReport rep;
      rep.info = *info;
      rep.info["tools"] = json::object();
      const std::string text = doctor_text(rep);
      if (text != printable(text)) return "the report shows unprintable text: " + printable(text);
      dump_json(rep.info);
      return std::string();
    });
  }

  TEST_CASE("overrides") {
    TempDir dir("lab-fuzz-overrides");
    const std::vector<LessonConfig> lessons{fake_lesson({}, standard_rules())};
    fuzz("overrides", 0x5eed0004, false, {kOverridesSeed}, [&](const std::string& input, int i) {
      const fs::path file = dir.path() / ("overrides-" + std::to_string(i) + ".toml");
      write_text(file, input);
      std::vector<LessonConfig> copy = lessons;
      try {
        apply_overrides(copy, file);
        return insane(copy[0]);
      } catch (const ConfigError& e) {
        return contains(e.what(), file.string()) ? std::string()
                                                 : std::string("message without the file: ") + e.what();
      }
    });
  }
}  // TEST_SUITE
