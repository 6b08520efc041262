// Files written outside the folders processes were given (lab/write_audit.hpp).
#include "lab/write_audit.hpp"
#include "lab/writable_places.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <system_error>

namespace lab {

namespace fs = std::filesystem;

std::vector<fs::path> WriteAudit::writable_places() {
  std::vector<fs::path> places = {fs::current_path()};
  for (const std::string& folder : world_writable_folders()) places.push_back(folder);
  return places;
}

WriteAudit::WriteAudit(std::vector<fs::path> places, std::size_t max_entries)
    : places_(std::move(places)), max_entries_(max_entries) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/self/fd", ec)) {
    struct stat st {};
    if (stat(e.path().c_str(), &st) == 0) held_.insert({st.st_dev, st.st_ino});
  }
}

void WriteAudit::allow(const fs::path& folder) { allowed_.insert(folder); }

FileStamps WriteAudit::list() const {
  FileStamps out;
  const char* trace = std::getenv("LAB_TRACE_FILE");
  const char* home = std::getenv("HOME");
  const char* driver_cache = std::getenv("CUDA_CACHE_PATH");
  std::error_code canonical;
  const fs::path driver = fs::weakly_canonical(driver_cache ? fs::path(driver_cache)
                                               : home ? fs::path(home) / ".nv" / "ComputeCache"
                                                      : fs::path(),
                                               canonical);
  for (const fs::path& top : places_) {
    std::error_code ec;
    fs::recursive_directory_iterator it(top, fs::directory_options::skip_permission_denied, ec);
    for (std::size_t seen = 0; !ec && it != fs::recursive_directory_iterator();
         it.increment(ec), ++seen) {
      if (seen == max_entries_) {
        out[top / ("(more than " + std::to_string(max_entries_) + " entries: not all were read)")] =
            {-1, 0};
        break;
      }
      const fs::path& p = it->path();
      if (allowed_.count(p) || p == driver) {
        it.disable_recursion_pending();
        continue;
      }
      struct stat st {};
      if (lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) continue;
      if ((trace && p == trace) || held_.count({st.st_dev, st.st_ino})) continue;
      out[p] = {static_cast<long long>(st.st_size),
                st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec};
    }
  }
  return out;
}

std::string WriteAudit::written(const FileStamps& before, const FileStamps& now) {
  std::string out;
  for (const auto& [path, stamp] : now) {
    const auto it = before.find(path);
    const bool unread = stamp.first < 0;  // a listing cut short
    if ((unread || it == before.end() || it->second != stamp) && out.size() < 400)
      out += (out.empty() ? "" : ", ") + path.string();
  }
  return out;
}

}  // namespace lab
