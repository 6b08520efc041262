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
  /// The work behind the reading, against what the problem needs (the variant's bytes or flops
  /// in the result): a kernel can move a ratio towards its bar only by doing work that feeds
  /// nothing (coalesced loads beside uncoalesced ones, dead mma_sync), and that work shows here.
  enum class Needs { bytes, flops } needs = Needs::bytes;
  /// What one count of half A (for conflicts_per_needed: of A - B) does, in the needed unit:
  /// 1 byte; 128 bytes per shared-memory wavefront; 4096 flops per HMMA (m16n8k16); 1024 BF16
  /// flops per active tensor-core cycle (the most one of an SM's four does in a cycle).
  double work_per_count = 1;
  std::string work;  ///< what the work is, for messages: "bytes of global loads"

  /// @return the metrics to ask ncu for on a GPU of compute capability @p cc_major (0: not
  /// known, taken as a current GPU)
  std::vector<std::string> requested(int cc_major) const;
};

/// The measures the checker knows: global_load_efficiency, global_store_efficiency,
/// shared_bank_conflicts, tensor_instruction_share, tensor_pipe_busy.
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

/// The most work a counter rule's kernels may do per unit the problem needs unless check.toml
/// says otherwise (`max_work`): room for designs that read some data twice (a vector each warp
/// re-reads, a tile padded at the edges), far below what padding a ratio to its bar takes (about
/// 27 times the needed loads to lift 0.125 to 0.8; 8 times the needed HMMA for lesson 12's
/// starter to reach its share).
inline constexpr double kDefaultMaxWork = 4.0;

/// The work the kernels did, in the measure's needed unit (CounterMeasure::needs); nullopt
/// when a metric is missing.
std::optional<double> work_done(const CounterMeasure& m, const std::map<std::string, double>& sums);

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

/// One measure's reading for one variant, as a counter rule judges it.
struct CounterReading {
  CounterRun::Status status = CounterRun::Status::failed;  ///< as CounterRun's, per measure
  std::string message;                     ///< why, when not measured
  double value = 0;                        ///< the measure (measured)
  int kernels = 0;                         ///< the kernels ncu read (measured)
  /// work_done over the work the problem needs (measured, where the harness declared it)
  std::optional<double> work_per_needed;
};

/// The readings of one variant's measures for the rules, by measure: measured, with
/// work_per_needed the work_done over @p needed_bytes or @p needed_flops (the variant's in its
/// result), or the run's status and why (a measure ncu's metrics do not give is `failed`, and so
/// is one whose needed work the result does not declare).
std::map<std::string, CounterReading> counter_readings(const CounterRun& run,
                                                       const std::vector<std::string>& measures,
                                                       double needed_bytes, double needed_flops);

}  // namespace lab
