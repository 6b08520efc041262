// The checker's tracer: a library that the CUDA driver loads into a lesson program when the
// checker sets CUDA_INJECTION64_PATH to it (and LAB_TRACE_FILE to the file it writes), and calls
// inside cuInit, before any code of the exercise runs. It hands the program's lab library its
// entry point (lab_trace_register, lab/trace_tag.hpp); lab::benchmark then calls it right after
// launching the kernel that opens each sample and right before launching the one that closes it,
// and the tracer records a CUDA event of its own on the sample's stream at each: the time between
// the two is the sample as a second instrument saw it. The checker compares each variant's
// traced median with the one the program reported (checker/src/corroborate.hpp).
//
// Why not CUPTI: a CUPTI subscriber alone (no callback turned on) made each node of a CUDA graph
// cost about 0.3 us more of host and of GPU time on the H100, and kernel records about 1 us more
// per kernel: the tracer changed the very times it was there to check (lesson 09's host share
// read 0.2-0.46 traced, 0.002 untraced). Events on a sample's two edges cost nothing inside it.
// The driver functions are looked up in libcuda itself (dlsym on its handle), so a program that
// defines cuEventElapsedTime of its own does not answer the tracer's calls.
//
// The file, one record a line (parsed by checker/src/corroborate.cpp):
//   lab-trace 2                       the tracer is set up (first line)
//   F <text>                          setting up failed: why (nothing else follows)
//   T <id> <measurement> <variant> <sample> <batch> <edge>
//                                     an edge of a sample was handed over (the tracer's own id)
//   S <open-id> <close-id> <ns>       on one stream, from the opening edge to the closing one:
//                                     <ns> nanoseconds by the tracer's events
//   E <lost>                          the program exited through exit(); <lost> samples whose
//                                     events could not be recorded or read
#include <cuda.h>  // types only: the functions come from libcuda through dlsym
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "lab/trace_tag.hpp"

namespace {

std::FILE* g_out = nullptr;
std::mutex g_mutex;  // edges may come from several threads
std::uint32_t g_next_id = 0;

// The few driver functions the tracer calls, from libcuda's own symbol table.
struct Driver {
  CUresult (*ctx_get_current)(CUcontext*) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_query)(CUevent) = nullptr;
  CUresult (*event_synchronize)(CUevent) = nullptr;
  CUresult (*event_elapsed)(float*, CUevent, CUevent) = nullptr;
} g_cu;

bool load_driver() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);  // loaded: cuInit runs
  if (!cuda) return false;
  auto get = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(cuda, name));
    return fn != nullptr;
  };
  return get(g_cu.ctx_get_current, "cuCtxGetCurrent") && get(g_cu.event_create, "cuEventCreate") &&
         get(g_cu.event_record, "cuEventRecord") && get(g_cu.event_query, "cuEventQuery") &&
         get(g_cu.event_synchronize, "cuEventSynchronize") &&
         (get(g_cu.event_elapsed, "cuEventElapsedTime_v2") ||
          get(g_cu.event_elapsed, "cuEventElapsedTime"));
}

// Events are reused: a sample costs two cuEventRecord calls, not two creations. They belong to
// the context they were made in; a new context (after cudaDeviceReset) starts a new pool.
CUcontext g_pool_context = nullptr;
std::vector<CUevent> g_pool;

CUevent take_event(CUcontext ctx) {
  if (ctx != g_pool_context) {  // the old pool's context may be gone: abandon it
    g_pool.clear();
    g_pool_context = ctx;
  }
  if (!g_pool.empty()) {
    CUevent e = g_pool.back();
    g_pool.pop_back();
    return e;
  }
  CUevent e = nullptr;
  return g_cu.event_create(&e, CU_EVENT_DEFAULT) == CUDA_SUCCESS ? e : nullptr;
}

void give_back(CUcontext ctx, CUevent e) {
  if (e && ctx == g_pool_context) g_pool.push_back(e);
}

// A stream as the program named it; a default stream also by thread (it may be per thread).
struct StreamKey {
  CUstream stream;
  std::thread::id thread;  // only for a default stream
  bool operator==(const StreamKey& o) const { return stream == o.stream && thread == o.thread; }
};

struct Open {  // a sample opened on a stream, waiting for its closing edge
  StreamKey key;
  std::uint32_t id;
  CUcontext context;
  CUevent after;
};
struct Span {  // a sample closed, its events not yet read
  std::uint32_t open, close;
  CUcontext context;
  CUevent after_open, before_close;
};
std::vector<Open> g_open;
std::vector<Span> g_spans;
std::size_t g_lost = 0;

// Writes every span whose events have completed (all of them, waiting, when `wait`).
void write_spans(bool wait) {
  std::size_t kept = 0;
  for (Span& s : g_spans) {
    if (!wait && g_cu.event_query(s.before_close) == CUDA_ERROR_NOT_READY) {
      g_spans[kept++] = s;
      continue;
    }
    float ms = 0;
    if ((!wait || g_cu.event_synchronize(s.before_close) == CUDA_SUCCESS) &&
        g_cu.event_elapsed(&ms, s.after_open, s.before_close) == CUDA_SUCCESS && ms >= 0)
      std::fprintf(g_out, "S %u %u %lld\n", s.open, s.close, std::llround(1e6 * ms));
    else
      ++g_lost;
    give_back(s.context, s.after_open);
    give_back(s.context, s.before_close);
  }
  g_spans.resize(kept);
}

bool opens(std::int32_t edge) { return edge == lab::kTraceLeadIn || edge == lab::kTraceOpenMark; }

// lab::benchmark's call at each edge of a sample: after the opening kernel's launch, before the
// closing kernel's.
void on_edge(const lab::TraceTag* tag, void* stream_handle) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_out || !tag) return;
  lab::TraceTag t{};
  std::memcpy(&t, tag, sizeof t);
  write_spans(false);
  const std::uint32_t id = ++g_next_id;
  std::fprintf(g_out, "T %u %d %d %d %d %d\n", id, t.measurement, t.variant, t.sample, t.batch,
               t.edge);
  // The default stream is the calling thread's own under per-thread default streams.
  const auto stream = static_cast<CUstream>(stream_handle);
  StreamKey key{stream, {}};
  if (stream == nullptr || stream == CU_STREAM_PER_THREAD) key.thread = std::this_thread::get_id();
  CUcontext ctx = nullptr;
  if (g_cu.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx) {
    ++g_lost;
    return;
  }
  const auto open_at = [&]() -> std::ptrdiff_t {
    for (std::size_t i = 0; i < g_open.size(); ++i)
      if (g_open[i].key == key) return static_cast<std::ptrdiff_t>(i);
    return -1;
  }();
  if (opens(t.edge)) {
    if (open_at >= 0) {  // opened twice without a close: the first gets no span
      give_back(g_open[open_at].context, g_open[open_at].after);
      g_open.erase(g_open.begin() + open_at);
    }
    CUevent after = take_event(ctx);
    if (after && g_cu.event_record(after, stream) == CUDA_SUCCESS)
      g_open.push_back({key, id, ctx, after});
    else {
      ++g_lost;
      give_back(ctx, after);
    }
    return;
  }
  if (open_at < 0) return;  // closes nothing the tracer saw open: the checker finds it missing
  const Open o = g_open[open_at];
  g_open.erase(g_open.begin() + open_at);
  CUevent before = take_event(o.context);
  if (before && g_cu.event_record(before, stream) == CUDA_SUCCESS)
    g_spans.push_back({o.id, id, o.context, o.after, before});
  else {
    ++g_lost;
    give_back(o.context, o.after);
    give_back(o.context, before);
  }
}

// At exit (registered during cuInit, so it runs before the CUDA runtime tears down): read every
// span still pending, and close the file with the end line.
void finish() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_out) return;
  write_spans(true);
  std::fprintf(g_out, "E %zu\n", g_lost);
  std::fclose(g_out);
  g_out = nullptr;
}

// Setting up failed: say why, and trace nothing (the checker then reports the times as not
// corroborated, and why).
void fail(const char* why) {
  std::fprintf(g_out, "F %s\n", why);
  std::fclose(g_out);
  g_out = nullptr;
}

}  // namespace

// Called by the CUDA driver inside cuInit, before any kernel of the program is launched. It
// returns 1 whatever happens: the program runs on, and the file says what went wrong.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  const char* path = std::getenv("LAB_TRACE_FILE");
  if (!path || !*path || g_out) return 1;
  g_out = std::fopen(path, "w");
  if (!g_out) return 1;
  std::setvbuf(g_out, nullptr, _IOFBF, 1u << 20);
  std::fprintf(g_out, "lab-trace 2\n");
  // The program's lab library, exported by name (lab_trace_register in lab/trace_tag.hpp).
  using Register = int (*)(int, lab::TraceEdgeFunction);
  const auto handshake = reinterpret_cast<Register>(dlsym(RTLD_DEFAULT, "lab_trace_register"));
  if (!handshake) {
    fail("the program does not export lab_trace_register: not a lesson program built by this course");
    return 1;
  }
  if (handshake(lab::kTraceAbi, on_edge) != 1) {
    fail("the program's lab library refused the tracer (another version of the course?)");
    return 1;
  }
  if (!load_driver()) {
    fail("the CUDA driver's event functions were not found in libcuda.so.1");
    return 1;
  }
  std::atexit(finish);
  // On disk before any code of the exercise runs: whatever it does later, the checker knows the
  // tracer was set up.
  std::fflush(g_out);
  return 1;
}
