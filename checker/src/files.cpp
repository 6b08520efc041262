#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace lab {

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

std::optional<nlohmann::json> read_json_file(const fs::path& path, std::uintmax_t max_bytes,
                                             std::string& error) {
  const auto text = read_file_limited(path, max_bytes, error);
  if (!text) return std::nullopt;
  return parse_json_limited(*text, error);
}

void write_file_atomic(const fs::path& path, std::string_view content) {
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create folder " + dir.string() + ": " + ec.message());

  std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) throw std::runtime_error("cannot write " + path.string() + ": " + errno_text());
  const std::string tmp(name.data());

  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error("cannot write " + path.string() + ": " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  // mkstemp makes 0600 files; results are meant to be shared with the course staff.
  ::fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path.string() + ": " + why);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot rename into " + path.string() + ": " + why);
  }
}

std::optional<std::string> read_file_limited(const fs::path& path, std::uintmax_t max_bytes,
                                             std::string& error) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    error = "does not exist";
    return std::nullopt;
  }
  if (!fs::is_regular_file(status)) {
    error = "is not a regular file";
    return std::nullopt;
  }
  const auto size = fs::file_size(path, ec);
  if (ec) {
    error = "cannot be read: " + ec.message();
    return std::nullopt;
  }
  if (size > max_bytes) {
    error = "is " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
            " allowed";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot be opened";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  if (s.size() > max_bytes) s.resize(max_bytes);
  return s;
}

std::string file_tail(const fs::path& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes)
                                   ? size - static_cast<std::streamoff>(max_bytes)
                                   : 0;
  in.seekg(start);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (start > 0) {
    const auto nl = s.find('\n');
    if (nl != std::string::npos) s.erase(0, nl + 1);
  }
  return s;
}

TempDir::TempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  fs::path root = (base && *base) ? fs::path(base) : fs::path("/tmp");
  std::string tmpl = (root / (prefix + "-XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  if (!mkdtemp(name.data()))
    throw std::runtime_error("cannot create a temporary folder in " + root.string() + ": " +
                             errno_text());
  path_ = name.data();
}

TempDir::~TempDir() {
  if (keep_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string random_hex(std::size_t n) {
  std::random_device rd;  // /dev/urandom on Linux
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned byte = rd() & 0xffu;
    out += digits[byte >> 4];
    out += digits[byte & 15];
  }
  return out;
}

std::uint32_t random_seed() {
  std::random_device rd;
  return 1 + rd() % 2147483646u;
}

std::optional<fs::path> find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / name;
    if (::access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate))
      return candidate;
  }
  return std::nullopt;
}

std::optional<fs::path> find_cuda_tool(const std::string& name) {
  if (name.find('/') != std::string::npos) return fs::path(name);
  if (auto found = find_on_path(name)) return found;
  const fs::path toolkit = fs::path("/usr/local/cuda/bin") / name;
  if (!name.empty() && ::access(toolkit.c_str(), X_OK) == 0) return toolkit;
  return std::nullopt;
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

}  // namespace lab
