#include "inspect.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string_view>
#include <tuple>

#include "files.hpp"
#include "process.hpp"
#include "rules.hpp"

namespace lab {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ---------------------------------------------------------------------------------------------
// What an exercise may call. An exercise computes: it launches kernels, uses the CUDA runtime on
// the streams it is given, allocates, and prints. It opens no file, starts no process or thread,
// sends no signal, reads no environment, and changes no device-wide setting the harness relies on.

// CUDA runtime calls that reach past the exercise's own work: device-wide state the harness's
// later measurements depend on, code run on other threads (host functions, graph host nodes, user
// objects' destructors, log callbacks), files (a graph's DOT dump, the driver's log, a library
// loaded from a path), profiler ranges, raw driver entry points and the driver's internal tables.
// A graph node of any type (cudaGraphAddNode, cudaGraph[Exec]NodeSetParams) can be a host node;
// an exercise adds its nodes by their own calls (cudaGraphAddKernelNode, ...) or by capture.
// cudaSetDevice is not here: the checker lets a program see one GPU (pin_to_one_gpu), so it can
// only name the device it is on (CUB and Thrust call it in every algorithm, often from code the
// compiler has inlined or cloned into the exercise's own).
const std::set<std::string> kForbiddenCuda = {
    "cudaDeviceReset", "cudaDeviceSetLimit", "cudaDeviceSetCacheConfig",
    "cudaDeviceSetSharedMemConfig", "cudaDeviceSetMemPool", "cudaMemSetMemPool",
    "cudaDeviceSetGraphMemAttribute", "cudaSetDeviceFlags",
    "cudaSetValidDevices", "cudaInitDevice", "cudaThreadExit", "cudaThreadSetLimit",
    "cudaThreadSetCacheConfig", "cudaProfilerStart", "cudaProfilerStop",
    "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion", "cudaGetExportTable",
    "cudaLaunchHostFunc", "cudaStreamAddCallback", "cudaGraphAddHostNode",
    "cudaGraphHostNodeSetParams", "cudaGraphExecHostNodeSetParams", "cudaGraphAddNode",
    "cudaGraphNodeSetParams", "cudaGraphExecNodeSetParams", "cudaUserObjectCreate",
    "cudaLogsRegisterCallback", "cudaLogsDumpToFile", "cudaGraphDebugDotPrint",
    "cudaLibraryLoadFromFile", "cudaCtxResetPersistingL2Cache", "cudaStreamSetAttribute",
    "cudaDeviceRegisterAsyncNotification", "cudaDeviceFlushGPUDirectRDMAWrites"};
// Other processes: their memory, events, semaphores, or a pool's memory handed over.
const std::vector<std::string> kForbiddenCudaPrefixes = {
    "cudaIpc", "cudaImportExternal", "cudaExternal", "cudaSignalExternal", "cudaWaitExternal",
    "cudaMemPoolExport", "cudaMemPoolImport"};

// std::regex recurses once per character it matches, and a symbol's name is the student's to
// choose: no name or line longer than this goes to one (40,000 characters overflowed the stack).
// Each use says what a longer one is taken for, always the stricter reading.
constexpr std::size_t kLongestName = 16384;

// cudaGraphAddNode_v2, cudaLaunchHostFunc_ptsz -> the call's name without the version or
// per-thread-stream suffix the headers may map it to (a name too long to read: itself).
std::string base_call(const std::string& symbol) {
  if (symbol.size() > kLongestName) return symbol;
  static const std::regex suffix(R"((_v\d+|_ptsz|_ptds)+$)");
  return std::regex_replace(symbol, suffix, "");
}

// The C library an exercise may use: memory and strings, formatted printing to the standard
// streams (it can open no other), allocation, clocks, sorting, and the maths functions.
const std::set<std::string> kAllowedC = {
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strcmp", "strncmp", "strchr",
    "strrchr", "strstr", "strcpy", "strncpy", "strcat", "strtol", "strtoll", "strtoul", "strtod",
    "strtof", "atoi", "atof", "strerror", "printf", "vprintf", "puts", "putchar", "fputs",
    "fputc", "putc", "fwrite", "fprintf", "vfprintf", "fflush", "snprintf", "sprintf",
    "vsnprintf", "vsprintf",
    "__printf_chk", "__fprintf_chk", "__sprintf_chk", "__snprintf_chk", "__vsnprintf_chk",
    "__vfprintf_chk", "__vprintf_chk", "__memcpy_chk", "__memmove_chk", "__memset_chk",
    "__strcpy_chk", "__strcat_chk", "__stack_chk_fail", "__stack_chk_guard", "stdout", "stderr",
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "abs", "labs",
    "llabs", "qsort", "bsearch", "clock_gettime", "gettimeofday", "time", "clock", "abort",
    // nvcc's host stand-ins for __device__ functions call exit; ending the process gains nothing
    // (the checker judges exit codes and the result file itself)
    "exit",
    "__assert_fail", "__errno_location", "__libc_single_threaded",
    // the lab library's error helper (LAB_CHECK), the device's description, the blocks for a
    // grid-stride loop (lab::grid_for), and lab::SideStream (the one way an exercise makes a
    // stream)
    "_ZN3lab16throw_cuda_errorE9cudaErrorPKcS2_i", "_ZN3lab11device_infoEv",
    "_ZN3lab8grid_forExxi",
    // lab::tensor_map_2d_bf16 (lesson 13's TMA maps): the one driver function an exercise may
    // reach, with its type and swizzle fixed; the driver's entry points themselves stay refused
    "_ZN3lab18tensor_map_2d_bf16EPKvmmjj",
    "_ZN3lab10SideStreamC1Ev", "_ZN3lab10SideStreamC2Ev", "_ZN3lab10SideStreamD1Ev",
    "_ZN3lab10SideStreamD2Ev",
    // a std::mutex or std::call_once around a cache of its own: they block, start nothing
    "pthread_mutex_lock", "pthread_mutex_unlock", "pthread_mutex_trylock", "pthread_once",
    // the C++ runtime's own plumbing (exceptions, static locals, nvcc's module registration)
    "atexit", "__dso_handle", "__gxx_personality_v0", "_Unwind_Resume", "_GLOBAL_OFFSET_TABLE_"};
const std::regex kMaths(
    R"(^(__)?(a?(sin|cos|tan)h?|atan2|exp|exp2|expm1|log|log2|log10|log1p|pow|sqrt|cbrt|hypot|fabs|)"
    R"(floor|ceil|round|l?lround|trunc|fmod|remainder|fma|fmax|fmin|frexp|ldexp|modf|nextafter|)"
    R"(copysign|erfc?|tgamma|lgamma|l?l?rint|nearbyint|ilogb|logb|scalbn|isnan|isinf|finite|)"
    R"(sincos)[fl]?(_finite)?$)");
// Threads' plumbing that libstdc++'s headers reference weakly; a weak reference is all it gets.
// (Not __cxa_thread_atexit_impl: a handler given to it runs when the main thread exits.)
const std::set<std::string> kAllowedWeakC = {"__pthread_key_create"};

// Parts of the C++ library that touch the operating system: files, threads, the environment,
// leaving the process.
const std::vector<std::string> kForbiddenStd = {
    "basic_ofstream", "basic_ifstream", "basic_fstream", "basic_filebuf", "__basic_file",
    "std::filesystem", "std::thread", "std::jthread", "std::system", "std::getenv",
    "std::quick_exit", "std::at_quick_exit", "std::exit", "std::_Exit", "stdio_filebuf",
    "stdio_sync_filebuf", "std::__cxx11::basic_stringbuf<char, std::char_traits<char>, "
    "std::allocator<char> >::basic_stringbuf(int",
    // a named locale reads the environment ("") or the system's files; global() sets the C
    // library's locale for the whole program, the harness's number formatting included
    "std::locale::locale(char const*", "std::locale::locale(std::__cxx11::basic_string",
    "std::locale::global"};

// Namespaces whose inline functions and template instances any translation unit may emit.
const std::vector<std::string> kTemplateNamespaces = {
    "std::", "__gnu_cxx::", "cub::", "thrust::", "cuda::", "cooperative_groups::", "nvcuda::",
    "nvtx3::", "__cxxabiv1::"};

// "typeinfo for std::x" -> "std::x": what a compiler-made symbol is about.
std::string subject(const std::string& demangled) {
  for (const char* p : {"typeinfo name for ", "typeinfo for ", "vtable for ", "VTT for ",
                        "guard variable for ", "construction vtable for "})
    if (starts_with(demangled, p)) return demangled.substr(std::string(p).size());
  return demangled;
}

// Whether a demangled symbol belongs to one of `namespaces` ("std::", ...): by its name, or, for
// an instance of a function template, which returns a type first ("void std::vector<...>::
// _M_realloc_insert<...>(...)"), by the name after that type.
bool in_namespaces(const std::string& demangled, const std::vector<std::string>& namespaces) {
  const std::string s = subject(demangled);
  static const std::regex returns_first(R"(^[\w:<>,\s\*&]+?\s(\w+::))");
  std::smatch m;
  const std::string after_type =
      s.size() <= kLongestName && std::regex_search(s, m, returns_first) ? m[1].str() : "";
  for (const auto& ns : namespaces)
    if (starts_with(s, ns) || after_type == ns) return true;
  return false;
}

bool in_template_namespace(const std::string& demangled) {
  return in_namespaces(demangled, kTemplateNamespaces);
}

// Whether `symbol` (or its base call: cudaX_v2 is cudaX) is one of `names` ("name" or "prefix*").
bool named_in(const std::string& symbol, const std::vector<std::string>& names) {
  for (const auto& p : names)
    for (const std::string& s : {symbol, base_call(symbol)})
      if (!p.empty() && (p.back() == '*' ? starts_with(s, p.substr(0, p.size() - 1)) : s == p))
        return true;
  return false;
}

std::string forbidden_call(const std::string& symbol, bool weak_reference,
                           const std::vector<std::string>& extra, const std::vector<std::string>& refused) {
  const std::string d = demangle(symbol);
  if (named_in(symbol, refused))
    return "calls " + symbol + ", which this lesson does not allow (its check.toml, "
           "forbidden_calls; its exercise.cuh says why)";
  if (named_in(symbol, extra)) return "";
  if (starts_with(symbol, "__cuda")) return "";  // nvcc's launch and registration plumbing
  if (starts_with(symbol, "cuda")) {
    // The lab library stands in for these three (common/src/streams.cpp): every stream they
    // make is ordered with every sample. Others (a green context's) it cannot see: work on them
    // could run before the clock starts or after it stops.
    static const std::set<std::string> kTrackedCreates = {
        "cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority"};
    if (contains(symbol, "StreamCreate") && !kTrackedCreates.count(base_call(symbol)))
      return "calls " + symbol + ", which makes a stream the timer cannot see: make streams "
             "with cudaStreamCreate, cudaStreamCreateWithFlags or a lab::SideStream "
             "(lab/memory.hpp), which the timer orders with every sample";
    if (kForbiddenCuda.count(base_call(symbol)))
      return "calls " + symbol + ", which reaches past the exercise's own work (device-wide "
             "settings the harness's measurements rely on, code on other threads, files, "
             "profiler ranges or the driver's internals)";
    for (const auto& p : kForbiddenCudaPrefixes)
      if (starts_with(symbol, p)) return "calls " + symbol + ", which reaches outside this process";
    return "";
  }
  if (starts_with(symbol, "cu") && symbol.size() > 2 && std::isupper(static_cast<unsigned char>(symbol[2])))
    return "calls the driver API (" + symbol + "): an exercise uses the runtime API only";
  if (symbol == "__cxa_thread_atexit_impl" || symbol == "__cxa_finalize")
    return "calls " + symbol + ", which runs code of its own when the program exits";
  if (starts_with(symbol, "__cxa_") || starts_with(symbol, "_Znw") || starts_with(symbol, "_Zna") ||
      starts_with(symbol, "_Zdl") || starts_with(symbol, "_Zda"))
    return "";  // exceptions, static locals, new and delete
  if (kAllowedC.count(symbol) || (symbol.size() <= 64 && std::regex_match(symbol, kMaths)))
    return "";
  if (weak_reference && kAllowedWeakC.count(symbol)) return "";
  // A refusal names what this lesson allows beyond the course's list (lesson 11: the C library's
  // file calls), so that a student refused <fstream> reads what to use instead.
  auto also = [&extra] {
    std::string out;
    for (const auto& name : extra) out += (out.empty() ? "; this lesson also allows " : ", ") + name;
    return out;
  };
  if (in_template_namespace(d)) {
    for (const auto& f : kForbiddenStd)
      if (contains(d, f))
        return "uses " + d + ": an exercise opens no file, starts no thread and does not end the "
               "process" + also();
    return "";
  }
  return "calls " + d + ", which an exercise may not use (it opens no file, starts no process "
         "or thread, and reads no environment; docs/grading-security.md lists what it may call" +
         also() + ")";
}

// nvcc names an anonymous namespace _GLOBAL__N__<hash>_<length>_<file>_cu_<hash>.
bool anonymous_of(const std::string& symbol, const std::string& stem) {
  static const std::regex tag(R"(_GLOBAL__N__[0-9a-f]+_(\d+)_(\w+?)_cu_[0-9a-f]+)");
  std::smatch m;
  if (symbol.size() > kLongestName || !std::regex_search(symbol, m, tag)) return false;
  std::string file = stem;
  for (char& c : file)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return m[2].str() == file;
}

// _ZN3l0211RegionTimerC2E... -> ..C1E..: the variants of one constructor or destructor.
std::string structor_family(const std::string& symbol) {
  if (symbol.size() > kLongestName) return symbol;
  static const std::regex structor(R"(([0-9][A-Za-z_][A-Za-z0-9_]*)(C[1-3]|D[0-2])E)");
  return std::regex_replace(symbol, structor, "$1XE");
}

bool is_anonymous(const std::string& symbol) {
  return contains(symbol, "_GLOBAL__N_") || contains(demangle(symbol), "(anonymous namespace)");
}

// cudaLaunchHostFunc@libcudart.so.13 (a .symver reference, a versioned export) -> its name.
std::string unversioned(std::string symbol) {
  if (const auto at = symbol.find('@'); at != std::string::npos && at > 0) symbol.resize(at);
  return symbol;
}

}  // namespace

std::string demangle(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : symbol;
}

std::vector<SealFinding> check_seal(const ObjectSymbols& e, const SealContext& c) {
  std::vector<SealFinding> out;
  auto pristine_defines = [&](const std::string& s) {
    return c.harness.strong.count(s) || c.harness.weak.count(s) || c.library.strong.count(s) ||
           c.library.weak.count(s);
  };
  auto pristine_needs = [&](const std::string& s) {
    return (c.harness.undefined.count(s) || c.library.undefined.count(s) ||
            c.harness.weak_undefined.count(s) || c.library.weak_undefined.count(s)) &&
           !pristine_defines(s);
  };
  // The interface: what the pristine starter defines and the harness uses. A constructor or
  // destructor counts with all its variants (the harness calls C1, the file also emits C2).
  std::set<std::string> harness_uses;
  for (const auto* set : {&c.harness.undefined, &c.harness.weak, &c.harness.weak_undefined})
    for (const auto& s : *set) harness_uses.insert(structor_family(s));
  auto interface_symbol = [&](const std::string& s) {
    return (c.interface.strong.count(s) || c.interface.weak.count(s)) &&
           harness_uses.count(structor_family(s));
  };

  // 1. What it defines: the interface, its own anonymous namespace, and template instances.
  auto check_definition = [&](const std::string& s, bool weak) {
    if (interface_symbol(s) || s == "DW.ref.__gxx_personality_v0") return;
    const std::string d = demangle(s);
    if (is_anonymous(s)) {
      if (anonymous_of(s, c.exercise_stem)) return;
      out.push_back({d, "is named as if it were in another file's anonymous namespace"});
      return;
    }
    // Weak (or unique) and also emitted by the pristine objects: the linker keeps the pristine
    // copy, which comes first, so this one never runs.
    if (weak && pristine_defines(s)) return;
    if (weak && (in_template_namespace(d) || starts_with(subject(d), "lab::"))) {
      // Harmless unless it would stand in for a function the pristine code expects from a
      // library (the pristine objects come first at link time, so their own copies win).
      if (pristine_needs(s)) out.push_back({d, "redefines a library function that the harness calls"});
      return;
    }
    std::string why = "is defined with external linkage, but exercise.cuh does not declare it";
    if (starts_with(d, "lab::")) why = "replaces a function of the lab library";
    else if (starts_with(s, "cuda") || starts_with(s, "__cuda")) why = "replaces a CUDA runtime function";
    else if (d == "main") why = "defines main: the harness owns the program";
    why += "; put your helpers, kernels and globals in an anonymous namespace (namespace { ... }) "
           "or make them static";
    out.push_back({d, why});
  };
  for (const auto& s : e.strong) check_definition(s, false);
  for (const auto& s : e.weak) check_definition(s, true);

  // 2. What it calls. Of a COMDAT group that the pristine objects also have (an inline function,
  // a template instance) the linker keeps the first, the pristine one, and drops the exercise's
  // whole group: its code is the pristine code's, judged below where exercise code refers to it.
  // Every other section is the exercise's own and counts, whatever it is named.
  auto shared_group = [&](const std::string& section) {
    auto group = e.section_group.find(section);
    return group != e.section_group.end() &&
           (c.harness.groups.count(group->second) || c.library.groups.count(group->second));
  };
  auto only_from_shared_groups = [&](const std::string& s) {
    auto it = e.referenced_from.find(s);
    return it != e.referenced_from.end() &&
           std::all_of(it->second.begin(), it->second.end(), shared_group);
  };
  auto refused = [&](const std::string& s, bool weak) {
    if (only_from_shared_groups(s)) return std::string();  // the pristine copy's call, below
    return forbidden_call(s, weak, c.extra_calls, c.refused_calls);
  };
  for (const auto& s : e.undefined)
    if (auto why = refused(s, false); !why.empty()) out.push_back({demangle(s), why});
  for (const auto& s : e.weak_undefined)
    if (auto why = refused(s, true); !why.empty()) out.push_back({demangle(s), why});

  // 3. What exercise code reaches in the pristine code. Where it refers to a function the
  // pristine objects define, theirs runs: a function of a COMDAT group (inline or a template
  // instance, whoever else emits it) is judged by what its pristine copy refers to, transitively;
  // a library function proper (outside any group, a local clone of one too) by its name, like an
  // import. NVTX's API and its loader are where the walk stops: exercises may open ranges, and
  // the harness has run the loader already.
  auto entry_point = [](const std::string& s) {
    return starts_with(s, "nvtx") || starts_with(demangle(s), "nvtx3::");
  };
  struct Visit {
    std::size_t object;
    std::string section;
    std::uint64_t start, end;  // the part of the section: a whole group's, or one data object
    std::string entry;         // what exercise code referred to
  };
  constexpr std::uint64_t kWhole = ~std::uint64_t{0};
  std::vector<Visit> todo;
  std::set<std::tuple<std::size_t, std::string, std::uint64_t>> seen;
  std::set<std::pair<std::string, std::string>> reported;
  std::set<std::string> walked;  // group signatures
  auto judge_name = [&](const std::string& entry, const std::string& s, bool weak) {
    const std::string why = forbidden_call(s, weak, c.extra_calls, c.refused_calls);
    if (!why.empty() && reported.insert({entry, s}).second)
      out.push_back({demangle(entry), "runs the pristine code's copy, which (directly or through "
                                      "what it calls) " + why});
  };
  auto walk_group = [&](const std::string& signature, const std::string& entry) {
    if (entry_point(signature) || !walked.insert(signature).second) return;
    for (std::size_t i = 0; i < c.pristine.size(); ++i)
      for (const auto& [section, group] : c.pristine[i]->section_group)
        if (group == signature) todo.push_back({i, section, 0, kWhole, entry});
  };
  // `s`, referred to by `entry`'s code (or, where entry is s, by the exercise's own code).
  auto reach = [&](const std::string& s, const std::string& entry, bool weak, bool judge_names) {
    if (entry_point(s)) return;
    bool pristine = false;
    for (std::size_t i = 0; i < c.pristine.size(); ++i) {
      const ObjectSymbols& o = *c.pristine[i];
      auto at = o.defined_in.find(s);
      if (at == o.defined_in.end()) continue;
      pristine = true;
      if (auto group = o.section_group.find(at->second); group != o.section_group.end())
        walk_group(group->second, entry);
      else if (judge_names)
        judge_name(entry, s, weak);
    }
    if (!pristine && judge_names && !e.strong.count(s) && !e.weak.count(s)) judge_name(entry, s, weak);
  };
  // A place in a pristine object's own section: a group's code is walked, other code judged by
  // the function's name, data followed from the object there (a table of functions).
  auto reach_place = [&](std::size_t i, const ObjectSymbols::Reference& r, const std::string& entry) {
    const ObjectSymbols& o = *c.pristine[i];
    if (auto group = o.section_group.find(r.section); group != o.section_group.end()) {
      if (!entry_point(group->second)) todo.push_back({i, r.section, 0, kWhole, entry});
      return;
    }
    bool found = false;
    if (auto spans = o.spans.find(r.section); spans != o.spans.end())
      for (const auto& span : spans->second)
        if ((r.offset >= span.start && r.offset < span.end) || (r.offset + 4 >= span.start && r.offset + 4 < span.end)) {
          found = true;
          if (o.code_sections.count(r.section)) judge_name(entry, span.name, false);
          else todo.push_back({i, r.section, span.start, span.end, entry});
        }
    if (!found && o.code_sections.count(r.section)) judge_name(entry, r.section, false);
  };
  for (const auto& [section, references] : e.references)
    if (!shared_group(section))
      for (const auto& r : references) {
        if (!r.symbol.empty())  // an import of its own is judged by name above
          reach(r.symbol, r.symbol, false, !e.undefined.count(r.symbol) && !e.weak_undefined.count(r.symbol));
        else if (shared_group(r.section))
          walk_group(e.section_group.at(r.section), e.section_group.at(r.section));
      }
  while (!todo.empty()) {
    const Visit v = todo.back();
    todo.pop_back();
    if (!seen.insert({v.object, v.section, v.start}).second) continue;
    const ObjectSymbols& o = *c.pristine[v.object];
    auto it = o.references.find(v.section);
    if (it == o.references.end()) continue;
    for (const auto& r : it->second) {
      if (r.at < v.start || r.at >= v.end) continue;
      if (!r.symbol.empty()) reach(r.symbol, v.entry, o.weak_undefined.count(r.symbol) > 0, true);
      else reach_place(v.object, r, v.entry);
    }
  }

  // 4. Code before main or after it, and system calls of its own.
  // The compiler's own registration (nvcc's, one entry) is what the pristine starter has too.
  if (e.initializers - e.iostream_initializers > c.interface.initializers || e.other_startup ||
      e.exit_handler)
    out.push_back({"", "exercise.cu runs code before main or at exit (a global object with a "
                       "constructor or destructor, a non-constant global initializer, "
                       "__attribute__((constructor/destructor)), or a call of atexit); keep "
                       "such state in a static variable inside a function, which is made at "
                       "its first call"});
  if (e.system_call)
    out.push_back({"", "exercise.cu makes system calls of its own (a syscall instruction in "
                       "inline assembly)"});
  for (const auto& s : e.indirect)
    out.push_back({demangle(s), "is an indirect function (ifunc): its resolver runs before main"});
  // 5. What the program exports of the exercise's: a function a shared library calls (a weak
  // one "in namespace std", say) replaces the C or C++ runtime's own for the whole program.
  for (const auto& s : c.exported) {
    const bool named = std::any_of(out.begin(), out.end(),
                                   [&](const SealFinding& f) { return f.symbol == demangle(s); });
    if ((e.strong.count(s) || e.weak.count(s)) && !pristine_defines(s) && !named)
      out.push_back({demangle(s), "replaces a function that a shared library of the program (the "
                                  "C or C++ runtime, CUDA) calls: the program exports it"});
  }
  for (const auto& s : e.odd_sections)
    out.push_back({"", "exercise.cu has a section no compiler makes for it (" + s +
                       "): put code and data where the compiler does, without section "
                       "attributes or assembler directives"});
  return out;
}

namespace {

// Output of a binutils command: the checker's own tool on checker-built files, so not contained.
std::string capture(const std::string& tool, const std::vector<std::string>& args) {
  const auto found = find_on_path(tool);
  if (!found)
    throw ConfigError(tool + " is not on PATH: the checker needs the GNU binutils (nm, readelf, "
                      "objdump) to inspect exercises (Debian/Ubuntu: apt-get install binutils)");
  TempDir dir("lab-inspect");
  ProcessOptions p;
  p.kind = ProcessKind::tool;
  p.argv = {found->string()};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  p.stdout_path = dir.path() / "out.txt";
  p.max_output_bytes = std::size_t{256} << 20;
  p.timeout_s = 120;
  const ProcessResult r = run_process(p);
  if (!r.exited_ok() || r.output_truncated)
    throw ConfigError(tool + " could not read " + args.back() + " (" + describe(r, p.timeout_s) +
                      (r.output_truncated ? ", output over 256 MiB" : "") + ")");
  std::ifstream in(p.stdout_path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The sections of a relocatable ELF64 object, read from the file itself rather than from
// readelf's listing: readelf shortens long section names (binutils 2.42 cuts them at 256
// characters, and two template instances' sections can share that much), and the seal keys
// COMDAT membership and relocations by name.
struct ElfObject {
  struct Section {
    std::string name;
    std::uint32_t type = 0;
    std::uint64_t flags = 0;
    std::string group;  // the signature of the COMDAT group it belongs to, if any
  };
  struct Reference {
    std::string symbol;  // a symbol's name, or a section's for a reference to a section
    std::int64_t addend = 0;
    std::uint64_t at = 0;  // where in the section that refers
    std::string section;   // for a local symbol: the section of this file it lies in,
    std::uint64_t offset = 0;  // and the place in it
  };
  std::vector<Section> sections;
  std::set<std::string> groups;  // the signatures
  std::map<std::string, std::vector<Reference>> references;  // by the section that refers
  std::map<std::string, std::string> defined_in;  // a global symbol's section
  std::map<std::string, std::vector<ObjectSymbols::Span>> spans;  // functions and data, by section
};

ElfObject read_elf(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  auto bad = [&](const std::string& why) {
    return ConfigError(file.string() + " is not an object file the seal can read (" + why + ")");
  };
  // A copy of the T at `offset`, checked to lie inside the file.
  auto at = [&](auto value, std::uint64_t offset) {
    if (offset > bytes.size() || bytes.size() - offset < sizeof value) throw bad("truncated");
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
  };
  const auto eh = at(Elf64_Ehdr{}, 0);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_type != ET_REL || eh.e_shentsize != sizeof(Elf64_Shdr))
    throw bad("not a 64-bit little-endian relocatable ELF file");
  auto header = [&](std::uint64_t i) { return at(Elf64_Shdr{}, eh.e_shoff + i * sizeof(Elf64_Shdr)); };
  // Past 0xff00 sections the count and the names' section live in section 0.
  const std::uint64_t count = eh.e_shnum != 0 ? eh.e_shnum : header(0).sh_size;
  const std::uint32_t names_index = eh.e_shstrndx != SHN_XINDEX ? eh.e_shstrndx : header(0).sh_link;
  std::vector<Elf64_Shdr> headers;
  for (std::uint64_t i = 0; i < count; ++i) headers.push_back(header(i));
  auto index = [&](std::uint64_t i) {
    if (i >= headers.size()) throw bad("a section index out of range");
    return i;
  };
  // The NUL-terminated string at `offset` of string table `table`.
  auto string_at = [&](std::uint64_t table, std::uint64_t offset) {
    const Elf64_Shdr& t = headers[index(table)];
    if (t.sh_offset > bytes.size() || t.sh_size > bytes.size() - t.sh_offset || offset >= t.sh_size)
      throw bad("a name outside its string table");
    const char* begin = bytes.data() + t.sh_offset + offset;
    return std::string(begin, strnlen(begin, t.sh_size - offset));
  };
  ElfObject o;
  for (const Elf64_Shdr& h : headers)
    o.sections.push_back({string_at(names_index, h.sh_name), h.sh_type, h.sh_flags, {}});
  auto symbol = [&](const Elf64_Shdr& symtab, std::uint64_t i) {
    if (symtab.sh_type != SHT_SYMTAB || (i + 1) * sizeof(Elf64_Sym) > symtab.sh_size)
      throw bad("a symbol index out of range");
    return at(Elf64_Sym{}, symtab.sh_offset + i * sizeof(Elf64_Sym));
  };
  // The section a symbol lies in, or npos (undefined, absolute, common). Past 0xff00 sections
  // the index is in the SHT_SYMTAB_SHNDX table beside the symbol table.
  auto section_of = [&](std::uint64_t symtab, std::uint64_t i, const Elf64_Sym& sym) -> std::uint64_t {
    if (sym.st_shndx == SHN_XINDEX) {
      for (const Elf64_Shdr& h : headers)
        if (h.sh_type == SHT_SYMTAB_SHNDX && h.sh_link == symtab) return index(at(std::uint32_t{}, h.sh_offset + 4 * i));
      throw bad("an extended section index without its table");
    }
    if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) return std::string::npos;
    return index(sym.st_shndx);
  };
  for (const Elf64_Shdr& h : headers) {
    if (h.sh_type == SHT_GROUP) {
      // Only a COMDAT group is folded by the linker (the first of a signature kept, the others
      // dropped); a plain group, which assembly can make under any signature, is kept whole:
      // its sections are ordinary ones.
      if (!(at(std::uint32_t{}, h.sh_offset) & GRP_COMDAT)) continue;
      const Elf64_Shdr& symtab = headers[index(h.sh_link)];
      const std::string signature = string_at(symtab.sh_link, symbol(symtab, h.sh_info).st_name);
      o.groups.insert(signature);
      for (std::uint64_t k = 1; k < h.sh_size / 4; ++k)  // a flags word, then member indices
        o.sections[index(at(std::uint32_t{}, h.sh_offset + 4 * k))].group = signature;
    } else if (h.sh_type == SHT_RELA || h.sh_type == SHT_REL) {
      const Elf64_Shdr& symtab = headers[index(h.sh_link)];
      auto& into = o.references[o.sections[index(h.sh_info)].name];
      const bool rela = h.sh_type == SHT_RELA;
      const std::uint64_t size = rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
      for (std::uint64_t k = 0; k < h.sh_size / size; ++k) {
        const std::uint64_t offset = h.sh_offset + k * size;
        const Elf64_Rela r = rela ? at(Elf64_Rela{}, offset) : Elf64_Rela{0, at(Elf64_Rel{}, offset).r_info, 0};
        const std::uint64_t i = ELF64_R_SYM(r.r_info);
        if (i == 0) continue;  // no symbol: relative to where the file is loaded
        const Elf64_Sym sym = symbol(symtab, i);
        const std::uint64_t in = section_of(h.sh_link, i, sym);
        const bool local = ELF64_ST_BIND(sym.st_info) == STB_LOCAL && in != std::string::npos;
        into.push_back({ELF64_ST_TYPE(sym.st_info) == STT_SECTION && local ? o.sections[in].name
                                                                         : string_at(symtab.sh_link, sym.st_name),
                        r.r_addend, r.r_offset, local ? o.sections[in].name : "",
                        sym.st_value + static_cast<std::uint64_t>(r.r_addend)});
      }
    } else if (h.sh_type == SHT_SYMTAB) {
      const std::uint64_t table = static_cast<std::uint64_t>(&h - headers.data());
      for (std::uint64_t i = 1; i < h.sh_size / sizeof(Elf64_Sym); ++i) {
        const Elf64_Sym sym = symbol(h, i);
        const std::uint64_t in = section_of(table, i, sym);
        if (in == std::string::npos) continue;
        const std::string name = string_at(h.sh_link, sym.st_name);
        if (ELF64_ST_BIND(sym.st_info) != STB_LOCAL) o.defined_in[name] = o.sections[in].name;
        const auto type = ELF64_ST_TYPE(sym.st_info);
        if ((type == STT_FUNC || type == STT_OBJECT) && sym.st_size > 0)
          o.spans[o.sections[in].name].push_back({sym.st_value, sym.st_value + sym.st_size, name});
      }
    }
  }
  return o;
}

}  // namespace

ObjectSymbols read_object(const fs::path& file, ObjectReading reading) {
  if (!fs::exists(file)) throw ConfigError("no object file " + file.string() + ": build it first");
  const bool exercise = reading == ObjectReading::exercise;
  ObjectSymbols o;
  std::istringstream nm(capture("nm", {"-P", file.string()}));
  for (std::string line; std::getline(nm, line);) {
    std::istringstream fields(line);
    std::string name, type;
    if (!(fields >> name >> type) || type.size() != 1 || name.back() == ':') continue;
    name = unversioned(name);  // a .symver reference is the same call
    if (type == "i") o.indirect.insert(name);
    switch (type[0]) {
      case 'T': case 'D': case 'B': case 'R': case 'C': case 'i': case 'G': case 'S':
        o.strong.insert(name);
        break;
      case 'W': case 'V': case 'u': o.weak.insert(name); break;  // u: one copy kept, like W
      case 'U': o.undefined.insert(name); break;
      case 'w': case 'v': o.weak_undefined.insert(name); break;
      default: break;  // local symbols reach nothing outside the file
    }
  }

  const ElfObject elf = read_elf(file);
  o.groups = elf.groups;
  if (exercise) {
    // Every section by name, type and flags. What a compiler makes: one section a name (the
    // COMDAT groups' .group headers aside), code only in .text*, startup code only through
    // .init_array. Anything else could hide code from the seal (a second section named like
    // a group's member, code the relocation list cannot name) or run it at load or exit
    // (.init, .fini, .init_array.NNNNN, .ctors, ...).
    std::set<std::string> names;
    for (const auto& section : elf.sections) {
      const std::string& name = section.name;
      if (section.type == SHT_NULL) continue;
      if (std::any_of(name.begin(), name.end(), [](unsigned char ch) { return ch <= ' ' || ch >= 127; })) {
        o.odd_sections.push_back("a section name the seal cannot read: \"" + name + "\"");
        continue;
      }
      if (section.type != SHT_GROUP && !names.insert(name).second)
        o.odd_sections.push_back("two sections named " + name);
      if ((section.flags & SHF_EXECINSTR) && name != ".text" && !starts_with(name, ".text."))
        o.odd_sections.push_back("code in " + name);
      const bool startup_type = section.type == SHT_INIT_ARRAY || section.type == SHT_FINI_ARRAY ||
                                section.type == SHT_PREINIT_ARRAY;
      const bool startup_name = starts_with(name, ".init_array") || starts_with(name, ".fini_array") ||
                                starts_with(name, ".preinit_array") || starts_with(name, ".ctors") ||
                                starts_with(name, ".dtors");
      if ((startup_type || startup_name) && name != ".init_array") o.other_startup = true;
    }
  }
  // What each loaded section refers to (the seal follows references from exercise code into
  // the pristine code, check_seal). Debugging sections are not loaded; the unwinding tables
  // name every function's code but call only their personality routine.
  std::map<std::string, std::uint64_t> flags;
  for (const auto& section : elf.sections) {
    flags[section.name] |= section.flags;
    if (!section.group.empty()) o.section_group[section.name] = section.group;
    if (section.flags & SHF_EXECINSTR) o.code_sections.insert(section.name);
  }
  o.defined_in = elf.defined_in;
  o.spans = elf.spans;
  for (const auto& [section, references] : elf.references) {
    if (!(flags[section] & SHF_ALLOC)) continue;
    for (const auto& r : references)
      if (r.section.empty()) o.references[section].push_back({r.at, unversioned(r.symbol), "", 0});
      else if (section != ".eh_frame") o.references[section].push_back({r.at, "", r.section, r.offset});
  }
  // What .init_array points at: a symbol, or a section and an offset into it (".text.startup
  // + 0x750"), as the disassembly below names functions.
  std::set<std::pair<std::string, unsigned long>> init_targets;
  for (const auto& [section, references] : elf.references) {
    if (!exercise && section != ".init_array") continue;
    for (const auto& r : references) {
      const std::string symbol = unversioned(r.symbol);  // a .symver reference is the same call
      if (section == ".init_array") {
        ++o.initializers;
        init_targets.insert({symbol, static_cast<unsigned long>(r.addend)});
      }
      o.referenced_from[symbol].insert(section);
    }
  }

  // One disassembly, with relocations, for two things: system calls of its own (a syscall
  // instruction anywhere), and the initializers that g++ before 13 emits in every file that
  // includes <iostream> (CUB's headers do): a _GLOBAL__sub_I_ function that constructs
  // std::ios_base::Init and refers to nothing else is not the exercise's code before main. So
  // that nothing else can hide in one, every call or jump in it must be relocated to one of those
  // symbols (a call of code in the same section, or through a register, has no relocation), and
  // it must end in a return or such a jump (no falling through into the code after it).
  static const std::regex function(R"(^([0-9a-f]+) <([^>]+)>:$)");
  static const std::regex reloc(R"(^\s+[0-9a-f]+: R_\S+\s+([^\s+@-]+))");
  // Anywhere in the instruction, prefixes ("cs syscall") included; not in a symbol's <name>.
  static const std::regex system_call(R"((^|\s)(syscall|sysenter|int\s+\$0x80)(\s|$))");
  // An instruction: "  1b:\t48 8d 15 00 00 00 00 \tlea ..."; its mnemonic (prefixes dropped).
  static const std::regex instruction(R"(^\s+[0-9a-f]+:\t[0-9a-f ]+\t(?:(?:notrack|bnd|rep|repz|cs|ds|data16)\s+)*(\S+))");
  static const std::set<std::string> iostream_init = {
      "_ZNSt8ios_base4InitC1Ev", "_ZNSt8ios_base4InitD1Ev", "__cxa_atexit", "__dso_handle", ".bss"};
  if (!exercise) return o;
  std::istringstream code(capture("objdump", {"-dr", file.string()}));
  std::string section_now, fn, last;  // the function, and its last instruction's mnemonic
  bool only_iostream = false, constructs_init = false, transfer_pending = false;
  bool initializer = false;  // .init_array points at this function
  auto close_function = [&] {
    const bool ends = last == "ret" || (starts_with(last, "jmp") && !transfer_pending);
    if (initializer && starts_with(fn, "_GLOBAL__sub_I_") && only_iostream && constructs_init &&
        ends && !transfer_pending)
      ++o.iostream_initializers;
  };
  for (std::string line; std::getline(code, line);) {
    std::smatch m;
    if (line.size() > kLongestName) {
      // Too long to read (a symbol's name of the student's choosing): no initializer of
      // <iostream> has one, and a system call in it counts.
      only_iostream = false;
      if (contains(line, "syscall") || contains(line, "sysenter") || contains(line, "int    $0x80"))
        o.system_call = true;
      continue;
    }
    const bool in_initializer = starts_with(fn, "_GLOBAL__sub_I_");
    if (starts_with(line, "Disassembly of section ") && ends_with(line, ":")) {
      section_now = line.substr(23, line.size() - 24);
    } else if (ends_with(line, ">:") && std::regex_search(line, m, function)) {
      close_function();
      fn = m[2].str();
      initializer = init_targets.count({fn, 0}) ||
                    init_targets.count({section_now, std::stoul(m[1].str(), nullptr, 16)});
      last.clear();
      only_iostream = true;
      constructs_init = transfer_pending = false;
    } else if (contains(line, ": R_") && std::regex_search(line, m, reloc)) {  // a relocation
      only_iostream = only_iostream && iostream_init.count(m[1].str()) > 0;
      constructs_init = constructs_init || m[1].str() == "_ZNSt8ios_base4InitC1Ev";
      // nvcc's registration, the initializer of this name, hands atexit the module's unloading
      // (the name is nvcc's own local symbol: a second one in the file would not assemble).
      if (m[1].str() == "atexit" && !(initializer && fn == "_ZL24__sti____cudaRegisterAllv"))
        o.exit_handler = true;
      transfer_pending = false;  // the call or jump before it goes where the relocation says
    } else {
      const auto tab = line.rfind('\t');
      if (tab != std::string::npos && (contains(line, "sys") || contains(line, "int")) &&
          std::regex_search(line.substr(tab + 1, line.find('<', tab) - tab - 1), system_call))
        o.system_call = true;
      // What the last instruction was matters only where close_function() looks: initializers.
      if (in_initializer && std::regex_search(line, m, instruction)) {
        const std::string op = m[1].str();
        if (transfer_pending) only_iostream = false;  // a call or jump without a relocation
        transfer_pending = op[0] == 'j' || starts_with(op, "call");
        if (!starts_with(op, "nop") && op != "xchg") last = op;  // padding after the end
      }
    }
  }
  close_function();
  return o;
}

std::optional<ProgramObjects> program_objects(const fs::path& program, std::string& why) {
  const fs::path manifest = program.string() + ".objects";
  std::ifstream in(manifest);
  if (!in) {
    why = "no " + manifest.filename().string() + " beside " + program.string() +
          " (it is written by cmake/LabLesson.cmake: rebuild with this checker's sources)";
    return std::nullopt;
  }
  ProgramObjects p;
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "exercise") p.exercise = value;
    else if (key == "interface") p.interface = value;
    else if (key == "harness") p.harness = value;
    else if (key == "library") {
      std::istringstream parts(value);
      for (std::string part; std::getline(parts, part, ';');)
        if (!part.empty()) p.library.push_back(part);
    }
    else if (key == "source") p.source = value;
  }
  if (p.exercise.empty() || p.interface.empty() || p.harness.empty() || p.library.empty()) {
    why = manifest.string() + " does not name the exercise, interface, harness and library objects";
    return std::nullopt;
  }
  return p;
}

std::vector<SealFinding> inspect_program(const fs::path& program,
                                         const std::vector<std::string>& extra_calls,
                                         const std::vector<std::string>& refused_calls) {
  std::string why;
  const auto objects = program_objects(program, why);
  if (!objects) throw ConfigError("cannot inspect " + program.string() + ": " + why);
  static const std::regex kFlagsNow(R"(FLAGS_1\).*\bNOW\b)");
  // Full RELRO (cmake/LabLesson.cmake): without it the table of library functions' addresses
  // stays writable, and an exercise that writes it can replace what the harness calls.
  const std::string dynamic = capture("readelf", {"-dlW", program.string()});
  if (!contains(dynamic, "GNU_RELRO") ||
      !(contains(dynamic, "BIND_NOW") || std::regex_search(dynamic, kFlagsNow)))
    throw ConfigError(program.string() + " was linked without full RELRO (-z relro -z now): build "
                      "it with this checker's cmake/LabLesson.cmake");
  // The pristine side is the same for every submission of a lesson: read it once per process.
  static std::map<std::string, ObjectSymbols> cache;
  auto cached = [&](const fs::path& p) -> const ObjectSymbols& {
    auto it = cache.find(p.string());
    if (it == cache.end())
      it = cache.emplace(p.string(), read_object(p, ObjectReading::pristine)).first;
    return it->second;
  };
  SealContext c;
  c.harness = cached(objects->harness);
  c.pristine.push_back(&cached(objects->harness));
  for (const auto& file : objects->library) {
    const ObjectSymbols& o = cached(file);
    c.pristine.push_back(&o);
    c.library.strong.insert(o.strong.begin(), o.strong.end());
    c.library.weak.insert(o.weak.begin(), o.weak.end());
    c.library.undefined.insert(o.undefined.begin(), o.undefined.end());
    c.library.weak_undefined.insert(o.weak_undefined.begin(), o.weak_undefined.end());
    c.library.groups.insert(o.groups.begin(), o.groups.end());
  }
  c.interface = cached(objects->interface);
  c.extra_calls = extra_calls;
  c.refused_calls = refused_calls;
  std::string stem = objects->source.filename().string();
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".cu") == 0) stem.resize(stem.size() - 3);
  c.exercise_stem = stem;
  std::istringstream exported(capture("nm", {"-D", "--defined-only", program.string()}));
  for (std::string line; std::getline(exported, line);)
    c.exported.insert(unversioned(line.substr(line.find_last_of(' ') + 1)));
  return check_seal(read_object(objects->exercise), c);
}

std::string describe_findings(const std::vector<SealFinding>& findings, std::size_t max) {
  std::string out = "exercise.cu breaks the grading rules, so it was not run: ";
  for (std::size_t i = 0; i < findings.size() && i < max; ++i) {
    const auto& f = findings[i];
    out += (i ? "; " : "") + (f.symbol.empty() ? f.why : "`" + f.symbol + "` " + f.why);
  }
  if (findings.size() > max) out += "; and " + std::to_string(findings.size() - max) + " more";
  return out;
}

SourceText source_text(const std::string& source, bool keep_literals) {
  // Line splices first, as the compiler joins them before it sees a comment or a directive.
  std::string joined;
  std::vector<int> from;
  int line = 1;
  for (std::size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\\') {
      std::size_t j = i + 1;
      if (j < source.size() && source[j] == '\r') ++j;
      if (j < source.size() && source[j] == '\n') {
        ++line;
        i = j;
        continue;
      }
    }
    joined += source[i];
    from.push_back(line);
    if (source[i] == '\n') ++line;
  }
  SourceText out;
  auto emit = [&](char c, std::size_t at) {
    out.text += c;
    out.line.push_back(from[at]);
  };
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  const std::size_t n = joined.size();
  bool in_number = false;  // a ' inside a number is a digit separator (1'000), not a literal
  for (std::size_t i = 0; i < n;) {
    const char c = joined[i];
    const char next = i + 1 < n ? joined[i + 1] : '\0';
    if (c == '/' && next == '/') {
      emit(' ', i);
      i = std::min(joined.find('\n', i), n);
      continue;
    }
    if (c == '/' && next == '*') {
      emit(' ', i);
      const auto end = joined.find("*/", i + 2);
      i = end == std::string::npos ? n : end + 2;
      continue;
    }
    if (c == '"' || (c == '\'' && !in_number)) {
      // The literal's end: R"delim( ... )delim" for a raw string, else the closing quote.
      std::size_t start = i;
      while (start > 0 && ident(joined[start - 1])) --start;
      const std::string prefix = joined.substr(start, i - start);
      std::size_t end = n;
      const bool raw = c == '"' && !prefix.empty() && prefix.back() == 'R' &&
                       (prefix == "R" || prefix == "u8R" || prefix == "uR" || prefix == "UR" || prefix == "LR");
      if (raw) {
        // The delimiter is at most 16 characters (C++): a search past that made every raw string
        // cost the rest of the file. Ill-formed, the rest is the literal (it does not compile).
        const auto paren = joined.find('(', i + 1);
        if (paren != std::string::npos && paren - i - 1 <= 16) {
          const std::string closing = ")" + joined.substr(i + 1, paren - i - 1) + "\"";
          const auto found = joined.find(closing, paren + 1);
          end = found == std::string::npos ? n : found + closing.size();
        }
      } else {
        std::size_t j = i + 1;
        while (j < n && joined[j] != c && joined[j] != '\n') j += joined[j] == '\\' ? 2 : 1;
        end = std::min(j + 1, n);
      }
      for (std::size_t k = i; k < end; ++k)
        if (keep_literals || k == i || k + 1 == end || joined[k] == '\n') emit(joined[k], k);
      i = end;
      in_number = false;
      continue;
    }
    if (ident(c) || (c == '.' && std::isdigit(static_cast<unsigned char>(next)))) {
      if (!in_number && (i == 0 || !ident(joined[i - 1]))) in_number = std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    } else if (c != '\'') {
      in_number = false;
    }
    emit(c, i);
    ++i;
  }
  return out;
}

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// For each '(' and '<' of `t`, the index just past the bracket that closes it, or npos: one pass
// with a stack of each kind (a scan from every opening bracket took quadratic time).
std::vector<std::size_t> closings(const std::string& t) {
  std::vector<std::size_t> out(t.size(), std::string::npos), parens, angles;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '(' || t[i] == '<') {
      (t[i] == '(' ? parens : angles).push_back(i);
    } else if (t[i] == ')' || t[i] == '>') {
      auto& open = t[i] == ')' ? parens : angles;
      if (open.empty()) continue;
      out[open.back()] = i + 1;
      open.pop_back();
    }
  }
  return out;
}

std::size_t skip_blanks(const std::string& t, std::size_t i) {
  while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
  return i;
}

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\n");
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(" \t\n") - first + 1);
}

}  // namespace

std::vector<std::string> review_flags(const std::string& source) {
  const SourceText s = source_text(source, false);
  const std::string& t = s.text;
  const std::vector<std::size_t> past = closings(t);
  // std::regex recurses once per character it matches: no text longer than this goes to one
  // (a 40,000-character line overflowed the stack); what is longer is flagged, not read.
  constexpr std::size_t kLongest = 4096;
  std::vector<std::pair<int, std::string>> found;
  auto flag = [&](std::size_t at, const std::string& what) {
    found.push_back({s.line.empty() ? 1 : s.line[std::min(at, s.line.size() - 1)], what});
  };
  // Every identifier, where it stands, and how often each name appears.
  struct Word {
    std::string name;
    std::size_t at;
  };
  std::vector<Word> words;
  std::map<std::string, int> count;
  for (std::size_t i = 0; i < t.size();) {
    if (!word_char(t[i]) || (i > 0 && word_char(t[i - 1]))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < t.size() && word_char(t[end])) ++end;
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) {
      words.push_back({t.substr(i, end - i), i});
      ++count[words.back().name];
    }
    i = end;
  }
  // Functions: names called or launched somewhere in the file, and names the file never declares
  // (from a header: a library function, most often). Function pointer types: spelled out, or an
  // alias of one (using F = void (*)(); typedef void (*F)();).
  static const std::set<std::string> not_functions = {
      "if", "while", "for", "switch", "return", "sizeof", "alignof", "decltype", "catch", "asm",
      "__asm", "__asm__", "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast",
      "noexcept", "alignas", "static_assert", "__attribute__", "defined", "throw", "new", "delete"};
  std::set<std::string> called, pointer_aliases;
  for (const auto& w : words) {
    const std::size_t after = skip_blanks(t, w.at + w.name.size());
    if (after < t.size() && (t[after] == '(' || t.compare(after, 3, "<<<") == 0) && !not_functions.count(w.name))
      called.insert(w.name);
    if (w.name == "using" || w.name == "typedef") {
      // Its end looked for within kLongest (a search to the end of the file for each of many
      // "using" took quadratic time).
      const std::string_view rest = std::string_view(t).substr(w.at, kLongest + 1);
      const std::size_t length = std::min(rest.find(';'), rest.size());
      if (length > kLongest) {
        flag(w.at, "a declaration of over " + std::to_string(kLongest) + " characters, too long to read");
        continue;
      }
      const std::string decl(rest.substr(0, length));
      std::smatch m;
      static const std::regex using_alias(R"(^using\s+(\w+)\s*=.*\(\s*[*&])");
      static const std::regex typedef_alias(R"(\(\s*[*&]\s*(\w+)\s*\)\s*\()");
      if (std::regex_search(decl, m, using_alias) || std::regex_search(decl, m, typedef_alias))
        pointer_aliases.insert(m[1].str());
    }
  }
  // A name the file never declares counts where its address is taken, or where it becomes a
  // pointer (a header's constant cast to a number is no function).
  // The operand is t[from, to): copied only when short enough to read (nested casts' copies of
  // one another took quadratic time).
  auto function_named = [&](std::size_t from, std::size_t to, const std::string& type) {
    auto blank = [&](std::size_t i) { return t[i] == ' ' || t[i] == '\t' || t[i] == '\n'; };
    while (from < to && blank(from)) ++from;
    while (to > from && blank(to - 1)) --to;
    const bool address = from < to && t[from] == '&';
    while (from < to && (t[from] == '&' || t[from] == ' ')) ++from;
    if (to - from > kLongest) return "(an operand of " + std::to_string(to - from) + " characters)";
    const std::string operand = t.substr(from, to - from);
    static const std::regex qualified(R"(^(?:::)?(?:\w+\s*::\s*)*(\w+)$)");
    std::smatch m;
    if (!std::regex_match(operand, m, qualified)) return std::string();
    const std::string name = m[1].str();
    const bool from_header = count[name] <= 1 && (address || type.find_first_of("*(") != std::string::npos);
    return called.count(name) || from_header ? name : std::string();
  };
  auto function_pointer_type = [&](const std::string& type) {
    static const std::regex spelled(R"(\(\s*(\w+\s*::\s*)*[*&^])");
    static const std::regex last_word(R"((\w+)[\s*&]*$)");
    std::smatch m;
    const std::string bare = trimmed(type);
    if (bare.size() > kLongest) return true;  // too long to read: flagged for a look
    return std::regex_search(bare, spelled) ||
           (std::regex_search(bare, m, last_word) && pointer_aliases.count(m[1].str()) > 0);
  };

  // One cast: its target type, its operand t[from, to), and where it ends.
  auto judge_cast = [&](std::size_t at, const std::string& type, std::size_t from, std::size_t to, std::size_t end) {
    if (function_pointer_type(type)) flag(at, "a cast to a function pointer type (" + trimmed(type) + ")");
    const std::string function = function_named(from, to, type);
    if (function.empty()) return;
    flag(at, "a cast of a function's address to data or another type (" + function + ")");
    const std::size_t next = skip_blanks(t, end);
    if (next < t.size() && (t[next] == '+' || t[next] == '-' || t[next] == '[') && t.compare(next, 2, "->") != 0)
      flag(at, "arithmetic on a function's address (" + function + ")");
  };
  static const std::set<std::string> integer_types = {"uintptr_t", "intptr_t", "size_t", "ptrdiff_t",
                                                        "uint64_t", "int64_t", "long", "uintmax_t"};
  for (const auto& w : words) {
    const bool in_std = w.at >= 5 && t.compare(w.at - 5, 5, "std::") == 0;
    const bool member = w.at >= 1 && (t[w.at - 1] == '.' || (w.at >= 2 && t.compare(w.at - 2, 2, "->") == 0));
    if (w.name == "asm" || w.name == "__asm" || w.name == "__asm__") {
      flag(w.at, "inline assembly (" + w.name + ")");
    } else if (((w.name == "pthread_create" || w.name == "clone") && !member) ||
               (in_std && (w.name == "thread" || w.name == "jthread" || w.name == "async"))) {
      // Where the system-call filter is off (lesson 11), a thread can still be running when the
      // harness writes the result.
      flag(w.at, "a thread started (" + std::string(in_std ? "std::" : "") + w.name + ")");
    } else if (w.name == "reinterpret_cast" || w.name == "bit_cast") {
      // name<type>(operand)
      const std::size_t open = skip_blanks(t, w.at + w.name.size());
      if (open >= t.size() || t[open] != '<') continue;
      const std::size_t type_end = past[open];
      const std::size_t paren = type_end == std::string::npos ? type_end : skip_blanks(t, type_end);
      if (paren == std::string::npos || paren >= t.size() || t[paren] != '(') continue;
      const std::size_t end = past[paren];
      if (end == std::string::npos) continue;
      if (type_end - open - 2 > kLongest) {
        flag(w.at, "a cast to a type of " + std::to_string(type_end - open - 2) + " characters, too long to read");
        continue;
      }
      judge_cast(w.at, t.substr(open + 1, type_end - open - 2), paren + 1, end - 1, end);
    } else if (integer_types.count(w.name)) {
      // uintptr_t(&f): a functional cast to an integer.
      const std::size_t paren = skip_blanks(t, w.at + w.name.size());
      if (paren >= t.size() || t[paren] != '(') continue;
      const std::size_t end = past[paren];
      if (end != std::string::npos) judge_cast(w.at, w.name, paren + 1, end - 1, end);
    }
  }
  // C-style casts: "(type) operand", where the parentheses hold a type (an identifier with
  // qualifiers, template arguments, pointers or a function pointer's declarator) and are not a
  // call's or a statement's ("f(a) b", "if (a) b" are not casts).
  static const std::regex c_cast(
      R"(\(\s*((?:const\s+|volatile\s+|unsigned\s+|signed\s+|struct\s+)*[A-Za-z_][\w:]*\s*(?:<[^()]*>)?[\s*&]*(?:const[\s*&]*)*(?:\(\s*[*&]\s*\)\s*\([^()]*\))?)\s*\)\s*(&?\s*(?:::)?[A-Za-z_][\w]*(?:\s*::\s*\w+)*))");
  static const std::set<std::string> before_cast = {"return", "case", "throw", "co_return"};
  // Statement by statement (a cast and its operand never cross a ';', '{' or '}'), each short
  // enough for the regex; a longer one is flagged for a look instead.
  for (std::size_t first = 0; first < t.size();) {
    std::size_t last = t.find_first_of(";{}", first);
    if (last == std::string::npos) last = t.size();
    const std::size_t from = first;
    first = last + 1;
    if (last - from > kLongest) {
      flag(from, "a statement of " + std::to_string(last - from) + " characters, too long to read");
      continue;
    }
    const auto begin = t.begin() + static_cast<std::ptrdiff_t>(from);
    const auto end = t.begin() + static_cast<std::ptrdiff_t>(last);
    for (auto it = std::sregex_iterator(begin, end, c_cast); it != std::sregex_iterator(); ++it) {
      const std::size_t at = from + static_cast<std::size_t>(it->position(0));
      std::size_t before = at;
      while (before > 0 && (t[before - 1] == ' ' || t[before - 1] == '\t')) --before;
      if (before > 0 && (t[before - 1] == ')' || t[before - 1] == ']')) continue;
      if (before > 0 && word_char(t[before - 1])) {
        std::size_t start = before;
        while (start > 0 && word_char(t[start - 1])) --start;
        if (!before_cast.count(t.substr(start, before - start))) continue;
      }
      const std::string type = (*it)[1].str();
      const bool pointer_like = type.find('*') != std::string::npos || function_pointer_type(type) ||
                                integer_types.count(trimmed(type)) > 0 ||
                                type.find("long") != std::string::npos;
      if (!pointer_like) continue;
      const std::size_t operand = from + static_cast<std::size_t>(it->position(2));
      judge_cast(at, type, operand, operand + static_cast<std::size_t>(it->length(2)),
                 at + static_cast<std::size_t>(it->length(0)));
    }
  }
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  // A list an instructor reads: the first 100, and how many more (169,318 once, from one file).
  constexpr std::size_t kListed = 100;
  std::vector<std::string> out;
  for (std::size_t k = 0; k < found.size() && k < kListed; ++k)
    out.push_back("line " + std::to_string(found[k].first) + ": " + found[k].second);
  if (found.size() > kListed) out.push_back("and " + std::to_string(found.size() - kListed) + " more");
  return out;
}

}  // namespace lab
