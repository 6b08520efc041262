// `lab-check roofline`: every kind of variant held against the right roof, bad files named,
// several GPUs, and a picture that is well-formed SVG.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <sstream>
#include <tuple>

#include "helpers.hpp"
#include "process.hpp"
#include "roofline.hpp"

using namespace lab;
using namespace lab::test;

namespace {

// One timed variant; the rates are what the harness would write for these bytes, FLOPs, time.
json variant(const std::string& name, double bytes, double flops, double ms,
             json extra = json::object()) {
  const double s = ms * 1e-3;
  json v = {{"name", name},
            {"role", "exercise"},
            {"correct", true},
            {"checks", json::array({{{"case", "1000x777"}, {"ok", true}}})},
            {"time_ms", {{"median", ms}, {"q1", ms}, {"q3", ms}}},
            {"bytes", bytes},
            {"flops", flops},
            {"gbs", bytes / s * 1e-9},
            {"gflops", flops / s * 1e-9}};
  if (bytes > 0) v["intensity"] = flops / bytes;
  v.update(extra);
  return v;
}

// A result file of a GPU with a 2000 GB/s memory roof and a 50 TFLOP/s compute roof: ridge at
// 25 FLOP/byte. fp32 <= 0 leaves the compute roof out, as files from older libraries do.
json result(const std::string& lesson, json variants, const std::string& device = "Test GPU",
            double copy = 2000, double fp32 = 50000) {
  json ceilings = {{"copy_gbs", copy}, {"h2d_pinned_gbs", 50.0}};
  if (fp32 > 0) ceilings["fp32_gflops"] = fp32;
  return {{"schema", "cuda-perf-lab/result/1"}, {"lesson", lesson},     {"nonce", ""},
          {"device", {{"name", device}}},       {"ceilings", ceilings}, {"variants", variants}};
}

// I = 2.5 FLOP/B: roof min(2000 * 2.5, 50000) = 5000 GFLOP/s; it reaches 2500 (half).
json memory_bound() { return variant("stream_triad", 1e9, 2.5e9, 1.0); }
// I = 1000 FLOP/B: roof 50000 GFLOP/s; it reaches 25000 (half).
json compute_bound() { return variant("exercise_sgemm", 1e8, 1e11, 4.0); }

const RooflinePoint& point(const Roofline& r, const std::string& name) {
  for (const auto& p : r.points)
    if (p.variant == name) return p;
  FAIL("no point " << name);
  return r.points.front();
}

Roofline from(std::vector<json> docs) {
  Roofline r;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const std::string e = add_result(r, "r" + std::to_string(i) + ".json", docs[i]);
    REQUIRE_MESSAGE(e.empty(), e);
  }
  return r;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Well-formed as far as a small scanner can tell: every tag closed in order, one <svg> root,
// and no bare '<' or '&' in text or attribute values (only the five entities).
std::string xml_problem(const std::string& x) {
  std::vector<std::string> open;
  int roots = 0;
  std::size_t i = 0;
  auto entity_ok = [&](std::size_t at) {
    for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
      if (x.compare(at, std::char_traits<char>::length(e), e) == 0) return true;
    return false;
  };
  while (i < x.size()) {
    if (x[i] == '&' && !entity_ok(i)) return "bare & at " + std::to_string(i);
    if (x[i] != '<') {
      if (x[i] == '>') return "bare > at " + std::to_string(i);
      ++i;
      continue;
    }
    if (x.compare(i, 5, "<?xml") == 0) {
      i = x.find("?>", i) + 2;
      continue;
    }
    std::size_t end = i + 1;
    char quote = 0;
    for (; end < x.size() && (quote || x[end] != '>'); ++end) {
      if (quote && x[end] == '<') return "< inside an attribute at " + std::to_string(end);
      if (quote && x[end] == '&' && !entity_ok(end))
        return "bare & in an attribute at " + std::to_string(end);
      if (x[end] == '"' || x[end] == '\'') quote = quote == x[end] ? 0 : (quote ? quote : x[end]);
    }
    if (end >= x.size()) return "unterminated tag at " + std::to_string(i);
    std::string tag = x.substr(i + 1, end - i - 1);
    if (tag.empty() || tag.find('<') != std::string::npos) return "bad tag at " + std::to_string(i);
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1))
        return "unbalanced </" + tag.substr(1) + ">";
      open.pop_back();
    } else {
      const std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
      if (open.empty()) {
        if (name != "svg") return "root element is <" + name + ">";
        if (++roots > 1) return "more than one root element";
      }
      if (tag.back() != '/') open.push_back(name);
    }
    i = end + 1;
  }
  if (roots != 1) return "no root element";
  if (!open.empty()) return "<" + open.back() + "> is not closed";
  return "";
}

// A label of the picture as a renderer would set it: its text (entities decoded) and where.
struct Label {
  std::string text;
  double x = 0, y = 0;  // the start of its baseline
  double left = 0, top = 0, right = 0, bottom = 0;
};

// Every <text class="CLASS" x=".." y="..">...</text> of an SVG, with its box in the metrics of a
// real monospace font (DejaVu Sans Mono, the widest common one: 0.60 em a character, 0.92 em
// above the baseline and 0.28 em below), measured here, independently of the placer's numbers.
std::vector<Label> texts_of_class(const std::string& svg, const std::string& css_class,
                                  double font_px = 11) {
  std::vector<Label> out;
  const std::string open = "<text class=\"" + css_class + "\" x=\"";
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    Label l;
    std::size_t used = 0;
    const std::size_t x_at = at + open.size();
    l.x = std::stod(svg.substr(x_at), &used);
    const std::size_t y_at = svg.find("y=\"", x_at) + 3;
    l.y = std::stod(svg.substr(y_at), &used);
    const std::size_t text_at = svg.find('>', y_at) + 1;
    std::string raw = svg.substr(text_at, svg.find("</text>", text_at) - text_at);
    for (const auto& [entity, ch] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""},
                                     {"&apos;", "'"}, {"&amp;", "&"}})
      for (auto e = raw.find(entity); e != std::string::npos; e = raw.find(entity, e))
        raw.replace(e, std::char_traits<char>::length(entity), ch);
    l.text = raw;
    double chars = 0;
    for (const char c : raw) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    l.left = l.x;
    l.right = l.x + chars * 0.60 * font_px;
    l.top = l.y - 0.92 * font_px;
    l.bottom = l.y + 0.28 * font_px;
    out.push_back(l);
  }
  return out;
}

bool intersect(const Label& a, const Label& b) {
  return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
}

// What is wrong with the labels of a picture: two that intersect, one over a dot, one outside
// the plot's frame. Empty if nothing.
std::string label_problems(const std::string& svg) {
  std::vector<Label> all = texts_of_class(svg, "label");
  for (const Label& l : texts_of_class(svg, "roof-label")) all.push_back(l);
  std::ostringstream out;
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = i + 1; j < all.size(); ++j)
      if (intersect(all[i], all[j]))
        out << "\"" << all[i].text << "\" and \"" << all[j].text << "\" overlap\n";
  // The dots: <circle cx=".." cy=".." r="5" ...> (the legend's too: they lie outside the plot).
  for (auto at = svg.find("<circle cx=\""); at != std::string::npos;
       at = svg.find("<circle cx=\"", at + 1)) {
    const double cx = std::stod(svg.substr(at + 12));
    const double cy = std::stod(svg.substr(svg.find("cy=\"", at) + 4));
    const Label dot{"dot", cx, cy, cx - 5, cy - 5, cx + 5, cy + 5};
    for (const Label& l : all)
      if (intersect(l, dot)) out << "\"" << l.text << "\" covers the dot at " << cx << "," << cy << "\n";
  }
  const auto frame = svg.find("<rect class=\"frame\"");
  if (frame == std::string::npos) return out.str() + "no <rect class=\"frame\">\n";
  auto number = [&](const std::string& name) {
    return std::stod(svg.substr(svg.find(name + "=\"", frame) + name.size() + 2));
  };
  const double fx = number("x"), fy = number("y"), fw = number("width"), fh = number("height");
  for (const Label& l : all)
    if (l.left < fx || l.right > fx + fw || l.top < fy || l.bottom > fy + fh)
      out << "\"" << l.text << "\" is outside the plot\n";
  return out.str();
}

}  // namespace

TEST_SUITE("roofline") {
  TEST_CASE("memory-bound and compute-bound kernels: bound, roof, fraction, ridge point") {
    const Roofline r = from({result("05-shared-memory", {memory_bound(), compute_bound()})});
    REQUIRE(r.runs.size() == 1);
    CHECK(*r.runs[0].ridge() == doctest::Approx(25.0));

    const RooflinePoint& m = point(r, "stream_triad");
    CHECK(m.bound == "memory");
    CHECK(*m.intensity == doctest::Approx(2.5));
    CHECK(*m.roof == doctest::Approx(5000));
    CHECK(m.roof_unit == "GFLOP/s");
    CHECK(*m.fraction == doctest::Approx(0.5));
    CHECK(m.drawable);

    const RooflinePoint& c = point(r, "exercise_sgemm");
    CHECK(c.bound == "compute");
    CHECK(*c.roof == doctest::Approx(50000));
    CHECK(*c.fraction == doctest::Approx(0.5));
    CHECK(c.drawable);

    // Just left of the ridge is still memory-bound, just right of it compute-bound.
    CHECK(point(from({result("05-x", {variant("left", 1e9, 24e9, 1)})}), "left").bound == "memory");
    CHECK(point(from({result("05-x", {variant("right", 1e9, 26e9, 1)})}), "right").bound ==
          "compute");

    const std::string table = roofline_table(r);
    INFO(table);
    CHECK(contains(table,
                   "Test GPU: memory roof (copy) 2000 GB/s, compute roof (FP32 FMA) 50000 GFLOP/s, "
                   "ridge point 25.0 FLOP/B, host link (pinned H2D) 50.0 GB/s"));
    CHECK(contains(
        table,
        "stream_triad    exercise  fp32    2.50   2500.0  1000.0  memory    5000 GFLOP/s      50.0%"));
    CHECK(contains(
        table,
        "exercise_sgemm  exercise  fp32    1000  25000.0    25.0  compute  50000 GFLOP/s      50.0%"));
  }

  TEST_CASE("memory-only and compute-only variants are held against their one roof, not drawn") {
    const Roofline r = from({result(
        "04-coalescing", {variant("copy_kernel", 1e9, 0, 1.0), variant("fma_loop", 0, 1e10, 0.5),
                          variant("empty_launch", 0, 0, 0.01)})});
    const RooflinePoint& m = point(r, "copy_kernel");
    CHECK(m.bound == "memory only");
    CHECK(m.roof_unit == "GB/s");
    CHECK(*m.fraction == doctest::Approx(0.5));  // 1000 of 2000 GB/s
    CHECK_FALSE(m.intensity);
    CHECK_FALSE(m.drawable);

    const RooflinePoint& c = point(r, "fma_loop");
    CHECK(c.bound == "compute only");
    CHECK(*c.fraction == doctest::Approx(0.4));  // 20000 of 50000 GFLOP/s
    CHECK_FALSE(c.drawable);

    const RooflinePoint& t = point(r, "empty_launch");
    CHECK(t.bound == "time only");
    CHECK_FALSE(t.fraction);
    CHECK_FALSE(t.drawable);

    const std::string svg = roofline_svg(r);
    CHECK(count(svg, "<circle") == 0);
    CHECK(contains(svg, "Only in the table: 1 memory-only, 0 host-link, 0 wrong, 2 other"));
  }

  TEST_CASE(
      "host-link variants: a fraction of the pinned host-to-device copy, listed after the others") {
    json h = variant("pinned_h2d", 1e8, 0, 4.0, {{"host_link", true}});  // 25 GB/s
    json hf = variant("h2d_and_scale", 1e8, 1e8, 4.0,
                      {{"host_link", true}});  // has FLOPs, still host link
    const Roofline r = from({result("03-pinned-memory", {h, hf, memory_bound()})});
    const RooflinePoint& p = point(r, "pinned_h2d");
    CHECK(p.bound == "host link");
    CHECK(p.roof_unit == "GB/s");
    CHECK(*p.roof == doctest::Approx(50));
    CHECK(*p.fraction == doctest::Approx(0.5));
    CHECK_FALSE(p.drawable);
    CHECK(point(r, "h2d_and_scale").bound == "host link");
    CHECK_FALSE(point(r, "h2d_and_scale").drawable);

    // The host-link rows come last, under their own heading, although they came first in the file.
    const std::vector<std::size_t> order = table_order(r);
    REQUIRE(order.size() == 3);
    CHECK(r.points[order[0]].variant == "stream_triad");
    CHECK(r.points[order[1]].variant == "pinned_h2d");
    const std::string table = roofline_table(r);
    INFO(table);
    const auto heading = table.find("host link (bytes over PCIe/C2C");
    REQUIRE(heading != std::string::npos);
    CHECK(table.find("stream_triad") < heading);
    CHECK(table.find("pinned_h2d") > heading);
    CHECK(contains(roofline_svg(r), "0 memory-only, 2 host-link, 0 wrong"));
  }

  TEST_CASE("without fp32_gflops: bound memory?, the memory roof only, and a note") {
    const Roofline r =
        from({result("04-coalescing", {compute_bound(), variant("fma_loop", 0, 1e10, 0.5)},
                     "Test GPU", 2000, 0)});
    CHECK_FALSE(r.runs[0].ridge());
    const RooflinePoint& p = point(r, "exercise_sgemm");
    CHECK(p.bound == "memory?");
    CHECK(*p.roof == doctest::Approx(2e6));  // 2000 GB/s x 1000 FLOP/B, no flat roof to stop it
    CHECK(*p.fraction == doctest::Approx(0.0125));
    CHECK(contains(p.note, "re-run it with the current one"));
    CHECK(p.drawable);
    CHECK_FALSE(point(r, "fma_loop").fraction);  // compute only, and no compute roof

    const std::string table = roofline_table(r);
    CHECK(contains(table, "compute roof unknown"));
    CHECK(contains(table, "note: r0.json: no compute roof (ceilings.fp32_gflops)"));
    const std::string svg = roofline_svg(r);
    CHECK(contains(svg, "compute roof unknown"));
    CHECK_FALSE(contains(svg, "class=\"ridge\""));
    CHECK(xml_problem(svg) == "");
  }

  TEST_CASE("a WRONG variant is listed but not held against a roof or drawn") {
    json bad = compute_bound();
    bad["name"] = "racy_sgemm";
    bad["correct"] = false;
    bad["checks"] = json::array({{{"case", "1000x777"}, {"ok", false}}});
    json unchecked = memory_bound();  // timed, never validated (a phase timed alone): not wrong
    unchecked["name"] = "phase_alone";
    unchecked["correct"] = false;
    unchecked["checks"] = json::array();
    const Roofline r = from({result("05-shared-memory", {bad, memory_bound(), unchecked})});
    CHECK(point(r, "phase_alone").bound == "memory");
    CHECK(point(r, "phase_alone").fraction);
    const RooflinePoint& p = point(r, "racy_sgemm");
    CHECK(p.bound == "WRONG");
    CHECK_FALSE(p.fraction);
    CHECK_FALSE(p.drawable);
    const std::string table = roofline_table(r);
    CHECK(contains(table, "racy_sgemm"));
    CHECK(contains(table, "so its speed means nothing"));
    const std::string svg = roofline_svg(r);
    CHECK(count(svg, "<circle") == 3);  // the two correct ones and their lesson's legend entry
    CHECK_FALSE(contains(svg, "racy_sgemm"));
    CHECK(contains(svg, "0 memory-only, 0 host-link, 1 wrong"));

    // An untimed variant (it threw before it was measured) is not a row at all.
    json untimed = memory_bound();
    untimed.erase("time_ms");
    untimed["name"] = "threw";
    CHECK(from({result("05-x", {untimed})}).points.empty());
  }

  TEST_CASE("a bad file among good ones is named, and the others are still used") {
    TempDir dir;
    const fs::path good1 = dir.path() / "04.json", broken = dir.path() / "05.json",
                   other = dir.path() / "06.json", good2 = dir.path() / "07.json",
                   no_copy = dir.path() / "08.json";
    write_text(good1, result("04-coalescing", {memory_bound()}).dump());
    write_text(broken, "{\"schema\": \"cuda-perf-lab/result/1\", \"variants\": [");
    write_text(other, R"({"schema": "cuda-perf-lab/grade/1", "lesson": "x"})");
    write_text(good2, result("07-streams", {compute_bound()}).dump());
    json nc = result("08-reductions", {memory_bound()});
    nc["ceilings"].erase("copy_gbs");
    write_text(no_copy, nc.dump());

    const Roofline r =
        load_roofline({good1, broken, other, dir.path() / "missing.json", good2, no_copy});
    REQUIRE(r.errors.size() == 4);
    CHECK(r.errors[0] == broken.string() + ": is not valid JSON (line 1, column 51)");
    CHECK(contains(
        r.errors[1],
        other.string() + ": not a lesson result file: schema is \"cuda-perf-lab/grade/1\""));
    CHECK(r.errors[2] == (dir.path() / "missing.json").string() + ": does not exist");
    CHECK(
        contains(r.errors[3], no_copy.string() + ": no measured memory roof (ceilings.copy_gbs)"));
    REQUIRE(r.runs.size() == 2);
    CHECK(r.runs[1].file == good2.string());
    CHECK(r.points.size() == 2);

    // A field of the wrong type is a schema error too.
    Roofline t;
    json wrong_type = result("04-x", {memory_bound()});
    wrong_type["variants"][0]["host_link"] = "yes";
    CHECK(add_result(t, "t.json", wrong_type) == "not a lesson result file: \"variants[0].host_link\" is a string, expected a boolean");
    CHECK(t.runs.empty());
  }

  TEST_CASE("rows are sorted by lesson, then file order") {
    const Roofline r =
        from({result("07-streams", {variant("s", 1e9, 1e9, 1)}),
              result("04-coalescing", {variant("b", 1e9, 1e9, 1), variant("a", 1e9, 1e9, 1)}),
              result("04-coalescing", {variant("c", 1e9, 1e9, 1)})});
    std::string names;
    for (std::size_t i : table_order(r)) names += r.points[i].variant;
    CHECK(names == "bacs");

    // Same GPU, slightly different copy roofs: the header says each row uses its own.
    CHECK_FALSE(contains(roofline_table(r), "each row uses its own"));
    const Roofline two = from(
        {result("04-x", {memory_bound()}), result("05-x", {memory_bound()}, "Test GPU", 1900)});
    CHECK(contains(roofline_table(two),
                   "(each row uses its own file's roofs: copy 1900..2000 GB/s over 2 files)"));
    CHECK(*point(two, "stream_triad").roof ==
          doctest::Approx(5000));  // the 04-x file's row comes first
    CHECK(*two.points[1].roof == doctest::Approx(1900 * 2.5));
  }

  TEST_CASE(
      "two GPUs: a warning, each row with its own file's roofs, the picture of the first only") {
    TempDir dir;
    const fs::path a = dir.path() / "a.json", b = dir.path() / "b.json";
    write_text(a, result("04-coalescing", {memory_bound()}, "GPU A").dump());
    // GPU B has half the memory roof: the same kernel reaches its whole roof there.
    write_text(b,
               result("05-shared-memory", {memory_bound(), compute_bound()}, "GPU B", 1000).dump());
    const Roofline r = load_roofline({a, b});
    CHECK(r.errors.empty());
    REQUIRE(r.warnings.size() == 1);
    CHECK(contains(r.warnings[0], "2 GPUs (GPU A, GPU B)"));
    CHECK(contains(r.warnings[0], "the picture shows GPU A only"));

    const json rows = roofline_json(r);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0]["device"] == "GPU A");
    CHECK(rows[0]["fraction_of_roof"].get<double>() == doctest::Approx(0.5));
    CHECK(rows[0]["drawn"] == true);
    CHECK(rows[1]["device"] == "GPU B");
    CHECK(rows[1]["roof"].get<double>() == doctest::Approx(2500));
    CHECK(rows[1]["fraction_of_roof"].get<double>() == doctest::Approx(1.0));
    CHECK(rows[1]["drawn"] == false);

    const std::string table = roofline_table(r);
    CHECK(contains(table, "GPU A: memory roof (copy) 2000 GB/s"));
    CHECK(contains(table, "GPU B: memory roof (copy) 1000 GB/s"));

    const std::string svg = roofline_svg(r);
    CHECK(contains(svg, "Roofline: GPU A"));
    CHECK(count(svg, "<circle") == 2);  // GPU A's one variant and its legend entry
    CHECK(contains(svg, "2 variant(s) from other GPUs left out"));
  }

  TEST_CASE("json: one object per row with the documented fields, unrounded") {
    const Roofline r = from({result("05-shared-memory", {variant("third", 3e9, 1e9, 1.0)})});
    const json rows = roofline_json(r);
    REQUIRE(rows.size() == 1);
    for (const char* key :
         {"file", "device", "lesson", "variant", "role", "pipe", "correct", "host_link", "flop_per_byte",
          "gflops", "gbs", "bound", "roof", "roof_unit", "fraction_of_roof", "drawn", "note"})
      CHECK_MESSAGE(rows[0].contains(key), key);
    CHECK(rows[0]["flop_per_byte"].get<double>() == 1.0 / 3.0);
    CHECK(rows[0]["fraction_of_roof"].get<double>() == doctest::Approx(1000 / (2000 / 3.0)));
    CHECK(rows[0]["lesson"] == "05-shared-memory");
  }

  TEST_CASE("svg: a dot per drawable variant, the roof, escaped names, well-formed") {
    json odd = variant("a<b&c", 1e9, 8e9, 1.0);  // I = 8, 8000 GFLOP/s
    const Roofline r = from(
        {result("05-shared-memory",
                {memory_bound(), compute_bound(), variant("copy_kernel", 1e9, 0, 1.0)}, "GPU <&>"),
         result("06-fusion\"'>", {odd}, "GPU <&>")});
    const std::string svg = roofline_svg(r);
    INFO(svg);
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(contains(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\""));
    CHECK_FALSE(contains(svg, "<script"));
    CHECK_FALSE(contains(svg, "href"));  // nothing external
    // 3 drawable variants + 2 legend entries (one per lesson).
    CHECK(count(svg, "<circle") == 5);
    CHECK(count(svg, "<polyline class=\"roof\"") == 1);
    CHECK(contains(svg, "copy 2000 GB/s"));
    CHECK(contains(svg, "FP32 FMA 50.0 TFLOP/s"));
    CHECK(contains(svg, "ridge 25.0 FLOP/B"));
    CHECK(contains(svg, "05 exercise_sgemm"));
    CHECK(contains(svg, "a&lt;b&amp;c"));
    CHECK_FALSE(contains(svg, "a<b"));
    CHECK(contains(svg, "06 a&lt;b&amp;c"));
    CHECK(contains(svg, "06-fusion&quot;&apos;&gt;"));
    CHECK(contains(svg, "Roofline: GPU &lt;&amp;&gt;"));
    CHECK(contains(svg, "1 memory-only, 0 host-link, 0 wrong"));
    // Ticks: powers of 2 from 1/16 to at least 2000 FLOP/B (the compute-bound dot x 2), powers
    // of 10.
    CHECK(contains(svg, ">1/16</text>"));
    CHECK(contains(svg, ">2048</text>"));
    CHECK(contains(svg, ">10000</text>"));
    CHECK(xml_problem(svg) == "");

    // The scanner itself must catch what it is there to catch.
    CHECK(xml_problem("<svg><text>a<b</text></svg>") != "");
    CHECK(xml_problem("<svg><text>a&b</text></svg>") != "");
    CHECK(xml_problem("<svg><g></svg>") != "");
    CHECK(xml_problem("<svg><text x=\"<\">a</text></svg>") != "");
    CHECK(xml_problem("<svg><text>a&amp;b</text></svg>") == "");

    // The roof: up to a corner on the ridge line, then flat.
    const auto attribute = [&](std::size_t from, const std::string& name) {
      const auto at = svg.find(name + "=\"", from) + name.size() + 2;
      return svg.substr(at, svg.find('"', at) - at);
    };
    std::istringstream corners(attribute(svg.find("class=\"roof\""), "points"));
    double x[3], y[3];
    char comma;
    for (int i = 0; i < 3; ++i) REQUIRE(static_cast<bool>(corners >> x[i] >> comma >> y[i]));
    CHECK(x[0] < x[1]);
    CHECK(y[0] > y[1]);  // rising (SVG's y grows downwards)
    CHECK(y[1] == y[2]);
    CHECK(x[1] == doctest::Approx(std::stod(attribute(svg.find("class=\"ridge\""), "x1"))));
  }

  TEST_CASE("the command: table, json, --svg written atomically, exit codes") {
    TempDir dir;
    const fs::path good = dir.path() / "05.json", bad = dir.path() / "06.json",
                   svg = dir.path() / "pics" / "roofline.svg";
    write_text(good, result("05-shared-memory", {memory_bound(), compute_bound()}).dump());
    write_text(bad, "not json");
    auto lab_check = [&](std::vector<std::string> args) {
      ProcessOptions p;
      p.argv = {LAB_TEST_LAB_CHECK};
      p.argv.insert(p.argv.end(), args.begin(), args.end());
      p.timeout_s = 60;
      p.stdout_path = dir.path() / "out.txt";
      p.stderr_path = dir.path() / "err.txt";
      const ProcessResult pr = run_process(p);
      return std::tuple{pr.exit_code, read_text(p.stdout_path), read_text(p.stderr_path)};
    };

    auto [code, out, err] = lab_check({"roofline", good.string(), "--svg", svg.string()});
    INFO(out << err);
    CHECK(code == 0);
    CHECK(contains(out, "exercise_sgemm"));
    CHECK(xml_problem(read_text(svg)) == "");
    CHECK(count(read_text(svg), "<circle") == 3);
    for (const auto& e : fs::directory_iterator(svg.parent_path()))  // no temporary file left
      CHECK(e.path().filename() == "roofline.svg");

    std::tie(code, out, err) =
        lab_check({"roofline", bad.string(), good.string(), "--format", "json"});
    CHECK(code == 1);
    CHECK(contains(err, bad.string() + ": is not valid JSON"));
    CHECK(json::parse(out).size() == 2);  // the good file was still used

    std::tie(code, out, err) = lab_check({"roofline"});
    CHECK(code == 2);
    CHECK(out.empty());
  }

  TEST_CASE("tensor pipes: each variant against the roof of its pipe; a run without it says so") {
    auto tagged = [](const std::string& name, const std::string& pipe, double bytes, double flops,
                     double ms) {
      return variant(name, bytes, flops, ms, {{"description", "[pipe: " + pipe + "] " + name}});
    };
    // BF16 roof 400 TFLOP/s; no TF32 roof in this run.
    json twelve = result("12-tensor-cores",
                         {variant("sgemm_fp32", 1e8, 1e11, 4.0),           // 25 TFLOP/s, FP32
                          tagged("cublas_bf16", "bf16", 1e8, 1e11, 0.5),   // 200 TFLOP/s
                          tagged("cublas_tf32", "tf32", 1e8, 1e11, 1.0),   // 100 TFLOP/s
                          tagged("thin_bf16", "bf16", 1e9, 1e10, 1.0),     // I = 10: memory
                          tagged("bf16_flops", "bf16", 0, 1e11, 1.0),      // compute only
                          tagged("odd", "fp64", 1e8, 1e10, 1.0)});         // unknown tag
    twelve["ceilings"]["bf16_tensor_gflops"] = 400000.0;
    twelve["ceilings"]["tf32_tensor_gflops"] = 0.0;  // 0: not measured
    const Roofline r = from({twelve});
    REQUIRE(r.runs[0].bf16_gflops);
    CHECK_FALSE(r.runs[0].tf32_gflops);

    const RooflinePoint& fp32 = point(r, "sgemm_fp32");
    CHECK(fp32.pipe == "fp32");
    CHECK(*fp32.roof == doctest::Approx(50000));
    CHECK(*fp32.fraction == doctest::Approx(0.5));

    const RooflinePoint& bf16 = point(r, "cublas_bf16");
    CHECK(bf16.pipe == "bf16");
    CHECK(bf16.bound == "compute");
    CHECK(*bf16.roof == doctest::Approx(400000));
    CHECK(*bf16.fraction == doctest::Approx(0.5));  // not 4.0, its rate over the FP32 roof
    CHECK(bf16.drawable);

    const RooflinePoint& thin = point(r, "thin_bf16");
    CHECK(thin.bound == "memory");
    CHECK(*thin.roof == doctest::Approx(20000));  // 2000 GB/s x 10 FLOP/B, under both roofs
    CHECK(*point(r, "bf16_flops").fraction == doctest::Approx(0.25));

    // No TF32 roof measured: no roof, no fraction, and never the FP32 roof instead.
    const RooflinePoint& tf32 = point(r, "cublas_tf32");
    CHECK(tf32.pipe == "tf32");
    CHECK(tf32.bound == "unknown");
    CHECK_FALSE(tf32.roof);
    CHECK_FALSE(tf32.fraction);
    CHECK(contains(tf32.note, "no TF32 tensor roof (ceilings.tf32_tensor_gflops) in this run"));
    CHECK(tf32.drawable);

    const RooflinePoint& odd = point(r, "odd");
    CHECK(odd.pipe == "fp32");
    CHECK(contains(odd.note, "names no known pipe"));

    const std::string table = roofline_table(r);
    INFO(table);
    auto row = [&](const std::string& name) {  // the table's line of a variant, spaces squeezed
      std::istringstream lines(table);
      std::string line, word, out;
      while (std::getline(lines, line))
        if (contains(line, " " + name + " ")) {
          std::istringstream words(line);
          while (words >> word) out += (out.empty() ? "" : " ") + word;
        }
      return out;
    };
    const std::string header = table.substr(0, table.find('\n'));
    CHECK(contains(header, ", BF16 tensor roof 400000 GFLOP/s (12-tensor-cores)"));
    CHECK_FALSE(contains(header, "TF32"));
    CHECK(row("cublas_bf16") == "12-tensor-cores cublas_bf16 exercise bf16 1000 200000.0 200.0 "
                                "compute 400000 GFLOP/s 50.0%");
    CHECK(row("cublas_tf32") == "12-tensor-cores cublas_tf32 exercise tf32 1000 100000.0 100.0 "
                                "unknown - no tf32 roof");
    CHECK(row("sgemm_fp32") == "12-tensor-cores sgemm_fp32 exercise fp32 1000 25000.0 25.0 "
                               "compute 50000 GFLOP/s 50.0%");
    CHECK(contains(table, "note: r0.json: no TF32 tensor roof (ceilings.tf32_tensor_gflops)"));
    CHECK_FALSE(contains(table, "400.0%"));
    const json rows = roofline_json(r);
    CHECK(rows[1]["pipe"] == "bf16");
    CHECK(rows[2]["fraction_of_roof"].is_null());
  }

  TEST_CASE("svg: the tensor roofs of the GPU drawn and labelled, from the file that measured each") {
    json five = result("05-shared-memory", {compute_bound()});
    five["ceilings"]["tf32_tensor_gflops"] = 200000.0;
    json twelve = result("12-tensor-cores",
                         {variant("cublas_bf16", 1e8, 1e11, 0.2,
                                  {{"description", "[pipe: bf16] cuBLAS"}})});  // 500 TFLOP/s
    twelve["ceilings"]["bf16_tensor_gflops"] = 600000.0;
    json other = result("12-tensor-cores", {memory_bound()}, "Other GPU");
    other["ceilings"]["tf32_tensor_gflops"] = 1.0;  // another GPU's: not drawn here
    const Roofline r = from({result("04-coalescing", {memory_bound()}), five, twelve, other});
    const std::string svg = roofline_svg(r);
    INFO(svg);
    CHECK(count(svg, "<polyline class=\"roof tensor\"") == 2);
    CHECK(contains(svg, ">TF32 tensor 200 TFLOP/s (lesson 05)</text>"));
    CHECK(contains(svg, ">BF16 tensor 600 TFLOP/s (lesson 12)</text>"));
    CHECK(contains(svg, ">FP32 FMA 50.0 TFLOP/s</text>"));
    CHECK(contains(svg, ">1e6</text>"));  // the axis reaches above the highest roof
    CHECK(label_problems(svg) == "");
    CHECK(xml_problem(svg) == "");
    // The table's header names both, each from its own lesson.
    CHECK(contains(roofline_table(r), "TF32 tensor roof 200000 GFLOP/s (05-shared-memory), BF16 "
                                      "tensor roof 600000 GFLOP/s (12-tensor-cores)"));
  }

  TEST_CASE("svg: 40 memory-bound dots at nearly one place, each named, no two labels overlapping") {
    std::vector<json> vs;
    for (int i = 0; i < 40; ++i) {
      // I from 0.250 to 0.262 FLOP/B, 400 to 430 GFLOP/s: all within a few pixels.
      const double intensity = 0.25 * (1 + 0.0012 * i), gflops = 400 * (1 + 0.0019 * i);
      const double bytes = 1e9, flops = bytes * intensity;
      vs.push_back(variant("kernel_" + std::string(i % 7, 'x') + std::to_string(i), bytes, flops,
                           flops / (gflops * 1e6)));
    }
    vs.push_back(compute_bound());
    const Roofline r = from({result("08-reductions", vs)});
    const std::string svg = roofline_svg(r);
    INFO(svg);
    const std::vector<Label> labels = texts_of_class(svg, "label");
    CHECK(labels.size() >= 2);
    // Every variant is named by a label (dots that cover each other share one).
    for (const auto& p : r.points) {
      bool named = false;
      for (const Label& l : labels) named = named || contains(l.text, p.variant);
      CHECK_MESSAGE(named, p.variant);
    }
    CHECK_FALSE(contains(svg, "left out for lack of room"));
    CHECK(label_problems(svg) == "");
    CHECK(count(svg, "<line class=\"leader\"") >= 1);  // some labels had to move away
    CHECK(roofline_svg(r) == svg);                      // the same places every time

    // The check itself sees an overlap and a label over a dot.
    const std::string bad = "<rect class=\"frame\" x=\"0\" y=\"0\" width=\"500\" height=\"500\"/>"
                            "<text class=\"label\" x=\"10\" y=\"20\">08 kernel_a</text>"
                            "<text class=\"roof-label\" x=\"60\" y=\"25\">FP32 FMA</text>"
                            "<circle cx=\"200\" cy=\"200\" r=\"5\"/>"
                            "<text class=\"label\" x=\"190\" y=\"204\">x</text>";
    CHECK(label_problems(bad) ==
          "\"08 kernel_a\" and \"FP32 FMA\" overlap\n\"x\" covers the dot at 200,200\n");
  }

  TEST_CASE("svg: the committed H100 and H200 runs of every lesson, labels apart, each named") {
    // One run each: the solutions', the starters'.
    for (const auto& [folder, ending] :
         {std::pair{"measurements/h100", "-solution.json"}, {"measurements/h100", "-starter.json"},
          {"measurements/h200-harness-ab/solution/after", ".json"},
          {"measurements/h200-harness-ab/starter/after", ".json"}}) {
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(fs::path(LAB_SOURCE_DIR) / folder)) {
        const std::string name = e.path().filename().string();
        if (name.size() > std::strlen(ending) && name.compare(name.size() - std::strlen(ending), std::string::npos, ending) == 0)
          files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      REQUIRE(files.size() >= 10);
      const Roofline r = load_roofline(files);
      INFO(folder << " *" << ending);
      CHECK(r.errors.empty());
      const std::string svg = roofline_svg(r);
      CHECK(label_problems(svg) == "");
      CHECK_FALSE(contains(svg, "left out for lack of room"));
      const std::vector<Label> labels = texts_of_class(svg, "label");
      for (const auto& p : r.points) {
        if (!p.drawable) continue;
        bool named = false;
        for (const Label& l : labels) named = named || contains(l.text, p.variant);
        CHECK_MESSAGE(named, r.runs[p.run].lesson << " " << p.variant);
      }
      // Lesson 12's BF16 tensor roof is drawn (these files predate the pipe tags: their tensor
      // variants are still held against the FP32 roof until lesson 12 runs again).
      CHECK(contains(svg, ">BF16 tensor "));
    }
  }

  TEST_CASE("svg: 300 dots all over the plot, in well under a second: no two labels overlap") {
    std::vector<json> vs;
    std::uint64_t state = 12345;
    auto next = [&] {  // a fixed sequence: the test is the same every run
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<double>(state >> 11) / 9007199254740992.0;
    };
    for (int i = 0; i < 300; ++i) {
      const double intensity = std::pow(2.0, -3 + 6 * next()), gflops = std::pow(10.0, 1 + 3 * next());
      vs.push_back(variant("v" + std::to_string(i), 1e9, 1e9 * intensity,
                           1e9 * intensity / (gflops * 1e6)));
    }
    const Roofline r = from({result("06-fusion", vs)});
    const std::string svg = roofline_svg(r);
    CHECK(label_problems(svg) == "");
    // Past 120 labels only the places beside the dots are tried (a search for each would take
    // seconds); the others are counted.
    const std::size_t labelled = texts_of_class(svg, "label").size();
    INFO(labelled << " labels");
    CHECK(labelled >= 20);
    CHECK(contains(svg, "label(s) left out for lack of room"));
  }

}  // TEST_SUITE
