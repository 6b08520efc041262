#include "roofline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iterator>
#include <set>
#include <sstream>
#include <utility>

#include "files.hpp"
#include "judge.hpp"
#include "runs.hpp"

namespace lab {

namespace {

// A roof value from "ceilings": only a positive number counts (0 means "not measured").
std::optional<double> roof_of(const json& ceilings, const char* key) {
  auto it = ceilings.find(key);
  if (it == ceilings.end() || !it->is_number() || !(it->get<double>() > 0)) return std::nullopt;
  return it->get<double>();
}

// Numbers for people: three significant digits, but never "1.37e+03" for a plain 1370.
std::string sig3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(v) >= 100 ? "%.0f" : "%#.3g", v);
  return buf;
}

std::string percent(double fraction) { return fixed(100 * fraction, 1) + "%"; }

std::string gflops_text(double gflops) {
  return gflops >= 1000 ? sig3(gflops / 1000) + " TFLOP/s" : sig3(gflops) + " GFLOP/s";
}

const char* kNoComputeRoof =
    "no compute roof (ceilings.fp32_gflops): the lesson ran with an older library; re-run it "
    "with the current one";

// Each pipe's roof: what the picture and the table call it, and the ceiling it is read from.
struct PipeRoof {
  const char* pipe;
  const char* name;
  const char* ceiling;
};
const PipeRoof kPipeRoofs[] = {{"fp32", "FP32 FMA", "fp32_gflops"},
                               {"tf32", "TF32 tensor", "tf32_tensor_gflops"},
                               {"bf16", "BF16 tensor", "bf16_tensor_gflops"}};

const PipeRoof& pipe_roof(const std::string& pipe) {
  for (const PipeRoof& r : kPipeRoofs)
    if (pipe == r.pipe) return r;
  return kPipeRoofs[0];
}

// The pipe a variant's description names, "[pipe: bf16] cuBLAS ...": fp32 without the tag. A
// tag that names no pipe we know is said in `note` and read as fp32.
std::string pipe_of(const json& v, std::string& note) {
  const std::string description = v.value("description", std::string());
  const std::string tag = "[pipe: ";
  if (description.rfind(tag, 0) != 0) return "fp32";
  const std::size_t end = description.find(']');
  const std::string named =
      end == std::string::npos ? "" : description.substr(tag.size(), end - tag.size());
  for (const char* pipe : kPipes)
    if (named == pipe) return pipe;
  note = "its description names no known pipe (\"" + printable(description.substr(0, 40)) +
         "\", known: fp32, tf32, bf16): held against the FP32 roof";
  return "fp32";
}

// A tensor pipe's FLOPs are never held against the FP32 roof: without their own roof they have
// no "% of roof" at all.
std::string no_tensor_roof(const std::string& pipe) {
  const PipeRoof& r = pipe_roof(pipe);
  return std::string("no ") + r.name + " roof (ceilings." + r.ceiling + ") in this run: its " +
         r.name + " rows have no % of roof (the FP32 roof is not theirs)";
}

void add_note(std::string& notes, const std::string& note) {
  notes += (notes.empty() ? "" : "; ") + note;
}

}  // namespace

std::optional<double> RooflineRun::compute_roof(const std::string& pipe) const {
  if (pipe == "tf32") return tf32_gflops;
  if (pipe == "bf16") return bf16_gflops;
  return fp32_gflops;
}

std::optional<double> RooflineRun::ridge() const {
  if (!fp32_gflops) return std::nullopt;
  return *fp32_gflops / copy_gbs;
}

RooflinePoint place_variant(const RooflineRun& run, const json& v) {
  RooflinePoint p;
  // Names from a file anyone could have written: shown only as printable text.
  p.variant = printable(v.value("name", ""));
  p.role = printable(v.value("role", ""));
  p.pipe = pipe_of(v, p.note);
  // A variant the lesson never validated (a reference or a phase timed alone) is not "wrong":
  // only a failed check makes it so.
  const bool checked = v.contains("checks") && v["checks"].is_array() && !v["checks"].empty();
  p.correct = v.value("correct", false) || !checked;
  p.host_link = v.value("host_link", false);
  p.bytes = v.value("bytes", 0.0);
  p.flops = v.value("flops", 0.0);
  // From the bytes, FLOPs and median, as the lesson's table and the rules compute them.
  const Rates rates = rates_of(p.bytes, p.flops, p.host_link,
                               v["time_ms"]["median"].get<double>(), run.copy_gbs, 0);
  p.gbs = rates.gbs;
  p.gflops = rates.gflops;
  if (p.flops > 0) p.intensity = rates.intensity;

  // A wrong answer computed fast is no achievement: list it, hold it against nothing.
  if (!p.correct) {
    p.bound = "WRONG";
    return p;
  }
  // The flat roof is the one of the pipe its FLOPs run on.
  const std::optional<double> compute = run.compute_roof(p.pipe);
  const bool tensor_unmeasured = !compute && p.pipe != "fp32";
  if (p.host_link) {
    // Bytes over PCIe/NVLink-C2C have their own, much lower roof than device memory.
    p.bound = "host link";
    p.roof_unit = "GB/s";
    p.roof = run.h2d_gbs;
    if (!p.roof) add_note(p.note, "no host-link roof (ceilings.h2d_pinned_gbs) in this file");
  } else if (p.intensity) {
    // The roofline: min(memory roof x intensity, compute roof).
    const double memory_roof = run.copy_gbs * *p.intensity;
    p.roof_unit = "GFLOP/s";
    p.drawable = p.gflops > 0;  // a log axis has no place for 0
    if (compute) {
      p.bound = memory_roof < *compute ? "memory" : "compute";
      p.roof = std::min(memory_roof, *compute);
    } else if (tensor_unmeasured) {
      p.bound = "unknown";
      add_note(p.note, no_tensor_roof(p.pipe));
    } else {
      p.bound = "memory?";
      p.roof = memory_roof;
      add_note(p.note, kNoComputeRoof);
    }
  } else if (p.bytes > 0) {
    p.bound = "memory only";
    p.roof_unit = "GB/s";
    p.roof = run.copy_gbs;
  } else if (p.flops > 0) {
    p.bound = "compute only";
    p.roof_unit = "GFLOP/s";
    p.roof = compute;
    if (!p.roof) add_note(p.note, tensor_unmeasured ? no_tensor_roof(p.pipe) : kNoComputeRoof);
  } else {
    p.bound = "time only";  // e.g. launch overhead: no bytes, no FLOPs, no roof
  }
  if (p.roof) p.fraction = (p.roof_unit == "GB/s" ? p.gbs : p.gflops) / *p.roof;
  return p;
}

std::string add_result(Roofline& r, const std::string& file, const json& doc) {
  // The structural check of result files, without the nonce: these files are not from this run.
  json checked = doc;
  if (checked.is_object() && !checked.contains("nonce")) checked["nonce"] = "";
  if (auto e = validate_result(checked); !e.empty()) return "not a lesson result file: " + e;
  const json ceilings = doc.value("ceilings", json::object());
  const json device = doc.value("device", json::object());
  RooflineRun run;
  run.file = printable(file);
  run.lesson = printable(doc["lesson"].get<std::string>());
  run.device = device.contains("name") && device["name"].is_string()
                   ? printable(device["name"].get<std::string>())
                   : "unknown GPU";
  const auto copy = roof_of(ceilings, "copy_gbs");
  if (!copy) return "no measured memory roof (ceilings.copy_gbs), so there is no roofline to draw";
  run.copy_gbs = *copy;
  run.fp32_gflops = roof_of(ceilings, "fp32_gflops");
  run.tf32_gflops = roof_of(ceilings, "tf32_tensor_gflops");
  run.bf16_gflops = roof_of(ceilings, "bf16_tensor_gflops");
  run.h2d_gbs = roof_of(ceilings, "h2d_pinned_gbs");
  r.runs.push_back(run);
  for (const json& v : doc["variants"]) {
    if (!v.contains("time_ms")) continue;  // never measured (it threw before timing)
    RooflinePoint p = place_variant(run, v);
    p.run = r.runs.size() - 1;
    r.points.push_back(std::move(p));
  }
  // By lesson; within a lesson, file order then variant order (the sort is stable).
  std::stable_sort(r.points.begin(), r.points.end(), [&](const auto& a, const auto& b) {
    return r.runs[a.run].lesson < r.runs[b.run].lesson;
  });
  return "";
}

Roofline load_roofline(const std::vector<fs::path>& files) {
  Roofline r;
  for (const fs::path& f : files) {
    std::string why;
    const auto text = read_file_limited(f, kMaxResultBytes, why);
    if (!text) {
      r.errors.push_back(printable(f.string() + ": " + why));
      continue;
    }
    const auto doc = parse_json_limited(*text, why);
    if (!doc) {
      r.errors.push_back(printable(f.string() + ": " + why));
      continue;
    }
    // add_result checks every field it reads; should one still slip through, the library's
    // exception becomes this file's error instead of ending the command.
    try {
      if (auto e = add_result(r, f.string(), *doc); !e.empty())
        r.errors.push_back(printable(f.string() + ": " + e));
    } catch (const json::exception& e) {
      r.errors.push_back(printable(f.string() + ": not a usable result file (" + std::string(e.what()) + ")"));
    }
  }
  std::vector<std::string> devices;
  for (const auto& run : r.runs)
    if (std::find(devices.begin(), devices.end(), run.device) == devices.end())
      devices.push_back(run.device);
  if (devices.size() > 1) {
    std::string list;
    for (const auto& d : devices) list += (list.empty() ? "" : ", ") + d;
    r.warnings.push_back("the results come from " + std::to_string(devices.size()) + " GPUs (" +
                         list + "): each row uses its own file's roofs; the picture shows " +
                         devices.front() + " only");
  }
  return r;
}

std::vector<std::size_t> table_order(const Roofline& r) {
  std::vector<std::string> devices;
  for (const auto& run : r.runs)
    if (std::find(devices.begin(), devices.end(), run.device) == devices.end())
      devices.push_back(run.device);
  std::vector<std::size_t> order;
  for (const auto& d : devices)
    for (bool host : {false, true})
      for (std::size_t i = 0; i < r.points.size(); ++i)
        if (r.runs[r.points[i].run].device == d && r.points[i].host_link == host)
          order.push_back(i);
  return order;
}

std::string roofline_table(const Roofline& r) {
  std::ostringstream out;
  const std::vector<std::size_t> order = table_order(r);
  if (order.empty()) return "no timed variants in these result files\n";
  std::size_t next = 0;
  while (next < order.size()) {
    const std::string device = r.runs[r.points[order[next]].run].device;
    // The header: the roofs of this GPU's first file (and their spread over its other files).
    const RooflineRun* first = nullptr;
    double lo = 0, hi = 0;
    int files = 0;
    for (const auto& run : r.runs) {
      if (run.device != device) continue;
      if (!first) {
        first = &run;
        lo = hi = run.copy_gbs;
      }
      lo = std::min(lo, run.copy_gbs);
      hi = std::max(hi, run.copy_gbs);
      ++files;
    }
    out << device << ": memory roof (copy) " << sig3(first->copy_gbs) << " GB/s, compute roof ";
    if (first->fp32_gflops)
      out << "(FP32 FMA) " << sig3(*first->fp32_gflops) << " GFLOP/s, ridge point "
          << sig3(*first->ridge()) << " FLOP/B";
    else
      out << "unknown";
    if (first->h2d_gbs) out << ", host link (pinned H2D) " << sig3(*first->h2d_gbs) << " GB/s";
    // The tensor roofs, from the first of this GPU's files that measured each (a lesson measures
    // only the one its variants can use).
    for (const char* pipe : {"tf32", "bf16"})
      for (const auto& run : r.runs)
        if (run.device == device && run.compute_roof(pipe)) {
          out << ", " << pipe_roof(pipe).name << " roof " << sig3(*run.compute_roof(pipe))
              << " GFLOP/s (" << run.lesson << ")";
          break;
        }
    out << "\n";
    if (lo != hi)
      out << "  (each row uses its own file's roofs: copy " << sig3(lo) << ".." << sig3(hi)
          << " GB/s over " << files << " files)\n";

    std::vector<std::vector<std::string>> rows = {
        {"lesson", "variant", "role", "pipe", "FLOP/B", "GFLOP/s", "GB/s", "bound", "roof",
         "% of roof"}};
    std::set<std::string> notes;
    std::size_t host_start = 0;  // the row before which the host-link rows begin
    for (; next < order.size(); ++next) {
      const RooflinePoint& p = r.points[order[next]];
      const RooflineRun& run = r.runs[p.run];
      if (run.device != device) break;
      if (p.host_link && !host_start) host_start = rows.size();
      // A tensor variant whose run measured no roof of its pipe says so where its % would be.
      const bool no_pipe_roof =
          p.correct && !p.host_link && p.flops > 0 && p.pipe != "fp32" && !p.roof;
      const std::string fraction = p.fraction     ? percent(*p.fraction)
                                   : no_pipe_roof ? "no " + p.pipe + " roof"
                                                  : "-";
      rows.push_back({run.lesson, p.variant, p.role, p.pipe,
                      p.intensity ? sig3(*p.intensity) : "-",
                      p.flops > 0 ? fixed(p.gflops, 1) : "-", p.bytes > 0 ? fixed(p.gbs, 1) : "-",
                      p.bound, p.roof ? sig3(*p.roof) + " " + p.roof_unit : "-", fraction});
      if (!p.note.empty()) notes.insert(run.file + ": " + p.note);
      if (!p.correct)
        notes.insert("WRONG: the variant's results were incorrect, so its speed means nothing");
    }
    std::vector<std::size_t> width(rows[0].size(), 0);
    for (const auto& row : rows)
      for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i == host_start && i > 0)
        out << "host link (bytes over PCIe/C2C, against the pinned host-to-device copy):\n";
      std::string line;
      for (std::size_t c = 0; c < rows[i].size(); ++c) {
        const std::string& cell = rows[i][c];
        const std::string pad(width[c] - cell.size(), ' ');
        const bool number = c >= 4 && c != 7;  // numbers right-aligned
        line += (c ? "  " : "") + (number ? pad + cell : cell + pad);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
    for (const auto& n : notes) out << "note: " << n << "\n";
  }
  return out.str();
}

json roofline_json(const Roofline& r) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json out = json::array();
  for (std::size_t i : table_order(r)) {
    const RooflinePoint& p = r.points[i];
    const RooflineRun& run = r.runs[p.run];
    out.push_back({{"file", run.file},
                   {"device", run.device},
                   {"lesson", run.lesson},
                   {"variant", p.variant},
                   {"role", p.role},
                   {"pipe", p.pipe},
                   {"correct", p.correct},
                   {"host_link", p.host_link},
                   {"flop_per_byte", opt(p.intensity)},
                   {"gflops", p.gflops},
                   {"gbs", p.gbs},
                   {"bound", p.bound},
                   {"roof", opt(p.roof)},
                   {"roof_unit", p.roof.has_value() ? json(p.roof_unit) : json(nullptr)},
                   {"fraction_of_roof", opt(p.fraction)},
                   {"drawn", p.drawable && run.device == r.runs[0].device},
                   {"note", p.note}});
  }
  return out;
}

// ------------------------------------------------------------------ the picture

namespace {

// Text for XML 1.0: printable (well-formed UTF-8, no control characters, no U+FFFE or U+FFFF,
// none of which XML allows), then the five special characters escaped.
std::string xml(const std::string& s) {
  std::string out;
  for (const char ch : printable(s)) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': case '\t': out += ' '; break;
      default: out += ch;
    }
  }
  return out;
}

std::string px(double v) { return fixed(v, 1); }

// Tick labels: 2^k as "1/8", "1", "256"; 10^k as "0.1", "1", "1000", "1e6".
std::string pow2_label(int k) {
  if (k < -30 || k > 30) return "2^" + std::to_string(k);  // beyond what a shift can hold
  return k < 0 ? "1/" + std::to_string(1 << -k) : std::to_string(1 << k);
}
std::string pow10_label(int k) {
  if (k < -3 || k > 5) return "1e" + std::to_string(k);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", std::pow(10.0, k));
  return buf;
}

// Twelve colours, one for each lesson of the course, that stay apart on white.
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#ad494a"};

// A rectangle of the picture, in pixels (y grows downwards).
struct Box {
  double left = 0, top = 0, right = 0, bottom = 0;
};

// Whether a and b come closer than the gap kept between labels.
bool near(const Box& a, const Box& b) {
  return a.left < b.right + kLabelGapPx && b.left < a.right + kLabelGapPx &&
         a.top < b.bottom + kLabelGapPx && b.top < a.bottom + kLabelGapPx;
}

bool within(const Box& a, const Box& area) {
  return a.left >= area.left && a.right <= area.right && a.top >= area.top &&
         a.bottom <= area.bottom;
}

// The columns a monospace font gives UTF-8 text: one per character, two for a character of
// three or four bytes (East Asian wide ones are among them: better too wide than overlapping).
double columns(const std::string& text) {
  double n = 0;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c & 0xC0) != 0x80) n += c >= 0xE0 ? 2 : 1;  // continuation bytes add nothing
  }
  return n;
}

double text_width(const std::string& text) { return columns(text) * kCharWidthEm * kLabelFontPx; }
double text_height() { return (kAscentEm + kDescentEm) * kLabelFontPx; }

// The box of a label whose text starts at x, with its baseline at y.
Box text_box(const std::string& text, double x, double y) {
  return {x, y - kAscentEm * kLabelFontPx, x + text_width(text), y + kDescentEm * kLabelFontPx};
}

// Whether the segment from (ax, ay) to (bx, by) passes through b (Liang-Barsky clipping).
bool crosses(double ax, double ay, double bx, double by, const Box& b) {
  const double p[4] = {ax - bx, bx - ax, ay - by, by - ay};
  const double q[4] = {ax - b.left, b.right - ax, ay - b.top, b.bottom - ay};
  double enter = 0, leave = 1;
  for (int i = 0; i < 4; ++i) {
    if (p[i] == 0) {
      if (q[i] < 0) return false;  // parallel to this edge, and outside it
      continue;
    }
    const double t = q[i] / p[i];
    if (p[i] < 0)
      enter = std::max(enter, t);
    else
      leave = std::min(leave, t);
    if (enter > leave) return false;
  }
  return true;
}

// Where the labels of the dots go: beside the dot where there is room, else in the nearest free
// place within reach, joined to the dot by a leader line; never over another label, a dot, a
// roof's label or a leader line, and never outside the plot. Deterministic: the same dots in
// the same order get the same places. A "dot" here is the box of the dots one label names
// (dots that cover each other share a label).
class LabelPlacer {
 public:
  struct Spot {
    Box box;
    bool leader = false;              // drawn with a line from the dot to the label:
    double start_x = 0, start_y = 0;  // the middle of the dot's box
    double end_x = 0, end_y = 0;      // where the line meets the label's box
  };

  explicit LabelPlacer(const Box& area) : area_(area) {}
  void add_dot(const Box& dot) { dots_.push_back(dot); }
  void add_text(const Box& b) { texts_.push_back(b); }
  // A line no label may cover (a flat roof); leader lines may cross it.
  void add_line(const Box& b) { lines_.push_back(b); }

  // Whether a label could go in b: inside the plot, clear of the other labels and lines, and
  // kClearPx from every dot but its own (@p own, an index into the dots; none for a roof's):
  // inside a crowd no label sits between the dots, where it would wall the others' lines in.
  bool free(const Box& b, std::size_t own = kNone) const {
    if (!within(b, area_)) return false;
    for (std::size_t i = 0; i < dots_.size(); ++i)
      if (near(b, i == own ? dots_[i] : grown(dots_[i], kClearPx))) return false;
    for (const auto* boxes : {&texts_, &labels_, &lines_})
      for (const Box& o : *boxes)
        if (near(b, o)) return false;
    for (const Leader& l : leaders_)
      if (crosses(l.ax, l.ay, l.bx, l.by, grown(b, kLabelGapPx))) return false;
    return true;
  }

  // A place for a label w x h of dot number @p dot, taken; none if there is no room in reach.
  // The label of a dot in a @p crowd goes wholly left or right of it: above or below, it would
  // stretch across the crowd, a wall that the lines of the next labels could not pass.
  // Only with @p search does it look farther than beside the dot (the search costs a
  // millisecond or more a label once the plot fills up).
  std::optional<Spot> place(std::size_t dot, double w, double h, bool crowd, bool search) {
    const Box& d = dots_[dot];
    const double cx = (d.left + d.right) / 2, cy = (d.top + d.bottom) / 2;
    constexpr double g = 3;  // between a dot and its label
    const Box beside[] = {{d.right + g, cy - h / 2, d.right + g + w, cy + h / 2},  // right
                          {d.left - g - w, cy - h / 2, d.left - g, cy + h / 2},    // left
                          {cx + 2, d.top - g - h, cx + 2 + w, d.top - g},          // above right
                          {cx + 2, d.bottom + g, cx + 2 + w, d.bottom + g + h},    // below right
                          {cx - 2 - w, d.top - g - h, cx - 2, d.top - g},          // above left
                          {cx - 2 - w, d.bottom + g, cx - 2, d.bottom + g + h}};   // below left
    for (const Box& b : beside)
      if (free(b, dot)) return take(Spot{b, false, 0, 0, 0, 0});
    if (!search) return std::nullopt;

    // Farther away: every place of a grid within reach, the nearest first (a stable sort: on a
    // tie, the grid's order decides).
    constexpr double kReachX = 400, kReachY = 300, kStepX = 6, kStepY = 4;
    std::vector<std::pair<double, Box>> places;
    for (double dy = -kReachY; dy <= kReachY; dy += kStepY)
      for (double dx = -kReachX - w; dx <= kReachX; dx += kStepX) {
        const Box b{cx + dx, cy + dy - h / 2, cx + dx + w, cy + dy + h / 2};
        if (within(b, area_)) places.push_back({distance(cx, cy, b), b});
      }
    std::stable_sort(places.begin(), places.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // A crowd's label goes sideways where it can; above or below only where it cannot.
    for (const bool sideways : {true, false}) {
      if (sideways && !crowd) continue;
      for (const auto& [dist, b] : places) {
        if ((sideways && b.left < d.right + g && b.right > d.left - g) || !free(b, dot)) continue;
        // The line ends in the middle of the label's side that faces the dot, never at a
        // corner that the labels stacked above and below touch.
        const bool side = cx < b.left || cx > b.right;
        const Spot s{b, true, cx, cy, side ? (cx < b.left ? b.left : b.right) : cx,
                     side ? (b.top + b.bottom) / 2 : (cy < b.top ? b.top : b.bottom)};
        if (!leader_free(cx, cy, s.end_x, s.end_y)) continue;
        leaders_.push_back({cx, cy, s.end_x, s.end_y});
        return take(s);
      }
    }
    return std::nullopt;
  }

 private:
  struct Leader {
    double ax, ay, bx, by;
  };
  static constexpr std::size_t kNone = std::size_t(-1);
  static constexpr double kClearPx = 6;
  static Box grown(const Box& b, double by) {
    return {b.left - by, b.top - by, b.right + by, b.bottom + by};
  }
  static double distance(double x, double y, const Box& b) {
    const double dx = std::max({b.left - x, 0.0, x - b.right});
    const double dy = std::max({b.top - y, 0.0, y - b.bottom});
    return std::hypot(dx, dy);
  }
  // A leader line crosses no label: the dots it passes are left to their colours.
  bool leader_free(double ax, double ay, double bx, double by) const {
    for (const auto* boxes : {&texts_, &labels_})
      for (const Box& o : *boxes)
        if (crosses(ax, ay, bx, by, grown(o, kLabelGapPx))) return false;
    return true;
  }
  Spot take(const Spot& s) {
    labels_.push_back(s.box);
    return s;
  }

  Box area_;
  std::vector<Box> dots_, texts_, labels_, lines_;
  std::vector<Leader> leaders_;
};

}  // namespace

std::string roofline_svg(const Roofline& r) {
  if (r.runs.empty()) return "";
  const RooflineRun& roofs = r.runs.front();

  // What is drawn: correct device-memory kernels with bytes and FLOPs, run on the first GPU.
  std::vector<const RooflinePoint*> drawn;
  int memory_only = 0, host_link = 0, wrong = 0, other_gpu = 0, rest = 0;
  for (const auto& p : r.points) {
    if (r.runs[p.run].device != roofs.device)
      ++other_gpu;
    else if (p.drawable)
      drawn.push_back(&p);
    else if (!p.correct)
      ++wrong;
    else if (p.host_link)
      ++host_link;
    else if (p.bound == "memory only")
      ++memory_only;
    else
      ++rest;
  }
  std::vector<std::string> lessons;  // the legend, in table order
  for (const auto* p : drawn)
    if (std::find(lessons.begin(), lessons.end(), r.runs[p->run].lesson) == lessons.end())
      lessons.push_back(r.runs[p->run].lesson);
  auto lesson_number = [](const std::string& lesson) { return lesson.substr(0, lesson.find('-')); };

  // The tensor roofs of this GPU: each from the first of its files that measured it.
  struct TensorRoof {
    const PipeRoof* pipe;
    double gflops;
    std::string lesson;
  };
  std::vector<TensorRoof> tensor;
  for (const char* pipe : {"tf32", "bf16"})
    for (const auto& run : r.runs)
      if (run.device == roofs.device && run.compute_roof(pipe)) {
        tensor.push_back({&pipe_roof(pipe), *run.compute_roof(pipe), run.lesson});
        break;
      }

  // Axis ranges: powers of 2 (x) and 10 (y) covering the roofs and every dot, with a margin.
  double xlo = 1.0 / 16, xhi = 256;
  if (roofs.ridge()) xhi = std::max(xhi, 4 * *roofs.ridge());
  for (const auto& t : tensor) xhi = std::max(xhi, 2 * t.gflops / roofs.copy_gbs);
  for (const auto* p : drawn) {
    xlo = std::min(xlo, *p->intensity / 2);
    xhi = std::max(xhi, *p->intensity * 2);
  }
  // The tick loops below run from one exponent to the other: keep both finite and bounded even
  // if a number slipped past add_result's checks (log of 0 is -inf, and its cast undefined).
  auto exponent = [](double e, int lo, int hi) {
    return std::isfinite(e) ? static_cast<int>(std::clamp(e, double(lo), double(hi))) : (e > 0 ? hi : lo);
  };
  const int x0 = exponent(std::floor(std::log2(xlo)), -120, 119);
  const int x1 = std::max(x0 + 1, exponent(std::ceil(std::log2(xhi)), -119, 120));
  xlo = std::ldexp(1.0, x0);
  xhi = std::ldexp(1.0, x1);
  double top = roofs.fp32_gflops ? *roofs.fp32_gflops : roofs.copy_gbs * xhi;
  for (const auto& t : tensor) top = std::max(top, t.gflops);
  double ylo = roofs.copy_gbs * xlo, yhi = top;
  for (const auto* p : drawn) {
    ylo = std::min(ylo, p->gflops);
    yhi = std::max(yhi, p->gflops);
  }
  // A little room above the highest flat roof for its label.
  const int y0 = exponent(std::floor(std::log10(ylo / 1.3)), -40, 39);
  const int y1 = std::max(y0 + 1, exponent(std::ceil(std::log10(yhi * 1.5)), -39, 40));

  // The canvas: the plot on the left, the legend on the right.
  const double W = 1100, H = 700, L = 80, R = 860, T = 50, B = 610;
  auto X = [&](double i) { return L + (std::log2(i) - x0) / (x1 - x0) * (R - L); };
  auto Y = [&](double g) { return B - (std::log10(g) - y0) / (y1 - y0) * (B - T); };

  std::ostringstream s;
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << W << "\" height=\""
    << H << "\" viewBox=\"0 0 " << W << " " << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << L
    << "\" y=\"28\" font-size=\"16\" font-weight=\"bold\">Roofline: " << xml(roofs.device)
    << "</text>\n";

  // Grid and tick labels; a tick label only every so many grid lines where they would crowd.
  s << "<g stroke=\"#dddddd\">\n";
  for (int k = x0; k <= x1; ++k)
    s << "<line x1=\"" << px(X(std::ldexp(1.0, k))) << "\" y1=\"" << T << "\" x2=\""
      << px(X(std::ldexp(1.0, k))) << "\" y2=\"" << B << "\"/>\n";
  for (int k = y0; k <= y1; ++k)
    s << "<line x1=\"" << L << "\" y1=\"" << px(Y(std::pow(10.0, k))) << "\" x2=\"" << R
      << "\" y2=\"" << px(Y(std::pow(10.0, k))) << "\"/>\n";
  std::size_t widest = 0;
  for (int k = x0; k <= x1; ++k) widest = std::max(widest, pow2_label(k).size());
  const int x_every = static_cast<int>(std::ceil((7.0 * widest + 8) / ((R - L) / (x1 - x0))));
  const int y_every = static_cast<int>(std::ceil(16 / ((B - T) / (y1 - y0))));
  auto labelled = [](int k, int every) { return ((k % every) + every) % every == 0; };
  s << "</g>\n<g fill=\"#444444\">\n";
  for (int k = x0; k <= x1; ++k)
    if (labelled(k, x_every))
      s << "<text x=\"" << px(X(std::ldexp(1.0, k))) << "\" y=\"" << B + 16
        << "\" text-anchor=\"middle\">" << pow2_label(k) << "</text>\n";
  for (int k = y0; k <= y1; ++k)
    if (labelled(k, y_every))
      s << "<text x=\"" << L - 6 << "\" y=\"" << px(Y(std::pow(10.0, k)) + 4)
        << "\" text-anchor=\"end\">" << pow10_label(k) << "</text>\n";
  s << "<text x=\"" << (L + R) / 2 << "\" y=\"" << B + 36
    << "\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n"
    << "<text transform=\"translate(24," << (T + B) / 2
    << ") rotate(-90)\" text-anchor=\"middle\">GFLOP/s</text>\n</g>\n"
    << "<rect class=\"frame\" x=\"" << L << "\" y=\"" << T << "\" width=\"" << R - L << "\" height=\"" << B - T
    << "\" fill=\"none\" stroke=\"#888888\"/>\n";

  // The dots, and a label for each group of dots that cover one another ("08 cub, exercise"):
  // a dot closer than its radius to a group's first dot joins that group, while its label
  // stays short enough to find a place.
  struct Group {
    double x, y;  // its first dot, where a leader line starts
    Box box;      // around all its dots
    std::string text;
    std::string last_lesson;
    std::vector<std::string> names;  // "lesson variant" of each, once
  };
  std::vector<Group> groups;
  std::ostringstream dots;
  for (const auto* p : drawn) {
    const std::string& lesson = r.runs[p->run].lesson;
    const std::size_t colour = std::find(lessons.begin(), lessons.end(), lesson) - lessons.begin();
    const double x = X(*p->intensity), y = Y(p->gflops), d = 6;  // radius 5, and the stroke
    dots << "<circle cx=\"" << px(x) << "\" cy=\"" << px(y) << "\" r=\"5\" fill=\""
         << kPalette[colour % std::size(kPalette)] << "\" stroke=\"white\"/>\n";
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return std::hypot(g.x - x, g.y - y) < d && g.text.size() + p->variant.size() < 48;
    });
    if (g == groups.end()) {
      groups.push_back({x, y, {x - d, y - d, x + d, y + d}, "", "", {}});
      g = groups.end() - 1;
    }
    g->box = {std::min(g->box.left, x - d), std::min(g->box.top, y - d),
              std::max(g->box.right, x + d), std::max(g->box.bottom, y + d)};
    // Each name once (a starter's run and its solution's share them), the lesson's number
    // once for a run of its variants.
    if (std::find(g->names.begin(), g->names.end(), lesson + " " + p->variant) != g->names.end())
      continue;
    g->names.push_back(lesson + " " + p->variant);
    g->text += (g->text.empty() ? "" : ", ") +
               (lesson == g->last_lesson ? "" : lesson_number(lesson) + " ") + p->variant;
    g->last_lesson = lesson;
  }

  // Every text inside the plot is monospace, so that its box is known here (kCharWidthEm), and
  // goes through the placer, so that none covers another or a dot. A text with no free place
  // among its own is left out, and counted in the caption.
  LabelPlacer placer({L + 2, T + 2, R - 2, B - 2});
  for (const Group& g : groups) placer.add_dot(g.box);
  int unlabelled = 0;
  std::ostringstream texts;  // the roofs' labels, written after the roofs
  auto roof_label = [&](const std::string& text, const std::vector<std::pair<double, double>>& at) {
    for (const auto& [x, y] : at)
      if (placer.free(text_box(text, x, y))) {
        placer.add_text(text_box(text, x, y));
        texts << "<text class=\"roof-label\" x=\"" << px(x) << "\" y=\"" << px(y) << "\">"
              << xml(text) << "</text>\n";
        return;
      }
    ++unlabelled;
  };

  // The tensor roofs, behind the FP32 one: the memory roof carries on up to each (dashed).
  for (const auto& t : tensor) {
    const double knee = std::clamp(t.gflops / roofs.copy_gbs, xlo, xhi);
    s << "<polyline class=\"roof tensor\" fill=\"none\" stroke=\"#555555\" stroke-width=\"1.5\" "
         "stroke-dasharray=\"6,3\" points=\""
      << px(X(xlo)) << "," << px(Y(roofs.copy_gbs * xlo)) << " " << px(X(knee)) << ","
      << px(Y(roofs.copy_gbs * knee)) << " " << px(X(xhi)) << "," << px(Y(t.gflops)) << "\"/>\n";
  }
  // The roof: rising with the memory roof up to the ridge, then flat at the FP32 roof.
  const double knee = roofs.ridge() ? std::clamp(*roofs.ridge(), xlo, xhi) : xhi;
  const double knee_y = roofs.copy_gbs * knee;
  s << "<polyline class=\"roof\" fill=\"none\" stroke=\"black\" stroke-width=\"2\" points=\""
    << px(X(xlo)) << "," << px(Y(roofs.copy_gbs * xlo)) << " " << px(X(knee)) << ","
    << px(Y(knee_y));
  if (roofs.fp32_gflops) s << " " << px(X(xhi)) << "," << px(Y(*roofs.fp32_gflops));
  s << "\"/>\n";

  // The flat roofs' labels on their flat part, as far right as a place is free: above the line
  // or below it, then a line farther off; left of the corner only if there is no other place.
  struct Flat {
    std::string text;
    double gflops;
  };
  std::vector<Flat> flats;
  if (roofs.fp32_gflops)
    flats.push_back({"FP32 FMA " + gflops_text(*roofs.fp32_gflops), *roofs.fp32_gflops});
  for (const auto& t : tensor)
    flats.push_back({std::string(t.pipe->name) + " " + gflops_text(t.gflops) + " (lesson " +
                         lesson_number(t.lesson) + ")",
                     t.gflops});
  for (const Flat& f : flats) {
    const double y = Y(f.gflops);
    placer.add_line({std::max(X(f.gflops / roofs.copy_gbs), L), y - 1, R, y + 1});
  }
  for (const Flat& f : flats) {
    const double w = text_width(f.text), y = Y(f.gflops), corner = X(f.gflops / roofs.copy_gbs);
    const double line = (kAscentEm + kDescentEm) * kLabelFontPx + 2;
    std::vector<std::pair<double, double>> at;
    for (const double baseline : {y - 5, y + 5 + kAscentEm * kLabelFontPx, y - 5 - line,
                                  y + 5 + kAscentEm * kLabelFontPx + line})
      for (double x = R - 6 - w; x >= std::min(corner + 4, R - 6 - w); x -= 10)
        at.push_back({x, baseline});
    for (double x = std::min(corner + 4, R - 6 - w) - 10; x > L; x -= 10) {
      at.push_back({x, y - 5});
      at.push_back({x, y + 5 + kAscentEm * kLabelFontPx});
    }
    roof_label(f.text, at);
  }
  if (roofs.fp32_gflops) {
    // The ridge: left of it a kernel cannot reach the FP32 roof, whatever it does.
    const std::string ridge = "ridge " + sig3(*roofs.ridge()) + " FLOP/B";
    s << "<line class=\"ridge\" x1=\"" << px(X(knee)) << "\" y1=\"" << T << "\" x2=\""
      << px(X(knee)) << "\" y2=\"" << B << "\" stroke=\"#666666\" stroke-dasharray=\"2,4\"/>\n";
    const double right = std::min(X(knee) + 4, R - 4 - text_width(ridge));
    const double left = X(knee) - 4 - text_width(ridge);
    roof_label(ridge, {{right, B - 6}, {left, B - 6}, {right, B - 22}, {left, B - 22}});
  } else {
    const std::string unknown = "compute roof unknown (no fp32_gflops in the result file)";
    const double x = R - 6 - text_width(unknown);
    roof_label(unknown, {{x, T + 16}, {x, B - 6}});
  }
  // The memory roof's label runs along its slope, half way up or as near there as it finds no
  // dot: the placer keeps the other labels off it through a chain of small boxes along the text.
  const std::string copy = "copy " + sig3(roofs.copy_gbs) + " GB/s";
  const double ax = X(xlo), ay = Y(roofs.copy_gbs * xlo), bx = X(knee), by = Y(knee_y);
  const double angle = std::atan2(by - ay, bx - ax);
  const double along = std::hypot(bx - ax, by - ay), length = text_width(copy);
  auto chain = [&](double start) {  // the boxes of the text when it starts `start` along
    std::vector<Box> boxes;
    const double half = kLabelFontPx * 0.65, up = 6 + 0.33 * kLabelFontPx;  // its middle line
    for (double t = start; t <= start + length; t += kLabelFontPx / 2) {
      const double mx = ax + t * std::cos(angle) + up * std::sin(angle);
      const double my = ay + t * std::sin(angle) - up * std::cos(angle);
      boxes.push_back({mx - half, my - half, mx + half, my + half});
    }
    return boxes;
  };
  double start = (along - length) / 2;
  for (const double f : {0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9}) {
    const std::vector<Box> boxes = chain(f * (along - length));
    if (std::all_of(boxes.begin(), boxes.end(), [&](const Box& b) { return placer.free(b); })) {
      start = f * (along - length);
      break;
    }
  }
  for (const Box& b : chain(start)) placer.add_text(b);
  texts << "<text class=\"slope-label\" transform=\"translate("
        << px(ax + start * std::cos(angle)) << "," << px(ay + start * std::sin(angle))
        << ") rotate(" << px(angle * 180 / 3.14159265358979) << ")\" y=\"-6\">" << xml(copy)
        << "</text>\n";

  // The dots' labels, one after the other, each taking its place for good: the order decides
  // how many find one. First the labels of crowded dots, while there is still room around them
  // to lead a line out, then the others, which find room beside their dots more easily. Where
  // that leaves some out, other orders are tried too (the reverse, the table's, along each
  // axis), and the layout that leaves out the fewest labels, then has the shortest lines, wins.
  // Each try costs as much as the first: a plot with many labels (hardly readable anyway) gets
  // one, and above kMaxSearched labels only the places beside their dots are tried.
  constexpr std::size_t kMaxSearched = 120, kMaxRetried = 60;
  std::vector<std::size_t> crowd(groups.size(), 0);
  for (std::size_t i = 0; i < groups.size(); ++i)
    for (const Group& g : groups) crowd[i] += std::hypot(g.x - groups[i].x, g.y - groups[i].y) < 40;
  struct Layout {
    std::vector<std::optional<LabelPlacer::Spot>> spots;
    int missing = 0;
    double lines = 0;
  };
  auto lay_out = [&](auto before) {
    std::vector<std::size_t> order(groups.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), before);
    LabelPlacer p = placer;  // the roofs' labels in place, no dot's yet
    Layout l;
    l.spots.resize(groups.size());
    for (const std::size_t i : order) {
      l.spots[i] = p.place(i, text_width(groups[i].text), text_height(), crowd[i] > 1,
                           groups.size() <= kMaxSearched);
      if (!l.spots[i])
        ++l.missing;
      else if (l.spots[i]->leader)
        l.lines += std::hypot(l.spots[i]->end_x - l.spots[i]->start_x,
                              l.spots[i]->end_y - l.spots[i]->start_y);
    }
    return l;
  };
  std::vector<Layout> layouts = {
      lay_out([&](std::size_t a, std::size_t b) { return crowd[a] > crowd[b]; })};
  using Before = std::function<bool(std::size_t, std::size_t)>;
  const Before others[] = {
      [&](std::size_t a, std::size_t b) { return crowd[a] < crowd[b]; },
      [](std::size_t a, std::size_t b) { return a < b; },
      [&](std::size_t a, std::size_t b) { return groups[a].x < groups[b].x; },
      [&](std::size_t a, std::size_t b) { return groups[a].x > groups[b].x; },
      [&](std::size_t a, std::size_t b) { return groups[a].y < groups[b].y; },
      [&](std::size_t a, std::size_t b) { return groups[a].y > groups[b].y; }};
  for (const Before& before : others)
    if (layouts.back().missing > 0 && groups.size() <= kMaxRetried)
      layouts.push_back(lay_out(before));
  const Layout& best = *std::min_element(
      layouts.begin(), layouts.end(), [](const Layout& a, const Layout& b) {
        return std::pair(a.missing, a.lines) < std::pair(b.missing, b.lines);
      });
  unlabelled += best.missing;
  std::ostringstream labels, leaders;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const auto& spot = best.spots[i];
    if (!spot) continue;
    if (spot->leader)
      leaders << "<line class=\"leader\" x1=\"" << px(spot->start_x) << "\" y1=\""
              << px(spot->start_y) << "\" x2=\"" << px(spot->end_x) << "\" y2=\"" << px(spot->end_y)
              << "\"/>\n";
    labels << "<text class=\"label\" x=\"" << px(spot->box.left) << "\" y=\""
           << px(spot->box.top + kAscentEm * kLabelFontPx) << "\">" << xml(g.text) << "</text>\n";
  }
  s << "<g stroke=\"#999999\" stroke-width=\"0.8\">\n" << leaders.str() << "</g>\n"
    << dots.str() << "<g font-family=\"monospace\" font-size=\"" << kLabelFontPx << "\">\n"
    << texts.str() << labels.str() << "</g>\n";
  for (std::size_t i = 0; i < lessons.size(); ++i) {
    const double ly2 = T + 10 + 20 * i;
    s << "<circle cx=\"" << R + 20 << "\" cy=\"" << ly2 << "\" r=\"5\" fill=\""
      << kPalette[i % std::size(kPalette)] << "\"/>\n<text x=\"" << R + 30 << "\" y=\"" << ly2 + 4
      << "\">" << xml(lessons[i]) << "</text>\n";
  }

  // What the picture leaves out, so nobody looks for it there.
  std::string caption = "Only in the table: " + std::to_string(memory_only) + " memory-only, " +
                        std::to_string(host_link) + " host-link, " + std::to_string(wrong) +
                        " wrong";
  if (rest) caption += ", " + std::to_string(rest) + " other (compute-only or no bytes/FLOPs)";
  caption += " variant(s).";
  if (other_gpu)
    caption += " " + std::to_string(other_gpu) + " variant(s) from other GPUs left out.";
  if (unlabelled)
    caption += " " + std::to_string(unlabelled) + " label(s) left out for lack of room.";
  s << "<text x=\"" << L << "\" y=\"" << H - 20 << "\" fill=\"#444444\">" << xml(caption)
    << "</text>\n</svg>\n";
  return s.str();
}

}  // namespace lab
