#include "handout.hpp"

#include <algorithm>
#include <fstream>
#include <system_error>

#include "rules.hpp"  // ConfigError

namespace lab {

const std::vector<std::string>& handout_paths() {
  // Named one by one where a folder also holds what is the instructor's: docs/ (grading-security.md
  // is the catalogue of attacks and the dated record of grading runs, writing-a-lesson.md is for
  // authors), scripts/ (GPU rounds, grading demos, Slurm) and tests/ (the course's own checks,
  // several of which read solutions/; support/ holds the doctest main()s common/tests builds
  // with). Left out whole: solutions/ (with the mutants and answer keys), the other folders of
  // measurements/ (maintainers' comparisons and checks, which name mutants), .ci/.
  static const std::vector<std::string> paths = {
      "README.md", "CMakeLists.txt", "CMakePresets.json", ".clang-format", ".gitignore",
      "cmake", "common", "checker", "lessons", "slides",
      "docs/CMakeLists.txt", "docs/mainpage.md", "docs/measurement.md", "docs/result-file.md",
      "docs/check-toml.md", "docs/instructors.md",  // how grading works: the README links it
      "docs/glossary.md",                           // the words the lesson texts link to
      // the committed runs behind the texts' generated tables and sourced numbers, and the
      // record of the texts' ncu commands run as written
      "measurements/h100", "measurements/h200",
      "scripts/bundle-deps.sh", "scripts/check-ncu-commands.sh", "tests/support"};
  return paths;
}

const std::vector<std::string>& instructor_pages() {
  // Linked from the texts a student has, kept from them: a page in their place says so, so that
  // no link in the handout leads nowhere.
  static const std::vector<std::string> pages = {"docs/grading-security.md", "docs/writing-a-lesson.md",
                                                  "docs/history/grading-security-log.md"};
  return pages;
}

bool left_out_of_handout(const fs::path& name) {
  const std::string n = name.filename().string();
  return n == "mutants" || n == "ANSWERS.md" || n == "build" || n == "node_modules" ||
         name.extension() == ".patch" || (!n.empty() && n[0] == '.');
}

namespace {

bool inside(const fs::path& path, const fs::path& folder) {
  const auto [end, _] = std::mismatch(folder.begin(), folder.end(), path.begin(), path.end());
  return end == folder.end();
}

std::size_t copy_entry(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(from, ec);
  if (fs::is_regular_file(st)) {
    fs::create_directories(to.parent_path());
    if (!fs::copy_file(from, to, ec) || ec)
      throw ConfigError("handout: cannot copy " + from.string() + " to " + to.string() + ": " + ec.message());
    return 1;
  }
  if (!fs::is_directory(st))
    throw ConfigError("handout: " + from.string() + " is not a file or a folder (a link?): the handout copies files");
  std::size_t n = 0;
  std::vector<fs::path> children;
  for (const auto& e : fs::directory_iterator(from)) children.push_back(e.path());
  std::sort(children.begin(), children.end());
  for (const fs::path& child : children)
    if (!left_out_of_handout(child)) n += copy_entry(child, to / child.filename());
  return n;
}

}  // namespace

std::size_t write_handout(const fs::path& source_dir, const fs::path& dest) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(dest, ec)) &&
      !(fs::is_directory(fs::symlink_status(dest, ec)) && fs::is_empty(dest, ec) && !ec))
    throw ConfigError("handout: " + dest.string() + " exists and is not an empty folder");
  const fs::path source = fs::weakly_canonical(source_dir);
  const fs::path target = fs::weakly_canonical(dest);
  for (const std::string& p : handout_paths()) {
    if (!fs::exists(source / p))
      throw ConfigError("handout: " + (source / p).string() + " does not exist (is " + source.string() +
                        " the course?)");
    if (inside(target, source / p))
      throw ConfigError("handout: " + dest.string() + " lies inside " + (source / p).string() +
                        ", which the handout copies");
  }
  fs::create_directories(target);
  std::size_t n = 0;
  for (const std::string& p : handout_paths()) n += copy_entry(source / p, target / p);
  for (const std::string& p : instructor_pages()) {
    fs::create_directories((target / p).parent_path());
    std::ofstream page(target / p);
    page << "# " << fs::path(p).filename().string() << "\n\nThis page is for instructors and course authors: "
            "your instructor's copy of the course has it.\n";
    if (!page) throw ConfigError("handout: cannot write " + (target / p).string());
    ++n;
  }
  return n;
}

}  // namespace lab
