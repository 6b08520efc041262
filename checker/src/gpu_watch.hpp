// The checker's own look at the GPU while a lesson program runs, through NVML (the driver's
// management library, loaded at run time so the checker still builds and runs without one).
// `environment` verdicts rest on this, never on what the student's process reports.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace lab {

/// What the watch saw during one program run.
struct GpuObservation {
  bool watched = false;       ///< NVML answered: the fields below mean something
  bool gpu_present = false;   ///< the device the lessons use exists
  int samples = 0;
  int throttled_samples = 0;  ///< thermal or hardware slowdown reported by the driver
  std::vector<unsigned> other_processes;  ///< PIDs on the GPU that are not the checker's descendants
  int cc_major = 0;           ///< the GPU's compute capability (major), 0 when NVML did not say
  std::string why_not;        ///< when !watched: why (no driver, no NVML)

  /// @return "" when nothing outside the student's control disturbed the run, else the reason
  std::string disturbance() const;
};

/// Samples the GPU every @p period_ms on a thread of its own, from construction to stop()
/// (period 0: no thread, one sample at stop()). A GPU is looked for once, at construction.
class GpuWatch {
 public:
  explicit GpuWatch(int period_ms = 100);
  ~GpuWatch();
  GpuWatch(const GpuWatch&) = delete;
  GpuWatch& operator=(const GpuWatch&) = delete;
  /// Stops sampling and returns what was seen (with a GPU, at least one sample is taken).
  GpuObservation stop();

 private:
  void sample();
  struct Nvml;
  std::shared_ptr<Nvml> nvml_;
  GpuObservation seen_;
  std::atomic<bool> running_{true};
  int period_ms_;
  std::thread thread_;
};

/// Makes every program the checker starts see one GPU, the one the watch looks at: the first
/// that CUDA_VISIBLE_DEVICES names (device 0 when unset; left alone when set empty, which hides
/// every GPU), numbered in PCI order as NVML numbers them (CUDA_DEVICE_ORDER=PCI_BUS_ID). A
/// lesson program then times, and the watch observes, the same GPU, and an exercise can reach no
/// other (its cudaSetDevice can only name the one it is on). Sets the checker's own environment,
/// which every child inherits: call it first thing, before any thread starts.
void pin_to_one_gpu();

/// @return a one-off look (no program running): is there a GPU the lessons can use?
GpuObservation probe_gpu();

/// @return true when @p pid is this process or one of its descendants (reads /proc)
bool is_descendant_of_self(unsigned pid);

}  // namespace lab
