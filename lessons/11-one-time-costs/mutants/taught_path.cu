// Taught path: the README's step 4 in its three steps ("the in-memory cache; the pool; the
// on-disk cache with its header, key and checksum") as "The exercise" and "A cache that can be
// trusted" describe them, and the starter's TODOs, and nothing more. The starter's compile() and
// launch code are kept as they are.
//   1. In memory: a std::map from the key to the loaded library and its two kernels. The key is
//      the text of everything that changes the binary: NVRTC's version (nvrtcVersion, read once
//      in the constructor), the architecture, each option on its own line, the source.
//   2. The pool: cudaMemPoolCreate on the current device, release threshold raised to
//      UINT64_MAX, the intermediate from cudaMallocFromPoolAsync and back with cudaFreeAsync on
//      the call's stream; no synchronization anywhere.
//   3. On disk: one file per key, named by a 64-bit hash of the key (std::hash: libstdc++'s
//      hashes a string with a fixed seed, the same in every process), holding a
//      header (format tag, key size, cubin size, checksum: std::hash of the cubin), the key and
//      the cubin. A reader trusts it only when the tag matches, the stored key equals the key,
//      header + key + cubin size is the file's size and the checksum matches; anything else is a
//      miss: compile, and write the entry again. Written under a temporary name (the path plus a
//      clock reading) and renamed into place.
//   The destructor unloads every library the map holds and destroys the pool.
// How it differs from the solution: no KernelCache class, std::map instead of unordered_map,
// std::hash instead of FNV-1a, the cubin's size checked against the file's size (ftell) rather
// than a fixed upper bound plus a read past the end, no fallback to compiling when
// cudaLibraryLoadData refuses a file that passed every check (the text has no such case: a
// checked file is the cubin NVRTC wrote), one unescaped line per option in the key.
//
// Bars, from the README's H100 run (n = 2^26): the solution's call takes 467.9 us against
// prebuilt's 466.8 us, `steady` 0.998 against 0.87; a steady call here does the same (a map
// lookup with a key of about a kilobyte: a microsecond or two), so about 0.99-1.0, 13-15%
// above the bar. `disk_cache`: against the harness's own compiling process the solution's new
// process with a filled folder read 2.0x on an H200, against a bar of 1.4; the filled call here
// reads and checks one file of some kilobytes (microseconds) and pays the same
// cudaLibraryLoadData, first launch and pool growth, so about 2x as well, 1.4 times the bar.
// Expected: passes every rule.
#include <nvrtc.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

namespace {

// NVRTC returns its own error codes; turn a failure into an exception that says which call.
void nvrtc_check(nvrtcResult result, const char* call) {
  if (result != NVRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + ": " + nvrtcGetErrorString(result));
}

// Compiles @p program for @p arch and returns the cubin (the starter's, unchanged).
std::vector<char> compile(const Program& program, const std::string& arch) {
  nvrtcProgram prog = nullptr;
  nvrtc_check(nvrtcCreateProgram(&prog, program.source.c_str(), "operator.cu", 0, nullptr, nullptr),
              "nvrtcCreateProgram");
  std::vector<std::string> options = program.options;
  options.push_back("--gpu-architecture=" + arch);
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult compiled =
      nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  if (compiled != NVRTC_SUCCESS) {
    std::size_t size = 0;
    nvrtcGetProgramLogSize(prog, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    nvrtcDestroyProgram(&prog);
    throw std::runtime_error("NVRTC could not compile the program (" +
                             std::string(nvrtcGetErrorString(compiled)) + "):\n" + log);
  }
  std::size_t size = 0;
  nvrtc_check(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  std::vector<char> cubin(size);
  nvrtc_check(nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  nvrtc_check(nvrtcDestroyProgram(&prog), "nvrtcDestroyProgram");
  return cubin;
}

int blocks_for(int n) { return (n + kBlockThreads - 1) / kBlockThreads; }

struct Kernels {
  cudaLibrary_t library = nullptr;
  cudaKernel_t map = nullptr;
  cudaKernel_t smooth = nullptr;
};

Kernels load(const std::vector<char>& cubin) {
  Kernels k;
  LAB_CHECK(cudaLibraryLoadData(&k.library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  LAB_CHECK(cudaLibraryGetKernel(&k.map, k.library, "map"));
  LAB_CHECK(cudaLibraryGetKernel(&k.smooth, k.library, "smooth"));
  return k;
}

// ---- the on-disk entry: header, key, cubin ---------------------------------------------------

constexpr char kTag[8] = {'L', '1', '1', 'C', 'U', 'B', 'I', 'N'};  // the file format, version 1

struct Header {
  char tag[8];
  std::uint64_t key_size;
  std::uint64_t cubin_size;
  std::uint64_t checksum;  // of the cubin
};

std::uint64_t checksum(const std::vector<char>& cubin) {
  return std::hash<std::string_view>{}(std::string_view(cubin.data(), cubin.size()));
}

// The cubin stored at @p path for @p key, or false when the file is missing, short, long, of
// another format, another key's, or damaged.
bool read_entry(const std::string& path, const std::string& key, std::vector<char>& cubin) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  std::fseek(f, 0, SEEK_END);
  const long file_size = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  Header h;
  bool ok = file_size >= static_cast<long>(sizeof h + key.size()) &&
            std::fread(&h, sizeof h, 1, f) == 1 && std::memcmp(h.tag, kTag, sizeof kTag) == 0 &&
            h.key_size == key.size() &&
            h.cubin_size == static_cast<std::uint64_t>(file_size) - sizeof h - key.size();
  if (ok) {
    std::string stored(key.size(), '\0');
    ok = std::fread(&stored[0], 1, stored.size(), f) == stored.size() && stored == key;
  }
  if (ok) {
    cubin.resize(h.cubin_size);
    ok = std::fread(cubin.data(), 1, cubin.size(), f) == cubin.size() &&
         checksum(cubin) == h.checksum;
  }
  std::fclose(f);
  return ok;
}

// Writes the entry under a temporary name and renames it over @p path: another process sees the
// old file or the new one, never half of one. A cache that cannot be written is not an error.
void write_entry(const std::string& path, const std::string& key, const std::vector<char>& cubin) {
  const std::string tmp =
      path + ".tmp" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  Header h;
  std::memcpy(h.tag, kTag, sizeof kTag);
  h.key_size = key.size();
  h.cubin_size = cubin.size();
  h.checksum = checksum(cubin);
  bool ok = std::fwrite(&h, sizeof h, 1, f) == 1 &&
            std::fwrite(key.data(), 1, key.size(), f) == key.size() &&
            std::fwrite(cubin.data(), 1, cubin.size(), f) == cubin.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace

// What the Operator keeps between calls.
struct Operator::State {
  std::string cache_dir;
  std::string arch;
  std::string nvrtc_version;
  std::map<std::string, Kernels> loaded;  // key -> kernels, loaded and ready to launch
  cudaMemPool_t pool = nullptr;
};

Operator::Operator(const std::string& cache_dir, const std::string& arch)
    : state_(std::make_unique<State>()) {
  state_->cache_dir = cache_dir;
  state_->arch = arch;
  int major = 0, minor = 0;
  nvrtc_check(nvrtcVersion(&major, &minor), "nvrtcVersion");
  state_->nvrtc_version = std::to_string(major) + "." + std::to_string(minor);

  int device = 0;
  LAB_CHECK(cudaGetDevice(&device));
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  LAB_CHECK(cudaMemPoolCreate(&state_->pool, &props));
  std::uint64_t threshold = UINT64_MAX;  // keep everything it has grown to
  LAB_CHECK(cudaMemPoolSetAttribute(state_->pool, cudaMemPoolAttrReleaseThreshold, &threshold));
}

Operator::~Operator() {
  for (auto& entry : state_->loaded) cudaLibraryUnload(entry.second.library);
  if (state_->pool) cudaMemPoolDestroy(state_->pool);
}

void Operator::apply(const Program& program, const float* x, float* out, int n,
                     cudaStream_t stream) {
  // 1. The kernels: from memory, else from the disk, else compiled (and written for the next
  //    process).
  std::string key = "nvrtc " + state_->nvrtc_version + "\narch " + state_->arch + "\n";
  for (const std::string& o : program.options) key += "option " + o + "\n";
  key += "source\n" + program.source;
  auto entry = state_->loaded.find(key);
  if (entry == state_->loaded.end()) {
    char name[32];
    std::snprintf(name, sizeof name, "/%016llx.cubin",
                  static_cast<unsigned long long>(std::hash<std::string>{}(key)));
    const std::string path = state_->cache_dir + name;
    std::vector<char> cubin;
    if (!read_entry(path, key, cubin)) {
      cubin = compile(program, state_->arch);
      write_entry(path, key, cubin);
    }
    entry = state_->loaded.emplace(key, load(cubin)).first;
  }
  const Kernels& k = entry->second;

  // 2. The intermediate, from the pool: no cudaMalloc, no waiting.
  float* t = nullptr;
  LAB_CHECK(cudaMallocFromPoolAsync(&t, sizeof(float) * static_cast<std::size_t>(n), state_->pool,
                                    stream));

  // 3. The work: two launches, as in the starter.
  const float* t_in = t;
  void* map_args[] = {&x, &t, &n};
  void* smooth_args[] = {&t_in, &out, &n};
  LAB_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k.map), dim3(blocks_for(n)),
                             dim3(kBlockThreads), map_args, 0, stream));
  LAB_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k.smooth), dim3(blocks_for(n)),
                             dim3(kBlockThreads), smooth_args, 0, stream));

  // 4. Back to the pool, in stream order: the next call on this stream reuses it.
  LAB_CHECK(cudaFreeAsync(t, stream));
}

}  // namespace exercise
