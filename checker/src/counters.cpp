#include "counters.hpp"

#include <algorithm>
#include <sstream>

#include "files.hpp"
#include "process.hpp"

namespace lab {

namespace {

// Metric names as ncu 2025 spells them on Hopper (checked with `ncu --query-metrics`).
constexpr const char* kLoadBytes = "smsp__sass_data_bytes_mem_global_op_ld.sum";
constexpr const char* kLoadSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum";
constexpr const char* kStoreBytes = "smsp__sass_data_bytes_mem_global_op_st.sum";
constexpr const char* kStoreSectors = "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum";
constexpr const char* kSharedLoadWaves = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
constexpr const char* kSharedStoreWaves = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
constexpr const char* kSharedLoadConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
constexpr const char* kSharedStoreConflicts = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
// cp.async (LDGSTS), Ampere on: bytes the threads asked for and sectors, for both its forms (the
// L1-caching .ca and the bypassing .cg; the SASS-level counts cover both, the l1tex__ ones only
// .ca); its shared-memory side, wavefronts and bank conflicts. Checked with `ncu --query-metrics
// --chip gh100` (ncu 2025.3, on the H200, session 21).
constexpr const char* kAsyncLoadBytes = "smsp__sass_data_bytes_mem_global_op_ldgsts.sum";
constexpr const char* kAsyncLoadSectors = "smsp__sass_l1tex_t_sectors_pipe_lsu_mem_global_op_ldgsts.sum";
constexpr const char* kAsyncSharedWaves = "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum";
constexpr const char* kAsyncSharedConflicts = "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum";
// Warp-level instructions: those the tensor cores execute (HMMA: mma.sync, which WMMA compiles
// to), and all of them. Not yet checked with `ncu --query-metrics` on the H100 (lesson 12).
constexpr const char* kTensorInstructions = "sm__inst_executed_pipe_tensor_op_hmma.sum";
constexpr const char* kInstructions = "smsp__inst_executed.sum";
// The cycles the tensor pipe was active with any of its operations (wgmma, which the HMMA
// instruction counts do not see, and mma.sync alike), and the cycles that elapsed (lesson 13).
// Names checked with `ncu --query-metrics --chip gh100` (ncu 2025.3, on the H200, session 26):
// Hopper has no GMMA-only cycle counter. The active count adds up an SM's four tensor cores, one
// per sub-partition: the reference kernel read 3.21 active cycles per SM cycle and 4.00x the
// needed flops at 4096 a cycle, so it is divided by the sub-partitions' elapsed cycles (4 an SM
// cycle), and an active cycle is one tensor core's 1024 flops.
constexpr const char* kTensorActiveCycles = "sm__pipe_tensor_cycles_active.sum";
constexpr const char* kElapsedCycles = "smsp__cycles_elapsed.sum";
// Dense BF16 flops one tensor core (a quarter of an SM) does per cycle on the H100 and H200
// (989 TFLOP/s at 1,830 MHz on 132 SMs x 4: the spec sheet's), the most an active cycle can do.
constexpr double kTensorFlopsPerCycle = 1024;

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
    } else if (c != '\r') {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

std::optional<double> number(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());  // "1,234,567"
  if (text.empty()) return std::nullopt;
  try {
    std::size_t used = 0;
    const double v = std::stod(text, &used);
    if (used != text.size()) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;  // "n/a"
  }
}

}  // namespace

const std::vector<CounterMeasure>& counter_measures() {
  static const std::vector<CounterMeasure> all = {
      {"global_load_efficiency",
       "bytes the threads asked for per byte of the 32-byte sectors fetched for them, over all "
       "global loads (1 = fully coalesced; 0.125 = one float used per sector)",
       CounterMeasure::Formula::bytes_per_sector, {kLoadBytes, kLoadSectors},
       {kAsyncLoadBytes, kAsyncLoadSectors}, "global loads", CounterMeasure::Needs::bytes, 1,
       "bytes of global loads"},
      {"global_store_efficiency",
       "bytes the threads wrote per byte of the 32-byte sectors written, over all global stores "
       "(1 = fully coalesced)",
       CounterMeasure::Formula::bytes_per_sector, {kStoreBytes, kStoreSectors}, {}, "global stores",
       CounterMeasure::Needs::bytes, 1, "bytes of global stores"},
      {"shared_bank_conflicts",
       "extra shared-memory wavefronts (bank conflicts) per wavefront the accesses needed "
       "(0 = conflict-free; 31 = every access a 32-way conflict)",
       CounterMeasure::Formula::conflicts_per_needed,
       {kSharedLoadWaves, kSharedStoreWaves, kSharedLoadConflicts, kSharedStoreConflicts},
       {kAsyncSharedWaves, kAsyncSharedConflicts}, "shared-memory accesses",
       CounterMeasure::Needs::bytes, 128, "bytes of shared-memory accesses"},
      {"tensor_instruction_share",
       "tensor-core (HMMA) instructions per instruction executed, warp-wide (how much of what the "
       "kernel issues feeds the tensor cores, rather than loading, storing and indexing for them)",
       CounterMeasure::Formula::share, {kTensorInstructions, kInstructions}, {}, "instructions",
       CounterMeasure::Needs::flops, 4096, "tensor-core flops"},
      {"tensor_pipe_busy",
       "cycles the tensor pipe was active per cycle elapsed, averaged over the SMs "
       "(1 = the tensor cores never waited)",
       CounterMeasure::Formula::share, {kTensorActiveCycles, kElapsedCycles}, {}, "cycles",
       CounterMeasure::Needs::flops, kTensorFlopsPerCycle, "tensor-core flops"},
  };
  return all;
}

std::vector<std::string> CounterMeasure::requested(int cc_major) const {
  std::vector<std::string> all = metrics;
  if (cc_major == 0 || cc_major >= 8) all.insert(all.end(), async_metrics.begin(), async_metrics.end());
  return all;
}

const CounterMeasure* find_counter_measure(const std::string& name) {
  for (const auto& m : counter_measures())
    if (m.name == name) return &m;
  return nullptr;
}

NcuTable parse_ncu_csv(const std::string& log) {
  NcuTable table;
  std::istringstream in(log);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '"') continue;  // ==PROF==, ==WARNING==, program output
    std::vector<std::string> fields = split_csv_line(line);
    if (header.empty()) {
      if (std::find(fields.begin(), fields.end(), "Kernel Name") != fields.end()) header = fields;
      continue;
    }
    if (fields.size() != header.size() || fields[0].empty()) continue;  // the units row
    ++table.kernels;
    for (std::size_t i = 0; i < header.size(); ++i) {
      if (header[i].find("__") == std::string::npos) continue;  // ID, Kernel Name, Grid Size...
      if (auto v = number(fields[i])) table.sums[header[i]] += *v;
    }
  }
  return table;
}

std::optional<double> measure_value(const CounterMeasure& m, const std::map<std::string, double>& sums,
                                    std::string& why) {
  for (const auto& metric : m.metrics)
    if (!sums.count(metric)) {
      why = "ncu did not report " + metric + " (a different ncu version or GPU?)";
      return std::nullopt;
    }
  // Each half summed, with its cp.async counterpart where ncu reported one.
  double a = 0, b = 0;
  for (const auto* list : {&m.metrics, &m.async_metrics})
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto it = sums.find((*list)[i]);
      if (it != sums.end()) (i < list->size() / 2 ? a : b) += it->second;
    }
  if (m.formula == CounterMeasure::Formula::conflicts_per_needed) {
    const double needed = a - b;
    return needed <= 0 ? 0.0 : b / needed;  // no such traffic: nothing to conflict
  }
  if (b <= 0) {
    why = std::string("the kernels ") + (m.formula == CounterMeasure::Formula::share ? "executed" : "made") +
          " no " + m.accesses;
    return std::nullopt;
  }
  return m.formula == CounterMeasure::Formula::bytes_per_sector ? a / (32.0 * b) : a / b;
}

std::optional<double> work_done(const CounterMeasure& m, const std::map<std::string, double>& sums) {
  double a = 0, b = 0;
  for (const auto* list : {&m.metrics, &m.async_metrics})
    for (std::size_t i = 0; i < list->size(); ++i) {
      const auto it = sums.find((*list)[i]);
      if (it == sums.end() && list == &m.metrics) return std::nullopt;
      if (it != sums.end()) (i < list->size() / 2 ? a : b) += it->second;
    }
  const double counts = m.formula == CounterMeasure::Formula::conflicts_per_needed ? a - b : a;
  return std::max(0.0, counts) * m.work_per_count;
}

CounterRun interpret_ncu_log(const std::string& log, bool exited_ok, const std::string& how_it_ended) {
  CounterRun run;
  const NcuTable table = parse_ncu_csv(log);
  run.sums = table.sums;
  run.kernels = table.kernels;
  // ncu's own error lines; the program's output is not in this log (--log-file). Only a line
  // that begins with ncu's refusal is one: the log also holds every kernel's name, and an
  // exercise may name a kernel ERR_NVGPUCTRPERM to have its counter rules skipped.
  std::string first_error;
  bool refused = false;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("==ERROR==", 0) == 0) {
      std::string error = line.substr(9);
      while (!error.empty() && error.front() == ' ') error.erase(0, 1);
      refused = refused || error.rfind("ERR_NVGPUCTRPERM", 0) == 0;
      if (first_error.empty()) first_error = error;
    }
  if (refused) {
    run.status = CounterRun::Status::unavailable;
    run.message = "ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM): an "
                  "administrator can allow it (see https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
    return run;
  }
  if (table.kernels == 0 && first_error.find("not supported") != std::string::npos) {
    run.status = CounterRun::Status::unavailable;
    run.message = "ncu cannot profile on this machine: " + first_error;
    return run;
  }
  if (table.kernels == 0) {
    run.status = CounterRun::Status::failed;
    run.message = exited_ok ? "ncu saw no kernel of this variant: does it launch any?"
                            : "the program failed under ncu (" + how_it_ended + ")";
    if (!first_error.empty()) run.message += ": " + first_error;
    return run;
  }
  run.status = CounterRun::Status::measured;
  return run;
}

CounterRun run_under_ncu(const fs::path& program, const std::string& variant,
                         const std::vector<std::string>& metrics, const CounterOptions& opt,
                         const fs::path& work) {
  CounterRun run;
  ProcessOptions p;
  p.argv = opt.ncu_cmd;
  const auto found = p.argv.empty() ? std::nullopt : find_cuda_tool(p.argv[0]);
  if (!found) {
    run.status = CounterRun::Status::unavailable;
    run.message = "ncu (Nsight Compute) is not on PATH, so no counter was read";
    return run;
  }
  p.argv[0] = found->string();
  std::string list;
  for (const auto& m : metrics) list += (list.empty() ? "" : ",") + m;
  const fs::path log = work / ("ncu-" + variant + ".csv");
  // Unmodified clocks (no locking: the lesson's own timing is not disturbed); only the
  // cudaProfilerStart/Stop range of --profile: one call of the variant.
  for (const auto& a : {std::string("--clock-control"), std::string("none"),
                        std::string("--profile-from-start"), std::string("off"),
                        std::string("--metrics"), list, std::string("--csv"), std::string("--page"),
                        std::string("raw"), std::string("--print-units"), std::string("base"),
                        std::string("--log-file"), log.string(), program.string()})
    p.argv.push_back(a);
  for (const auto& a : opt.program_args) p.argv.push_back(a);
  run.result = work / ("ncu-" + variant + "-result.json");
  run.nonce = random_hex(16);
  run.seed = random_seed();
  for (const auto& a : {std::string("--profile"), std::string("--variant"), variant,
                        std::string("--seed"), std::to_string(run.seed), std::string("--json"),
                        run.result.string(), std::string("--nonce"), run.nonce})
    p.argv.push_back(a);
  if (opt.quick) p.argv.push_back("--quick");
  p.record_path = opt.record;
  p.workdir = work;
  p.timeout_s = opt.timeout_s;
  p.stdout_path = p.stderr_path = work / ("ncu-" + variant + "-output.txt");
  const ProcessResult r = run_process(p);
  if (!r.started) {
    run.status = CounterRun::Status::unavailable;
    run.message = "could not start ncu: " + r.start_error;
    return run;
  }
  if (r.timed_out) {
    run.status = CounterRun::Status::failed;
    run.message = "under ncu the program " + describe(r, opt.timeout_s);
    return run;
  }
  std::string why;
  std::string text = read_file_limited(log, 16u << 20, why).value_or("");
  // Errors ncu hit before it opened its log (a bad option, no driver) went to its own output.
  if (text.empty()) text = read_file_limited(p.stdout_path, 1u << 20, why).value_or("");
  CounterRun read = interpret_ncu_log(text, r.exited_ok(), describe(r, opt.timeout_s));
  // Exit 1 says a check failed, which the result file tells; anything else stopped the run.
  if (read.status == CounterRun::Status::measured &&
      (r.signal != 0 || (r.exit_code != 0 && r.exit_code != 1))) {
    read.status = CounterRun::Status::failed;
    read.message = "the program failed under ncu (" + describe(r, opt.timeout_s) + ")";
  }
  read.result = run.result;
  read.nonce = run.nonce;
  read.seed = run.seed;
  return read;
}

std::map<std::string, CounterReading> counter_readings(const CounterRun& run,
                                                       const std::vector<std::string>& measures,
                                                       double needed_bytes, double needed_flops) {
  std::map<std::string, CounterReading> out;
  for (const auto& name : measures) {
    CounterReading& r = out[name];
    r.status = run.status;
    r.message = run.message;
    if (run.status != CounterRun::Status::measured) continue;
    std::string why;  // check.toml was checked: every name is a known measure
    const CounterMeasure& m = *find_counter_measure(name);
    if (auto v = measure_value(m, run.sums, why)) {
      r.value = *v;
      r.kernels = run.kernels;
      const double needed = m.needs == CounterMeasure::Needs::bytes ? needed_bytes : needed_flops;
      if (const auto work = work_done(m, run.sums); work && needed > 0) {
        r.work_per_needed = *work / needed;
      } else if (work) {
        // The needed work is what padding is held against: without it the reading is not judged
        // (every lesson's harness declares it; a result without it was not written by one).
        r.status = CounterRun::Status::failed;
        r.message = std::string("the result declares no ") +
                    (m.needs == CounterMeasure::Needs::bytes ? "bytes" : "FLOPs") +
                    " for this variant, so the work behind the reading cannot be weighed";
      }
    } else {
      r.status = CounterRun::Status::failed;
      r.message = why;
    }
  }
  return out;
}

}  // namespace lab
