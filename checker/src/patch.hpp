// A strict unified-diff applier, for the course's mutants: each one is stored as a patch against
// a lesson's solution or starter (solutions/NN-topic/mutants/<name>.patch) and made into a file
// only where the instructor's tools need it (the build, `lab-check selftest`). Every hunk must
// land exactly where its header says, with every context and removed line as written: no fuzz,
// no offsets, so a patch that no longer fits its base is an error, never a near-miss.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace lab {

namespace fs = std::filesystem;

/// A patch that cannot be read or does not apply; the message names the patch (and the hunk).
struct PatchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One line of a hunk: ' ' (context), '-' (removed) or '+' (added), with its line ending
/// ("\n", or nothing for a last line marked "\ No newline at end of file").
struct HunkLine {
  char op = ' ';
  std::string text;
};

struct Hunk {
  long old_start = 0, old_count = 0, new_start = 0, new_count = 0;
  std::string header;  ///< the "@@ ... @@" line, for messages
  std::vector<HunkLine> lines;
};

/// A patch of one file.
struct Patch {
  std::string name;      ///< how messages name it (its path)
  std::string old_path;  ///< the "---" path (a git "a/" prefix removed, a tab and date dropped)
  std::string new_path;  ///< the "+++" path
  std::vector<Hunk> hunks;
};

/// Reads a unified diff of one file (the output of `diff -u` or `git diff`; lines before the
/// "---" line are ignored). Throws PatchError "<name>:<line>: <what is wrong>".
Patch parse_patch(const std::string& text, const std::string& name);

/// `original` with the patch applied. Throws PatchError naming the patch and the hunk that does
/// not apply, and the line that differs.
std::string apply_patch(const Patch& patch, const std::string& original);

/// The file a mutant of `lesson` stands for: <source_dir>/solutions/<lesson>/mutants/<name>.patch
/// applied to its base, which must be solutions/<lesson>/exercise.cu or lessons/<lesson>/exercise.cu
/// (the patch's "---" path). Throws PatchError.
std::string materialise_mutant(const fs::path& source_dir, const std::string& lesson,
                               const std::string& name);

/// solutions/<lesson>/mutants/<name>.patch below `source_dir`.
fs::path mutant_patch(const fs::path& source_dir, const std::string& lesson, const std::string& name);

}  // namespace lab
