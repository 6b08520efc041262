// `lab-check roofline`: every kind of variant held against the right roof, bad files named,
// several GPUs, and a picture that is well-formed SVG.
#include <doctest/doctest.h>

#include <cstdlib>
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
        "stream_triad    exercise    2.50   2500.0  1000.0  memory    5000 GFLOP/s      50.0%"));
    CHECK(contains(
        table,
        "exercise_sgemm  exercise    1000  25000.0    25.0  compute  50000 GFLOP/s      50.0%"));
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
         {"file", "device", "lesson", "variant", "role", "correct", "host_link", "flop_per_byte",
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

}  // TEST_SUITE
