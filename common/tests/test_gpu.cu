// The library on a real GPU: does it measure what it says it measures?
#include <doctest/doctest.h>

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <unistd.h>
#include <vector>

#include "lab/bf16.cuh"
#include "lab/cub_call.hpp"
#include "lab/data.hpp"
#include "lab/declared.cuh"
#include "lab/device.hpp"
#include "lab/fill.cuh"
#include "lab/graph.hpp"
#include "lab/guard.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/outputs.cuh"
#include "lab/protocol.cuh"
#include "lab/read_only.cuh"
#include "lab/record.hpp"
#include "lab/reduce.cuh"
#include "lab/timed_calls.hpp"
#include "lab/timing.hpp"
#include "lab/validate.hpp"

namespace {

__global__ void copy_kernel(const float4* in, float4* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = in[i];
}

// y = 2x, with three kinds of bug planted on request.
__global__ void doubler(const float* x, float* y, int n, int wrong_at, int nan_at, int skip_at) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || i == skip_at) return;
  y[i] = i == wrong_at ? 2 * x[i] + 0.5f : i == nan_at ? NAN : 2 * x[i];
}

lab::Comparison run_doubler(int n, int wrong_at, int nan_at, int skip_at) {
  lab::Stream s;
  lab::DeviceBuffer<float> x(n), y(n);
  lab::fill_random(x.data(), n, 11, s);
  lab::poison(y.data(), y.bytes(), s);
  doubler<<<(n + 127) / 128, 128, 0, s>>>(x.data(), y.data(), n, wrong_at, nan_at, skip_at);
  LAB_CHECK_LAUNCH();
  std::vector<float> host_x(n), expected(n), got(n);
  lab::fill_random_host(host_x.data(), n, 11);  // same values as on the device
  for (int i = 0; i < n; ++i) expected[i] = 2 * host_x[i];
  LAB_CHECK(cudaMemcpyAsync(got.data(), y.data(), y.bytes(), cudaMemcpyDeviceToHost, s));
  s.synchronize();
  return lab::allclose(got, expected);
}

}  // namespace

// Below ~100 us the fixed cost of starting a kernel inside the event pair (~3 us) exceeds 2%.
TEST_CASE("a kernel of known duration is measured within 2%") {
  lab::Stream s;
  for (double us : {500.0, 1000.0, 10000.0}) {
    const lab::Measurement m = lab::benchmark([&](cudaStream_t st) { lab::spin(us, st); }, s);
    INFO("spin of " << us << " us measured " << m.gpu_ms.median * 1e3 << " us");
    CHECK(m.converged);
    CHECK(std::fabs(m.gpu_ms.median * 1e3 - us) <= 0.02 * us);
    CHECK(m.gpu_ms.n >= 20);
  }
}

TEST_CASE("a benchmark of a 1 ms kernel converges in under 2 s") {
  lab::Stream s;
  lab::HostTimer wall;
  const lab::Measurement m = lab::benchmark([&](cudaStream_t st) { lab::spin(1000, st); }, s);
  CHECK(m.converged);
  CHECK(wall.elapsed_ms() < 2000);
}

TEST_CASE("the measured copy ceiling lies between 0.75 and 1.0 of theoretical, in under 1 s") {
  lab::HostTimer wall;
  const lab::Ceilings& c = lab::ceilings();
  const double seconds = wall.elapsed_ms() / 1e3;
  const double peak = lab::device_info().peak_bandwidth_gbs();
  INFO("copy " << c.copy_gbs << " GB/s of " << peak << ", measured in " << seconds << " s");
  CHECK(c.copy_gbs >= 0.75 * peak);
  CHECK(c.copy_gbs <= 1.0 * peak);
  CHECK(seconds < 1.0);
  CHECK(c.h2d_pinned_gbs > c.h2d_pageable_gbs);
  CHECK(c.launch_us > 0);
  CHECK(c.launch_us < 50);
  // FP32 lanes per SM are 64 or 128 on the GPUs CUDA 13 supports: the measured FMA rate must
  // sit between a quarter of the 128-lane peak and that peak itself.
  const lab::DeviceInfo& d = lab::device_info();
  const double lanes_peak = 2.0 * 128 * d.sms * d.sm_clock_mhz * 1e-3;  // GFLOP/s
  INFO("FP32 FMA " << c.fp32_gflops << " GFLOP/s; 128-lane peak " << lanes_peak);
  CHECK(c.fp32_gflops >= 0.25 * lanes_peak);
  CHECK(c.fp32_gflops <= 1.02 * lanes_peak);
}

TEST_CASE("cold vs hot on a 16 MiB copy: hot shows the L2 effect and is flagged") {
  const std::size_t bytes = 16u << 20;
  lab::DeviceBuffer<float4> in(bytes / 16), out(bytes / 16);
  lab::Stream s;
  LAB_CHECK(cudaMemsetAsync(in.data(), 1, bytes, s));
  auto copy = [&](cudaStream_t st) {
    copy_kernel<<<lab::device_info().sms * 4, 256, 0, st>>>(in.data(), out.data(), in.size());
  };
  lab::BenchmarkOptions cold, hot;
  hot.mode = lab::Mode::Hot;
  cold.working_set_bytes = hot.working_set_bytes = 2.0 * bytes;
  const lab::Measurement c = lab::benchmark(copy, s, cold);
  const lab::Measurement h = lab::benchmark(copy, s, hot);
  const double cold_gbs = 2.0 * bytes / (c.gpu_ms.median * 1e6);
  const double hot_gbs = 2.0 * bytes / (h.gpu_ms.median * 1e6);
  INFO("cold " << cold_gbs << " GB/s, hot " << hot_gbs << " GB/s");
  CHECK(hot_gbs > 1.3 * cold_gbs);
  CHECK(h.batch > 1);
  bool flagged = false;
  for (const std::string& d : h.diagnostics) flagged |= d.find("fits in L2") != std::string::npos;
  CHECK(flagged);
  for (const std::string& d : c.diagnostics) CHECK(d.find("fits in L2") == std::string::npos);
}

TEST_CASE("graph mode replays a captured batch and costs less per launch than stream launches") {
  lab::Stream s;
  auto tiny = [&](cudaStream_t st) { lab::spin(1, st); };
  lab::BenchmarkOptions hot, graph;
  hot.mode = lab::Mode::Hot;
  graph.mode = lab::Mode::Graph;
  const lab::Measurement h = lab::benchmark(tiny, s, hot);
  const lab::Measurement g = lab::benchmark(tiny, s, graph);
  INFO("hot " << h.gpu_ms.median * 1e3 << " us, graph " << g.gpu_ms.median * 1e3 << " us");
  CHECK(g.batch > 1);
  CHECK(g.gpu_ms.median < h.gpu_ms.median);
}

TEST_CASE("validation catches a planted wrong element, a NaN and an unwritten element") {
  const int n = 1000;  // not a multiple of the block size
  CHECK(run_doubler(n, -1, -1, -1).ok);
  const lab::Comparison wrong = run_doubler(n, 17, -1, -1);
  CHECK(wrong.mismatches == 1);
  CHECK(wrong.first.at(0).index == 17);
  const lab::Comparison nan = run_doubler(n, -1, 500, -1);
  CHECK(nan.mismatches == 1);
  CHECK(nan.first.at(0).index == 500);
  CHECK(std::isnan(nan.first.at(0).got));
  const lab::Comparison unwritten = run_doubler(n, -1, -1, n - 1);  // the tail element
  CHECK(unwritten.mismatches == 1);
  CHECK(unwritten.first.at(0).index == std::size_t(n - 1));
  CHECK(std::isnan(unwritten.first.at(0).got));  // poisoned, so it cannot pass by luck
}

TEST_CASE("device and host random inputs are bit-identical") {
  const std::size_t n = 100003;
  lab::DeviceBuffer<float> d(n);
  lab::Stream s;
  lab::fill_random(d.data(), n, 1234, s, -2.0f, 3.0f);
  std::vector<float> from_device(n), from_host(n);
  LAB_CHECK(cudaMemcpy(from_device.data(), d.data(), d.bytes(), cudaMemcpyDeviceToHost));
  lab::fill_random_host(from_host.data(), n, 1234, -2.0f, 3.0f);
  CHECK(from_device == from_host);
}

TEST_CASE("the event timer does not wait for, nor count, work on another stream") {
  lab::Stream mine, other;
  lab::spin(300000, other);  // 300 ms on another stream
  lab::EventTimer timer(mine);
  lab::HostTimer wall;
  timer.start();
  lab::spin(1000, mine);
  timer.stop();
  const float ms = timer.elapsed_ms();
  const double waited = wall.elapsed_ms();
  CHECK(ms == doctest::Approx(1.0).epsilon(0.1));
  CHECK(waited < 100);  // it returned long before the other stream's work finished
  other.synchronize();
}

TEST_CASE("a stream the program makes with the runtime's own calls is timed with every sample") {
  // Made before the measurement (an exercise's setup()) or during a timed call, with any of the
  // three calls, non-blocking or not: the 1 ms of work put on it is inside the sample's time.
  lab::Stream timed;
  cudaStream_t early = nullptr;
  LAB_CHECK(cudaStreamCreateWithFlags(&early, cudaStreamNonBlocking));
  const lab::Measurement before = lab::benchmark([&](cudaStream_t) { lab::spin(1000, early); }, timed);
  CHECK(before.gpu_ms.median >= 0.95);
  LAB_CHECK(cudaStreamDestroy(early));
  const lab::Measurement during = lab::benchmark(
      [&](cudaStream_t) {
        cudaStream_t own = nullptr;
        LAB_CHECK(cudaStreamCreate(&own));
        lab::spin(1000, own);
        LAB_CHECK(cudaStreamDestroy(own));  // destroyed with its work still queued
      },
      timed);
  CHECK(during.gpu_ms.median >= 0.95);
  // The harness's own stream is not one of them: work on it is not waited for.
  lab::Stream busy;
  const lab::Measurement harness =
      lab::benchmark([&](cudaStream_t st) { lab::spin(50, st); lab::spin(1000, busy); }, timed);
  CHECK(harness.gpu_ms.median < 0.5);
  busy.synchronize();
}

TEST_CASE("busy_stream names the first handed stream still at work once main has finished") {
  lab::Stream main;
  lab::SideStream idle, working;
  const std::vector<cudaStream_t> handed = {idle, working};
  lab::spin(200000, working);  // 200 ms: never joined to main
  lab::spin(10, main);
  main.synchronize();
  CHECK(lab::busy_stream(handed, "main") ==
        "stream 1 still had work when main had finished: main must wait for every stream you "
        "used (record an event on it, then cudaStreamWaitEvent(main, event))");
  LAB_CHECK(cudaStreamSynchronize(working));
  CHECK(lab::busy_stream(handed, "main").empty());
}

TEST_CASE("CUDA errors become exceptions naming the call") {
  lab::DeviceBuffer<float> d(4);
  try {
    LAB_CHECK(cudaMemcpy(d.data(), nullptr, 1ull << 40, cudaMemcpyHostToDevice));
    FAIL("no exception");
  } catch (const lab::CudaError& e) {
    const std::string what = e.what();
    CHECK(what.find("test_gpu.cu") != std::string::npos);
    CHECK(what.find("cudaMemcpy(d.data(), nullptr") != std::string::npos);
    CHECK(e.code() != cudaSuccess);
  }
  // Reported once: the next launch check must not blame an innocent launch for it.
  CHECK(cudaGetLastError() == cudaSuccess);
}

namespace {

__global__ void write_at(float* p, std::size_t i, float v) { p[i] = v; }
__global__ void do_nothing() {}

// The BF16 copy of what lab::fill_random(.., seed) writes at i, rounded to nearest even.
struct RandomBf16 {
  std::uint64_t seed;
  __host__ __device__ __nv_bfloat16 operator()(std::uint64_t i) const {
    return __float2bfloat16_rn(lab::random_input(seed, i));
  }
};

__global__ void to_bf16(const float* in, __nv_bfloat16* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = __float2bfloat16_rn(in[i]);
}

// Flips the lowest bit of p[i]: the next BF16 number, one ulp away.
__global__ void flip_low_bit(__nv_bfloat16* p, std::size_t i) {
  p[i] = __ushort_as_bfloat16(__bfloat16_as_ushort(p[i]) ^ 1u);
}

// block_out[0] = the block's sum of x[0 .. n), warp_out[w] = warp w's, with lab/reduce.cuh.
__global__ void sums(const float* x, int n, float* block_out, float* warp_out) {
  const float v = static_cast<int>(threadIdx.x) < n ? x[threadIdx.x] : 0.0f;
  const float w = lab::warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_out[threadIdx.x / 32] = w;
  const float b = lab::block_sum<256>(v);
  if (threadIdx.x == 0) block_out[0] = b;
}

}  // namespace

TEST_CASE("a guarded output sees a write past its end, to the last byte of its guard zone") {
  lab::Stream s;
  lab::GuardedBuffer<float> y(1000, "y");
  y.poison(s);
  y.arm(s);
  CHECK(y.damage(s).empty());
  const std::vector<float> poisoned = y.download(s);
  CHECK(poisoned.size() == 1000);
  CHECK(std::isnan(poisoned.front()));
  CHECK(std::isnan(poisoned.back()));
  const std::size_t last = 1000 + lab::GuardedBuffer<float>::kGuardBytes / sizeof(float) - 1;
  write_at<<<1, 1, 0, s>>>(y.data(), last, 1.0f);
  LAB_CHECK_LAUNCH();
  CHECK(y.damage(s).find("wrote past the end of y (1000 elements): y[" + std::to_string(last) +
                         "] of the") == 0);
  lab::Comparison c;
  c.count = 1000;
  y.check_guard(c, s);
  CHECK_FALSE(c.ok);
  CHECK(c.mismatches == 1);
  y.arm(s);  // armed again: intact again
  CHECK(y.damage(s).empty());
  lab::GuardedBuffer<unsigned char> none(0, "workspace", 256);  // 0 bytes asked for, still guarded
  none.arm(s);
  CHECK(none.damage(s).empty());
}

TEST_CASE("an output checked in one step: compared, its guard zone read, recorded") {
  lab::Stream s;
  lab::DeviceBuffer<float> in(300);
  lab::fill_random(in.data(), in.size(), 11, s);
  std::vector<float> back;
  in.download(s, back);
  REQUIRE(back.size() == 300);
  CHECK(back == in.download(s));
  CHECK(back[299] == lab::random_input(11, 299));
  CHECK(lab::grid_for(1, 256, 4) == 1);
  CHECK(lab::grid_for(257, 256, 4) == 2);
  CHECK(lab::grid_for(1LL << 40, 256, 4) == 4 * lab::device_info().sms);

  lab::Lesson lesson("99-check-output", "check_output test");
  lesson.declare("exercise", lab::Role::Exercise, "yours");
  std::vector<std::string> args = {"/x/solution"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  lesson.run(1, argv.data(), [&](lab::Lesson& l) {
    lab::GuardedBuffer<float> y(100, "y");
    y.reset(s);
    const std::vector<float> got = {1, 2, 5}, expected = {1, 2, 3};
    // Values picked at y[10], y[20], y[30]: the mismatch names y's own index.
    lab::Comparison c = lab::check_output(l, "exercise", "picked", y, got, expected,
                                          lab::Tolerance{0, 0}, s, {10, 20, 30});
    CHECK_FALSE(c.ok);
    REQUIRE(c.first.size() == 1);
    CHECK(c.first[0].index == 30);
    write_at<<<1, 1, 0, s>>>(y.data(), 100, 1.0f);  // the guard zone's first element
    LAB_CHECK_LAUNCH();
    c = lab::check_output(l, "exercise", "whole", y, expected, expected, lab::Tolerance{0, 0}, s);
    CHECK_FALSE(c.ok);
    CHECK(c.note.find("wrote past the end of y") == 0);
    y.reset(s);
    CHECK(y.damage(s).empty());
  });
  const auto& checks = lesson.result().variants.at(0).checks;
  REQUIRE(checks.size() == 2);
  CHECK(checks[0].name == "picked");
  CHECK_FALSE(checks[0].ok);
  CHECK(checks[1].name == "whole");
  CHECK_FALSE(checks[1].ok);
}

TEST_CASE("outputs in guarded buffers judged as one check: by their own names, all or at places") {
  lab::Stream s;
  lab::Lesson lesson("99-outputs", "OutputsCheck on the device");
  lesson.declare("exercise", lab::Role::Exercise, "yours");
  std::vector<std::string> args = {"/x/solution"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  const lab::Tolerance exact{0, 0};
  lesson.run(1, argv.data(), [&](lab::Lesson& l) {
    lab::GuardedBuffer<float> mean(3, "mean"), score(100, "score");
    mean.reset(s);
    score.reset(s);
    const std::vector<float> m = {1, 2, 3};
    std::vector<float> sc(100);
    for (std::size_t i = 0; i < sc.size(); ++i) sc[i] = static_cast<float>(i);
    LAB_CHECK(cudaMemcpy(mean.data(), m.data(), mean.bytes(), cudaMemcpyHostToDevice));
    LAB_CHECK(cudaMemcpy(score.data(), sc.data(), score.bytes(), cudaMemcpyHostToDevice));
    auto look = [&](const std::string& case_name) {
      return lab::Look(l, "exercise", case_name, 1, s, nullptr);
    };
    lab::OutputsCheck right(look("right"));
    right.compare(mean, m, exact).compare(score, std::vector<float>{10, 30}, exact, {10, 30});
    CHECK(right.guard(mean).guard(score).record().ok);
    // score read at 10 and 30 only: 30 is not 31, named by score's own index.
    lab::OutputsCheck wrong(look("wrong"));
    wrong.compare(mean, m, exact).compare(score, std::vector<float>{10, 31}, exact, {10, 30});
    CHECK(wrong.record().note ==
          "score: 1 of 2 elements differ; first at [30]: got 30, expected 31");
    write_at<<<1, 1, 0, s>>>(mean.data(), 3, 1.0f);  // mean's guard zone
    LAB_CHECK_LAUNCH();
    lab::OutputsCheck past(look("past the end"));
    past.compare(mean, m, exact).guard(score).guard(mean);
    CHECK(past.record().note.find("wrote past the end of mean") == 0);
  });
  const auto& checks = lesson.result().variants.at(0).checks;
  REQUIRE(checks.size() == 3);
  CHECK(checks[0].ok);
  CHECK_FALSE(checks[1].ok);
  CHECK_FALSE(checks[2].ok);
}

TEST_CASE("a changed read-only input is found on the device, with its first changed element") {
  lab::Stream s;
  const std::size_t n = 100003;
  lab::DeviceBuffer<float> x(n);
  lab::fill_random(x.data(), n, 5, s);
  CHECK(lab::changed_input("x", x.data(), n, 5, s).empty());  // random_input matches the fill
  CHECK(lab::changed_input("x", x.data(), n, 6, s).find("x was written: ") == 0);
  write_at<<<1, 1, 0, s>>>(x.data(), 99999, 0.0f);
  write_at<<<1, 1, 0, s>>>(x.data(), 4321, 0.0f);
  LAB_CHECK_LAUNCH();
  const lab::Changed c = lab::count_changed(x.data(), n, lab::RandomInput{5}, s);
  CHECK(c.count == 2);
  CHECK(c.first == 4321);
  CHECK(lab::changed_input("x", x.data(), n, 5, s) ==
        "x was written: 2 of its 100003 elements changed, the first at [4321]");
}

TEST_CASE("an input filled in a range of its own is regenerated with that range") {
  lab::Stream s;
  const std::size_t n = 100003;
  lab::DeviceBuffer<float> a(n);
  lab::fill_random(a.data(), n, 5, s, 0.99f, 1.01f);
  CHECK(lab::count_changed(a.data(), n, lab::RandomInput{5, 0.99f, 1.01f}, s).count == 0);
  CHECK(lab::count_changed(a.data(), n, lab::RandomInput{5}, s).count == n);  // [-1, 1) is not it
  CHECK(lab::RandomInput{5, 0.99f, 1.01f}(17) == lab::random_input(5, 17, 0.99f, 1.01f));
}

TEST_CASE("a changed BF16 input is found too, to its last bit") {
  lab::Stream s;
  const std::size_t n = 100003;
  lab::DeviceBuffer<float> x(n);
  lab::DeviceBuffer<__nv_bfloat16> h(n);
  lab::fill_random(x.data(), n, 5, s);
  to_bf16<<<256, 256, 0, s>>>(x.data(), h.data(), n);
  LAB_CHECK_LAUNCH();
  CHECK(lab::changed_input("h", h.data(), n, RandomBf16{5}, s).empty());
  CHECK(lab::changed_input("h", h.data(), n, RandomBf16{6}, s).find("h was written: ") == 0);
  flip_low_bit<<<1, 1, 0, s>>>(h.data(), 99999);
  flip_low_bit<<<1, 1, 0, s>>>(h.data(), 77);
  LAB_CHECK_LAUNCH();
  const lab::Changed c = lab::count_changed(h.data(), n, RandomBf16{5}, s);
  CHECK(c.count == 2);
  CHECK(c.first == 77);
  CHECK(lab::changed_input("h", h.data(), n, RandomBf16{5}, s) ==
        "h was written: 2 of its 100003 elements changed, the first at [77]");
}

TEST_CASE("work timed between calls: each part on its own, every call") {
  lab::Stream s;
  lab::BetweenCalls between({[](cudaStream_t st) { lab::spin(200, st); },
                             [](cudaStream_t st) { lab::spin(50, st); }});
  CHECK(between.part(0).n == 0);
  for (int call = 0; call < 5; ++call) {
    const std::vector<double> ms = between.time(s);
    CHECK(cudaStreamQuery(s) == cudaSuccess);  // time() waited for its parts
    REQUIRE(ms.size() == 2);                   // and returned this call's times
    CHECK(ms[0] == doctest::Approx(0.200).epsilon(0.1));
    CHECK(ms[1] == doctest::Approx(0.050).epsilon(0.2));
  }
  const lab::Stats a = between.part(0), b = between.part(1);
  CHECK(a.n == 5);
  CHECK(b.n == 5);
  CHECK(a.median == doctest::Approx(0.200).epsilon(0.1));
  CHECK(b.median == doctest::Approx(0.050).epsilon(0.2));
}

TEST_CASE("warp and block sums add every element once") {
  lab::Stream s;
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i + 1);  // small integers: exact sums
  lab::DeviceBuffer<float> dx(256), block(1), warps(8);
  LAB_CHECK(cudaMemcpy(dx.data(), x.data(), dx.bytes(), cudaMemcpyHostToDevice));
  for (int n : {256, 100, 1}) {
    sums<<<1, 256, 0, s>>>(dx.data(), n, block.data(), warps.data());
    LAB_CHECK_LAUNCH();
    float b = 0, w[8];
    LAB_CHECK(cudaMemcpy(&b, block.data(), sizeof b, cudaMemcpyDeviceToHost));
    LAB_CHECK(cudaMemcpy(w, warps.data(), sizeof w, cudaMemcpyDeviceToHost));
    CHECK(b == n * (n + 1) / 2);
    const int last = std::min(n, 32);
    CHECK(w[0] == last * (last + 1) / 2);
  }
}

TEST_CASE("a captured graph replays what the function enqueued, and only that") {
  lab::Stream s;
  lab::DeviceBuffer<float> y(1);
  lab::Graph g;
  CHECK_FALSE(g);
  g.capture([&](cudaStream_t st) { write_at<<<1, 1, 0, st>>>(y.data(), 0, 42.0f); }, s);
  CHECK(g);
  float got = 0;
  LAB_CHECK(cudaMemcpy(y.data(), &got, sizeof got, cudaMemcpyHostToDevice));
  s.synchronize();
  LAB_CHECK(cudaMemcpy(&got, y.data(), sizeof got, cudaMemcpyDeviceToHost));
  CHECK(got == 0.0f);  // capturing ran nothing
  g.launch(s);
  s.synchronize();
  LAB_CHECK(cudaMemcpy(&got, y.data(), sizeof got, cudaMemcpyDeviceToHost));
  CHECK(got == 42.0f);
}

TEST_CASE("a replay answers each check from its own entry of the record, in order, at any count") {
  // The record a student's program would write: one case checked three times (warm-up calls
  // share names in older records), and thousands of checked calls, as a fast wrong exercise has.
  constexpr int kCalls = 5000;
  auto entry = [](const std::string& name, float value) {
    lab::RecordedCheck c{"exercise", name, 4, lab::sample_indices(4, 1), {}};
    for (int i = 0; i < 4; ++i) c.got.push_back(value + i);
    return lab::record_text(c);
  };
  std::string text = entry("same", 1) + entry("same", 2) + entry("same", 3);
  for (int k = 0; k < kCalls; ++k) text += entry("timed call " + std::to_string(k), float(k));
  const std::string path = "replay_test_record.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << text;
  }
  lab::Lesson lesson("99-replay", "replay test");
  lesson.declare("exercise", lab::Role::Exercise, "yours");
  std::vector<std::string> args = {"/x/starter", "--replay", path};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  std::vector<bool> ok;
  const int code = lesson.run(static_cast<int>(argv.size()), argv.data(), [&](lab::Lesson& l) {
    auto compare = [&](const std::string& name, float value) {
      const float want[4] = {value, value + 1, value + 2, value + 3};
      const float ignored[4] = {0, 0, 0, 0};  // the replaying program's own outputs: not judged
      ok.push_back(l.compare("exercise", name, ignored, want, 4, lab::Tolerance{0, 0}).ok);
    };
    compare("same", 1);  // the first entry of "same", and so on
    compare("same", 2);
    compare("same", 4);  // the third entry holds 3: wrong
    for (int k = 0; k < kCalls; ++k) compare("timed call " + std::to_string(k), float(k));
    compare("same", 1);  // a fourth time: the record has no entry for it
  });
  std::remove(path.c_str());
  CHECK(code == lab::kExitIncorrect);  // three checks failed
  REQUIRE(ok.size() == 3 + kCalls + 1);
  CHECK(ok[0]);
  CHECK(ok[1]);
  CHECK_FALSE(ok[2]);
  CHECK(std::count(ok.begin() + 3, ok.end() - 1, true) == kCalls);
  CHECK_FALSE(ok.back());
  const lab::Result& r = lesson.result();
  REQUIRE(r.replay);
  CHECK(r.replay->entries == std::size_t{3 + kCalls});
  CHECK(r.replay->used == std::size_t{3 + kCalls});
  REQUIRE(r.replay->missing.size() == 1);
  CHECK(r.replay->missing[0] == "exercise: same");
}

TEST_CASE("timed calls: checked until one fails, at most kMaxCheckedCalls, a small sample each in the record") {
  // run(fail_at): the exercise's fail_at-th checked call (warm-ups counted) is wrong; 0: none is.
  // Each run writes its own record (the harness closes the descriptor it was handed).
  auto run = [&](int fail_at, int& checked, const std::string& path) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    lab::Lesson lesson("99-timed-calls", "timed calls test");
    lesson.declare("exercise", lab::Role::Exercise, "yours");
    std::vector<std::string> args = {"/x/solution", "--record-fd", std::to_string(fd)};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    std::size_t samples = 0;
    lesson.run(static_cast<int>(argv.size()), argv.data(), [&](lab::Lesson& l) {
      const std::vector<float> want(300, 1.0f);
      std::vector<float> got(300, 1.0f);
      lab::TimedCallChecks checks;
      checks.prepare = [](cudaStream_t, std::uint64_t) {};
      checks.verify = [&](cudaStream_t, const std::string& name, std::uint64_t) {
        ++checked;
        got[7] = checked == fail_at ? 2.0f : 1.0f;
        l.check("exercise", name,
                l.compare("exercise", name, got.data(), want.data(), got.size(), lab::Tolerance{0, 0}));
      };
      lab::BenchmarkOptions o;
      o.stop.min_samples = 1000000;  // never converges: only the cap stops it
      o.timeout_s = 60;
      o.lead_in_us = 0;
      const lab::Measurement* m = l.measure("exercise", lab::Work{4, 0},
                                            [](cudaStream_t s) { do_nothing<<<1, 1, 0, s>>>(); }, o,
                                            checks);
      REQUIRE(m);
      samples = m->samples_ms.size();
    });
    std::ifstream in(path, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(path.c_str());
    return std::make_tuple(samples, lesson.result().variants.at(0).checks, text);
  };
  int checked = 0;
  const auto [samples, checks, failing_text] = run(5, checked, "timed_calls_failing.txt");
  CHECK(checked == 5);  // nothing checked after the failing call ...
  REQUIRE(checks.size() == 5);
  CHECK_FALSE(checks.back().ok);
  CHECK(samples == lab::kMaxCheckedCalls);  // ... though the calls went on to the cap
  for (const lab::RecordedCheck& c : lab::parse_record(failing_text).checks)
    CHECK(c.index.size() == lab::kRecordTimedSample);
  CHECK(lab::parse_record(failing_text).checks.size() == 5);

  checked = 0;
  const auto [all_samples, all_checks, text] = run(0, checked, "timed_calls_right.txt");
  CHECK(all_samples == lab::kMaxCheckedCalls);
  CHECK(all_checks.size() == static_cast<std::size_t>(checked));
  CHECK(std::all_of(all_checks.begin(), all_checks.end(), [](const lab::CheckResult& c) { return c.ok; }));
  const lab::Record record = lab::parse_record(text);
  REQUIRE(record.checks.size() == all_checks.size());
  std::size_t values = 0;
  for (const lab::RecordedCheck& c : record.checks) {
    CHECK(c.count == 300);
    // 256 values each, and 16 once the run has recorded a million (the last ~90 calls here)
    CHECK((c.index.size() == (values < lab::kRecordTimedValues ? lab::kRecordTimedSample
                                                               : lab::kRecordTimedSampleLate)));
    values += c.index.size();
  }
  CHECK(values > lab::kRecordTimedValues);  // the budget was reached, and honoured after
  CHECK(text.size() < (std::size_t{32} << 20));  // what a right exercise at the cap records
}

TEST_CASE("under --profile a run exits 0: an unchecked baseline passes, a wrong profiled call is said") {
  lab::Lesson lesson("99-profile", "profile test");
  lesson.declare("baseline", lab::Role::Baseline, "a baseline");
  lesson.declare("exercise", lab::Role::Exercise, "yours");
  std::vector<std::string> args = {"/x/solution", "--profile"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  int verified = 0;
  const int code = lesson.run(static_cast<int>(argv.size()), argv.data(), [&](lab::Lesson& l) {
    auto nothing = [](cudaStream_t s) { do_nothing<<<1, 1, 0, s>>>(); };
    lab::TimedCallChecks checks;
    checks.prepare = [](cudaStream_t, std::uint64_t) {};
    checks.verify = [&](cudaStream_t, const std::string& name, std::uint64_t) {
      ++verified;
      l.check("exercise", name, false, "planted");
    };
    CHECK(l.measure("baseline", lab::Work{4, 0}, nothing, {}, {}) == nullptr);  // a profiler's times
    CHECK(l.measure("exercise", lab::Work{4, 0}, nothing, {}, checks) == nullptr);
  });
  CHECK(code == lab::kExitOk);  // a profiler would take 1 for its own failure
  CHECK(verified == 1);         // the first call checked fails: no more checks
  CHECK(lesson.result().variants.at(0).checks.empty());
  CHECK_FALSE(lesson.result().variants.at(1).correct());  // the result file still says it
}

TEST_CASE("a harness's device helpers: a fill from a functor, BF16 copies, a CUB call's storage") {
  lab::Stream s;
  const std::size_t n = 100003;
  lab::DeviceBuffer<float> x(n);
  lab::fill_with(x.data(), n, lab::RandomInput{7, 0.5f, 2.0f}, s);  // what the functor regenerates
  CHECK(lab::count_changed(x.data(), n, lab::RandomInput{7, 0.5f, 2.0f}, s).count == 0);
  lab::fill_random(x.data(), n, 8, s);
  lab::DeviceBuffer<__nv_bfloat16> h(n);
  lab::round_to_bf16(x.data(), h.data(), n, s);  // each rounded as lab::RandomBf16 regenerates it
  CHECK(lab::count_changed(h.data(), n, lab::RandomBf16{8}, s).count == 0);
  CHECK(lab::count_changed(h.data(), n, lab::RandomBf16{9}, s).count > n / 2);
  void* storage = nullptr;
  std::size_t handed = 0;
  const lab::CubCall call("query then call", [&](void* temp, std::size_t& bytes, cudaStream_t) {
    if (temp == nullptr) bytes = 1000;  // the size query
    storage = temp;
    handed = bytes;
    return cudaSuccess;
  });
  CHECK(call.temp_bytes() == 1000);
  call(s);
  CHECK(storage != nullptr);  // the storage allocated once, handed to every call
  CHECK(handed == 1000);
}

// An input whose values depend on the problem's shape (its column), as lesson 10's table does.
struct ColumnValue {
  std::uint64_t seed;
  int cols;
  __host__ __device__ float operator()(std::uint64_t i) const {
    return static_cast<float>(i % cols) + lab::uniform01(seed, i);
  }
};

struct DeclaredProblem {
  int cols = 3;
  lab::DeviceBuffer<float> x{1000}, t{999};
  lab::DeviceBuffer<__nv_bfloat16> h{1000};
  lab::GuardedBuffer<float> y{10, "y"};
  lab::GuardedBuffer<unsigned char> workspace{16, "workspace"};
  lab::DeviceBuffer<float> sums{4};
};

TEST_CASE("declared inputs and outputs on the device: what fill writes, changed finds, reset leaves") {
  using P = DeclaredProblem;
  lab::Stream s;
  P p;
  const lab::Checks<P> c = lab::declared_checks<P>(
      {{"x", &P::x},
       {"t", &P::t, [](const P& q, std::uint64_t seed) { return ColumnValue{seed, q.cols}; }},
       {"h", &P::h, [](const P&, std::uint64_t seed) { return lab::RandomBf16{seed}; }}},
      {&P::y, &P::workspace, &P::sums}, [](lab::Look&, P&) {});
  c.fill(p, 5, s);
  const std::vector<float> x = p.x.download(s), t = p.t.download(s);
  int wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) wrong += x[i] != lab::random_input(5, i);
  for (std::size_t i = 0; i < t.size(); ++i) wrong += t[i] != ColumnValue{5, 3}(i);
  CHECK(wrong == 0);
  CHECK(c.inputs_changed(p, 5, s) == std::vector<std::string>{"", "", ""});
  for (const std::string& change : c.inputs_changed(p, 6, s)) CHECK(!change.empty());
  const float written = -1.0f;
  LAB_CHECK(cudaMemcpy(p.t.data() + 7, &written, sizeof written, cudaMemcpyHostToDevice));
  CHECK(c.inputs_changed(p, 5, s)[1] == "t was written: 1 of its 999 elements changed, the first at [7]");
  LAB_CHECK(cudaMemset(p.sums.data(), 0x3f, p.sums.bytes()));
  c.reset(p, s);
  for (const float v : p.y.download(s)) CHECK(std::isnan(v));
  for (const unsigned char b : p.workspace.download(s)) CHECK(b == 0xFF);
  for (const float v : p.sums.download(s)) CHECK(v == 0.0f);
  CHECK(p.y.damage(s).empty());
  CHECK(p.workspace.damage(s).empty());
}
