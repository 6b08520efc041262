// Hardware-counter checks: a lesson program run once under Nsight Compute (ncu) in its
// --profile mode, and a few named measures of *how* a variant uses memory (is it coalesced, does
// it hit shared-memory bank conflicts) and the tensor cores (how much of what it issues feeds
// them). Counters are nearly immune to noise and to which GPU it is, so they judge the mechanism
// where a time can only judge the outcome.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// One named measure a `kind = "counter"` rule can judge.
struct CounterMeasure {
  std::string name;     ///< as written in check.toml
  std::string meaning;  ///< what the number says
  /// The metrics come in two halves, A then B (as many of each), each half summed:
  /// bytes_per_sector: A = bytes asked for, B = sectors fetched; value A / (32 B);
  /// conflicts_per_needed: A = wavefronts, B = bank conflicts; value B / (A - B);
  /// share: A = some instructions, B = all instructions; value A / B.
  enum class Formula { bytes_per_sector, conflicts_per_needed, share } formula;
  std::vector<std::string> metrics;  ///< the ncu metrics it needs (summed over the kernels)
  /// The same halves for the copies cp.async makes (LDGSTS: global to shared without a
  /// register), which the plain load and shared-store metrics leave out. Asked for on GPUs that
  /// have them (compute capability 8.0 on), added to their halves; absent, they count 0.
  std::vector<std::string> async_metrics;
  std::string accesses;              ///< "global loads", for "the kernels made no ..."

  /// @return the metrics to ask ncu for on a GPU of compute capability @p cc_major (0: not
  /// known, taken as a current GPU)
  std::vector<std::string> requested(int cc_major) const;
};

/// The measures the checker knows: global_load_efficiency, global_store_efficiency,
/// shared_bank_conflicts, tensor_instruction_share.
const std::vector<CounterMeasure>& counter_measures();
const CounterMeasure* find_counter_measure(const std::string& name);

/// Sums each metric column over every kernel row of an ncu `--csv --page raw` log (ncu's own
/// "==PROF==" lines and the units row are skipped; "1,234" is 1234). Returns the sums and the
/// number of kernels seen; a metric ncu did not report is absent from the map.
struct NcuTable {
  std::map<std::string, double> sums;
  int kernels = 0;
};
NcuTable parse_ncu_csv(const std::string& log);

/// The measure's value from the summed metrics, or nullopt with `why` set when the kernels made
/// no access of that kind (no global loads, say).
std::optional<double> measure_value(const CounterMeasure& m, const std::map<std::string, double>& sums,
                                    std::string& why);

/// How a run under ncu ended, in the terms the rules need.
struct CounterRun {
  /// measured: readings are in `values`; unavailable: ncu is missing or may not read the
  /// counters here (not the student's doing: the rule is skipped); failed: the program failed
  /// under ncu or ncu saw no kernel (the student's doing: the rule fails); unchecked: the
  /// course's program could not check the call ncu read (the rule is `environment`: no points,
  /// grade again).
  enum class Status { measured, unavailable, failed, unchecked } status = Status::failed;
  std::string message;                 ///< why, when not measured
  std::map<std::string, double> sums;  ///< summed metrics (measured)
  int kernels = 0;
  // What the profiled run wrote, for the checks of its profiled call (judge.cpp):
  fs::path result;         ///< its result file (--json), checked against `nonce`
  std::string nonce;
  std::uint32_t seed = 0;  ///< of its inputs (a replay of its record uses the same)
};

/// Decides what an ncu log (and the way ncu ended) means: ERR_NVGPUCTRPERM and "not supported"
/// mean the machine cannot read counters; no kernel rows otherwise mean the program failed.
CounterRun interpret_ncu_log(const std::string& log, bool exited_ok, const std::string& how_it_ended);

struct CounterOptions {
  std::vector<std::string> ncu_cmd = {"ncu"};  ///< the tool (tests swap in a fake)
  double timeout_s = 300;
  std::vector<std::string> program_args;       ///< the lesson's extra args (check.toml `args`)
  bool quick = false;  ///< the program's --quick (the checker's own tests); else graded sizes
  fs::path record;     ///< where the program writes its record (--record-fd); "" for none
};

/// Runs `program --profile --variant <variant>` under ncu, collecting `metrics`, with its log,
/// its output and its result file in `work`: the program makes a few of the variant's calls as
/// it would when timed, at the graded size, and ncu reads one of them, picked at random and
/// always checked. Never throws for anything the program or ncu does.
CounterRun run_under_ncu(const fs::path& program, const std::string& variant,
                         const std::vector<std::string>& metrics, const CounterOptions& options,
                         const fs::path& work);

/// The readings of one variant's measures for the rules: {"<measure>": {"value": v}} when
/// measured, {"<measure>": {"unavailable" | "failed" | "unchecked": why}} otherwise.
json counter_readings(const CounterRun& run, const std::vector<std::string>& measures);

}  // namespace lab
