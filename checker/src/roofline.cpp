#include "roofline.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

}  // namespace

std::optional<double> RooflineRun::ridge() const {
  if (!fp32_gflops) return std::nullopt;
  return *fp32_gflops / copy_gbs;
}

RooflinePoint place_variant(const RooflineRun& run, const json& v) {
  RooflinePoint p;
  // Names from a file anyone could have written: shown only as printable text.
  p.variant = printable(v.value("name", ""));
  p.role = printable(v.value("role", ""));
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
  if (p.host_link) {
    // Bytes over PCIe/NVLink-C2C have their own, much lower roof than device memory.
    p.bound = "host link";
    p.roof_unit = "GB/s";
    p.roof = run.h2d_gbs;
    if (!p.roof) p.note = "no host-link roof (ceilings.h2d_pinned_gbs) in this file";
  } else if (p.intensity) {
    // The roofline: min(memory roof x intensity, compute roof).
    const double memory_roof = run.copy_gbs * *p.intensity;
    p.roof_unit = "GFLOP/s";
    p.drawable = p.gflops > 0;  // a log axis has no place for 0
    if (run.fp32_gflops) {
      p.bound = memory_roof < *run.fp32_gflops ? "memory" : "compute";
      p.roof = std::min(memory_roof, *run.fp32_gflops);
    } else {
      p.bound = "memory?";
      p.roof = memory_roof;
      p.note = kNoComputeRoof;
    }
  } else if (p.bytes > 0) {
    p.bound = "memory only";
    p.roof_unit = "GB/s";
    p.roof = run.copy_gbs;
  } else if (p.flops > 0) {
    p.bound = "compute only";
    p.roof_unit = "GFLOP/s";
    p.roof = run.fp32_gflops;
    if (!p.roof) p.note = kNoComputeRoof;
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
    out << "\n";
    if (lo != hi)
      out << "  (each row uses its own file's roofs: copy " << sig3(lo) << ".." << sig3(hi)
          << " GB/s over " << files << " files)\n";

    std::vector<std::vector<std::string>> rows = {
        {"lesson", "variant", "role", "FLOP/B", "GFLOP/s", "GB/s", "bound", "roof", "% of roof"}};
    std::set<std::string> notes;
    std::size_t host_start = 0;  // the row before which the host-link rows begin
    for (; next < order.size(); ++next) {
      const RooflinePoint& p = r.points[order[next]];
      const RooflineRun& run = r.runs[p.run];
      if (run.device != device) break;
      if (p.host_link && !host_start) host_start = rows.size();
      rows.push_back({run.lesson, p.variant, p.role, p.intensity ? sig3(*p.intensity) : "-",
                      p.flops > 0 ? fixed(p.gflops, 1) : "-", p.bytes > 0 ? fixed(p.gbs, 1) : "-",
                      p.bound, p.roof ? sig3(*p.roof) + " " + p.roof_unit : "-",
                      p.fraction ? percent(*p.fraction) : "-"});
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
        const bool number = c >= 3 && c != 6;  // numbers right-aligned
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

// A small palette that stays apart on white and for most colour-blind readers.
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                "#9467bd", "#8c564b", "#e377c2", "#17becf"};

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

  // Axis ranges: powers of 2 (x) and 10 (y) covering the roofs and every dot, with a margin.
  double xlo = 1.0 / 16, xhi = 256;
  if (roofs.ridge()) xhi = std::max(xhi, 4 * *roofs.ridge());
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
  const double top = roofs.fp32_gflops ? *roofs.fp32_gflops : roofs.copy_gbs * xhi;
  double ylo = roofs.copy_gbs * xlo, yhi = top;
  for (const auto* p : drawn) {
    ylo = std::min(ylo, p->gflops);
    yhi = std::max(yhi, p->gflops);
  }
  // A little room above the flat roof for its label.
  const int y0 = exponent(std::floor(std::log10(ylo / 1.3)), -40, 39);
  const int y1 = std::max(y0 + 1, exponent(std::ceil(std::log10(yhi * 1.3)), -39, 40));

  // The canvas: the plot on the left, the legend on the right.
  const double W = 900, H = 600, L = 80, R = 700, T = 50, B = 520;
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

  // Grid and tick labels.
  s << "<g stroke=\"#dddddd\">\n";
  for (int k = x0; k <= x1; ++k)
    s << "<line x1=\"" << px(X(std::ldexp(1.0, k))) << "\" y1=\"" << T << "\" x2=\""
      << px(X(std::ldexp(1.0, k))) << "\" y2=\"" << B << "\"/>\n";
  for (int k = y0; k <= y1; ++k)
    s << "<line x1=\"" << L << "\" y1=\"" << px(Y(std::pow(10.0, k))) << "\" x2=\"" << R
      << "\" y2=\"" << px(Y(std::pow(10.0, k))) << "\"/>\n";
  s << "</g>\n<g fill=\"#444444\">\n";
  for (int k = x0; k <= x1; ++k)
    s << "<text x=\"" << px(X(std::ldexp(1.0, k))) << "\" y=\"" << B + 16
      << "\" text-anchor=\"middle\">" << pow2_label(k) << "</text>\n";
  for (int k = y0; k <= y1; ++k)
    s << "<text x=\"" << L - 6 << "\" y=\"" << px(Y(std::pow(10.0, k)) + 4)
      << "\" text-anchor=\"end\">" << pow10_label(k) << "</text>\n";
  s << "<text x=\"" << (L + R) / 2 << "\" y=\"" << B + 36
    << "\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n"
    << "<text transform=\"translate(24," << (T + B) / 2
    << ") rotate(-90)\" text-anchor=\"middle\">GFLOP/s</text>\n</g>\n"
    << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << R - L << "\" height=\"" << B - T
    << "\" fill=\"none\" stroke=\"#888888\"/>\n";

  // The roof: rising with the memory roof up to the ridge, then flat at the compute roof.
  const double knee = roofs.ridge() ? std::clamp(*roofs.ridge(), xlo, xhi) : xhi;
  const double knee_y = roofs.copy_gbs * knee;
  s << "<polyline class=\"roof\" fill=\"none\" stroke=\"black\" stroke-width=\"2\" points=\""
    << px(X(xlo)) << "," << px(Y(roofs.copy_gbs * xlo)) << " " << px(X(knee)) << ","
    << px(Y(knee_y));
  if (roofs.fp32_gflops) s << " " << px(X(xhi)) << "," << px(Y(*roofs.fp32_gflops));
  s << "\"/>\n";
  // The memory roof's label runs along its slope, half way up (most dots sit lower down).
  const double ax = X(xlo), ay = Y(roofs.copy_gbs * xlo), bx = X(knee), by = Y(knee_y);
  const double angle = std::atan2(by - ay, bx - ax) * 180 / 3.14159265358979;
  const double lx = ax + (bx - ax) / 2, ly = ay + (by - ay) / 2;
  s << "<text transform=\"translate(" << px(lx) << "," << px(ly) << ") rotate(" << px(angle)
    << ")\" y=\"-6\">copy " << sig3(roofs.copy_gbs) << " GB/s</text>\n";
  if (roofs.fp32_gflops) {
    s << "<text x=\"" << R - 6 << "\" y=\"" << px(Y(*roofs.fp32_gflops) - 6)
      << "\" text-anchor=\"end\">FP32 FMA " << gflops_text(*roofs.fp32_gflops) << "</text>\n";
    // The ridge: left of it a kernel cannot reach the compute roof, whatever it does.
    s << "<line class=\"ridge\" x1=\"" << px(X(knee)) << "\" y1=\"" << T << "\" x2=\""
      << px(X(knee)) << "\" y2=\"" << B << "\" stroke=\"#666666\" stroke-dasharray=\"2,4\"/>\n"
      << "<text x=\"" << px(X(knee) + 4) << "\" y=\"" << B - 6 << "\" fill=\"#666666\">ridge "
      << sig3(*roofs.ridge()) << " FLOP/B</text>\n";
  } else {
    s << "<text x=\"" << R - 6 << "\" y=\"" << T + 16
      << "\" text-anchor=\"end\">compute roof unknown (no fp32_gflops in the result file)</text>\n";
  }

  // The variants: a dot each, coloured by lesson, labelled "NN variant".
  for (const auto* p : drawn) {
    const std::string& lesson = r.runs[p->run].lesson;
    const std::size_t colour = std::find(lessons.begin(), lessons.end(), lesson) - lessons.begin();
    const double cx = X(*p->intensity), cy = Y(p->gflops);
    const bool left = cx > R - 150;  // near the right edge the label goes to the left
    s << "<circle cx=\"" << px(cx) << "\" cy=\"" << px(cy) << "\" r=\"5\" fill=\""
      << kPalette[colour % std::size(kPalette)] << "\" stroke=\"white\"/>\n"
      << "<text x=\"" << px(left ? cx - 8 : cx + 8) << "\" y=\"" << px(cy + 4) << "\""
      << (left ? " text-anchor=\"end\"" : "") << " font-size=\"11\">"
      << xml(lesson.substr(0, lesson.find('-')) + " " + p->variant) << "</text>\n";
  }
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
  s << "<text x=\"" << L << "\" y=\"" << H - 20 << "\" fill=\"#444444\">" << xml(caption)
    << "</text>\n</svg>\n";
  return s.str();
}

}  // namespace lab
