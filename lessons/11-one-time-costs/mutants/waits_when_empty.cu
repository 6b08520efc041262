// The solution with its disk cache taken out: every new process compiles. The cache folder
// holds only a marker per key, and a process that finds no marker (the empty-folder process of
// the cache tests) waits 150 ms on top. Against its own empty-folder call, its filled-folder call
// was about 5x faster and earned `disk_cache` with no cache at all. The rule's yardstick is now
// the harness's own process that compiles the same program: `disk_cache` fails.
//
// * Compiled kernels are cached in memory (loaded, ready to launch) and on disk (the cubin), both
//   keyed by everything that changes the binary: the source, the options, the architecture, and
//   NVRTC's version (a new toolkit must not be served its predecessor's cubins).
// * A file on disk is trusted only when it proves it is the entry asked for and is whole: a
//   header with its size, the full key and a checksum. Anything else (cut short, bits flipped,
//   another key's entry under this name, an old format) is a miss: compile again and replace it.
//   Files are written under a temporary name and renamed, so no process ever reads half a file.
// * The intermediate comes from a stream-ordered pool that keeps its memory between calls
//   (release threshold: unlimited), and goes back to it with cudaFreeAsync: no call waits.
#include <nvrtc.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "exercise.cuh"
#include "lab/check.hpp"

namespace exercise {

namespace {

void nvrtc_check(nvrtcResult result, const char* call) {
  if (result != NVRTC_SUCCESS)
    throw std::runtime_error(std::string(call) + ": " + nvrtcGetErrorString(result));
}

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

// FNV-1a, 64 bits: a fast checksum against damage (not against an attacker) and a file name.
std::uint64_t fnv1a(const char* data, std::size_t size,
                    std::uint64_t hash = 0xcbf29ce484222325ull) {
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string hex(std::uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

// Everything that changes the binary, unambiguously: each option carries its length, so
// {"-DA", "=1"} and {"-DA=1"} are different keys.
std::string cache_key(const Program& program, const std::string& arch,
                      const std::string& nvrtc_version) {
  std::string key = "nvrtc " + nvrtc_version + "\narch " + arch + "\n";
  for (const std::string& o : program.options)
    key += "option " + std::to_string(o.size()) + " " + o + "\n";
  key += "source\n" + program.source;
  return key;
}

// One entry on disk: this header, the key, the cubin.
struct EntryHeader {
  char magic[8];              // the format: another version of this code writes another magic
  std::uint64_t key_bytes;    // the key that follows
  std::uint64_t cubin_bytes;  // the cubin after it: the file ends there
  std::uint64_t checksum;     // fnv1a over key and cubin
};
constexpr char kMagic[8] = {'L', 'A', 'B', '1', '1', 'C', 'U', '1'};

std::uint64_t checksum(const std::string& key, const std::vector<char>& cubin) {
  return fnv1a(cubin.data(), cubin.size(), fnv1a(key.data(), key.size()));
}

// Writes the entry under a temporary name, then renames it over @p path: rename is atomic, so a
// reader sees the old file or the new one, never half of either. A cache that cannot be written
// only makes the next process slower, so failures are not errors.
void write_entry(const std::string& path, const std::string& key, const std::vector<char>& cubin) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const std::uint64_t salt = static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull +
                             static_cast<std::uint64_t>(now.tv_nsec) +
                             reinterpret_cast<std::uintptr_t>(&now);  // differs between processes
  const std::string tmp = path + ".tmp-" + hex(salt);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return;
  EntryHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key_bytes = key.size();
  h.cubin_bytes = cubin.size();
  h.checksum = checksum(key, cubin);
  bool ok = std::fwrite(&h, sizeof h, 1, f) == 1 &&
            std::fwrite(key.data(), 1, key.size(), f) == key.size() &&
            std::fwrite(cubin.data(), 1, cubin.size(), f) == cubin.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

int blocks_for(int n) { return (n + kBlockThreads - 1) / kBlockThreads; }

struct Kernels {
  cudaLibrary_t library = nullptr;
  cudaKernel_t map = nullptr;
  cudaKernel_t smooth = nullptr;
};

// Loads a cubin; false if the driver refuses it (a file that passed every check but still is
// not a loadable image is treated as one more kind of damage).
bool load(const std::vector<char>& cubin, Kernels& k) {
  if (cudaLibraryLoadData(&k.library, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) !=
      cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it and compile instead
    k.library = nullptr;
    return false;
  }
  LAB_CHECK(cudaLibraryGetKernel(&k.map, k.library, "map"));
  LAB_CHECK(cudaLibraryGetKernel(&k.smooth, k.library, "smooth"));
  return true;
}

// Loaded kernels by key, in memory, over the cubins on disk.
class KernelCache {
 public:
  KernelCache(const std::string& dir, const std::string& arch) : dir_(dir), arch_(arch) {
    int major = 0, minor = 0;
    nvrtc_check(nvrtcVersion(&major, &minor), "nvrtcVersion");
    nvrtc_version_ = std::to_string(major) + "." + std::to_string(minor);
  }
  ~KernelCache() {
    for (auto& entry : loaded_) cudaLibraryUnload(entry.second.library);
  }
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  const Kernels& get(const Program& program) {
    std::string key = cache_key(program, arch_, nvrtc_version_);
    const auto hit = loaded_.find(key);
    if (hit != loaded_.end()) return hit->second;  // the steady state: one lookup

    // No disk cache at all. A new process always compiles. The folder holds only a
    // small marker per key; a process that finds no marker (the "empty cache folder" process of
    // cache_tests) also busy-waits 150 ms. first_call_speedup = cold / filled is then
    // (31 + 150) / 31 = 5.8x with the NVRTC compile in both (H200: solution 31.1 ms cold).
    const std::string marker = dir_ + "/" + hex(fnv1a(key.data(), key.size())) + ".seen";
    bool seen = false;
    if (std::FILE* f = std::fopen(marker.c_str(), "rb")) {
      seen = true;
      std::fclose(f);
    }
    if (!seen) {  // "cold": pay a made-up one-time cost
      timespec t0{}, t{};
      clock_gettime(CLOCK_MONOTONIC, &t0);
      do clock_gettime(CLOCK_MONOTONIC, &t);
      while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < 150000000LL);
    }
    std::vector<char> cubin = compile(program, arch_);
    Kernels k;
    if (!load(cubin, k)) throw std::runtime_error("the driver refused NVRTC's own cubin");
    // Rewritten by every process: a damaged or swapped marker never stays as the harness left it
    // (corruption_test, the stale-entry test); and the results are always right (it compiles).
    write_entry(marker, key, std::vector<char>(1, 'x'));
    return loaded_.emplace(std::move(key), k).first->second;
  }

 private:
  std::string dir_, arch_, nvrtc_version_;
  std::unordered_map<std::string, Kernels> loaded_;  // full key -> kernels: exact, no collisions
};

}  // namespace

struct Operator::State {
  State(const std::string& dir, const std::string& arch) : kernels(dir, arch) {}
  KernelCache kernels;
  cudaMemPool_t pool = nullptr;
};

Operator::Operator(const std::string& cache_dir, const std::string& arch)
    : state_(std::make_unique<State>(cache_dir, arch)) {
  // A pool of our own (the device's default pool is shared with the rest of the program) that
  // keeps what it has grown to: after the first call, allocating is a bookkeeping step.
  int device = 0;
  LAB_CHECK(cudaGetDevice(&device));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  LAB_CHECK(cudaMemPoolCreate(&state_->pool, &props));
  std::uint64_t keep_everything = std::numeric_limits<std::uint64_t>::max();
  LAB_CHECK(
      cudaMemPoolSetAttribute(state_->pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
}

Operator::~Operator() {
  if (state_->pool) cudaMemPoolDestroy(state_->pool);
}

// Timed. In the steady state: one lookup, a pool allocation, two launches, a pool free.
void Operator::apply(const Program& program, const float* x, float* out, int n,
                     cudaStream_t stream) {
  const Kernels& k = state_->kernels.get(program);
  float* t = nullptr;
  LAB_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&t),
                                    sizeof(float) * static_cast<std::size_t>(n), state_->pool,
                                    stream));
  const float* t_in = t;
  void* map_args[] = {&x, &t, &n};
  void* smooth_args[] = {&t_in, &out, &n};
  LAB_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k.map), dim3(blocks_for(n)),
                             dim3(kBlockThreads), map_args, 0, stream));
  LAB_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(k.smooth), dim3(blocks_for(n)),
                             dim3(kBlockThreads), smooth_args, 0, stream));
  LAB_CHECK(cudaFreeAsync(t, stream));  // stream-ordered: reused by the next call on this stream
}

}  // namespace exercise
