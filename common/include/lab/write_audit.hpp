/// @file write_audit.hpp
/// @brief Which files processes wrote outside the folders they were given: a listing of every
/// regular file of this program's user in the places a graded run can write, taken before and
/// again after (lesson 11's cache tests: a cache kept anywhere but the folder handed to a new
/// process would escape the tests of damaged entries, which reach only that folder).
///
/// @code
/// lab::WriteAudit audit;              // in main, before any code under test runs
/// audit.allow(folder);                // before a process is handed the folder
/// const lab::FileStamps before = audit.list();
/// ... new processes run ...
/// const std::string written = lab::WriteAudit::written(before, audit.list());
/// @endcode
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lab {

/// Each file listed, with its size and its time of change in nanoseconds (size -1: a listing
/// cut short, under a name that says so).
using FileStamps = std::map<std::filesystem::path, std::pair<long long, long long>>;

/// @brief Lists the files a process could have written outside the folders it was given.
class WriteAudit {
 public:
  /// @return the places a graded run can write: the working directory and every folder any
  ///         user may write (world_writable_folders, the checker's list too)
  static std::vector<std::filesystem::path> writable_places();

  /// @brief Notes the files this process holds open now (what the checker handed it: its
  /// output, its record): they change while it runs, by the harness's own hand, and are left
  /// out. Make it before any code under test runs.
  /// @param places the folders to list, each recursively
  /// @param max_entries entries per place after which a listing counts as cut short (more than
  ///        any cache needs: a listing that cannot end is a failure, not a partial list)
  explicit WriteAudit(std::vector<std::filesystem::path> places = writable_places(),
                      std::size_t max_entries = 200000);

  /// @brief Leaves @p folder (and everything under it) out of every listing: a place where
  /// writes are expected.
  /// @param folder as the listing reaches it (an absolute path under one of the places)
  void allow(const std::filesystem::path& folder);

  /// @return every regular file of this user under the places, but the allowed folders, the
  ///         checker's trace file (LAB_TRACE_FILE), the files noted at construction and the
  ///         CUDA driver's compute cache (the driver writes it in every process)
  FileStamps list() const;

  /// @param before an earlier list()
  /// @param now a later one
  /// @return the files new or changed in @p now, comma-separated (about 400 characters at
  ///         most), or "" when none
  static std::string written(const FileStamps& before, const FileStamps& now);

 private:
  std::vector<std::filesystem::path> places_;
  std::size_t max_entries_;
  std::set<std::filesystem::path> allowed_;
  std::set<std::pair<unsigned long long, unsigned long long>> held_;  // device, inode
};

}  // namespace lab
