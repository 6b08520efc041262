// `lab-check doctor`: what this machine has (GPU, driver, clocks, measured ceilings, profilers).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace lab {

namespace fs = std::filesystem;
using json = nlohmann::json;

struct DoctorReport {
  int exit_code = 0;   ///< 0 fine, 3 no usable GPU, 1 lab-doctor failed or is missing
  std::string problem; ///< one sentence when exit_code != 0
  json info;           ///< {"device":{...},"ceilings":{...},"tools":{...},"ncu_counters":...}
};

/// @return <build>/common/lab-doctor: the course's program that probes the GPU, runs no student
///         code, and (with --probe) only initialises CUDA and launches one kernel
fs::path doctor_program(const fs::path& build_dir);

/// The reader of lab-doctor's report: JSON within the limits of every reader, its "device" and
/// "ceilings" checked as a result file's, its strings made printable; anything else dropped.
/// @param text the report's content
/// @param error on failure, a phrase to follow the file's name
/// @return {"device": {...}, "ceilings": {...}}, or nothing
std::optional<json> read_doctor_report(const std::string& text, std::string& error);

/// Runs <build>/common/lab-doctor (and ncu, if present, to see whether counters are readable).
/// @param quick the device and the tools only: no ceilings, no ncu (the main command's, whose
///        lessons measure their own ceilings and say themselves when counters are refused)
DoctorReport run_doctor(const fs::path& build_dir, double timeout_s, bool quick = false);

/// The human version of the report.
std::string doctor_text(const DoctorReport& report);

/// A CUDA version integer (13000) as text ("13.0").
std::string cuda_version_text(long long v);

}  // namespace lab
