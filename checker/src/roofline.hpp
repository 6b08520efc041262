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

/// The compute pipes a variant's FLOPs can run on, each with its own roof: "fp32" (the FMA
/// units, the default), "tf32" and "bf16" (the tensor cores, on FP32 data rounded to TF32, or on
/// BF16 data). A lesson names a variant's pipe at the start of its description, "[pipe: bf16] ..."
/// (lab::VariantResult::description); a variant without the tag runs on "fp32".
inline const char* const kPipes[] = {"fp32", "tf32", "bf16"};

/// One result file and the roofs measured in its run.
struct RooflineRun {
  std::string file;  ///< as given on the command line
  std::string lesson;
  std::string device;                 ///< device.name
  double copy_gbs = 0;                ///< the memory roof (device-to-device copy), GB/s
  std::optional<double> fp32_gflops;  ///< the compute roof (FP32 FMA), GFLOP/s; older files lack it
  /// The tensor roofs (cuBLAS's TF32 and BF16 products), GFLOP/s: only where the lesson measured
  /// them (lesson 05 TF32, lesson 12 BF16)
  std::optional<double> tf32_gflops, bf16_gflops;
  std::optional<double> h2d_gbs;      ///< the host-link roof (pinned host-to-device copy), GB/s

  /// The compute roof of @p pipe (one of kPipes), if this run measured it.
  std::optional<double> compute_roof(const std::string& pipe) const;
  /// The ridge point: the intensity (FLOP/byte) where the two roofs meet; none without fp32.
  std::optional<double> ridge() const;
};

/// One timed variant, held against the roof that limits it.
struct RooflinePoint {
  std::size_t run = 0;  ///< index into Roofline::runs: its file, lesson, device and roofs
  std::string variant, role;
  std::string pipe = "fp32";  ///< the compute pipe its FLOPs run on (kPipes), from its description
  bool correct = true;
  bool host_link = false;  ///< its bytes cross the host link, not device memory
  double bytes = 0, flops = 0, gbs = 0, gflops = 0;
  std::optional<double> intensity;  ///< FLOP/byte, when it has both bytes and FLOPs
  /// memory | compute | memory? (FP32 roof unknown) | unknown (its tensor pipe's roof was not
  /// measured in its run) | memory only | compute only | host link | time only (no bytes, no
  /// FLOPs) | WRONG (incorrect: its speed means nothing)
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
/// A self-contained SVG 1.1 picture: the roofs of the first file's GPU (its memory and FP32
/// roofs, and each tensor roof from the first file of that GPU that measured it) and the drawable
/// variants measured on that GPU, each labelled; no two labels overlap (a label that finds no
/// free place near its dot is left out and counted in the caption). Empty if there is no run.
std::string roofline_svg(const Roofline& roofline);

/// The picture's text metrics, for its labels (monospace, so that a width can be known without
/// a renderer): the box a label's text takes at most, in pixels, and the gap kept between boxes.
inline constexpr double kLabelFontPx = 11;
inline constexpr double kCharWidthEm = 0.62;  ///< monospace fonts are 0.60 em wide: a margin
inline constexpr double kAscentEm = 0.95, kDescentEm = 0.30;  ///< above and below the baseline
inline constexpr double kLabelGapPx = 1;

}  // namespace lab
