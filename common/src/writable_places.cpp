#include "lab/writable_places.hpp"

#include <sys/stat.h>

#include <filesystem>
#include <set>

namespace lab {

const std::vector<std::string>& world_writable_folders() {
  static const std::vector<std::string> folders = [] {
    namespace fs = std::filesystem;
    std::set<std::string> dirs = {"/tmp", "/dev/shm"};
    for (const char* parent : {"/", "/var", "/run", "/dev", "/srv", "/opt", "/home", "/mnt", "/media"}) {
      std::error_code ec;
      for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path p = it->path();
        if (p == "/proc" || p == "/sys") continue;
        struct stat st;
        if (::lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_IWOTH))
          dirs.insert(p.string());
      }
    }
    return std::vector<std::string>(dirs.begin(), dirs.end());
  }();
  return folders;
}

}  // namespace lab
