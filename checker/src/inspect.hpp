// The seal on an exercise: what its compiled object file may define and call, checked before any
// of it runs (docs/grading-security.md). An exercise is linked into the process that validates
// and times it, so the object file is where the checker decides what that code could reach.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lab {

namespace fs = std::filesystem;

/// What the binutils see in one object file (or, merged, in an archive's members).
struct ObjectSymbols {
  std::set<std::string> strong;     ///< defined with external linkage (T, D, B, R, C, i)
  std::set<std::string> weak;       ///< defined weak or unique (W, V, u): inline functions,
                                    ///< template instances, their static locals
  std::set<std::string> indirect;   ///< of strong, the IFUNCs (i): a resolver runs at load
  std::set<std::string> undefined;  ///< referenced, not defined here (U)
  std::set<std::string> weak_undefined;  ///< referenced weakly (w, v)
  /// for each symbol referenced by a relocation: the sections whose code or data refer to it
  std::map<std::string, std::set<std::string>> referenced_from;
  /// COMDAT groups (inline functions, template instances): each member section's group
  /// signature, and the signatures; of groups with one signature the linker keeps the first
  std::map<std::string, std::string> section_group;
  std::set<std::string> groups;
  /// One relocation of a loaded section: where in that section it is (`at`), and what it names:
  /// a global symbol (the linker binds a name program-wide, so a pristine definition wins), or
  /// a place in a section of this file (a local symbol's or a section-relative reference).
  struct Reference {
    std::uint64_t at = 0;
    std::string symbol;   ///< the global symbol, or ""
    std::string section;  ///< else the section of this file
    std::uint64_t offset = 0;  ///< and the place in it (the addend: a call's is 4 short)
  };
  /// what each loaded section refers to; unwinding tables (.eh_frame) keep their symbols only
  /// (a personality routine), not the functions they describe
  std::map<std::string, std::vector<Reference>> references;
  /// each section's functions and data objects that have a size: where they start and end
  struct Span {
    std::uint64_t start = 0, end = 0;
    std::string name;
  };
  std::map<std::string, std::vector<Span>> spans;
  std::set<std::string> code_sections;  ///< the sections of machine code
  /// for each global symbol this file defines: the section it lies in
  std::map<std::string, std::string> defined_in;
  int initializers = 0;      ///< entries of .init_array (code that runs before main)
  /// of those, g++'s initializers that only construct <iostream>'s std::ios_base::Init (g++
  /// older than 13 emits one in every file that includes <iostream>, CUB's headers included)
  int iostream_initializers = 0;
  bool other_startup = false;  ///< .fini_array, .preinit_array, .ctors or .dtors present
  /// atexit referred to by a function other than nvcc's module registration (which registers
  /// the module's unloading with it): a handler of the exercise's own would run after main
  bool exit_handler = false;
  /// sections no compiler makes for an exercise: executable ones not named .text*, a name used
  /// twice, or one with a space, control or non-ASCII character in its name; each described
  std::vector<std::string> odd_sections;
  bool system_call = false;    ///< a syscall / sysenter / int 0x80 instruction in host code
};

/// One thing the seal refuses, in words a student can act on.
struct SealFinding {
  std::string symbol;  ///< demangled, or "" for a finding about the file as a whole
  std::string why;
};

/// The pristine side of a lesson program, against which its exercise is held.
struct SealContext {
  ObjectSymbols harness;    ///< the lesson's main.cu object
  ObjectSymbols library;    ///< the lab library's objects
  ObjectSymbols interface;  ///< the lesson's starter exercise: it defines exactly the interface
  std::string exercise_stem;  ///< the exercise file's name without ".cu" (nvcc's anonymous-
                              ///< namespace tags carry it)
  std::vector<std::string> extra_calls;  ///< imports this lesson also allows (check.toml)
  std::vector<std::string> refused_calls;  ///< imports this lesson refuses (check.toml)
  /// what the linked program exports: the functions its shared libraries call and it provides
  std::set<std::string> exported;
  /// the pristine objects one by one (the harness, then the library's), whose code runs where
  /// exercise code refers to a function they define: the seal follows their references from
  /// there (not owned: the caller keeps them alive)
  std::vector<const ObjectSymbols*> pristine;
};

/// The rules, applied to already-read symbols (pure: unit-tested without any binary).
std::vector<SealFinding> check_seal(const ObjectSymbols& exercise, const SealContext& context);

/// How much of an object file to read: all of it for an exercise; for pristine code (the
/// harness, the library, the starter) only what the seal holds an exercise against (symbols,
/// COMDAT groups, initializers, references) without its disassembly, which costs seconds for a
/// large library object.
enum class ObjectReading { exercise, pristine };

/// Reads an object file or a static archive with nm, readelf and (for an exercise) objdump.
/// @throws ConfigError when the binutils are missing or cannot read the file
ObjectSymbols read_object(const fs::path& file, ObjectReading reading = ObjectReading::exercise);

/// The files lab_add_lesson lists beside each lesson program, in `<program>.objects`.
struct ProgramObjects {
  fs::path exercise, interface, harness, source;
  std::vector<fs::path> library;  ///< the lab library's object files
};

/// @return the manifest of @p program, or nullopt (with @p why) when it has none
std::optional<ProgramObjects> program_objects(const fs::path& program, std::string& why);

/// Reads the program's objects and checks its exercise. Empty: sealed.
/// @throws ConfigError when the files cannot be read
std::vector<SealFinding> inspect_program(const fs::path& program,
                                         const std::vector<std::string>& extra_calls = {},
                                         const std::vector<std::string>& refused_calls = {});

/// @return one paragraph: the findings, at most @p max of them, and what to do
std::string describe_findings(const std::vector<SealFinding>& findings, std::size_t max = 8);

/// @return the demangled name of a symbol (the symbol itself when it is not mangled C++)
std::string demangle(const std::string& symbol);

/// A source file as its tokens read: line splices (backslash-newline) joined, each comment made
/// one space, and (unless `keep_literals`) the text inside string and character literals
/// removed, quotes kept. `line[i]` is the source line that `text[i]` came from (1-based).
struct SourceText {
  std::string text;
  std::vector<int> line;
};
SourceText source_text(const std::string& source, bool keep_literals);

/// What an instructor should review first in a student's exercise.cu (the grade record's
/// "review" list): the constructs that deliberate corruption of the harness's memory needs,
/// which the seal does not refuse. Each is "line N: what": inline assembly, a cast to a
/// function pointer type, a cast of a function's address to data, arithmetic on it. A simple,
/// conservative scan of the source with comments and literals removed; not a verdict.
std::vector<std::string> review_flags(const std::string& source);

}  // namespace lab
