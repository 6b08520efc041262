// Lesson 03 harness: pinned memory. Students read this file; they do not edit it.
//
// Three ways of doing the same round trip (upload, a trivial kernel, download), all through the
// interface in exercise.cuh:
//   pageable           std::vector buffers: what a program gets by default (the baseline)
//   pinned_registered  the same kind of std::vector buffers, page-locked with cudaHostRegister
//   exercise           yours (exercise.cu)
// Each is validated (fresh random input, NaN-filled output, a kernel with fresh coefficients,
// guard bytes past the device arrays) at an odd size twice, then at the timing size before and
// after it is timed; the exercise's timed calls get new coefficients and a changed input each,
// and some of them are checked too (TimedTrips). Then, as notes under the table: bandwidth against transfer size, the price
// of pinning, and the first-touch penalty.
#include <sys/mman.h>

#include "exercise.cuh"
#include "lab/lesson.cuh"

namespace {

constexpr std::size_t kOddN = 1'000'003;         // validation size: not a multiple of anything
constexpr std::size_t kGuardBytes = 4096;        // guard zone after each device array

std::string size_text(double bytes) {
  if (bytes >= (1 << 20)) return lab::text("%.0f MiB", bytes / (1 << 20));
  return lab::text("%.0f KiB", bytes / 1024);
}

// ---------------------------------------------------------------------------------------------
// The device side: two arrays with a guard zone after each, and the trivial kernel.

// out[i] = a * in[i] + b: one read and one write per element, so on the H100 it takes about 2%
// of the time the two transfers take (the table's notes show both). a = ab[0], b = ab[1], read
// from device memory, so each run's coefficients apply however the launch was enqueued (even
// replayed from a CUDA graph captured earlier).
__global__ void scale_shift_kernel(const float* __restrict__ in, float* __restrict__ out,
                                   std::size_t n, const float* __restrict__ ab) {
  const float a = ab[0], b = ab[1];
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = fmaf(a, in[i], b);
}

class DeviceSide {
 public:
  explicit DeviceSide(std::size_t n)
      : n_(n), in_(n, "device.in", kGuardBytes), out_(n, "device.out", kGuardBytes), ab_(2) {}

  l03::DeviceArrays arrays() const { return {in_.data(), out_.data(), n_}; }
  std::size_t n() const { return n_; }

  // The coefficients of the kernels that run after this (stream order on `stream`).
  void set_coefficients(float a, float b, cudaStream_t stream) const {
    const float ab[2] = {a, b};  // pageable: the copy has taken the values when it returns
    LAB_CHECK(cudaMemcpyAsync(ab_.data(), ab, sizeof ab, cudaMemcpyHostToDevice, stream));
  }

  // The kernel, with the coefficients set last.
  l03::Kernel kernel() const {
    const float* in = in_.data();
    float* out = out_.data();
    const float* ab = ab_.data();
    const std::size_t n = n_;
    const int blocks = lab::device_info().sms * 16;
    return [=](cudaStream_t stream) {
      scale_shift_kernel<<<blocks, 256, 0, stream>>>(in, out, n, ab);
      LAB_CHECK_LAUNCH();
    };
  }

  // Before a validated run: NaN in both arrays, their guard zones armed; then waits, so nothing
  // the round trip does (on any stream) can overlap with it.
  void prepare(cudaStream_t stream) const {
    for (const auto* array : {&in_, &out_}) array->reset(stream);
    LAB_CHECK(cudaStreamSynchronize(stream));
  }

  // After a validated run (and a device-wide wait): "" if both guard zones are intact.
  std::string guard_damage(cudaStream_t stream) const {
    for (const auto* array : {&in_, &out_})
      if (const std::string d = array->damage(stream); !d.empty())
        return d + ". Do the copies use n = device.n elements?";
    return "";
  }

 private:
  std::size_t n_;
  lab::GuardedBuffer<float> in_, out_;
  lab::DeviceBuffer<float> ab_;  // the kernel's a and b
};

// ---------------------------------------------------------------------------------------------
// The harness's own round trips, written against the same interface as the exercise.

// Upload, kernel, download, in stream order: the same three calls for every variant here.
void enqueue_round_trip(const float* in, float* out, const l03::DeviceArrays& device,
                        const l03::Kernel& kernel, cudaStream_t stream) {
  const std::size_t bytes = device.n * sizeof(float);
  LAB_CHECK(cudaMemcpyAsync(device.in, in, bytes, cudaMemcpyHostToDevice, stream));
  kernel(stream);
  LAB_CHECK(cudaMemcpyAsync(out, device.out, bytes, cudaMemcpyDeviceToHost, stream));
}

// Ordinary host memory: std::vector (touched when it is value-initialised, so no first-touch
// faults are timed). cudaMemcpyAsync from such memory goes through a staging buffer.
class PageableRoundTrip final : public l03::RoundTrip {
 public:
  void setup(std::size_t n) override {
    in_.assign(n, 0.0f);
    out_.assign(n, 0.0f);
  }
  float* input() override { return in_.data(); }
  float* output() override { return out_.data(); }
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    enqueue_round_trip(in_.data(), out_.data(), device, kernel, stream);
  }

 private:
  std::vector<float> in_, out_;
};

// The same kind of std::vector memory, page-locked in place with cudaHostRegister: memory you
// did not allocate yourself (a library's, a framework's) can be pinned too. Input and output
// share one block, registered once: two registrations must not share a page.
class RegisteredRoundTrip final : public l03::RoundTrip {
 public:
  void setup(std::size_t n) override {
    n_ = n;
    buffer_.assign(2 * n, 0.0f);
    pin_ = std::make_unique<lab::HostRegistration>(buffer_.data(), buffer_.size() * sizeof(float));
  }
  float* input() override { return buffer_.data(); }
  float* output() override { return buffer_.data() + n_; }
  void round_trip(const l03::DeviceArrays& device, const l03::Kernel& kernel,
                  cudaStream_t stream) override {
    enqueue_round_trip(input(), output(), device, kernel, stream);
  }

 private:
  std::size_t n_ = 0;
  std::vector<float> buffer_;
  std::unique_ptr<lab::HostRegistration> pin_;  // after buffer_: unregistered before it is freed
};

// ---------------------------------------------------------------------------------------------
// Validation and measurement of one variant.

// What a variant's calls run on: its round trip, set up at the timing size, and the device side.
struct Trip {
  l03::RoundTrip* rt;
  l03::DeviceArrays arrays;
  l03::Kernel kernel;
};

// A variant of this lesson: besides what every variant has, how its round trip is made.
struct Way : lab::Variant<Trip> {
  std::unique_ptr<l03::RoundTrip> (*make)() = nullptr;
};

void add_variants(lab::Variants<Trip, Way>& variants) {
  auto launch = [](Trip& t, cudaStream_t s) { t.rt->round_trip(t.arrays, t.kernel, s); };
  auto work = [](const Trip& t) {  // n floats up and down; the kernel's multiply-add
    return lab::Work{2.0 * t.arrays.n * sizeof(float), 2.0 * t.arrays.n, /*host_link=*/true};
  };
  // Median to 1%: the rules' thresholds are tens of percent away, and pageable copies are too
  // noisy for the default 0.5% in a few seconds.
  const lab::BenchmarkOptions o = lab::median_within(0.01);
  // The pageable baseline to 5%: paced by the host's memcpy into the driver's staging buffer, it
  // moves by 20% from one process to the next (5.0x against 6.1x on one H100 machine), so a finer
  // median buys nothing, and the speedup rule's bar (2x) is far from what pinned copies reach.
  // At 1% it ran into its 10 s timeout in every run.
  const lab::BenchmarkOptions baseline = lab::median_within(0.05);
  variants.add({{"pageable", lab::Role::Baseline,
                 "std::vector buffers, cudaMemcpyAsync: staged through the driver", launch, work, 0,
                 lab::Pacing::Device, baseline},
                [] { return std::unique_ptr<l03::RoundTrip>(new PageableRoundTrip); }});
  variants.add({{"pinned_registered", lab::Role::Reference,
                 "std::vector memory page-locked in place (cudaHostRegister) in setup", launch,
                 work, 0, lab::Pacing::Device, o},
                [] { return std::unique_ptr<l03::RoundTrip>(new RegisteredRoundTrip); }});
  variants.add({{"exercise", lab::Role::Exercise, "your round trip (exercise.cu)", launch, work, 0,
                 lab::Pacing::Device, o},
                l03::make_round_trip});
}

// Coefficients of a validated run's kernel: new for every run, unknown to the round trip.
void coefficients(std::uint64_t seed, std::uint64_t run, float& a, float& b) {
  a = 0.5f + lab::uniform01(seed ^ 0xA5A5A5A5ull, 2 * run);
  b = -1.0f + 2.0f * lab::uniform01(seed ^ 0xA5A5A5A5ull, 2 * run + 1);
}

// In double, a * x is exact and one rounding follows: at most 1 ulp from the GPU's fmaf.
float expected_output(float a, float b, float x) {
  return static_cast<float>(double(a) * x + double(b));
}

// ---------------------------------------------------------------------------------------------
// The pinned link as it is while the exercise is timed. The bandwidth rule divides the round
// trip's rate by the pinned link's. The link's ceilings are measured when the program starts, and
// a link can run slower for seconds (on the H100, 45 against 55 GB/s for the whole of one grading
// run, not again in three): a correct round trip timed then would read 0.8 of a ceiling it was
// never given. So before every timed call of the exercise, outside its timed window and on the
// same stream, the harness times a 64 MiB copy each way from its own pinned buffer (as the
// ceilings are measured): the link call by call, interleaved with the exercise's samples.
class PinnedLink {
 public:
  static constexpr std::size_t kBytes = 64u << 20;  // each way

  PinnedLink()
      : host_(kBytes), device_(kBytes), timed_({[this](cudaStream_t s) {
          LAB_CHECK(cudaMemcpyAsync(device_.data(), host_.data(), kBytes, cudaMemcpyHostToDevice, s));
          LAB_CHECK(cudaMemcpyAsync(host_.data(), device_.data(), kBytes, cudaMemcpyDeviceToHost, s));
        }}) {
    std::memset(host_.data(), 1, kBytes);
  }

  // One copy each way on `stream`, timed; returns once they are done.
  void time(cudaStream_t stream) { timed_.time(stream); }

  // The GPU time of each time() so far (ms, up and down together).
  lab::Stats times() const { return timed_.part(0); }

 private:
  lab::PinnedBuffer<char> host_;
  lab::DeviceBuffer<char> device_;
  lab::BetweenCalls timed_;
};

// ---------------------------------------------------------------------------------------------
// The exercise's timed calls, checked like validated ones (lab/timed_calls.hpp). Outside the
// timed window, before every timed call, prepare():
//  * gives the kernel new coefficients, drawn from the call's seed (which the harness draws from
//    a generator the exercise cannot see): every output element changes, so an element that this
//    call did not bring back holds an earlier call's value, which is wrong;
//  * writes new values at kChanged random positions of the input (the previous call's get their
//    old values back first): a call that does not upload the whole input is wrong there, and a
//    fingerprint of a few elements almost never sees them;
//  * writes NaN at kPoisoned random positions of the output;
//  * and, first, times the pinned link (PinnedLink), and waits for it: no exercise code runs while
//    the link is timed.
// A few thousand host writes per call, where refilling both buffers would cost 2 x 256 MiB of
// memset. After calls the harness picks at random once they have finished, verify() checks that
// call's output at all those positions and at kRandom more picked only then, against the input
// regenerated on the host (the input buffer is the exercise's: its contents are not trusted),
// and the guard bytes after both device arrays. After timing, the input buffer must hold what
// prepare() left there: round_trip() reads its input, it does not write it.
// Cost per verify: about 5000 elements and 8 KiB of guards (well under a millisecond); the input
// check after timing regenerates the whole input once (a fraction of a second at 256 MiB).
class TimedTrips : public lab::TimedCalls {
 public:
  static constexpr std::size_t kChanged = 64, kPoisoned = 1024, kRandom = 4096;

  // `input_seed`: the seed of the input the last validated run wrote (lab::fill_random_host).
  TimedTrips(lab::Lesson& l, l03::RoundTrip& rt, const DeviceSide& dev, std::uint64_t input_seed,
             PinnedLink& link)
      : l_(l), in_(rt.input()), out_(rt.output()), dev_(dev), n_(dev.n()), seed_(input_seed),
        link_(link) {}

  void check_input_unchanged() {
    std::size_t wrong = 0, first = n_, k = 0;
    for (std::size_t i = 0; i < n_; ++i) {
      const float want =
          k < changed_.size() && changed_[k] == i ? values_[k++] : lab::random_input(seed_, i);
      if (std::memcmp(&in_[i], &want, sizeof want) != 0 && wrong++ == 0) first = i;
    }
    l_.check("exercise", std::to_string(n_) + " floats, timed calls: input unchanged", wrong == 0,
             std::to_string(wrong) + " of the " + std::to_string(n_) +
                 " input elements changed (the first at [" + std::to_string(first) +
                 "]): round_trip() must read input(), not write it");
  }

 private:
  void prepare(cudaStream_t s, std::uint64_t call_seed) override {
    link_.time(s);
    std::mt19937_64 rng(call_seed);
    std::uniform_real_distribution<float> unit(0.0f, 1.0f);
    for (const std::size_t i : changed_) in_[i] = lab::random_input(seed_, i);
    previous_ = changed_;
    changed_.clear();
    values_.clear();
    for (std::size_t k = 0; k < kChanged; ++k) changed_.push_back(rng() % n_);
    std::sort(changed_.begin(), changed_.end());
    changed_.erase(std::unique(changed_.begin(), changed_.end()), changed_.end());
    for (const std::size_t i : changed_) {
      values_.push_back(-1.0f + 2.0f * unit(rng));
      in_[i] = values_.back();
    }
    poisoned_.clear();
    for (std::size_t k = 0; k < kPoisoned; ++k) {
      poisoned_.push_back(rng() % n_);
      out_[poisoned_.back()] = std::numeric_limits<float>::quiet_NaN();
    }
    const float last_b = b_;
    a_ = 0.5f + unit(rng);
    b_ = -1.0f + 2.0f * unit(rng);
    if (std::fabs(b_ - last_b) < 0.01f) b_ = b_ > 0 ? b_ - 0.5f : b_ + 0.5f;  // never the last b
    dev_.set_coefficients(a_, b_, s);
  }

  // The input prepare() left at i.
  float input_at(std::size_t i) const {
    const auto it = std::lower_bound(changed_.begin(), changed_.end(), i);
    return it != changed_.end() && *it == i ? values_[it - changed_.begin()]
                                            : lab::random_input(seed_, i);
  }

  void verify(cudaStream_t s, const std::string& case_name) override {
    std::vector<std::size_t> at = changed_;
    at.insert(at.end(), previous_.begin(), previous_.end());
    at.insert(at.end(), poisoned_.begin(), poisoned_.end());
    for (std::size_t k = 0; k < kRandom; ++k) at.push_back(pick() % n_);
    std::vector<float> got, want;
    for (const std::size_t i : at) {
      got.push_back(out_[i]);
      want.push_back(expected_output(a_, b_, input_at(i)));
    }
    const std::string name = std::to_string(n_) + " floats, " + case_name;
    const std::string elements = name + " (" + std::to_string(at.size()) + " elements)";
    const lab::Comparison c = l_.compare("exercise", elements, got, want, lab::Tolerance{});
    l_.check("exercise", elements, c);
    LAB_CHECK(cudaDeviceSynchronize());  // whatever else it started, then the guards
    const std::string damage = dev_.guard_damage(s);
    l_.check("exercise", name + ", bounds", damage.empty(), damage);
  }

  lab::Lesson& l_;
  float* in_;
  float* out_;
  const DeviceSide& dev_;
  std::size_t n_;
  std::uint64_t seed_;
  PinnedLink& link_;
  float a_ = 2.0f, b_ = 1.0f;
  std::vector<std::size_t> changed_, previous_, poisoned_;  // changed_ ascending, ...
  std::vector<float> values_;                               // ... to these values
};

class Runner {
 public:
  Runner(lab::Lesson& l, lab::Variants<Trip, Way>& variants) : l_(l), variants_(variants) {}

  // One validated run; records its checks under `variant`. Returns the seed of its input.
  std::uint64_t validated_run(const std::string& variant, l03::RoundTrip& rt, const DeviceSide& dev,
                     const std::string& when) {
    // The run's number: the variant's place in the list and its own count, so that a run of some
    // variants only (--variant, the checker's --replay) gives each one the same inputs.
    std::uint64_t place = 0;
    for (const Way& w : variants_) {
      if (w.name == variant) break;
      ++place;
    }
    const std::uint64_t run = 8 * place + runs_[variant]++;
    const std::uint64_t seed = l_.seed() + 1000 * run + 1;
    const std::string name = std::to_string(dev.n()) + " floats, " + when;
    const std::size_t n = dev.n();
    const cudaStream_t s = l_.stream();
    try {
      float* in = rt.input();
      float* out = rt.output();
      if (!in || !out) {
        l_.check(variant, name, false, "input() or output() returned a null pointer after setup()");
        return seed;
      }
      float a, b;
      coefficients(l_.seed(), run, a, b);
      std::memset(out, 0xff, n * sizeof(float));  // NaN: an element never written fails
      lab::fill_random_host(in, n, seed);
      expected_.resize(n);
      for (std::size_t i = 0; i < n; ++i) expected_[i] = expected_output(a, b, in[i]);
      dev.set_coefficients(a, b, s);
      dev.prepare(s);

      rt.round_trip(dev.arrays(), dev.kernel(), s);
      LAB_CHECK(cudaGetLastError());
      LAB_CHECK(cudaStreamSynchronize(s));  // the contract: stream s finished = output ready
      l_.check(variant, name, l_.compare(variant, name, out, expected_.data(), n, lab::Tolerance{}));

      LAB_CHECK(cudaDeviceSynchronize());  // drain whatever else it started, then the guards
      const std::string damage = dev.guard_damage(s);
      l_.check(variant, name + ", bounds", damage.empty(), damage);
    } catch (const std::exception& e) {
      l_.check(variant, name, false, e.what());
      throw;  // a CUDA error may have broken the context: the harness stops and reports
    }
    return seed;
  }

  // Validates at the odd size (twice: a result kept from an earlier call fails the second),
  // then sets up at the timing size, validates, measures, validates again.
  const lab::Measurement* run(const Way& v, std::size_t n, double* setup_ms) {
    const std::string& variant = v.name;
    if (!l_.selected(variant)) return nullptr;
    {
      std::unique_ptr<l03::RoundTrip> rt = v.make();
      rt->setup(kOddN);
      DeviceSide dev(kOddN);
      validated_run(variant, *rt, dev, "first call");
      validated_run(variant, *rt, dev, "second call");
    }
    lab::HostTimer setup_timer;
    std::unique_ptr<l03::RoundTrip> rt = v.make();
    rt->setup(n);
    if (setup_ms) *setup_ms = setup_timer.elapsed_ms();
    DeviceSide dev(n);
    const std::uint64_t input_seed = validated_run(variant, *rt, dev, "before timing");

    // The harness's round trips are timed with the last validated run's kernel; the exercise's
    // timed calls get new coefficients and inputs each, and some are checked (TimedTrips).
    Trip trip{rt.get(), dev.arrays(), dev.kernel()};
    const bool exercise =
        v.role == lab::Role::Exercise && !l_.profiling() && rt->input() && rt->output();
    TimedTrips timed(l_, *rt, dev, input_seed, link_);
    const lab::Measurement* m =
        variants_.measure(v, trip, exercise ? timed.checks() : lab::TimedCallChecks{});
    LAB_CHECK(cudaDeviceSynchronize());
    if (exercise) timed.check_input_unchanged();

    validated_run(variant, *rt, dev, "after timing");
    return m;
  }

  // The pinned link, timed before each of the exercise's timed calls.
  const PinnedLink& link() const { return link_; }

 private:
  lab::Lesson& l_;
  lab::Variants<Trip, Way>& variants_;
  PinnedLink link_;
  std::map<std::string, std::uint64_t> runs_;  // validated runs so far, per variant
  std::vector<float> expected_;
};

// ---------------------------------------------------------------------------------------------
// The demonstrations printed under the table.

double gbs(double bytes, double ms) { return bytes / (ms * 1e6); }

// One cudaMemcpyAsync of each size, both directions, pinned and pageable.
void size_sweep(lab::Lesson& l, lab::DeviceBuffer<char>& dev, char* pinned, char* pageable,
                std::size_t max_bytes) {
  // 4 x 9 points: a rough median is enough, but of at least 10 samples and 2 ms.
  const lab::BenchmarkOptions o = lab::short_run(0.5, 10, 2.0);
  const cudaStream_t s = l.stream();
  auto time_ms = [&](void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
    return lab::benchmark([&](cudaStream_t st) { LAB_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, st)); },
                          s, o).gpu_ms.median;
  };
  l.note("");
  l.note("Bandwidth against transfer size: one cudaMemcpyAsync, median GPU time, GB/s = 1e9 B/s");
  l.note("      size | H2D pinned  H2D pageable | D2H pinned  D2H pageable | pinned H2D time");
  for (std::size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    const double hp = time_ms(dev.data(), pinned, bytes, cudaMemcpyHostToDevice);
    const double hg = time_ms(dev.data(), pageable, bytes, cudaMemcpyHostToDevice);
    const double dp = time_ms(pinned, dev.data(), bytes, cudaMemcpyDeviceToHost);
    const double dg = time_ms(pageable, dev.data(), bytes, cudaMemcpyDeviceToHost);
    l.note(lab::text("%10s | %10.1f  %12.1f | %10.1f  %12.1f | %9.1f us",
                     size_text(double(bytes)).c_str(), gbs(bytes, hp), gbs(bytes, hg),
                     gbs(bytes, dp), gbs(bytes, dg), hp * 1e3));
  }
}

// Copies into memory the process has never touched: the OS maps each page on its first write.
// (malloc returns exactly such memory for large sizes; mmap makes sure of it.)
void first_touch(lab::Lesson& l, lab::DeviceBuffer<char>& dev, std::size_t bytes) {
  void* fresh = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (fresh == MAP_FAILED) {
    l.note("first touch: mmap failed, skipped");
    return;
  }
  const cudaStream_t s = l.stream();
  double ms[2];
  try {
    for (double& t : ms) {  // the first copy touches every page; the second finds them mapped
      lab::EventTimer timer(s);
      timer.start();
      LAB_CHECK(cudaMemcpyAsync(fresh, dev.data(), bytes, cudaMemcpyDeviceToHost, s));
      timer.stop();
      t = timer.elapsed_ms();
    }
  } catch (...) {
    munmap(fresh, bytes);
    throw;
  }
  munmap(fresh, bytes);
  l.note("");
  l.note("First touch: D2H of " + size_text(double(bytes)) +
         " into never-touched pageable memory: " +
         lab::text("%.2f GB/s (%.1f ms); the same buffer again: %.2f GB/s (%.1f ms)",
                   gbs(bytes, ms[0]), ms[0], gbs(bytes, ms[1]), ms[1]));
}

void demonstrations(lab::Lesson& l, std::size_t n, const lab::Measurement* exercise,
                    double exercise_setup_ms) {
  const std::size_t bytes = n * sizeof(float);
  const cudaStream_t s = l.stream();
  lab::DeviceBuffer<char> dev(bytes);
  LAB_CHECK(cudaMemsetAsync(dev.data(), 1, bytes, s));

  // The price of pinning, on the host clock: allocating pinned memory, and pinning memory
  // that already exists (touched, as a program's buffers are).
  lab::HostTimer timer;
  lab::PinnedBuffer<char> pinned(bytes);
  const double malloc_host_ms = timer.elapsed_ms();
  std::memset(pinned.data(), 1, bytes);
  std::vector<char> pageable(bytes, 1);
  timer.start();
  double register_ms, unregister_ms;
  {
    lab::HostRegistration registration(pageable.data(), bytes);
    register_ms = timer.elapsed_ms();
    timer.start();
  }
  unregister_ms = timer.elapsed_ms();

  size_sweep(l, dev, pinned.data(), pageable.data(), bytes);

  timer.start();
  pinned = lab::PinnedBuffer<char>();  // the old buffer is freed (cudaFreeHost) right here
  const double free_host_ms = timer.elapsed_ms();

  l.note("");
  l.note("The price of pinning " + size_text(double(bytes)) + " (host clock): " +
         lab::text("cudaMallocHost %.1f ms, cudaFreeHost %.1f ms; cudaHostRegister of an existing "
                   "buffer %.1f ms, cudaHostUnregister %.1f ms",
                   malloc_host_ms, free_host_ms, register_ms, unregister_ms));
  if (exercise) {
    const double trip_ms = exercise->gpu_ms.median;
    l.note(
        lab::text("Your setup() took %.1f ms, the time of %.0f of your round trips, paid once and "
                  "not timed.",
                  exercise_setup_ms, exercise_setup_ms / trip_ms));
    DeviceSide kernel_only(n);
    kernel_only.set_coefficients(2.0f, 1.0f, s);
    kernel_only.prepare(s);
    const double kernel_ms =
        lab::benchmark(kernel_only.kernel(), s, lab::short_run(1.0, 10)).gpu_ms.median;
    l.note(lab::text("The kernel alone: %.3f ms, %.1f%% of your round trip's %.3f ms.", kernel_ms,
                     100 * kernel_ms / trip_ms, trip_ms));
  }

  first_touch(l, dev, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("03-pinned-memory", "Pinned memory: moving data at the speed of the bus");
  lab::Variants<Trip, Way> variants(lesson);
  add_variants(variants);
  long long mib = 0;
  lesson.option("--mib", &mib, "MiB in each direction", 256, 16);
  long long demos = 1;
  lesson.option("--demos", &demos, "1: also the size sweep, pinning costs and first touch; 0: not");

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    const std::size_t n = static_cast<std::size_t>(mib) << 18;  // floats: 2^20 B / 4 B
    l.size("round trip: " + std::to_string(mib) + " MiB (" + std::to_string(n) +
           " floats) up, y = 2x + 1, " + std::to_string(mib) + " MiB down");
    l.size("validated at " + std::to_string(kOddN) + " floats (twice) and at the timing size "
           "(before and after timing)");

    Runner runner(l, variants);
    double exercise_setup_ms = 0;
    for (const Way& v : variants)
      runner.run(v, n, v.role == lab::Role::Exercise ? &exercise_setup_ms : nullptr);
    const lab::Measurement* exercise = variants.measurement("exercise");

    if (l.profiling()) return;  // nothing below is for the profiler
    if (exercise) {
      // The rule's metric: effective bandwidth 2 * n * 4 B over the round trip's median GPU
      // time, as a fraction of the pinned link's rate between its timed calls (PinnedLink: 64 MiB
      // each way, one after the other, as a round trip moves its bytes). The interval: the ratio
      // of the two medians' (lab::ratio_of_medians).
      const lab::Stats& t = exercise->gpu_ms;
      const lab::Stats link = runner.link().times();
      const double bytes = 2.0 * n * sizeof(float), link_bytes = 2.0 * PinnedLink::kBytes;
      if (link.n > 0) {  // (none: input() or output() was null, and correctness failed)
        const lab::MedianRatio r = lab::ratio_of_medians(link, t);  // link time / trip time
        const double scale = bytes / link_bytes;
        l.metric("fraction_of_pinned", scale * r.value, scale * r.low, scale * r.high);
      }
      const lab::Ceilings& c = l.ceilings();
      const double start = 2.0 / (1.0 / c.h2d_pinned_gbs + 1.0 / c.d2h_pinned_gbs);
      l.note(lab::text(
          "Pinned link between your timed calls (64 MiB each way, median of %zu): %.1f GB/s; "
          "at program start: H2D %.1f GB/s, D2H %.1f GB/s, round trip %.1f GB/s; pageable: "
          "H2D %.1f GB/s, D2H %.1f GB/s.",
          link.n, gbs(link_bytes, link.median), c.h2d_pinned_gbs, c.d2h_pinned_gbs, start,
          c.h2d_pageable_gbs, c.d2h_pageable_gbs));
      l.note(lab::text(
          "Your round trip: %.1f GB/s, host time per round_trip() call %.0f us for %.0f us "
          "of GPU time (a call that waits for its copies is not asynchronous).",
          gbs(bytes, t.median), exercise->enqueue_us, t.median * 1e3));
    }
    if (demos) demonstrations(l, n, exercise, exercise_setup_ms);
  });
}
