// The solution with its files read and written through std::ifstream and std::ofstream instead
// of fopen, fread and fwrite. The seal refuses <fstream> and <filesystem> in every lesson, this
// one included (the C library's calls check.toml allows are the ones a file needs); the README
// and the starter say so, and the seal's message names them, so the refusal is no surprise.
#include <nvrtc.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
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
constexpr std::uint64_t kMaxCubinBytes = std::uint64_t{1} << 30;

std::uint64_t checksum(const std::string& key, const std::vector<char>& cubin) {
  return fnv1a(cubin.data(), cubin.size(), fnv1a(key.data(), key.size()));
}

// The cubin stored at @p path for @p key, or false: a missing, short, long, damaged or foreign
// file is a miss, never an error.
bool read_entry(const std::string& path, const std::string& key, std::vector<char>& cubin) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  EntryHeader h{};
  bool ok = static_cast<bool>(f.read(reinterpret_cast<char*>(&h), sizeof h)) &&
            std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 && h.key_bytes == key.size() &&
            h.cubin_bytes > 0 && h.cubin_bytes <= kMaxCubinBytes;
  std::string stored;
  if (ok) {
    stored.resize(key.size());
    ok = static_cast<bool>(f.read(&stored[0], static_cast<std::streamsize>(stored.size()))) &&
         stored == key;
  }
  if (ok) {
    cubin.resize(h.cubin_bytes);
    ok = static_cast<bool>(f.read(cubin.data(), static_cast<std::streamsize>(cubin.size())));
  }
  ok = ok && f.peek() == std::ifstream::traits_type::eof();  // and nothing after it
  return ok && checksum(key, cubin) == h.checksum;
}

// Writes the entry under a temporary name, then renames it over @p path: rename is atomic, so a
// reader sees the old file or the new one, never half of either. A cache that cannot be written
// only makes the next process slower, so failures are not errors.
void write_entry(const std::string& path, const std::string& key, const std::vector<char>& cubin) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const std::uint64_t salt = static_cast<std::uint64_t>(now.tv_sec) * 1000000000ull +
                             static_cast<std::uint64_t>(now.tv_nsec) +
                             reinterpret_cast<std::uintptr_t>(&now);
  const std::string tmp = path + ".tmp-" + hex(salt);
  EntryHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key_bytes = key.size();
  h.cubin_bytes = cubin.size();
  h.checksum = checksum(key, cubin);
  bool ok;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(&h), sizeof h);
    f.write(key.data(), static_cast<std::streamsize>(key.size()));
    f.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    f.close();
    ok = static_cast<bool>(f);
  }
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

    const std::string path = dir_ + "/" + hex(fnv1a(key.data(), key.size())) + ".cubin";
    std::vector<char> cubin;
    Kernels k;
    if (!(read_entry(path, key, cubin) && load(cubin, k))) {
      cubin = compile(program, arch_);
      if (!load(cubin, k))
        throw std::runtime_error("the driver refused NVRTC's own cubin for " + arch_);
      write_entry(path, key, cubin);  // replaces whatever was there: a damaged entry is rebuilt
    }
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
