// lab-mutant SOURCE_DIR LESSON NAME OUT: writes the mutant solutions/LESSON/mutants/NAME.patch
// of the course in SOURCE_DIR, applied to its base, to OUT. The build runs it for every mutant it
// compiles (cmake/LabLesson.cmake); scripts/gpu-round.sh, to grade mutants as submissions.
// OUT is left untouched when it already holds that text, so a rebuild recompiles nothing.
#include <fstream>
#include <iostream>
#include <sstream>

#include "patch.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: lab-mutant SOURCE_DIR LESSON NAME OUT\n";
    return 2;
  }
  const lab::fs::path out = argv[4];
  try {
    const std::string text = lab::materialise_mutant(argv[1], argv[2], argv[3]);
    std::ifstream old(out, std::ios::binary);
    std::ostringstream seen;
    seen << old.rdbuf();
    if (old && seen.str() == text) return 0;
    if (out.has_parent_path()) lab::fs::create_directories(out.parent_path());
    // Written beside it, then renamed into place: a build stopped half-way never leaves a
    // mutant cut short that a later build would take as up to date.
    const lab::fs::path part = out.string() + ".part";
    {
      std::ofstream file(part, std::ios::binary | std::ios::trunc);
      file << text;
      if (!file.flush()) {
        std::cerr << "lab-mutant: cannot write " << part.string() << "\n";
        return 1;
      }
    }
    lab::fs::rename(part, out);
  } catch (const std::exception& e) {
    std::cerr << "lab-mutant: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
