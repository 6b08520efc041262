// Small file-system helpers: atomic writes, bounded reads, temporary folders, random tokens.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lab/result_reader.hpp"  // parse_json_limited: the bounded JSON parser of every reader

namespace lab {

namespace fs = std::filesystem;

/// Writes `content` to `path` so that readers see the old file or the new one, never half of it:
/// a temporary file in the same folder, flushed to disk, then renamed over `path` (which keeps
/// its permissions). Creates the folder if needed. Only a regular file is ever replaced: where
/// `path` is a link, a folder, a device, a FIFO or a socket it throws, and that stays as it was.
/// Throws std::runtime_error naming the path on failure.
void write_file_atomic(const fs::path& path, std::string_view content);

/// Why `path` cannot be an output ("is a symbolic link", "is a character device", ...: what it
/// is, not a regular file), or "" where it does not exist yet or is a regular file.
std::string output_path_problem(const fs::path& path);

/// Reads a whole file if it is at most `max_bytes` long. On failure returns nullopt and sets
/// `error` to a sentence ("does not exist", "is 30 MB, more than the 16 MB allowed", ...).
std::optional<std::string> read_file_limited(const fs::path& path, std::uintmax_t max_bytes,
                                             std::string& error);

/// read_file_limited, then parse_json_limited; `error` as theirs, without the file's name.
std::optional<nlohmann::json> read_json_file(const fs::path& path, std::uintmax_t max_bytes,
                                             std::string& error);

/// The last `max_bytes` of a file (whole lines where possible); empty if it cannot be read.
std::string file_tail(const fs::path& path, std::size_t max_bytes);

/// A fresh folder under $TMPDIR (or /tmp), removed with its contents when the object dies.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "lab-check");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  void keep() { keep_ = true; }

 private:
  fs::path path_;
  bool keep_ = false;
};

/// `n` random bytes from the OS as lower-case hex (the nonce a lesson must echo).
std::string random_hex(std::size_t n);
/// A random seed in [1, 2^31 - 1].
std::uint32_t random_seed();

/// The full path of `name` found on $PATH, or nullopt.
std::optional<fs::path> find_on_path(const std::string& name);
/// A CUDA tool (ncu, nsys, compute-sanitizer): `name` itself if it holds a '/', else found on
/// $PATH, else in /usr/local/cuda/bin (where the toolkit installs them when PATH does not say).
std::optional<fs::path> find_cuda_tool(const std::string& name);

/// The SHA-256 digest of `data`, as 64 lower-case hex digits (FIPS 180-4).
std::string sha256_hex(std::string_view data);

/// `value` as fixed-point text with `digits` decimals ("0.75"); trailing zeros are kept.
std::string fixed(double value, int digits);

}  // namespace lab
