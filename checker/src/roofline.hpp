// `lab-check roofline`: places the measured variants of lesson result files on the roofline of
// the GPU they ran on, with the roofs measured in the same run: a table, a JSON document, and
// optionally a picture (SVG).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// One result file and the roofs measured in its run.
struct RooflineRun {
  std::string file;  ///< as given on the command line
  std::string lesson;
  std::string device;                 ///< device.name
  double copy_gbs = 0;                ///< the memory roof (device-to-device copy), GB/s
  std::optional<double> fp32_gflops;  ///< the compute roof (FP32 FMA), GFLOP/s; older files lack it
  std::optional<double> h2d_gbs;      ///< the host-link roof (pinned host-to-device copy), GB/s

  /// The ridge point: the intensity (FLOP/byte) where the two roofs meet; none without fp32.
  std::optional<double> ridge() const;
};

/// One timed variant, held against the roof that limits it.
struct RooflinePoint {
  std::size_t run = 0;  ///< index into Roofline::runs: its file, lesson, device and roofs
  std::string variant, role;
  bool correct = true;
  bool host_link = false;  ///< its bytes cross the host link, not device memory
  double bytes = 0, flops = 0, gbs = 0, gflops = 0;
  std::optional<double> intensity;  ///< FLOP/byte, when it has both bytes and FLOPs
  /// memory | compute | memory? (compute roof unknown) | memory only | compute only |
  /// host link | time only (no bytes, no FLOPs) | WRONG (incorrect: its speed means nothing)
  std::string bound;
  std::optional<double> roof;      ///< the roof it is held against, in roof_unit
  std::string roof_unit;           ///< "GFLOP/s" or "GB/s"
  std::optional<double> fraction;  ///< measured rate / roof
  std::string note;                ///< why a roof is missing, in words
  bool drawable = false;           ///< a dot on the roofline picture
};

struct Roofline {
  std::vector<RooflineRun> runs;      ///< the good files, in command-line order
  std::vector<RooflinePoint> points;  ///< sorted by lesson, then file and variant order
  std::vector<std::string> errors;    ///< one line per bad file, naming it
  std::vector<std::string> warnings;  ///< e.g. files from different GPUs
};

/// Places one timed variant (an element of "variants") against the roofs of its run.
RooflinePoint place_variant(const RooflineRun& run, const json& variant);

/// Adds one parsed result file. Returns "" or, if the document cannot be used, why not (the
/// caller names the file).
std::string add_result(Roofline& roofline, const std::string& file, const json& doc);

/// Reads every file; a bad one is recorded in `errors` and the others are still used.
Roofline load_roofline(const std::vector<fs::path>& files);

/// The rows in the order they are shown: per GPU (first seen first), device-memory variants,
/// then host-link ones. Indices into `points`.
std::vector<std::size_t> table_order(const Roofline& roofline);

/// The human table: a header line per GPU (roofs, ridge point), a row per variant, notes.
std::string roofline_table(const Roofline& roofline);
/// The same rows as an array of objects, numbers unrounded (null where there is none).
json roofline_json(const Roofline& roofline);
/// A self-contained SVG 1.1 picture: the roofs of the first file's GPU and the drawable
/// variants measured on that GPU. Empty if there is no run.
std::string roofline_svg(const Roofline& roofline);

}  // namespace lab
