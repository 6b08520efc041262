// main() for the GPU test executables (lab_add_doctest(... GPU)).
//
// Without a usable CUDA device the executable prints why and exits 77, which CTest reports as
// "Skipped" (the tests are registered with SKIP_RETURN_CODE 77), so CI machines without a GPU stay
// green without hiding the tests. Options that only list or describe the tests (--list-test-cases,
// --help, ...) work everywhere. LAB_REQUIRE_GPU=1 turns the skip into a failure, for GPU machines
// where a skip would mean a broken driver.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

constexpr int kSkipExitCode = 77;

// True for doctest options that run no test: listing, counting, help and version.
bool OnlyDescribes(std::string arg) {
  if (arg.rfind("--", 0) == 0) {
    arg.erase(0, 2);
  } else if (arg.rfind('-', 0) == 0) {
    arg.erase(0, 1);
  } else {
    return false;
  }
  if (arg.rfind("dt-", 0) == 0) arg.erase(0, 3);
  const auto eq = arg.find('=');
  if (eq != std::string::npos) {
    const std::string value = arg.substr(eq + 1);
    if (value == "0" || value == "false" || value == "no" || value == "off") return false;
    arg.erase(eq);
  }
  for (const char* name : {"list-test-cases", "ltc", "list-test-suites", "lts", "list-reporters",
                           "lr", "count", "c", "help", "h", "?", "version", "v", "no-run", "nr"}) {
    if (arg == name) return true;
  }
  return false;
}

bool EnvFlag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' && std::string(value) != "0";
}

}  // namespace

int main(int argc, char** argv) {
  bool describe_only = false;
  for (int i = 1; i < argc; ++i) describe_only = describe_only || OnlyDescribes(argv[i]);

  if (!describe_only) {
    int devices = 0;
    const cudaError_t status = cudaGetDeviceCount(&devices);
    if (status != cudaSuccess || devices == 0) {
      const bool required = EnvFlag("LAB_REQUIRE_GPU");
      std::fprintf(stderr, "%s: no usable CUDA device (%s); %s\n", argv[0],
                   status != cudaSuccess ? cudaGetErrorString(status) : "device count is 0",
                   required ? "failing because LAB_REQUIRE_GPU is set" : "skipping (exit 77)");
      return required ? EXIT_FAILURE : kSkipExitCode;
    }
  }

  doctest::Context context(argc, argv);
  return context.run();
}
