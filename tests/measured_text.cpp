// measured-text: every number a lesson text or deck presents as measured names its committed
// source, and says what that source says.
//
// The convention (docs/writing-a-lesson.md, "Measured numbers in the texts"): after a paragraph,
// table or list, or at the end of its last line, an HTML comment names where its numbers come
// from, one entry per number, as the text writes it:
//
//     The solution reaches 2,959 GB/s, 1.01 of the copy ceiling.
//     <!-- m: 2,959 GB/s = h100 solution.exercise.gbs; 1.01 = h100 solution.exercise.of_copy -->
//
// A measured source is a run folder of measurements/ (or the path of a deeper folder of result
// files, such as an A/B round's side: h200-protocol-ab/round3/after) and a reference into its
// result files:
//   BUILD.VARIANT[.FIELD]    a variant's median (the default) or FIELD: a key of time_ms (min,
//                            q1, q3, median_low, ...), enqueue_us, gbs, gflops, of_copy, intensity
//   BUILD.metric.NAME        a metric's value
//   BUILD.ceiling.NAME       a ceiling (copy_gbs, fp32_gflops, h2d_pinned_gbs, launch_us, ...)
//   BUILD.txt "TEXT"         the first number after TEXT in the table the program printed
//   REF / REF                the ratio of two (a speedup: baseline / exercise)
// with NN. in front for another lesson's files (10.solution.ceiling.fp32_gflops). The number
// must match its source to the rounding it is written with, or to a spread the entry states
// ("~5%"), in magnitude; a number written without a unit (a table whose header holds it) is
// read in its source's base unit (ms, GB/s, GFLOP/s, MHz) (the text says "slower" where the file has a minus). A number that is no measurement says what it is instead: `spec` (a data sheet or
// theoretical figure), `docs` (documentation, a paper, a vendor), `arithmetic` (worked from
// other numbers), `bar` (a rule's threshold), `setting` (an option or a harness setting),
// `example` (an illustration, not a run).
//
// The texts of kConverted must source every number that looks measured (a value with a unit:
// GB/s, TFLOP/s, ms, us, ns, MHz, %, 3.6x, "3 times faster") outside generated blocks, code and
// links; in every other text the entries that are there are checked all the same, and
// LAB_MEASURED_ENFORCE=lessons/NN-topic/README.md lists what a text being converted still lacks.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "lab/format.hpp"
#include "measured_runs.hpp"

namespace fs = std::filesystem;
using measured::GpuFolder;
using measured::trim;
using nlohmann::json;

namespace {

const fs::path kRepo = LAB_SOURCE_DIR;

// The texts that source every measured-looking number; the others are being converted.
const std::vector<std::string> kConverted = {
    "lessons/01-timing-pitfalls/README.md",
    "slides/01-timing-pitfalls.md",
    "lessons/02-cuda-events/README.md",
    "slides/02-cuda-events.md",
    "lessons/03-pinned-memory/README.md",
    "slides/03-pinned-memory.md",
    "lessons/04-coalescing/README.md",
    "slides/04-coalescing.md",
    "lessons/07-streams/README.md",
    "slides/07-streams.md",
    "lessons/08-reductions/README.md",
    "slides/08-reductions.md",
    "lessons/06-fusion/README.md",
    "slides/06-fusion.md",
    "lessons/05-shared-memory/README.md",
    "slides/05-shared-memory.md",
    "lessons/09-graphs/README.md",
    "slides/09-graphs.md",
    "lessons/10-profiling/README.md",
    "slides/10-profiling.md",
    "lessons/11-one-time-costs/README.md",
    "slides/11-one-time-costs.md",
    "lessons/12-tensor-cores/README.md",
    "slides/12-tensor-cores.md",
    "lessons/13-hopper-gemm/README.md",
    "slides/13-hopper-gemm.md",
    "slides/00-course-overview.md",
};

// The words a number that is no measurement is marked with.
const std::set<std::string> kNotMeasured = {"spec", "docs", "arithmetic", "bar", "setting", "example"};

// A unit's kind and its factor to the kind's base (ms, GB/s, GFLOP/s, MHz, a plain ratio).
struct Unit {
  std::string kind;
  double factor;
};

std::optional<Unit> unit_of(const std::string& u) {
  static const std::map<std::string, Unit> units = {
      {"s", {"time", 1e3}},       {"ms", {"time", 1}},         {"us", {"time", 1e-3}},
      {"ns", {"time", 1e-6}},     {"MB/s", {"bytes", 1e-3}},   {"GB/s", {"bytes", 1}},
      {"TB/s", {"bytes", 1e3}},   {"GFLOP/s", {"flops", 1}},   {"TFLOP/s", {"flops", 1e3}},
      {"MHz", {"clock", 1}},      {"GHz", {"clock", 1e3}},     {"", {"ratio", 1}},
      {"x", {"ratio", 1}},        {"times", {"ratio", 1}},     {"%", {"ratio", 0.01}}};
  const auto it = units.find(u);
  return it == units.end() ? std::nullopt : std::optional<Unit>(it->second);
}

// A number as a text writes it: "2,959" and its unit ("GB/s", "x", "" for none).
struct Token {
  std::string number, unit;
  std::string text() const { return number + (unit.empty() || unit == "x" || unit == "%" ? "" : " ") + unit; }
  bool operator==(const Token& o) const { return number == o.number && unit == o.unit; }
};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Every number of `s` with the unit that follows it (none when no known unit does). A number
// inside a word (H100, sm_90, v1.2) is none.
std::vector<Token> tokens(const std::string& s) {
  static const std::vector<std::pair<std::string, std::string>> spaced = {
      {"GB/s", "GB/s"}, {"TB/s", "TB/s"},       {"MB/s", "MB/s"},       {"GFLOP/s", "GFLOP/s"},
      {"TFLOP/s", "TFLOP/s"}, {"ms", "ms"},     {"us", "us"},           {"\xC2\xB5s", "us"},
      {"\xCE\xBCs", "us"},    {"ns", "ns"},     {"MHz", "MHz"},         {"GHz", "GHz"},
      {"times faster", "times"}, {"times slower", "times"}};
  std::vector<Token> out;
  for (size_t i = 0; i < s.size();) {
    if (!std::isdigit(static_cast<unsigned char>(s[i])) ||
        (i > 0 && (word_char(s[i - 1]) || s[i - 1] == '.'))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) ||
                            (s[j] == ',' && j + 3 < s.size() + 1 && j + 1 < s.size() &&
                             std::isdigit(static_cast<unsigned char>(s[j + 1])))))
      ++j;
    if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
      ++j;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    }
    Token t{s.substr(i, j - i), ""};
    if (j < s.size() && word_char(s[j]) && s[j] != 'x') {  // 4th, 2D, 90a: not a quantity
      i = j;
      while (i < s.size() && word_char(s[i])) ++i;
      continue;
    }
    const auto after = [&](size_t k) { return k >= s.size() || !word_char(s[k]); };
    if (j < s.size() && s[j] == '%') {
      t.unit = "%";
      ++j;
    } else if (j < s.size() && s[j] == 'x' && after(j + 1)) {
      t.unit = "x";
      ++j;
    } else if (s.compare(j, 2, "\xC3\x97") == 0 && (j + 2 >= s.size() || s[j + 2] != ' ')) {
      t.unit = "x";
      j += 2;
    } else {
      size_t k = j;
      if (k < s.size() && s[k] == ' ') ++k;
      else if (s.compare(k, 2, "\xC2\xA0") == 0) k += 2;
      for (const auto& [written, unit] : spaced)
        if (s.compare(k, written.size(), written) == 0 && after(k + written.size())) {
          t.unit = unit;
          j = k + written.size();
          break;
        }
    }
    out.push_back(t);
    i = j;
  }
  return out;
}

// A number that looks measured: one with a unit, but for the 95% of an interval's name.
bool looks_measured(const Token& t, const std::string& prose_after) {
  if (t.unit.empty()) return false;
  if (t.unit == "%" && t.number == "95") {
    static const std::regex named(R"(^[ -](interval|confidence|coverage|order))");
    return !std::regex_search(prose_after, named);
  }
  return true;
}

// One paragraph, table, list or code block of a text, and the sources its comments give.
struct Block {
  int line = 0;
  std::string prose;  // without comments, inline code and link targets
  bool code = false;
  std::vector<std::pair<int, std::string>> entries;  // line of the comment, "NUMBER = SOURCE"
};

std::string strip(const std::string& s) {
  static const std::regex comment(R"(<!--[\s\S]*?-->)"), code("`[^`\n]*`"), link(R"(\]\([^)\s]*\))");
  return std::regex_replace(std::regex_replace(std::regex_replace(s, comment, " "), code, " "), link, "]");
}

// The blocks of a Markdown text; generated blocks (<!-- measured ... <!-- end measured -->) are
// left out. A block made only of source comments belongs to the block before it.
std::vector<Block> blocks(const std::string& text) {
  std::vector<Block> out;
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  static const std::regex source(R"(<!--\s*m:([\s\S]*?)-->)");
  for (size_t i = 0; i < lines.size();) {
    const std::string t = trim(lines[i]);
    if (t.empty()) {
      ++i;
      continue;
    }
    if (t.rfind("<!-- measured", 0) == 0) {
      while (i < lines.size() && trim(lines[i]) != "<!-- end measured -->") ++i;
      ++i;
      continue;
    }
    Block b;
    b.line = static_cast<int>(i) + 1;
    std::string raw;
    if (t.rfind("```", 0) == 0 || t.rfind("~~~", 0) == 0) {
      const std::string fence = t.substr(0, 3);
      b.code = true;
      for (++i; i < lines.size() && trim(lines[i]).rfind(fence, 0) != 0; ++i) raw += lines[i] + "\n";
      ++i;
      b.prose = raw;
      out.push_back(b);
      continue;
    }
    std::vector<int> line_of;  // the line each character of raw came from, for the comments
    for (; i < lines.size() && !trim(lines[i]).empty(); ++i) {
      raw += lines[i] + "\n";
      line_of.resize(raw.size(), static_cast<int>(i) + 1);
    }
    for (std::sregex_iterator m(raw.begin(), raw.end(), source), end; m != end; ++m) {
      std::string body = (*m)[1];
      size_t from = 0;
      for (size_t semi; from <= body.size(); from = semi + 1) {
        semi = body.find(';', from);
        if (semi == std::string::npos) semi = body.size();
        const std::string entry = trim(std::regex_replace(body.substr(from, semi - from), std::regex(R"(\s+)"), " "));
        if (!entry.empty()) b.entries.push_back({line_of[m->position()], entry});
      }
    }
    b.prose = strip(raw);
    if (trim(std::regex_replace(b.prose, std::regex(R"(\s+)"), " ")).empty() && !out.empty()) {
      for (const auto& e : b.entries) out.back().entries.push_back(e);
      continue;
    }
    out.push_back(b);
  }
  return out;
}

// The value of a number as a text writes it, in its unit's base, and half its last digit.
struct Written {
  double value, rounding;
  Unit unit;
};

Written written(const Token& t) {
  std::string digits;
  for (char c : t.number)
    if (c != ',') digits += c;
  const auto dot = digits.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(digits.size() - dot - 1);
  const Unit u = *unit_of(t.unit);
  return {std::stod(digits) * u.factor, 0.5 * std::pow(10.0, -decimals) * u.factor, u};
}

// The result files, read once.
class Sources {
 public:
  explicit Sources(std::vector<GpuFolder> gpus) : gpus_(std::move(gpus)) {}

  // The value a reference names, in its kind's base; throws with the reason.
  std::pair<double, Unit> value(const std::string& gpu, std::string ref, const std::string& lesson) {
    static const std::regex printed(R"re(^(?:(\d{2})\.)?(\w+)\.txt "([^"]+)"$)re");
    std::smatch p;
    if (std::regex_match(ref, p, printed)) return printed_value(gpu, p[1].matched ? lesson_named(p[1]) : lesson, p[2], p[3]);
    std::vector<std::string> parts;
    for (size_t from = 0, dot;; from = dot + 1) {
      dot = ref.find('.', from);
      parts.push_back(ref.substr(from, dot - from));
      if (dot == std::string::npos) break;
    }
    std::string of_lesson = lesson;
    if (!parts.empty() && parts[0].size() == 2 && std::isdigit(static_cast<unsigned char>(parts[0][0]))) {
      of_lesson = lesson_named(parts[0]);
      parts.erase(parts.begin());
    }
    if (of_lesson.empty()) throw std::runtime_error("no lesson: write NN. in front (this text is no lesson's)");
    if (parts.size() < 2)
      throw std::runtime_error("`" + ref + "` is not BUILD.VARIANT[.FIELD], BUILD.metric.NAME or BUILD.ceiling.NAME");
    const json& doc = file(gpu, of_lesson, parts[0]);
    // A variant's name may hold a dot (kernel_0.1ms): the longest name that the reference starts with.
    if (parts[1] != "metric" && parts[1] != "ceiling") {
      std::string rest;
      for (size_t i = 1; i < parts.size(); ++i) rest += (i > 1 ? "." : "") + parts[i];
      std::string name;
      for (const json& each : doc["variants"]) {
        const std::string n = each.value("name", std::string());
        if ((rest == n || rest.rfind(n + ".", 0) == 0) && n.size() > name.size()) name = n;
      }
      if (!name.empty()) {
        parts = {parts[0], name};
        if (rest.size() > name.size()) parts.push_back(rest.substr(name.size() + 1));
      }
    }
    if (parts.size() > 3)
      throw std::runtime_error("`" + ref + "` is not BUILD.VARIANT[.FIELD], BUILD.metric.NAME or BUILD.ceiling.NAME");
    if (parts[1] == "metric" || parts[1] == "ceiling") {
      if (parts.size() != 3) throw std::runtime_error("`" + ref + "` names no " + parts[1]);
      if (parts[1] == "ceiling") {
        const json& c = doc["ceilings"];
        if (!c.contains(parts[2])) throw std::runtime_error("the run has no ceiling `" + parts[2] + "`");
        return unit_by_suffix(parts[2], c[parts[2]].get<double>());
      }
      const json& m = doc["metrics"];
      if (!m.contains(parts[2])) throw std::runtime_error("the run has no metric `" + parts[2] + "`");
      const auto u = unit_of(trim(m[parts[2]].value("unit", std::string())));
      if (!u) throw std::runtime_error("metric `" + parts[2] + "` has a unit this test does not know");
      return {m[parts[2]]["value"].get<double>() * u->factor, *u};
    }
    const json* v = nullptr;
    for (const json& each : doc["variants"])
      if (each.value("name", std::string()) == parts[1]) v = &each;
    if (v == nullptr) throw std::runtime_error("the run has no variant `" + parts[1] + "`");
    const std::string field = parts.size() == 3 ? parts[2] : "median";
    const lab::Rates r = lab::rates_of(doc, *v);
    if (field == "gbs") return {r.gbs, {"bytes", 1}};
    if (field == "gflops") return {r.gflops, {"flops", 1}};
    if (field == "of_copy" && r.fraction_of_copy) return {*r.fraction_of_copy, {"ratio", 1}};
    if (field == "intensity" && r.intensity) return {*r.intensity, {"ratio", 1}};
    if (field == "n") return {(*v)["time_ms"].value("n", 0.0), {"ratio", 1}};
    if (v->contains("time_ms") && (*v)["time_ms"].contains(field)) return {(*v)["time_ms"][field].get<double>(), {"time", 1}};
    if (v->contains(field) && (*v)[field].is_number()) return unit_by_suffix(field, (*v)[field].get<double>());
    throw std::runtime_error("variant `" + parts[1] + "` has no `" + field + "`");
  }

  // The first number after `after` in the table the program printed (NN-topic-BUILD.txt).
  std::pair<double, Unit> printed_value(const std::string& gpu, const std::string& lesson, const std::string& build,
                                        const std::string& after) {
    if (lesson.empty()) throw std::runtime_error("no lesson: write NN. in front (this text is no lesson's)");
    const fs::path path = folder(gpu).dir / (lesson + "-" + build + ".txt");
    // Columns are padded with runs of spaces; the entries hold one.
    static const std::regex spaces("[ \t]+");
    const std::string text = std::regex_replace(measured::read_text(path), spaces, " ");
    const auto at = text.find(after);
    if (at == std::string::npos) throw std::runtime_error(path.string() + " has no \"" + after + "\"");
    const auto eol = text.find('\n', at);
    const std::vector<Token> t = tokens(text.substr(at + after.size(), eol == std::string::npos ? eol : eol - at - after.size()));
    if (t.empty()) throw std::runtime_error(path.string() + ": no number after \"" + after + "\" on its line");
    const Written w = written(t[0]);
    return {w.value, w.unit};
  }

  bool has_gpu(const std::string& name) const {
    for (const GpuFolder& g : gpus_)
      if (g.name == name) return true;
    return false;
  }
  std::string gpu_names() const {
    std::string s;
    for (const GpuFolder& g : gpus_) s += (s.empty() ? "" : ", ") + g.name;
    return s;
  }

 private:
  static std::pair<double, Unit> unit_by_suffix(const std::string& key, double v) {
    auto ends = [&](const std::string& s) { return key.size() >= s.size() && key.compare(key.size() - s.size(), s.size(), s) == 0; };
    if (ends("_gbs")) return {v, {"bytes", 1}};
    if (ends("_gflops")) return {v, {"flops", 1}};
    if (ends("_us")) return {v * 1e-3, {"time", 1}};
    if (ends("_ms")) return {v, {"time", 1}};
    if (ends("_mhz")) return {v, {"clock", 1}};
    return {v, {"ratio", 1}};
  }
  static std::string lesson_named(const std::string& number) {
    for (const auto& e : fs::directory_iterator(kRepo / "lessons"))
      if (e.path().filename().string().rfind(number + "-", 0) == 0) return e.path().filename().string();
    throw std::runtime_error("no lesson " + number);
  }
  const GpuFolder& folder(const std::string& gpu) const {
    for (const GpuFolder& g : gpus_)
      if (g.name == gpu) return g;
    // A deeper folder of result files (an A/B round's side, unjudged runs) is cited by its path
    // below measurements/; it has no README of its own, so no stamps, which only the tables use.
    const fs::path dir = kRepo / "measurements" / gpu;
    if (gpu.find('/') != std::string::npos && gpu.find("..") == std::string::npos && fs::is_directory(dir))
      return nested_.try_emplace(gpu, GpuFolder{gpu, dir, {}, {}}).first->second;
    throw std::runtime_error("no run folder `" + gpu + "` (there are: " + gpu_names() +
                             ", or a deeper folder's path below measurements/)");
  }
  const json& file(const std::string& gpu, const std::string& lesson, const std::string& build) {
    const fs::path path = folder(gpu).result(lesson, build);
    auto it = files_.find(path.string());
    if (it == files_.end()) it = files_.emplace(path.string(), measured::load_result(path)).first;
    return it->second;
  }
  std::vector<GpuFolder> gpus_;
  mutable std::map<std::string, GpuFolder> nested_;  // the deeper folders cited so far, by path
  std::map<std::string, json> files_;
};

// What one entry says is wrong, or "".
std::string check_entry(const std::string& entry, const Block& block, Sources& sources, const std::string& lesson) {
  const auto eq = entry.find('=');
  if (eq == std::string::npos) return "`" + entry + "` is not NUMBER = SOURCE";
  const std::vector<Token> number = tokens(entry.substr(0, eq));
  if (number.size() != 1) return "`" + trim(entry.substr(0, eq)) + "` is not one number";
  bool found = false;
  for (const Token& t : tokens(block.prose)) found = found || t == number[0];
  if (!found) return "the block has no " + number[0].text();
  std::string source = trim(entry.substr(eq + 1));
  if (kNotMeasured.count(source)) return "";
  double spread = 0;
  static const std::regex spread_at_end(R"(\s*~\s*([0-9.]+)\s*%$)");
  std::smatch m;
  if (std::regex_search(source, m, spread_at_end)) {
    spread = std::stod(m[1]) / 100;
    source = source.substr(0, m.position());
  }
  const auto space = source.find(' ');
  if (space == std::string::npos)
    return "`" + source + "` is neither a run's source (GPU REF) nor one of spec, docs, arithmetic, bar, setting, example";
  const std::string gpu = source.substr(0, space);
  std::string refs = trim(source.substr(space + 1));
  try {
    std::pair<double, Unit> value;
    const auto slash = refs.find(" / ");
    if (slash != std::string::npos) {
      const auto a = sources.value(gpu, trim(refs.substr(0, slash)), lesson);
      const auto b = sources.value(gpu, trim(refs.substr(slash + 3)), lesson);
      if (a.second.kind != b.second.kind) return "a ratio of a " + a.second.kind + " and a " + b.second.kind;
      value = {a.first / b.first, {"ratio", 1}};
    } else {
      value = sources.value(gpu, refs, lesson);
    }
    Written w = written(number[0]);
    // A number written without its unit (a table whose header holds it) is in the source's base.
    if (number[0].unit.empty() && value.second.kind != "ratio") w.unit = value.second;
    if (w.unit.kind != value.second.kind)
      return number[0].text() + " is a " + w.unit.kind + ", its source a " + value.second.kind;
    // A text writes a sign as a word ("40% slower", "off by 99%"): magnitudes are compared.
    const double allowed = std::max(w.rounding, spread * std::fabs(value.first)) * (1 + 1e-9);
    if (std::fabs(std::fabs(w.value) - std::fabs(value.first)) > allowed)
      return "the file says " + lab::text("%.6g", value.first / w.unit.factor) + " " + number[0].unit + ", the text " +
             number[0].text() + (spread > 0 ? lab::text(" (more than its ~%g%%)", spread * 100) : " (more than its rounding)");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Every problem of one text: entries that disagree with their sources, and (when `enforce`)
// numbers that look measured and have no entry.
std::vector<std::string> check_text(const std::string& name, const std::string& text, const std::string& lesson,
                                    Sources& sources, bool enforce) {
  std::vector<std::string> problems;
  for (const Block& b : blocks(text)) {
    std::vector<Token> sourced;
    for (const auto& [line, entry] : b.entries) {
      const std::string problem = check_entry(entry, b, sources, lesson);
      if (!problem.empty()) problems.push_back(name + ":" + std::to_string(line) + ": " + entry + ": " + problem);
      const std::vector<Token> t = tokens(entry.substr(0, entry.find('=')));
      if (t.size() == 1) sourced.push_back(t[0]);
    }
    if (!enforce || b.code) continue;
    std::set<std::string> reported;
    const std::vector<Token> found = tokens(b.prose);
    size_t at = 0;
    for (const Token& t : found) {
      at = b.prose.find(t.number, at);
      const std::string after = b.prose.substr(at + t.number.size() + (t.unit == "%" ? 1 : 0));
      if (!looks_measured(t, after) || std::find(sourced.begin(), sourced.end(), t) != sourced.end()) continue;
      if (reported.insert(t.text()).second)
        problems.push_back(name + ":" + std::to_string(b.line) + ": " + t.text() +
                           " looks measured and names no source (<!-- m: " + t.text() + " = ... -->)");
    }
  }
  return problems;
}

// The lesson a text belongs to: lessons/NN-topic/README.md and slides/NN-topic.md.
std::string lesson_of(const fs::path& file) {
  const std::string name = file.parent_path().filename() == "slides" ? file.stem().string()
                                                                      : file.parent_path().filename().string();
  return fs::exists(kRepo / "lessons" / name) ? name : "";
}

Sources committed_sources() { return Sources(measured::gpu_folders(kRepo / "measurements")); }

}  // namespace

TEST_CASE("every measured number of the lesson texts and decks says what its committed source says") {
  Sources sources = committed_sources();
  std::vector<fs::path> texts;
  for (const auto& e : fs::directory_iterator(kRepo / "lessons"))
    if (fs::exists(e.path() / "README.md")) texts.push_back(e.path() / "README.md");
  for (const auto& e : fs::directory_iterator(kRepo / "slides"))
    if (e.path().extension() == ".md") texts.push_back(e.path());
  int problems = 0;
  for (const fs::path& file : texts) {
    const std::string name = fs::relative(file, kRepo).generic_string();
    const char* also = std::getenv("LAB_MEASURED_ENFORCE");  // a text being converted: what it still lacks
    const bool enforce = std::find(kConverted.begin(), kConverted.end(), name) != kConverted.end() ||
                         (also != nullptr && name == also);
    for (const std::string& p : check_text(name, measured::read_text(file), lesson_of(file), sources, enforce)) {
      ++problems;
      FAIL_CHECK(p);
    }
  }
  for (const std::string& name : kConverted) CHECK_MESSAGE(fs::exists(kRepo / name), name << " is listed but missing");
  CHECK(problems == 0);
}

TEST_CASE("the tokens of a text: numbers and their units") {
  const std::vector<Token> t = tokens("reads 2,959 GB/s (1.01 of copy), 3.6x, 363.0 us, 12%, H100, sm_90, 16384 x 16384, "
                                      "4 times faster, 10 ms");
  REQUIRE(t.size() == 9);
  CHECK(t[0] == Token{"2,959", "GB/s"});
  CHECK(t[1] == Token{"1.01", ""});
  CHECK(t[2] == Token{"3.6", "x"});
  CHECK(t[3] == Token{"363.0", "us"});
  CHECK(t[4] == Token{"12", "%"});
  CHECK(t[5] == Token{"16384", ""});
  CHECK(t[6] == Token{"16384", ""});
  CHECK(t[7] == Token{"4", "times"});
  CHECK(t[8] == Token{"10", "ms"});
}

TEST_CASE("a wrong number, a missing source and an unsourced number each fail; right ones pass") {
  Sources sources = committed_sources();
  const json doc = measured::load_result(kRepo / "measurements/h100/04-coalescing-solution.json");
  double median = 0, row_per_thread = 0;
  for (const json& v : doc["variants"]) {
    if (v["name"] == "exercise") median = v["time_ms"]["median"];
    if (v["name"] == "row_per_thread") row_per_thread = v["time_ms"]["median"];
  }
  const std::string right = lab::fixed(median * 1000, 1) + " us";
  const std::string wrong = lab::fixed(median * 1000 * 1.03, 1) + " us";
  const std::string lesson = "04-coalescing";
  const auto problems = [&](const std::string& text, bool enforce = true) {
    return check_text("t.md", text, lesson, sources, enforce);
  };
  CHECK(problems("The exercise takes " + right + ".\n<!-- m: " + right + " = h100 solution.exercise -->\n").empty());
  // As its own block after a blank line, and the same number in the next paragraph needs its own.
  CHECK(problems("The exercise takes " + right + ".\n\n<!-- m: " + right + " = h100 solution.exercise -->\n").empty());
  CHECK(problems("Takes " + right + ".\n\n<!-- m: " + right + " = h100 solution.exercise -->\n\nAgain " + right + ".\n").size() == 1);
  // 3% off, beyond the rounding of one decimal; within a stated ~5%.
  auto p = problems("It takes " + wrong + ".\n<!-- m: " + wrong + " = h100 solution.exercise -->\n");
  REQUIRE(p.size() == 1);
  CHECK(p[0].find("the file says") != std::string::npos);
  CHECK(problems("It takes " + wrong + ".\n<!-- m: " + wrong + " = h100 solution.exercise ~5% -->\n").empty());
  // In another unit; a ratio; a ceiling; another lesson's metric.
  CHECK(problems("It takes " + lab::fixed(median, 4) + " ms.<!-- m: " + lab::fixed(median, 4) +
                 " ms = h100 solution.exercise -->\n").empty());
  const std::string ratio = lab::fixed(row_per_thread / median, 2);
  p = problems("It is " + ratio + "x faster.\n<!-- m: " + ratio + "x = h100 solution.row_per_thread / solution.exercise -->\n");
  CHECK(p.empty());
  CHECK(problems("Copy: 2,930 GB/s.<!-- m: 2,930 GB/s = h100 solution.ceiling.copy_gbs -->").empty());
  CHECK(problems("Overlap 0.879.<!-- m: 0.879 = h100 07.solution.metric.overlap_efficiency -->").empty());
  CHECK(problems("Yours: 112.0 us.<!-- m: 112.0 us = h100 01.solution.txt \"kernel_0.1ms yours\" -->").empty());
  CHECK(problems("Off by 49%.<!-- m: 49% = h100 01.starter.txt \"(median of 470) off by\" -->").empty());
  CHECK(problems("Took 108.3 us.<!-- m: 108.3 us = h100 01.solution.kernel_0.1ms -->").empty());
  CHECK(problems("| copy | 2930 |<!-- m: 2930 = h100 solution.ceiling.copy_gbs -->").empty());
  CHECK(problems("| copy | 2940 |<!-- m: 2940 = h100 solution.ceiling.copy_gbs -->").size() == 1);
  CHECK(problems("Took 108.3 us.<!-- m: 108.3 us = h100 01.solution.kernel_0.1ms.median -->").empty());
  CHECK(problems("Yours: 113.0 us.<!-- m: 113.0 us = h100 01.solution.txt \"kernel_0.1ms yours\" -->").size() == 1);
  // A unit of the wrong kind, a source that is not there, a number the block does not hold.
  CHECK(problems("It takes " + right + ".<!-- m: " + right + " = h100 solution.exercise.gbs -->").size() == 1);
  CHECK(problems("It takes " + right + ".<!-- m: " + right + " = h100 solution.nothing -->")[0].find("no variant `nothing`") !=
        std::string::npos);
  CHECK(problems("It takes " + right + ".<!-- m: " + right + " = h999 solution.exercise -->")[0].find("no run folder `h999`") !=
        std::string::npos);
  CHECK(problems("It takes 1 ms.<!-- m: 2 ms = h100 solution.exercise -->")[0].find("the block has no 2 ms") != std::string::npos);
  // A deeper folder of result files, by its path below measurements/ (an A/B round's side); no
  // path out of measurements/, and no folder that is not there.
  const std::string ab = "h200-protocol-ab/round3/after";
  CHECK(problems("At 32 threads 1428.2 GB/s.<!-- m: 1428.2 GB/s = " + ab + " 08.solution.txt \"32 threads:\" -->").empty());
  CHECK(problems("Prebuilt: 419.09 us.<!-- m: 419.09 us = " + ab + " 11.solution.prebuilt -->").empty());
  CHECK(problems("Prebuilt: 429.09 us.<!-- m: 429.09 us = " + ab + " 11.solution.prebuilt -->").size() == 1);
  CHECK(problems("Took 1.182 ms.<!-- m: 1.182 ms = h100/../h100 solution.interleaved -->")[0].find("no run folder") !=
        std::string::npos);
  CHECK(problems("Took 1.182 ms.<!-- m: 1.182 ms = h200-protocol-ab/round9 solution.interleaved -->")[0].find(
            "no run folder") != std::string::npos);
  // The other half: a number that looks measured needs a source or a word that says it is none.
  p = problems("The H100 reads 3,000 GB/s.\n");
  REQUIRE(p.size() == 1);
  CHECK(p[0] == "t.md:1: 3,000 GB/s looks measured and names no source (<!-- m: 3,000 GB/s = ... -->)");
  CHECK(problems("The H100 reads 3,000 GB/s.\n", false).empty());
  CHECK(problems("Its data sheet: 3.35 TB/s.<!-- m: 3.35 TB/s = spec -->").empty());
  CHECK(problems("Its data sheet: 3.35 TB/s.<!-- m: 3.35 TB/s = datasheet -->").size() == 1);
  // Not numbers that look measured: the 95% of an interval's name, code, links, generated blocks.
  CHECK(problems("The 95% interval of `--min-time-ms 5`, [a](x.md#3-ms).\n\n```\n5 ms\n```\n"
                 "<!-- measured: generated -->\n7 ms\n<!-- end measured -->\n").empty());
}
