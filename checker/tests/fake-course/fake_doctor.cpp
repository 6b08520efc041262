// Stands in for common/lab-doctor: FAKE_NO_GPU=1 makes it behave as on a machine without a GPU;
// --device-only leaves the ceilings out, as lab-doctor does.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

int main(int argc, char** argv) {
  if (std::getenv("FAKE_NO_GPU")) {
    std::fprintf(stderr, "no CUDA-capable device is detected\n");
    return 77;
  }
  bool device_only = false;
  for (int i = 1; i < argc; ++i) device_only = device_only || !std::strcmp(argv[i], "--device-only");
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0)
      std::ofstream(argv[i + 1]) << R"({"device": {"name": "Fake GPU", "cc": "9.0", "sms": 132,
        "l2_bytes": 52428800, "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "bus_width_bits": 5120,
        "peak_bandwidth_gbs": 3352.3, "driver": 13000, "runtime": 12080, "debug_build": false})"
                                 << (device_only ? "}" : R"(,
        "ceilings": {"copy_gbs": 2850.1, "launch_us": 2.3}})");
  return 0;
}
