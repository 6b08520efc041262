// The checker's tracer: a CUPTI injection library that the CUDA driver loads into a lesson
// program when the checker sets CUDA_INJECTION64_PATH to it (and LAB_TRACE_FILE to the file it
// writes). It records, for every kernel that opens or closes one of lab::benchmark's samples
// (lab/trace_tag.hpp), the sample's tag when it is launched and the GPU's timestamps when it ran.
// The checker joins the two and compares each variant's traced median with the one the program
// reported (checker/src/corroborate.hpp). It adds one callback per kernel launch and CUPTI's own
// kernel timestamps; everything else it lets pass.
//
// The file, one record a line (parsed by checker/src/corroborate.cpp):
//   lab-trace 1                       the tracer is set up (first line)
//   F <text>                          setting CUPTI up failed: why (nothing else follows)
//   T <corr> <runtime-corr> <measurement> <variant> <sample> <batch> <edge>
//                                     a tagged kernel was launched (the launch's correlation ids:
//                                     the driver call's and the enclosing runtime call's, 0 if none)
//   U <corr>                          a tagged kernel was launched, but its tag could not be read
//   K <corr> <stream> <start-ns> <end-ns>
//                                     a tagged kernel ran (CUPTI's kernel record)
//   E <dropped>                       the program exited through exit(); CUPTI records it dropped
#include <cupti.h>  // with the driver API's parameter structures (generated_cuda_meta.h)

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "lab/trace_tag.hpp"

namespace {

std::FILE* g_out = nullptr;
CUpti_SubscriberHandle g_subscriber = nullptr;
constexpr std::size_t kBufferBytes = 8u << 20;

// The runtime call that is launching a kernel on this thread, if any: its correlation id.
thread_local std::uint32_t t_runtime_correlation = 0;

bool is_tagged_kernel(const char* name) {
  if (name == nullptr || name[0] != 'l') return false;  // the common case, at once
  for (const char* tagged : lab::kTraceKernels)
    if (std::strcmp(name, tagged) == 0) return true;
  return false;
}

// The tag is the first argument: kernelParams[0] points at it, or (launch with `extra`) it
// opens the packed argument buffer.
const lab::TraceTag* tag_of(void** kernel_params, void** extra) {
  if (kernel_params) return static_cast<const lab::TraceTag*>(kernel_params[0]);
  for (void** e = extra; e && *e != CU_LAUNCH_PARAM_END; e += 2)
    if (*e == CU_LAUNCH_PARAM_BUFFER_POINTER) return static_cast<const lab::TraceTag*>(e[1]);
  return nullptr;
}

void CUPTIAPI on_api_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  const auto* call = static_cast<const CUpti_CallbackData*>(data);
  if (!g_out) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    t_runtime_correlation = call->callbackSite == CUPTI_API_ENTER ? call->correlationId : 0;
    return;
  }
  if (call->callbackSite != CUPTI_API_ENTER || !is_tagged_kernel(call->symbolName)) return;
  const lab::TraceTag* tag = nullptr;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {  // the same layout
      const auto* p = static_cast<const cuLaunchKernel_params*>(call->functionParams);
      tag = tag_of(p->kernelParams, p->extra);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(call->functionParams);
      tag = tag_of(p->kernelParams, p->extra);
      break;
    }
    default:
      break;
  }
  if (!tag) {
    std::fprintf(g_out, "U %u\n", call->correlationId);
    return;
  }
  lab::TraceTag t;
  std::memcpy(&t, tag, sizeof t);
  std::fprintf(g_out, "T %u %u %d %d %d %d %d\n", call->correlationId, t_runtime_correlation,
               t.measurement, t.variant, t.sample, t.batch, t.edge);
}

void CUPTIAPI on_buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI on_buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                  std::size_t valid) {
  CUpti_Activity* record = nullptr;
  while (g_out && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    if (!is_tagged_kernel(k->name)) continue;
    std::fprintf(g_out, "K %u %u %llu %llu\n", k->correlationId, k->streamId,
                 static_cast<unsigned long long>(k->start), static_cast<unsigned long long>(k->end));
  }
  std::free(buffer);
}

// At exit (registered during cuInit, so it runs before the CUDA runtime tears down): stop
// listening, hand over every record still buffered, and close the file with the end line.
void finish() {
  if (!g_out) return;
  cuptiUnsubscribe(g_subscriber);
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  std::size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  std::fprintf(g_out, "E %zu\n", dropped);
  std::fclose(g_out);
  g_out = nullptr;
}

// Setting up failed: say why, and trace nothing (the checker then reports the times as not
// corroborated, and why).
bool failed(CUptiResult r, const char* step) {
  if (r == CUPTI_SUCCESS) return false;
  const char* text = "unknown error";
  cuptiGetResultString(r, &text);
  if (g_subscriber) cuptiUnsubscribe(g_subscriber);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  std::fprintf(g_out, "F %s: %s\n", step, text);
  std::fclose(g_out);
  g_out = nullptr;
  return true;
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
  std::fprintf(g_out, "lab-trace 1\n");
  if (failed(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed),
             "cuptiActivityRegisterCallbacks") ||
      failed(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
             "cuptiActivityEnable(CONCURRENT_KERNEL)") ||
      failed(cuptiSubscribe(&g_subscriber, on_api_call, nullptr), "cuptiSubscribe"))
    return 1;
  // Only the launches: the driver calls read the tag, the runtime calls above them lend their
  // correlation id (a kernel record carries one of the two).
  const CUpti_CallbackId driver[] = {
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
      CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};
  const CUpti_CallbackId runtime[] = {
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
      CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
      CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000};
  for (CUpti_CallbackId id : driver)
    if (failed(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id), "cuptiEnableCallback"))
      return 1;
  for (CUpti_CallbackId id : runtime)
    if (failed(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, id), "cuptiEnableCallback"))
      return 1;
  std::atexit(finish);
  // On disk before any code of the exercise runs: whatever it does later, the checker knows the
  // tracer was set up.
  std::fflush(g_out);
  return 1;
}
