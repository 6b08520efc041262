#include "lab/record.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

namespace lab {
namespace {

// Fields are tab-separated: a name keeps its spaces, loses what would split it.
std::string field(std::string s) {
  for (char& ch : s)
    if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out(1);
  for (char ch : line) {
    if (ch == '\t') out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

template <class T>
T number(const std::string& text, int line) {
  // Unsigned fields only: strtoull would take "-1" (or " -1") as a huge number, so only digits
  // may begin the field; and a value that does not fit T is refused, not wrapped.
  char* end = nullptr;
  errno = 0;
  const bool digit = !text.empty() && text[0] >= '0' && text[0] <= '9';
  const unsigned long long v = digit ? std::strtoull(text.c_str(), &end, 10) : 0;
  if (!digit || errno != 0 || !end || *end != '\0' ||
      v > static_cast<unsigned long long>(std::numeric_limits<T>::max()))
    throw std::runtime_error("line " + std::to_string(line) + ": '" + text + "' is not a count");
  return static_cast<T>(v);
}

}  // namespace

std::string record_text(const RecordedCheck& c) {
  std::string out = "check\t" + field(c.variant) + "\t" + field(c.case_name) + "\t" +
                    std::to_string(c.count) + "\t" + std::to_string(c.index.size()) + "\n";
  char buf[64];
  for (std::size_t k = 0; k < c.index.size(); ++k) {
    // %a: the exact double, so the replay compares the very value the exercise left.
    std::snprintf(buf, sizeof buf, "%s%zu:%a", k ? " " : "", c.index[k], c.got[k]);
    out += buf;
  }
  return out + "\n";
}

std::string record_text(const RecordedCall& c) {
  return "call\t" + field(c.variant) + "\t" + std::to_string(c.measure) + "\t" +
         field(c.case_name) + "\t" + std::to_string(c.call_seed) + "\t" +
         std::to_string(c.pick_seed) + "\n";
}

std::string record_text(const RecordedParameter& p) {
  return "param\t" + field(p.name) + "\t" + std::to_string(p.value) + "\n";
}

Record parse_record(const std::string& text) {
  Record r;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::vector<std::string> f = split_tabs(line);
    if (f[0] == "call" && f.size() == 6) {
      r.calls.push_back({f[1], number<int>(f[2], n), f[3], number<std::uint64_t>(f[4], n),
                         number<std::uint64_t>(f[5], n)});
    } else if (f[0] == "param" && f.size() == 3) {
      r.parameters.push_back({f[1], number<std::uint64_t>(f[2], n)});
    } else if (f[0] == "check" && f.size() == 5) {
      RecordedCheck c{f[1], f[2], number<std::size_t>(f[3], n), {}, {}};
      const std::size_t k = number<std::size_t>(f[4], n);
      if (k > kRecordSample || k > c.count)
        throw std::runtime_error("line " + std::to_string(n) + ": " + std::to_string(k) +
                                 " values of " + std::to_string(c.count));
      std::string values;
      if (!std::getline(in, values))
        throw std::runtime_error("line " + std::to_string(n) + ": its values are missing");
      ++n;
      std::istringstream v(values);
      std::string pair;
      while (v >> pair) {
        const auto colon = pair.find(':');
        if (colon == std::string::npos)
          throw std::runtime_error("line " + std::to_string(n) + ": '" + pair + "' is not index:value");
        const std::size_t i = number<std::size_t>(pair.substr(0, colon), n);
        char* end = nullptr;
        const double x = std::strtod(pair.c_str() + colon + 1, &end);
        if (end == pair.c_str() + colon + 1 || *end != '\0' || i >= c.count)
          throw std::runtime_error("line " + std::to_string(n) + ": '" + pair + "' is not index:value");
        c.index.push_back(i);
        c.got.push_back(x);
      }
      if (c.index.size() != k)
        throw std::runtime_error("line " + std::to_string(n) + ": " + std::to_string(c.index.size()) +
                                 " values, " + std::to_string(k) + " announced");
      r.checks.push_back(std::move(c));
    } else if (!line.empty()) {
      throw std::runtime_error("line " + std::to_string(n) + ": not an entry of a record");
    }
  }
  return r;
}

std::vector<std::size_t> sample_indices(std::size_t n, std::uint64_t seed, std::size_t most) {
  std::vector<std::size_t> out;
  if (n <= most) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<std::size_t> any(0, n - 1);
  for (std::size_t k = 0; k < most; ++k) out.push_back(any(gen));
  return out;
}

}  // namespace lab
