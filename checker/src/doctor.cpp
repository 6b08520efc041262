#include "doctor.hpp"

#include <sstream>

#include "files.hpp"
#include "judge.hpp"
#include "process.hpp"
#include "lab/result_reader.hpp"

namespace lab {

std::string cuda_version_text(long long v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

fs::path doctor_program(const fs::path& build_dir) { return build_dir / "common" / "lab-doctor"; }

std::optional<json> read_doctor_report(const std::string& text, std::string& error) {
  auto doc = parse_json_limited(text, error);
  if (!doc) return std::nullopt;
  if (!doc->is_object()) {
    error = "is not a JSON object";
    return std::nullopt;
  }
  // Its device and ceilings are a result file's (lab-doctor writes them with the lessons'
  // writer): checked by the result file's reader, field by field.
  json as_result = {{"schema", kResultSchema}, {"lesson", ""}, {"nonce", ""}, {"variants", json::array()}};
  for (const char* part : {"device", "ceilings"})
    if (doc->contains(part)) as_result[part] = (*doc)[part];
  if (const std::string why = validate_result(as_result); !why.empty()) {
    error = "does not follow the result schema: " + why;
    return std::nullopt;
  }
  // Only what the report shows, as text a terminal shows as it is.
  json out = {{"device", json::object()}, {"ceilings", json::object()}};
  for (const char* part : {"device", "ceilings"}) {
    if (!as_result.contains(part)) continue;
    for (const auto& [key, value] : as_result[part].items()) {
      if (value.is_string()) out[part][printable(key)] = printable(value.get<std::string>());
      else if (value.is_number() || value.is_boolean() || value.is_null()) out[part][printable(key)] = value;
    }
  }
  return out;
}

DoctorReport run_doctor(const fs::path& build_dir, double timeout_s, bool quick) {
  DoctorReport rep;
  rep.info = json::object();
  json tools = json::object();
  for (const char* tool : {"nsys", "ncu", "compute-sanitizer"}) {
    auto found = find_cuda_tool(tool);
    tools[tool] = found ? json(found->string()) : json(nullptr);
  }
  rep.info["tools"] = tools;
  const fs::path doctor = doctor_program(build_dir);
  std::error_code ec;
  if (!fs::is_regular_file(doctor, ec)) {  // never fs::exists' own text (a link loop, a long path)
    rep.exit_code = 1;
    rep.problem = "lab-doctor is not built (" + doctor.string() + "): run cmake --build " +
                  build_dir.string() + " --target lab-doctor";
    return rep;
  }
  TempDir work("lab-doctor");
  const fs::path out = work.path() / "doctor.json";
  const fs::path log = work.path() / "stderr.txt";
  ProcessOptions p;
  p.argv = {doctor.string(), "--json", out.string()};
  if (quick) p.argv.push_back("--device-only");
  p.timeout_s = timeout_s;
  p.stderr_path = log;
  p.workdir = work.path();
  const ProcessResult r = run_process(p);
  if (r.started && !r.timed_out && r.signal == 0 && r.exit_code == 77) {
    std::istringstream said(printable(file_tail(log, 2000)));
    std::string line;
    std::getline(said, line);
    rep.exit_code = 3;
    rep.problem = "No usable NVIDIA GPU here" + (line.empty() ? std::string(".") : ": " + line) +
                  " The lessons need one; the checker's own tests do not.";
    return rep;
  }
  std::string why;
  auto text = read_file_limited(out, kMaxResultBytes, why);
  if (!r.exited_ok() || !text) {
    rep.exit_code = 1;
    rep.problem = "lab-doctor " + describe(r, timeout_s) + (text ? "" : " and its report " + why) +
                  ": " + printable(file_tail(log, 1000));
    return rep;
  }
  auto info = read_doctor_report(*text, why);
  if (!info) {
    rep.exit_code = 1;
    rep.problem = "lab-doctor's report " + out.string() + " " + printable(why);
    return rep;
  }
  rep.info = std::move(*info);
  rep.info["tools"] = tools;

  // Performance counters: the driver may reserve them for administrators.
  std::string counters = quick ? "not asked (--quick): a lesson's ncu rules say so if they are refused"
                               : "unknown: ncu is not on PATH";
  if (!quick && !tools["ncu"].is_null()) {
    const fs::path ncu_log = work.path() / "ncu.txt";
    ProcessOptions q;
    q.argv = {tools["ncu"].get<std::string>(), "--metrics", "gpu__time_duration.sum", doctor.string(), "--probe"};
    q.timeout_s = 300;
    q.stdout_path = q.stderr_path = ncu_log;
    q.workdir = work.path();
    const ProcessResult nr = run_process(q);
    std::string why2;
    const std::string said = read_file_limited(ncu_log, 8u << 20, why2).value_or("");
    if (said.find("ERR_NVGPUCTRPERM") != std::string::npos)
      counters = "no: ERR_NVGPUCTRPERM (the driver allows counters to administrators only; see "
                 "https://developer.nvidia.com/ERR_NVGPUCTRPERM). ncu's metric checks will be skipped";
    else if (nr.exited_ok())
      counters = "yes";
    else
      counters = "unknown: ncu " + describe(nr, q.timeout_s);
  }
  rep.info["ncu_counters"] = counters;
  return rep;
}

std::string doctor_text(const DoctorReport& rep) {
  std::ostringstream out;
  auto print_tools = [&] {
    const json tools = rep.info.value("tools", json::object());
    for (auto& [k, v] : tools.items())
      {
      out << (k == "compute-sanitizer" ? "sanitizer  " : k == "ncu" ? "ncu        " : "nsys       ");
      const fs::path usual = fs::path("/usr/local/cuda/bin") / k;
      if (!v.is_null()) out << v.get<std::string>() << "\n";
      else if (std::error_code ec; fs::exists(usual, ec)) out << "not on PATH (there is " << usual.string() << ": add /usr/local/cuda/bin to PATH)\n";
      else out << "not on PATH\n";
    }
  };
  if (rep.exit_code != 0) {
    out << rep.problem << "\n";
    print_tools();
    return out.str();
  }
  const json device = rep.info.value("device", json::object());
  auto field = [&](const char* key) -> std::string {
    if (!device.contains(key)) return "?";
    const json& v = device[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  out << "GPU        " << field("name") << " (compute capability " << field("cc") << ", "
      << field("sms") << " SMs, L2 " << (device.value("l2_bytes", 0.0) / 1048576.0) << " MiB)\n";
  if (device.contains("driver") && device["driver"].is_number_integer())
    out << "driver     CUDA " << cuda_version_text(device["driver"].get<long long>());
  if (device.contains("runtime") && device["runtime"].is_number_integer())
    out << ", runtime " << cuda_version_text(device["runtime"].get<long long>());
  out << "\n";
  out << "clocks     SM " << field("sm_clock_mhz") << " MHz, memory " << field("mem_clock_mhz")
      << " MHz, bus " << field("bus_width_bits") << " bits\n";
  out << "memory     theoretical " << field("peak_bandwidth_gbs") << " GB/s\n";
  if (device.value("debug_build", false))
    out << "warning    this is a debug (-G) build: timings are not meaningful\n";
  const json ceilings = rep.info.value("ceilings", json::object());
  if (!ceilings.empty()) {
    out << "ceilings   measured now:\n";
    for (auto& [k, v] : ceilings.items()) out << "             " << k << " = " << v.dump() << "\n";
  }
  print_tools();
  out << "counters   " << rep.info.value("ncu_counters", std::string("?")) << "\n";
  return out.str();
}

}  // namespace lab
