// `lab-check handout DEST`: the tree a student receives, made from the instructor's course. It is
// what builds and runs the lessons (README, CMake files, common/, checker/, the lessons with their
// starters, slides, the student docs and scripts); never solutions/, mutants, answer keys,
// instructor notes or the measurement runs behind the texts' tables.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lab {

namespace fs = std::filesystem;

/// The paths (files or folders, relative to the course) a handout holds; what a folder holds is
/// copied but for what `left_out_of_handout` names.
const std::vector<std::string>& handout_paths();

/// Instructor pages the student's texts link to: the handout holds a one-line page in their place.
const std::vector<std::string>& instructor_pages();

/// Whether a file or folder met inside a copied folder stays out of the handout (a mutants/ folder,
/// an answer key, a patch, a build folder, node_modules, a hidden file).
bool left_out_of_handout(const fs::path& name);

/// Copies the handout of the course in `source_dir` to `dest`, which must not exist or be an
/// empty folder, and must not lie inside a folder the handout copies. Returns how many files it
/// wrote. Throws ConfigError naming the path that stops it.
std::size_t write_handout(const fs::path& source_dir, const fs::path& dest);

}  // namespace lab
