// The seal on an exercise (inspect.hpp): what its object file may define and call.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>

#include "helpers.hpp"
#include "inspect.hpp"
#include "report.hpp"

using namespace lab;
using namespace lab::test;

namespace {

// A lesson whose interface is exercise::gemv, as nvcc and g++ would emit it.
const std::string kGemv = "_ZN8exercise4gemvEiifPKfS1_fPfP11CUstream_st";
const std::string kOwnKernel = "_ZN40_GLOBAL__N__1cd232a7_11_exercise_cu_21e893491kEPf";
const std::string kHarnessKernel = "_ZN39_GLOBAL__N__0ddcdb3c_7_main_cu_21e893491kEPf";

SealContext lesson() {
  SealContext c;
  c.exercise_stem = "exercise";
  c.interface.strong = {kGemv};
  c.interface.initializers = 1;  // nvcc's module registration
  c.harness.undefined = {kGemv, "cudaEventElapsedTime", "_ZN3lab8allcloseEPKfS1_mRKNS_9ToleranceE",
                         "_ZNSt6chrono3_V212steady_clock3nowEv"};
  c.harness.weak = {"_ZNSt6vectorIdSaIdEE17_M_realloc_insertIJdEEEvN9__gnu_cxx17__normal_iteratorIPdS1_EEDpOT_",
                    kHarnessKernel};
  c.library.strong = {"_ZN3lab8allcloseEPKfS1_mRKNS_9ToleranceE", "_ZN3lab8ceilingsEv"};
  return c;
}

// A clean exercise: the interface, its own kernel, nvcc's plumbing.
ObjectSymbols clean() {
  ObjectSymbols e;
  e.strong = {kGemv, kOwnKernel};
  e.weak = {"DW.ref.__gxx_personality_v0"};
  e.undefined = {"__cudaRegisterFatBinary", "__cudaPushCallConfiguration", "cudaLaunchKernel",
                 "atexit", "__gxx_personality_v0", "_Unwind_Resume", "_Znwm", "memcpy", "printf",
                 "sqrtf", "_ZN3lab16throw_cuda_errorE9cudaErrorPKcS2_i"};
  e.initializers = 1;  // nvcc's module registration
  return e;
}

// `code` compiled by the host compiler in `dir`, and read as an exercise's object is.
ObjectSymbols compiled_object(const fs::path& dir, const std::string& name, const std::string& code) {
  write_text(dir / (name + ".cpp"), code);
  const std::string cmd = "c++ -std=c++17 -O2 -c -o '" + (dir / (name + ".o")).string() + "' '" +
                          (dir / (name + ".cpp")).string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  return read_object(dir / (name + ".o"));
}

// A lesson whose harness is @p pristine (which must outlive the context), calling
// exercise_entry() from the exercise.
SealContext lesson_over(const ObjectSymbols& pristine) {
  SealContext c;
  c.exercise_stem = "exercise";
  c.interface.strong = {"_Z14exercise_entryv"};
  c.harness = pristine;
  c.harness.undefined.insert("_Z14exercise_entryv");
  c.pristine = {&pristine};
  return c;
}

bool names(const std::vector<SealFinding>& findings, const std::string& part) {
  for (const auto& f : findings)
    if (f.symbol.find(part) != std::string::npos || f.why.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_SUITE("inspect") {
  TEST_CASE("a clean exercise is sealed") {
    CHECK(check_seal(clean(), lesson()).empty());
  }

  TEST_CASE("replacing a function the harness or the library calls is refused, by name") {
    for (const std::string symbol : {"cudaEventElapsedTime", "_ZN3lab8allcloseEPKfS1_mRKNS_9ToleranceE",
                                     "main", "_ZN3lab8ceilingsEv"}) {
      ObjectSymbols e = clean();
      e.strong.insert(symbol);
      const auto findings = check_seal(e, lesson());
      REQUIRE(findings.size() == 1);
      CHECK(findings[0].symbol == demangle(symbol));
    }
    ObjectSymbols weak_timer = clean();  // weak does not help: the harness would call it
    weak_timer.weak.insert("_ZNSt6chrono3_V212steady_clock3nowEv");
    CHECK(names(check_seal(weak_timer, lesson()), "steady_clock::now"));
  }

  TEST_CASE("helpers with external linkage are refused; template instances are not") {
    ObjectSymbols e = clean();
    e.strong.insert("_Z6helperv");
    CHECK(names(check_seal(e, lesson()), "anonymous namespace"));
    ObjectSymbols instances = clean();  // the same instance the harness has: the harness's wins
    instances.weak.insert(
        "_ZNSt6vectorIdSaIdEE17_M_realloc_insertIJdEEEvN9__gnu_cxx17__normal_iteratorIPdS1_EEDpOT_");
    instances.weak.insert("_ZNSt6vectorIiSaIiEED2Ev");
    CHECK(check_seal(instances, lesson()).empty());
    // NVTX3's C++ ranges are header templates of the toolkit, like CUB's (CUB and Thrust open
    // ranges of their own domain once <nvtx3/nvtx3.hpp> is included).
    instances.weak.insert("_ZN5nvtx32v115scoped_range_inIN3cub17CUB_300001_SM_9006detail14NVTXCCCLDomainEED2Ev");
    CHECK(check_seal(instances, lesson()).empty());
  }

  TEST_CASE("a symbol named after another file's anonymous namespace is refused") {
    ObjectSymbols e = clean();
    e.strong.insert(kHarnessKernel);
    CHECK(names(check_seal(e, lesson()), "another file's anonymous namespace"));
  }

  TEST_CASE("constructor and destructor variants count as the interface") {
    SealContext c = lesson();
    c.interface.strong = {"_ZN3l0211RegionTimerC1EP11CUstream_stPf", "_ZN3l0211RegionTimerC2EP11CUstream_stPf"};
    c.harness.undefined.insert("_ZN3l0211RegionTimerC1EP11CUstream_stPf");
    ObjectSymbols e = clean();
    e.strong.erase(kGemv);
    e.strong.insert("_ZN3l0211RegionTimerC2EP11CUstream_stPf");
    e.strong.insert("_ZN3l0211RegionTimerC1EP11CUstream_stPf");
    CHECK(check_seal(e, c).empty());
  }

  TEST_CASE("calls that reach outside the exercise are refused, each by name") {
    for (const std::string call : {"fopen", "open", "write", "fork", "execve", "system", "kill",
                                   "getenv", "dlsym", "pthread_create", "_exit", "syscall",
                                   "cudaDeviceReset", "cudaProfilerStart", "cudaLaunchHostFunc",
                                   "cudaIpcGetMemHandle", "cuCtxDestroy_v2", "_ZN3lab8ceilingsEv",
                                   // every driver function, through the runtime or the library
                                   "cudaGetDriverEntryPointByVersion", "_ZN3lab6driverEv",
                                   // CUDA 13's ways to run host code on another thread, write or
                                   // read a file, reach the driver or hand memory to a process
                                   "cudaUserObjectCreate", "cudaGraphAddNode", "cudaGraphAddNode_v2",
                                   "cudaGraphNodeSetParams", "cudaGraphExecNodeSetParams",
                                   "cudaLaunchHostFunc_ptsz", "cudaLogsRegisterCallback",
                                   "cudaLogsDumpToFile", "cudaGraphDebugDotPrint",
                                   "cudaLibraryLoadFromFile", "cudaGetExportTable",
                                   "cudaMemSetMemPool", "cudaMemPoolExportToShareableHandle",
                                   "cudaMemPoolImportPointer",
                                   "_ZNSt14basic_ofstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode",
                                   "_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE"}) {
      ObjectSymbols e = clean();
      e.undefined.insert(call);
      const auto findings = check_seal(e, lesson());
      INFO(call);
      REQUIRE(findings.size() == 1);
      CHECK(findings[0].symbol == demangle(call));
    }
    ObjectSymbols weakly = clean();  // a weak reference is still a call
    weakly.weak_undefined.insert("pthread_create");
    CHECK(names(check_seal(weakly, lesson()), "pthread_create"));
  }

  TEST_CASE("the graph and library calls the lessons teach stay allowed") {
    ObjectSymbols e = clean();
    e.undefined.insert({"cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphCreate",
                        "cudaGraphAddKernelNode", "cudaGraphInstantiate", "cudaGraphLaunch",
                        "cudaGraphExecKernelNodeSetParams", "cudaGraphExecUpdate",
                        "cudaGraphExecDestroy", "cudaGraphDestroy", "cudaLaunchKernel_ptsz",
                        "cudaLibraryLoadData", "cudaLibraryGetKernel", "cudaMemPoolCreate",
                        "cudaMemPoolSetAttribute", "cudaMallocFromPoolAsync",
                        // the lab library's helpers an exercise may call: pure queries
                        "_ZN3lab11device_infoEv", "_ZN3lab8grid_forExxi",
                        // a TMA tensor map (lesson 13), the driver's one function it reaches
                        "_ZN3lab18tensor_map_2d_bf16EPKvmmjj"});
    CHECK(check_seal(e, lesson()).empty());
  }

  TEST_CASE("names of hostile lengths are judged on a bounded stack, and refused") {
    // A symbol's name is the student's to choose: std::regex recursed once per character of a
    // 40,000-character one (issue 52: a class run must survive any one submission).
    const std::string digits = "cudaLaunchHostFunc_v" + std::string(40000, '7');
    const std::string word(40000, 'a');
    ObjectSymbols e = clean();
    e.undefined.insert({digits, word});
    e.strong.insert("_ZN12_GLOBAL__N__" + std::string(40000, 'b') + "_cu_1234abcd1fE");
    const auto findings = check_seal(e, lesson());
    // The unknown name and the definition are refused: too long to read is the strict reading.
    // (An unknown cuda* name is allowed like any runtime call: the link would need it to exist.)
    CHECK(findings.size() == 2);
    for (const auto& f : findings) CHECK(f.symbol.size() >= 40000);
  }

  TEST_CASE("an exercise makes its streams with the runtime's calls the library tracks, or as lab::SideStream") {
    // A stream the library does not know could run work before the clock starts or after it
    // stops; the three runtime calls it stands in for (common/src/streams.cpp) are ordinary CUDA.
    for (const std::string call : {"cudaGreenCtxStreamCreate", "cudaExecutionCtxStreamCreate"}) {
      ObjectSymbols e = clean();
      e.undefined.insert(call);
      const auto findings = check_seal(e, lesson());
      INFO(call);
      REQUIRE(findings.size() == 1);
      CHECK(findings[0].why.find("lab::SideStream") != std::string::npos);
    }
    for (const std::string call :
         {"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority"}) {
      ObjectSymbols e = clean();
      e.undefined.insert({call, "cudaStreamDestroy"});
      INFO(call);
      CHECK(check_seal(e, lesson()).empty());
    }
    ObjectSymbols harness = clean();  // the harness's own untracked stream is not for exercises
    harness.undefined.insert("_ZN3lab19make_harness_streamEv");
    CHECK(check_seal(harness, lesson()).size() == 1);
    ObjectSymbols side = clean();  // the library's stream, which every sample orders
    side.undefined.insert({"_ZN3lab10SideStreamC1Ev", "_ZN3lab10SideStreamD1Ev",
                           "cudaStreamDestroy", "cudaStreamWaitEvent", "cudaEventRecord"});
    CHECK(check_seal(side, lesson()).empty());
  }

  TEST_CASE("a lesson may allow more calls, by name or prefix") {
    SealContext c = lesson();
    c.extra_calls = {"nvrtc*", "getenv"};
    ObjectSymbols e = clean();
    e.undefined.insert("nvrtcCompileProgram");
    e.undefined.insert("getenv");
    CHECK(check_seal(e, c).empty());
    // What the lesson allows is named where it refuses something else: lesson 11 allows fopen,
    // not <fstream>.
    c.extra_calls = {"fopen", "rename"};
    ObjectSymbols stream = clean();
    stream.undefined.insert("_ZNSt14basic_ofstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode");
    const auto findings = check_seal(stream, c);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].why.find("this lesson also allows fopen, rename") != std::string::npos);
  }

  TEST_CASE("a lesson may refuse calls the course allows, by name or prefix, under any suffix") {
    SealContext c = lesson();
    c.refused_calls = {"cudaGraphKernelNodeGetParams", "cudaGraphNodeGetParams*"};
    ObjectSymbols e = clean();
    e.undefined.insert({"cudaGraphInstantiate", "cudaGraphLaunch", "cudaGraphGetNodes"});
    CHECK(check_seal(e, c).empty());  // replaying a capture stays allowed
    for (const char* call : {"cudaGraphKernelNodeGetParams", "cudaGraphKernelNodeGetParams_v2",
                             "cudaGraphNodeGetParams"}) {
      ObjectSymbols reads = clean();
      reads.undefined.insert(call);
      const auto findings = check_seal(reads, c);
      INFO(call);
      REQUIRE(findings.size() == 1);
      CHECK(findings[0].why.find("this lesson does not allow") != std::string::npos);
      CHECK(check_seal(reads, lesson()).empty());  // the course allows it elsewhere
    }
  }

  TEST_CASE("a call only made from a COMDAT group the pristine code also has counts only where exercise code refers to the group") {
    SealContext c = lesson();
    c.library.weak.insert("nvtxInitOnce_v3");
    c.library.groups.insert("nvtxInitOnce_v3");
    ObjectSymbols e = clean();
    e.weak.insert("nvtxInitOnce_v3");
    e.undefined.insert("dlopen");
    e.referenced_from["dlopen"] = {".text.nvtxInitOnce_v3"};
    e.section_group[".text.nvtxInitOnce_v3"] = "nvtxInitOnce_v3";
    CHECK(check_seal(e, c).empty());
    e.referenced_from["dlopen"].insert(".text");  // ... unless the exercise's own code calls it too
    CHECK(names(check_seal(e, c), "dlopen"));
    // A section named like the pristine one but outside any group is kept by the linker: the
    // code in it runs (section attributes cannot smuggle a call past the seal).
    ObjectSymbols named = clean();
    named.weak.insert("nvtxInitOnce_v3");
    named.undefined.insert("dlopen");
    named.referenced_from["dlopen"] = {".text.nvtxInitOnce_v3"};
    CHECK(names(check_seal(named, c), "dlopen"));
    ObjectSymbols own = clean();  // a group of its own that no pristine code has
    own.weak.insert("_ZN3lab6sneakyEv");
    own.undefined.insert("dlopen");
    own.referenced_from["dlopen"] = {".text._ZN3lab6sneakyEv"};
    own.section_group[".text._ZN3lab6sneakyEv"] = "_ZN3lab6sneakyEv";
    CHECK(names(check_seal(own, c), "dlopen"));
  }

  TEST_CASE("a plain section group under a pristine COMDAT group's signature is the exercise's own code") {
    // The linker folds COMDAT groups only: a group without the flag, which assembly can make
    // under any signature, is kept beside the pristine one, and its calls run.
    TempDir dir;
    const ObjectSymbols pristine = compiled_object(
        dir.path(), "pristine", "#include <vector>\nlong pristine_use(std::vector<double>& v) { v.push_back(1); return long(v.size()); }\n");
    REQUIRE(!pristine.groups.empty());
    const SealContext c = lesson_over(pristine);
    auto exercise = [&](const std::string& name, const std::string& linkage) {
      return check_seal(compiled_object(dir.path(), name,
                                        "asm(\".section .text.sneak,\\\"axG\\\",@progbits," + *pristine.groups.begin() +
                                            linkage + "\\nsneak_fn: jmp getenv@PLT\\n.text\\n\");\n"
                                            "extern \"C\" long sneak_fn(const char*);\n"
                                            "long exercise_entry() { return sneak_fn(\"HOME\"); }\n"),
                        c);
    };
    CHECK(names(exercise("plain_group", ""), "getenv"));
    // A COMDAT group of that signature is dropped for the pristine one (the link refuses the
    // exercise's reference into it): none of its code runs.
    CHECK_FALSE(names(exercise("comdat_group", ",comdat"), "getenv"));
  }

  TEST_CASE("exercise code that refers to the pristine copy of an inline function or template instance is judged by what that copy calls") {
    // The library's own writer, a template the exercise instantiates explicitly (it may name the
    // library's private types) and then calls: the linker keeps the library's copy, which writes
    // to a descriptor. A relay reaches it through one more template; getenv is reached the same way.
    TempDir dir;
    const std::string library =
        "#include <unistd.h>\n#include <cstdlib>\n#include <vector>\n"
        "namespace lab { namespace detail {\n"
        "template <class T> __attribute__((noinline)) long emit(T fd, const char* s) { return ::write(fd, s, 1); }\n"
        "template <class T> __attribute__((noinline)) long relay(T fd) { return emit(fd, \"x\") + 1; }\n"
        "template <class T> __attribute__((noinline)) T lookup() { return std::getenv(\"HOME\") != nullptr; }\n"
        "} }\n";
    const ObjectSymbols pristine = compiled_object(
        dir.path(), "pristine", library + "long pristine_use(std::vector<double>& v) { v.push_back(1);\n"
                                "  return lab::detail::relay<int>(2) + lab::detail::lookup<int>(); }\n");
    const SealContext c = lesson_over(pristine);
    auto exercise = [&](const std::string& name, const std::string& body) {
      return check_seal(compiled_object(dir.path(), name, library + body), c);
    };
    const std::string instances = "template long lab::detail::emit<int>(int, const char*);\n"
                                  "template long lab::detail::relay<int>(int);\ntemplate int lab::detail::lookup<int>();\n";
    // Instantiated, never called: the exercise's copies are dropped and nothing of its own runs them.
    CHECK(exercise("instantiates", instances + "long exercise_entry() { return 0; }\n").empty());
    const auto writes = exercise("writes", instances + "long exercise_entry() { return lab::detail::emit<int>(1, \"x\"); }\n");
    REQUIRE(writes.size() == 1);
    CHECK(writes[0].symbol == "long lab::detail::emit<int>(int, char const*)");
    CHECK(contains(writes[0].why, "the pristine code's copy"));
    CHECK(contains(writes[0].why, "calls write"));
    CHECK(names(exercise("relays", instances + "long exercise_entry() { return lab::detail::relay<int>(1); }\n"), "calls write"));
    CHECK(names(exercise("reads_environment", instances + "long exercise_entry() { return lab::detail::lookup<int>(); }\n"),
                "calls getenv"));
    // Declared, not instantiated (extern template): the call goes to the library's copy all the same.
    CHECK(names(exercise("extern_template", "extern template long lab::detail::relay<int>(int);\n"
                                            "long exercise_entry() { return lab::detail::relay<int>(1); }\n"),
                "calls write"));
    // The same instance of an allowed template as the library's (std::vector's growth) passes.
    CHECK(exercise("vector", "long exercise_entry() { std::vector<double> v; v.push_back(2); return long(v[0]); }\n").empty());
  }

  TEST_CASE("the walk into the pristine code stops at NVTX, whose API exercises may use") {
    // NVTX's globals in the exercise's own data point at its loader's functions (lesson 10), and
    // the loader reads the environment and loads a library: the harness has run it already.
    SealContext c = lesson();
    ObjectSymbols library;
    library.weak = {"nvtxInitOnce_v3", "_ZN3lab6detail4dumpEv"};
    library.groups = {"nvtxInitOnce_v3", "_ZN3lab6detail4dumpEv"};
    library.section_group = {{".text.nvtxInitOnce_v3", "nvtxInitOnce_v3"},
                             {".text._ZN3lab6detail4dumpEv", "_ZN3lab6detail4dumpEv"}};
    library.defined_in = {{"nvtxInitOnce_v3", ".text.nvtxInitOnce_v3"},
                          {"_ZN3lab6detail4dumpEv", ".text._ZN3lab6detail4dumpEv"}};
    library.undefined = {"getenv", "dlopen", "write"};
    library.references = {{".text.nvtxInitOnce_v3", {{0x10, "getenv", "", 0}, {0x20, "dlopen", "", 0}}},
                          {".text._ZN3lab6detail4dumpEv", {{0x10, "write", "", 0}}}};
    c.library.weak = library.weak;
    c.library.groups = library.groups;
    c.pristine = {&library};
    ObjectSymbols e = clean();
    e.weak.insert("nvtxInitOnce_v3");
    e.section_group[".text.nvtxInitOnce_v3"] = "nvtxInitOnce_v3";
    e.references[".data.rel.local"] = {{0, "nvtxInitOnce_v3", "", 0}};
    CHECK(check_seal(e, c).empty());
    e.weak.insert("_ZN3lab6detail4dumpEv");  // a group of the library's own that is not NVTX's
    e.section_group[".text._ZN3lab6detail4dumpEv"] = "_ZN3lab6detail4dumpEv";
    e.references[".data.rel.local"].push_back({8, "_ZN3lab6detail4dumpEv", "", 0});
    const auto findings = check_seal(e, c);
    REQUIRE(findings.size() == 1);
    CHECK(findings[0].symbol == "lab::detail::dump()");
    CHECK(contains(findings[0].why, "calls write"));
    // Referred to by a section of its own group only: the exercise's code never reaches it.
    e.references.erase(".data.rel.local");
    e.references[".text._ZN3lab6detail4dumpEv"] = {{0x10, "_ZN3lab6detail4dumpEv", "", 0}};
    CHECK(check_seal(e, c).empty());
  }

  TEST_CASE("code that runs before main or at exit, and system calls, are refused") {
    ObjectSymbols e = clean();
    e.initializers = 2;
    CHECK(names(check_seal(e, lesson()), "before main"));
    ObjectSymbols at_exit = clean();
    at_exit.other_startup = true;
    CHECK(names(check_seal(at_exit, lesson()), "at exit"));
    ObjectSymbols raw = clean();
    raw.system_call = true;
    CHECK(names(check_seal(raw, lesson()), "system calls"));
    ObjectSymbols handler = clean();
    handler.exit_handler = true;
    CHECK(names(check_seal(handler, lesson()), "a call of atexit"));
    ObjectSymbols thread_exit = clean();  // declared weak by the exercise itself
    thread_exit.weak_undefined = {"__cxa_thread_atexit_impl"};
    CHECK(names(check_seal(thread_exit, lesson()), "__cxa_thread_atexit_impl"));
    thread_exit.weak_undefined = {"__pthread_key_create"};  // libstdc++'s headers: allowed, weakly
    CHECK(check_seal(thread_exit, lesson()).empty());
    thread_exit.weak_undefined.clear();  // a std::mutex or std::call_once of its own: allowed
    thread_exit.undefined = {"pthread_mutex_lock", "pthread_mutex_unlock", "pthread_once"};
    CHECK(check_seal(thread_exit, lesson()).empty());
    thread_exit.undefined = {"__pthread_key_create"};  // but a thread-local key's destructor, no
    CHECK(names(check_seal(thread_exit, lesson()), "__pthread_key_create"));
    ObjectSymbols direct = clean();  // called, not declared weak
    direct.undefined.insert("__cxa_thread_atexit_impl");
    CHECK(names(check_seal(direct, lesson()), "runs code of its own when the program exits"));
  }

  TEST_CASE("<iostream>'s initializer (g++ before 13) is not the exercise's code before main") {
    ObjectSymbols e = clean();
    e.initializers = 2;
    e.iostream_initializers = 1;
    CHECK(check_seal(e, lesson()).empty());
    e.initializers = 3;  // and one more of its own
    CHECK(names(check_seal(e, lesson()), "before main"));
  }

  TEST_CASE("read_object tells <iostream>'s initializer from an initializer of the exercise's own") {
    TempDir dir;
    auto object = [&](const std::string& name, const std::string& code) {
      return compiled_object(dir.path(), name, code);
    };
    const ObjectSymbols io = object("io", "#include <iostream>\nint twice(int x) { return 2 * x; }\n");
    CHECK(io.initializers == io.iostream_initializers);  // 1 and 1 before g++ 13, 0 and 0 after
    const ObjectSymbols own = object("own", "#include <iostream>\n#include <cstdio>\n"
                                            "namespace { struct Hello { Hello() { std::puts(\"hi\"); } } hello; }\n");
    CHECK(own.initializers >= 1);
    CHECK(own.iostream_initializers == 0);  // the same initializer also runs the constructor
    CHECK_FALSE(io.system_call);
    // An initializer named like g++'s that constructs Init and then jumps, with no relocation, to
    // code of its own in the same section is not <iostream>'s.
    const ObjectSymbols posing = object(
        "posing", "#include <iostream>\n#include <new>\nnamespace {\n"
                  "__attribute__((noinline, section(\".text.startup\"))) void helper() { asm volatile(\"nop\" ::: \"memory\"); }\n"
                  "alignas(std::ios_base::Init) char buf[sizeof(std::ios_base::Init)];\n}\n"
                  "extern \"C\" __attribute__((constructor)) void _GLOBAL__sub_I_posing() { new (buf) std::ios_base::Init; helper(); }\n");
    CHECK(posing.initializers > posing.iostream_initializers);
#if defined(__x86_64__)
    // The same disassembly finds a system call of its own (and a call of libc's syscall() is a
    // relocation, not the instruction: the call list refuses that one).
    const ObjectSymbols raw = object("raw", "long pid() { long r; asm volatile(\"syscall\" : \"=a\"(r) : \"a\"(39) : "
                                            "\"rcx\", \"r11\", \"memory\"); return r; }\n");
    CHECK(raw.system_call);
    // A prefix byte before it: objdump prints "cs syscall".
    const ObjectSymbols prefixed = object(
        "prefixed", "long pid() { long r; asm volatile(\".byte 0x2e,0x0f,0x05\" : \"=a\"(r) : \"a\"(39) : "
                    "\"rcx\", \"r11\", \"memory\"); return r; }\n");
    CHECK(prefixed.system_call);
    const ObjectSymbols libc = object("libc", "#include <unistd.h>\n#include <sys/syscall.h>\n"
                                              "long pid() { return syscall(SYS_getpid); }\n");
    CHECK_FALSE(libc.system_call);
    CHECK(libc.undefined.count("syscall") == 1);
#endif
    // atexit from the exercise's own code registers a handler that runs after main; nvcc's
    // registration function (static, this name) calls it for the module's unloading.
    const ObjectSymbols handler = object(
        "handler", "#include <cstdlib>\n#include <cstdio>\nstatic void bye() { std::puts(\"bye\"); }\n"
                   "void first_call() { std::atexit(bye); }\n");
    CHECK(handler.exit_handler);
    const ObjectSymbols nvcc_like = object(
        "nvcc_like", "#include <cstdlib>\nstatic void unload() {}\n"
                     "__attribute__((constructor)) static void __sti____cudaRegisterAll() { std::atexit(unload); }\n");
    CHECK_FALSE(nvcc_like.exit_handler);
    CHECK_FALSE(io.exit_handler);
    // Named like nvcc's, but no initializer: an exercise's own function that registers a handler.
    const ObjectSymbols named_like = object(
        "named_like", "#include <cstdlib>\nstatic void h() {}\n"
                      "static void __sti____cudaRegisterAll() { std::atexit(h); }\n"
                      "void first_call() { __sti____cudaRegisterAll(); }\n");
    CHECK(named_like.exit_handler);
    // A decoy: a function named like g++'s <iostream> initializer that nothing runs does not
    // excuse a constructor of the exercise's own.
    const ObjectSymbols decoy = object(
        "decoy", "#include <cstdio>\n__attribute__((constructor)) static void evil() { std::puts(\"x\"); }\n"
                 "asm(\".text\\n_GLOBAL__sub_I_decoy:\\n jmp _ZNSt8ios_base4InitC1Ev@PLT\\n\");\n");
    CHECK(decoy.iostream_initializers == 0);
    CHECK(decoy.initializers >= 1);
  }

  TEST_CASE("sections no compiler makes, indirect functions and versioned names are seen") {
    TempDir dir;
    auto object = [&](const std::string& name, const std::string& code) {
      return compiled_object(dir.path(), name, code);
    };
    const ObjectSymbols plain = object("plain", "#include <vector>\nint f(std::vector<int>& v) { v.push_back(1); return v[0]; }\n");
    CHECK(plain.odd_sections.empty());
    CHECK_FALSE(plain.other_startup);
    CHECK(plain.indirect.empty());
    // Two template instances whose sections' names agree in their first 256 characters (readelf
    // of binutils 2.42 prints no more, and so they looked like one name twice): two sections.
    const std::string long_name(300, 'L');
    const ObjectSymbols twins = object(
        "long_names", "struct " + long_name + " {};\n"
                      "template <class T, int N> __attribute__((noinline)) int pick() { return N; }\n"
                      "int both() { return pick<" + long_name + ", 1>() + pick<" + long_name + ", 2>(); }\n");
    CHECK(twins.odd_sections.empty());
    int long_members = 0;
    for (const auto& [section, group] : twins.section_group)
      if (section.size() > 300 && section.rfind(".text._Z4pickI300LLL", 0) == 0) ++long_members;
    CHECK(long_members == 2);
    // A constructor with a priority lands in .init_array.00101, run before main like .init_array.
    const ObjectSymbols priority = object(
        "priority", "#include <cstdio>\nnamespace { __attribute__((constructor(101))) void f() { std::puts(\"x\"); } }\n");
    CHECK(priority.other_startup);
    // Code spliced into _init and _fini.
    const ObjectSymbols init = object(
        "init", "extern \"C\" void hook() {}\n"
                "asm(\".pushsection .init,\\\"ax\\\"\\n call hook\\n.popsection\\n\");\n");
    REQUIRE(init.odd_sections.size() == 1);
    CHECK(init.odd_sections[0] == "code in .init");
    // A second section with a COMDAT member's name, outside the group (its calls would count
    // as the group's, which never runs), and a name with a space the seal cannot read.
    const ObjectSymbols twin = object(
        "twin", "#include <cstdlib>\n"
                "asm(\".section .text.twin,\\\"axG\\\",@progbits,twin_group,comdat\\n.previous\\n\");\n"
                "__attribute__((section(\".text.twin\"), noinline)) int evil() { return std::system(\"true\"); }\n");
    CHECK(std::find(twin.odd_sections.begin(), twin.odd_sections.end(), "two sections named .text.twin") !=
          twin.odd_sections.end());
    const ObjectSymbols spaced = object(
        "spaced", "asm(\".section \\\"odd code\\\",\\\"ax\\\"\\n ret\\n.previous\\n\");\n");
    REQUIRE_FALSE(spaced.odd_sections.empty());
    CHECK(contains(spaced.odd_sections[0], "cannot read"));
    // An indirect function: its resolver runs while the program is loaded.
    const ObjectSymbols ifunc = object(
        "ifunc", "extern \"C\" { static int real() { return 1; } static void* pick() { return (void*)&real; }\n"
                 "int chosen() __attribute__((ifunc(\"pick\"))); }\n");
    CHECK(ifunc.indirect.count("chosen") == 1);
    // A call under a versioned name is the call.
    const ObjectSymbols versioned = object(
        "versioned", "extern \"C\" int host_func(void*, void*, void*);\n"
                     "asm(\".symver host_func, cudaLaunchHostFunc@libcudart.so.13\");\n"
                     "int call() { return host_func(0, 0, 0); }\n");
    CHECK(versioned.undefined.count("cudaLaunchHostFunc") == 1);
    ObjectSymbols e = clean();
    e.undefined.insert("cudaLaunchHostFunc");
    CHECK(names(check_seal(e, lesson()), "cudaLaunchHostFunc"));
    ObjectSymbols odd = clean();
    odd.odd_sections = {"code in .init"};
    CHECK(names(check_seal(odd, lesson()), "a section no compiler makes for it (code in .init)"));
    ObjectSymbols indirect = clean();
    indirect.strong.insert("chosen");
    indirect.indirect.insert("chosen");
    CHECK(names(check_seal(indirect, lesson()), "resolver runs before main"));
  }

  TEST_CASE("a program linked without full RELRO is not run") {
    TempDir dir;
    const fs::path src = dir.path() / "p.cpp", obj = dir.path() / "p.o";
    write_text(src, "int main() { return 0; }\n");
    REQUIRE(std::system(("c++ -c -o '" + obj.string() + "' '" + src.string() + "'").c_str()) == 0);
    auto program = [&](const std::string& name, const std::string& flags) {
      const fs::path p = dir.path() / name;
      REQUIRE(std::system(("c++ " + flags + " -o '" + p.string() + "' '" + obj.string() + "'").c_str()) == 0);
      write_text(p.string() + ".objects", "exercise=" + obj.string() + "\ninterface=" + obj.string() +
                                              "\nharness=" + obj.string() + "\nlibrary=" + obj.string() +
                                              "\nsource=p.cu\n");
      return p;
    };
    const fs::path lazy = program("lazy", "-Wl,-z,lazy -Wl,-z,norelro");
    try {
      inspect_program(lazy, {});
      FAIL("a program without full RELRO was inspected");
    } catch (const ConfigError& e) {
      CHECK(contains(e.what(), "linked without full RELRO (-z relro -z now)"));
    }
    // With it the seal goes on to the objects (main is not the exercise's to define).
    CHECK(names(inspect_program(program("now", "-Wl,-z,relro -Wl,-z,now"), {}), "main"));
  }

  TEST_CASE("a function the exercise gives a shared library to call instead of its own is refused") {
    // libdep.so calls std::lab_test_hook, and has one; the exercise defines one too, weakly and
    // "in namespace std", which the seal's reading of names lets through: the program exports
    // it, so it replaces the library's for the whole program.
    TempDir dir;
    const fs::path d = dir.path();
    auto sh = [&](const std::string& cmd) { REQUIRE(std::system(cmd.c_str()) == 0); };
    write_text(d / "dep.cpp", "namespace std { __attribute__((weak)) int lab_test_hook() { return 0; } }\n"
                              "int call_hook() { return std::lab_test_hook(); }\n");
    write_text(d / "main.cpp", "int call_hook();\nint main() { return call_hook(); }\n");
    write_text(d / "ex.cpp", "namespace std { __attribute__((weak)) int lab_test_hook() { return 1; } }\n");
    const std::string dir_q = "'" + d.string() + "'";
    sh("c++ -fPIC -shared -o " + dir_q + "/libdep.so " + dir_q + "/dep.cpp");
    sh("c++ -c -o " + dir_q + "/main.o " + dir_q + "/main.cpp");
    sh("c++ -c -o " + dir_q + "/ex.o " + dir_q + "/ex.cpp");
    auto link = [&](const std::string& name, const std::string& objects) {
      sh("c++ -Wl,-z,relro -Wl,-z,now -o " + dir_q + "/" + name + " " + objects + " -L" + dir_q + " -ldep");
      const fs::path p = d / name;
      write_text(p.string() + ".objects", "exercise=" + (d / "ex.o").string() + "\ninterface=" +
                                              (d / "main.o").string() + "\nharness=" + (d / "main.o").string() +
                                              "\nlibrary=" + (d / "main.o").string() + "\nsource=ex.cu\n");
      return p;
    };
    const auto findings = inspect_program(link("interposing", dir_q + "/main.o " + dir_q + "/ex.o"), {});
    CHECK(names(findings, "std::lab_test_hook()"));
    CHECK(names(findings, "a shared library of the program"));
    // Without the exercise's copy in the program, nothing is exported that the exercise defines.
    CHECK_FALSE(names(inspect_program(link("plain", dir_q + "/main.o"), {}), "a shared library"));
  }

  TEST_CASE("a pristine object is read for what the seal holds an exercise against, the same as in full") {
    TempDir dir;
    write_text(dir.path() / "pristine.cpp",
               "#include <cstdio>\n#include <vector>\n"
               "namespace { struct Hello { Hello() { std::puts(\"hi\"); } } hello; }\n"
               "int sum(const std::vector<int>& v) { int s = 0; for (int x : v) s += x; return s; }\n"
               "template <class T> __attribute__((noinline)) T twice(T x) { return 2 * x; }\n"
               "double use() { return twice(1.5) + sum({1, 2}); }\nextern int elsewhere();\n"
               "int call() { return elsewhere(); }\n");
    const fs::path o = dir.path() / "pristine.o";
    const std::string cmd = "c++ -std=c++17 -O1 -c -o '" + o.string() + "' '" + (dir.path() / "pristine.cpp").string() + "'";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const ObjectSymbols full = read_object(o), pristine = read_object(o, ObjectReading::pristine);
    CHECK(pristine.strong == full.strong);
    CHECK(pristine.weak == full.weak);
    CHECK(pristine.undefined == full.undefined);
    CHECK(pristine.undefined.count("_Z9elsewherev") == 1);
    CHECK(pristine.groups == full.groups);
    CHECK_FALSE(pristine.groups.empty());  // twice<double>, the vector's code
    CHECK(pristine.initializers == full.initializers);
    CHECK(pristine.initializers >= 1);  // Hello's constructor
    for (const auto& [symbol, sections] : pristine.referenced_from)  // only what initializers call:
      CHECK(sections == std::set<std::string>{".init_array"});       // the rest is an exercise's
  }

  TEST_CASE("a device switch is allowed wherever the compiler put it; the toolkit's other device-wide calls are not") {
    // CUB's DeviceReduce and Thrust's algorithms switch to the device they are given (and back);
    // the compiler may inline or clone that code into the exercise's own .text (Thrust's reduce
    // does). With one GPU visible (pin_to_one_gpu) the switch can only name the device in use.
    const std::string sum = "_ZN3cub12DeviceReduce3SumIPKfPfxEE9cudaErrorPvRmT_T0_T1_P11CUstream_st";
    ObjectSymbols e = clean();
    e.weak.insert(sum);
    e.undefined.insert("cudaSetDevice");
    e.referenced_from["cudaSetDevice"] = {".text." + sum, ".text"};
    e.section_group[".text." + sum] = sum;
    CHECK(check_seal(e, lesson()).empty());
    // Thrust's error messages: strerror, a message in the C locale, which nothing can change.
    e.undefined.insert("strerror");
    e.referenced_from["strerror"] = {".text"};
    CHECK(check_seal(e, lesson()).empty());
    ObjectSymbols other = clean();  // a device-wide call from CUB's code is still refused
    other.weak.insert(sum);
    other.undefined.insert("cudaDeviceReset");
    other.referenced_from["cudaDeviceReset"] = {".text." + sum};
    other.section_group[".text." + sum] = sum;
    CHECK(names(check_seal(other, lesson()), "cudaDeviceReset"));
    ObjectSymbols flags = clean();  // and so is the scheduling of the whole device
    flags.undefined.insert("cudaSetDeviceFlags");
    flags.referenced_from["cudaSetDeviceFlags"] = {".text"};
    CHECK(names(check_seal(flags, lesson()), "cudaSetDeviceFlags"));
  }

  TEST_CASE("review flags: inline assembly, casts between functions and data, arithmetic on a function's address, by line") {
    const std::vector<std::string> flags = review_flags(
        "#include <cstdio>\n"
        "__global__ void kernel(float4* p) { p[0].x = 1; }\n"
        "using Fn = int (*)(const char*);\n"
        "void f(const float* in, float* out) {\n"
        "  asm volatile(\"\" ::: \"memory\");\n"                                  // 5
        "  auto v = reinterpret_cast<const float4*>(in);\n"                       // 6: data, not flagged
        "  char* at = reinterpret_cast<char*>(&puts) + 0x40;\n"                   // 7
        "  Fn g = reinterpret_cast<Fn>(at);\n"                                    // 8
        "  auto h = (void (*)())at;\n"                                            // 9
        "  unsigned long k = (unsigned long)&printf - 16;\n"                      // 10
        "  void* launch = (void*)kernel;\n"                                       // 11
        "  if (in) out[0] = (float)in[0];\n"                                      // 12: not flagged
        "  // asm(\"syscall\"); reinterpret_cast<char*>(&puts)\n"                 // 13: a comment
        "  const char* s = \"__asm__ (void*)printf\";\n"                          // 14: a literal
        "  __asm__(\"nop\");\n"                                                   // 15
        "}\n");
    std::string all;
    for (const auto& f : flags) all += f + "\n";
    INFO(all);
    auto flagged = [&](const std::string& text) {
      return std::any_of(flags.begin(), flags.end(), [&](const std::string& f) { return f.find(text) != std::string::npos; });
    };
    CHECK(flagged("line 5: inline assembly (asm)"));
    CHECK(flagged("line 7: a cast of a function's address to data or another type (puts)"));
    CHECK(flagged("line 7: arithmetic on a function's address (puts)"));
    CHECK(flagged("line 8: a cast to a function pointer type (Fn)"));
    CHECK(flagged("line 9: a cast to a function pointer type"));
    CHECK(flagged("line 10: arithmetic on a function's address (printf)"));
    CHECK(flagged("line 11: a cast of a function's address to data or another type (kernel)"));
    CHECK(flagged("line 15: inline assembly (__asm__)"));
    for (const std::string quiet : {"line 6:", "line 12:", "line 13:", "line 14:"}) CHECK_FALSE(flagged(quiet));
    // An ordinary exercise has nothing to review.
    CHECK(review_flags("#include \"exercise.cuh\"\n__global__ void k(const float* a, float* b) { b[0] = a[0]; }\n"
                       "void run(const float* a, float* b) { k<<<1, 1>>>(a, b); auto p = reinterpret_cast<const float2*>(a); (void)p; }\n")
              .empty());
  }

  TEST_CASE("review flags: a thread started, which could outlive the harness's last write") {
    const std::vector<std::string> flags = review_flags(
        "#include <thread>\n"
        "void run() {\n"
        "  static std::thread t([] {});\n"                                       // 3
        "  auto f = std::async([] { return 1; });\n"                             // 4
        "  pthread_t p; pthread_create(&p, nullptr, nullptr, nullptr);\n"        // 5
        "  int thread = 0; (void)thread; auto k = shape.clone(); auto m = p->clone();\n"  // 6: not threads
        "}\n");
    std::string all;
    for (const auto& f : flags) all += f + "\n";
    INFO(all);
    CHECK(contains(all, "line 3: a thread started (std::thread)"));
    CHECK(contains(all, "line 4: a thread started (std::async)"));
    CHECK(contains(all, "line 5: a thread started (pthread_create)"));
    CHECK_FALSE(contains(all, "line 6:"));
  }

  TEST_CASE("review flags read a source of hostile lengths in time and on a bounded stack") {
    // One 40,000-element initializer on a line (issue 52's reproducer), a 40,000-character name in
    // a cast and in an alias: std::regex recursed once per character and overflowed the stack.
    std::string ones = "int a[] = {";
    for (int i = 0; i < 40000; ++i) ones += "1,";
    ones += "1};\n";
    const std::string name(40000, 'n');
    const std::vector<std::string> flags = review_flags(
        ones + "void " + name + "();\n" + "auto p = reinterpret_cast<void*>(&" + name + ");\n" +
        "auto q = (void*)" + name + ";\n" + "using F = void (*" + name + ")();\n");
    std::string all;
    for (const auto& f : flags) all += f + "\n";
    INFO(all);
    CHECK(contains(all, "line 1: a statement of"));  // too long to read: flagged for a look
    CHECK(contains(all, "line 3: a cast of a function's address"));
    CHECK(contains(all, "line 4:"));
  }

  TEST_CASE("review flags read a megabyte of unclosed or nested casts and declarations in linear time") {
    // A scan to the end of the file from each "long(" or "using", and nested casts' copies of
    // one another, took minutes on an exercise.cu of the largest size grade reads (1 MiB).
    auto repeated = [](const std::string& unit) {
      std::string out;
      while (out.size() + unit.size() <= (1u << 20)) out += unit;
      return out;
    };
    const std::string nested = repeated("long(").substr(0, 5 * 150000) + std::string(150000, ')');
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& source : {repeated("long("), repeated("uintptr_t("), repeated("using "), nested}) {
      const std::vector<std::string> flags = review_flags(source);
      CHECK(!flags.empty());  // too long to read: flagged for a look
    }
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 10);
  }

  TEST_CASE("review flags: a long list is cut to its first 100; a raw string of a 16-character delimiter is read") {
    std::string casts;
    for (int i = 0; i < 300; ++i)  // each a header's function, named once: flagged
      casts += "auto p" + std::to_string(i) + " = (void*)&f" + std::to_string(i) + ";\n";
    const std::vector<std::string> flags = review_flags(casts);
    REQUIRE(flags.size() == 101);
    CHECK(flags.back() == "and 200 more");
    // A raw string's delimiter is at most 16 characters: one that is, still hides what it holds.
    const std::vector<std::string> raw = review_flags(
        "auto s = R\"sixteen_letters_(asm(\"nop\"))sixteen_letters_\";\nauto p = (void*)&puts;\n");
    REQUIRE(raw.size() == 1);
    CHECK(contains(raw[0], "line 2: a cast of a function's address"));
  }

  TEST_CASE("review flags travel in the lesson's record and the merged gradebook") {
    TempDir dir;
    Report r;
    r.name = "mallory";
    r.complete = true;
    LessonOutcome o;
    o.lesson = "90-fake";
    o.build = "submission";
    o.review = review_flags("int f() {\n  asm(\"nop\");\n  return 0;\n}\n");
    r.lessons.push_back(o);
    write_report_files(dir.path() / "out" / "mallory", r);
    const json record = json::parse(read_text(dir.path() / "out" / "mallory" / "result.json"));
    CHECK(record["lessons"][0]["review"] == json::array({"line 2: inline assembly (asm)"}));
    const Gradebook book = merge_results({dir.path() / "out"});
    CHECK(book.csv == "student,90-fake,total,review\nmallory,0,0,90-fake\n");
    CHECK(book.doc["students"][0]["review"] == json::array({"90-fake"}));
    CHECK(book.doc["students"][0]["lessons"]["90-fake"]["review"] == json::array({"line 2: inline assembly (asm)"}));
  }

  TEST_CASE("the findings read as one paragraph that names each symbol") {
    const std::string text = describe_findings({{"main", "defines main"}, {"", "runs code before main"}});
    CHECK(text.find("`main` defines main") != std::string::npos);
    CHECK(text.find("runs code before main") != std::string::npos);
  }
}
