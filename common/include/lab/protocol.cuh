/// @file protocol.cuh
/// @brief lab::Protocol: the one way every lesson validates and measures its variants. A lesson
/// says how its problem's inputs are made (Checks::fill), how its outputs are made ready for a
/// call (Checks::reset), what a right answer is (Checks::check, the lesson's one reference) and
/// how to see that the inputs were not written (Checks::inputs_changed); the protocol does the
/// rest, the same way for every lesson:
///  - seeds: every set of inputs comes from a seed the protocol derives from the run's seed and
///    the order of the calls, so a --replay run makes the same inputs without any seed in the
///    lesson's code;
///  - validation: every selected variant, the exercise last, once on reset outputs, every output
///    element compared with the reference, guard zones included (Protocol::validate);
///  - timed calls: before each one (warm-ups included), new inputs from a seed the exercise
///    cannot know and reset outputs; after **every** one, once it has finished, outside the timed
///    window, the same check on elements picked only then (Protocol::measure);
///  - after timing: the inputs still hold what the last call was given;
///  - for inputs too large to rewrite before every timed call: a few changes per call instead
///    (Checks::change, lab::SparseChanges); the harness's own work timed between the calls
///    (Checks::between_calls); inputs that arrive through the stream just before a validated
///    call (Checks::late_inputs); streams handed to a call, each idle once the lesson's stream
///    has finished (Checks::handed_streams); the outputs of a lesson's own call made of several
///    variants, checked as they stand (Protocol::check_as_is);
///  - --profile and --replay: handled here, never in a lesson.
///
/// @code
/// lab::Checks<Problem> checks;
/// checks.fill = [](Problem& p, std::uint64_t seed, cudaStream_t s) { lab::fill_random(...); };
/// checks.reset = [](Problem& p, cudaStream_t s) { p.y.reset(s); };
/// checks.check = [](lab::Look& look, Problem& p) {
///   const auto at = look.indices(p.n, 4096);  // every element, or 4096 picked after a call
///   std::vector<float> want;
///   for (std::size_t i : at) want.push_back(p.a * lab::random_input(look.seed(), i));
///   look.compare(p.y, at, want, lab::Tolerance{0, 0});
/// };
/// checks.inputs_changed = [](const Problem& p, std::uint64_t seed, cudaStream_t s) {
///   return std::vector<std::string>{lab::changed_input("x", p.x.data(), p.n, seed, s)};
/// };
/// lab::Protocol<Problem> protocol(lesson, variants, checks);
/// for (long long n : {1, 3, 1000003}) { Problem p(n); protocol.validate(p, std::to_string(n)); }
/// // (problems made from a shape: protocol.validate_shapes({{1, 3}, {1000, 777}}, make))
/// Problem p(big);
/// protocol.measure(p);
/// protocol.validate(p, "after timing");
/// @endcode
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lab/check.hpp"
#include "lab/format.hpp"
#include "lab/guard.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/read_only.cuh"
#include "lab/reference.hpp"
#include "lab/validate.hpp"
#include "lab/variant.hpp"

namespace lab {

/// @brief A seed for one set of inputs: the run's seed and an index mixed (splitmix64), so that
/// seeds of neighbouring indices share no bits a fill could show.
/// @param run_seed Lesson::seed()
/// @param index which set of inputs of the run
/// @return the seed
inline std::uint64_t derive_seed(std::uint64_t run_seed, std::uint64_t index) {
  std::uint64_t z = run_seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// @brief Copies @p p[at[k]] into out[k] for every k. Launched by lab::gather.
/// @param p an array on the device
/// @param at indices into it, on the device
/// @param n how many indices
/// @param out n values, on the device
template <class T>
__global__ void gather_kernel(const T* __restrict__ p, const std::size_t* __restrict__ at,
                              std::size_t n, T* __restrict__ out) {
  const std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (k < n) out[k] = p[at[k]];
}

/// @brief The elements of a device array at the given indices, copied back (waits for
/// @p stream): a check of a few picked elements reads a few bytes, not the whole output.
/// @param p the array on the device
/// @param at indices into it (each below its size)
/// @param stream where to run the copy
/// @return p[at[0]], p[at[1]], ...
template <class T>
std::vector<T> gather(const T* p, const std::vector<std::size_t>& at, cudaStream_t stream) {
  std::vector<T> values(at.size());
  if (at.empty()) return values;
  DeviceBuffer<std::size_t> index(at.size());
  DeviceBuffer<T> picked(at.size());
  LAB_CHECK(cudaMemcpyAsync(index.data(), at.data(), at.size() * sizeof(std::size_t),
                            cudaMemcpyHostToDevice, stream));
  const unsigned blocks = static_cast<unsigned>((at.size() + 255) / 256);
  gather_kernel<<<blocks, 256, 0, stream>>>(p, index.data(), at.size(), picked.data());
  LAB_CHECK_LAUNCH();
  LAB_CHECK(cudaMemcpyAsync(values.data(), picked.data(), at.size() * sizeof(T),
                            cudaMemcpyDeviceToHost, stream));
  LAB_CHECK(cudaStreamSynchronize(stream));
  return values;
}

/// @brief A whole output's reference made on the device, copied back (waits for @p stream) and
/// confirmed on the host at spread places (lab::confirm_on_host).
/// @param p the reference, on the device
/// @param n its elements
/// @param stream where to copy
/// @param spread about how many places are spread over it
/// @param tail how many places at its end, all of them
/// @param value the host's value at a place
/// @return the reference, the host's values at those places
template <class T, class Value>
std::vector<T> confirmed_download(const T* p, std::size_t n, cudaStream_t stream,
                                  std::size_t spread, std::size_t tail, const Value& value) {
  std::vector<T> want(n);
  LAB_CHECK(cudaMemcpyAsync(want.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost, stream));
  LAB_CHECK(cudaStreamSynchronize(stream));
  confirm_on_host(want, spread, tail, value);
  return want;
}

/// @brief After a call that was handed streams of its own besides the lesson's (to fork its work
/// onto and join back): which of them still has work, queried without waiting. Call it as soon as
/// the lesson's stream has finished: a stream the call did not join is then still busy, unless
/// its work was very short (a lesson holds its inputs back behind a spin: Checks::late_inputs).
/// @param streams the streams the call was handed
/// @param main what the exercise calls the lesson's stream, e.g. "main"
/// @return "" when none has work, else the first busy one (its index) and how to join it
inline std::string busy_stream(const std::vector<cudaStream_t>& streams, const std::string& main) {
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const cudaError_t q = cudaStreamQuery(streams[i]);
    if (q == cudaErrorNotReady)
      return "stream " + std::to_string(i) + " still had work when " + main + " had finished: " +
             main + " must wait for every stream you used (record an event on it, then "
             "cudaStreamWaitEvent(" + main + ", event))";
    LAB_CHECK(q);
  }
  return "";
}

/// @brief One look at a variant's outputs, handed to Checks::check: after a validated call it
/// sees everything; after a timed call it sees what it picks, with a generator seeded only once
/// the call has finished (and seeded the same way in a --replay run).
class Look {
 public:
  /// @param lesson the lesson
  /// @param variant the variant whose outputs are looked at
  /// @param case_name what the check is recorded under
  /// @param seed the seed the inputs were made from (Checks::fill)
  /// @param stream the lesson's stream
  /// @param pick nullptr to look at everything, or the generator of what to pick
  Look(Lesson& lesson, std::string variant, std::string case_name, std::uint64_t seed,
       cudaStream_t stream, std::mt19937_64* pick)
      : lesson_(lesson), variant_(std::move(variant)), case_name_(std::move(case_name)),
        seed_(seed), stream_(stream), pick_(pick) {}

  /// @return the seed the inputs were made from: the reference regenerates them from it
  std::uint64_t seed() const { return seed_; }
  /// @return the lesson's stream
  cudaStream_t stream() const { return stream_; }
  /// @return the lesson
  Lesson& lesson() const { return lesson_; }
  /// @return the variant looked at
  const std::string& variant() const { return variant_; }
  /// @return the case the check is recorded under
  const std::string& case_name() const { return case_name_; }
  /// @return true after a validated call: every element is compared
  bool everything() const { return pick_ == nullptr; }

  /// @param n elements (rows, slices) of an output
  /// @param picks how many to look at after a timed call
  /// @return 0 .. n-1 after a validated call; else @p picks indices drawn now (repeats allowed)
  std::vector<std::size_t> indices(std::size_t n, std::size_t picks) {
    std::vector<std::size_t> at;
    if (everything()) {
      at.resize(n);
      for (std::size_t i = 0; i < n; ++i) at[i] = i;
    } else if (n > 0) {
      std::uniform_int_distribution<std::size_t> any(0, n - 1);
      for (std::size_t k = 0; k < picks; ++k) at.push_back(any(*pick_));
    }
    return at;
  }

  /// @brief Compares @p out at @p at with @p want (Lesson::compare, so that a --replay run can
  /// make the same comparison), checks @p out's guard zone, and records it (Lesson::check).
  /// @param out the output
  /// @param at where each wanted value lies in @p out (from indices())
  /// @param want the reference at each of them
  /// @param tol the tolerance
  /// @return the comparison, as recorded
  template <class T>
  Comparison compare(const GuardedBuffer<T>& out, const std::vector<std::size_t>& at,
                     const std::vector<T>& want, Tolerance tol) {
    const bool whole = at.size() == out.size() && everything();
    const std::vector<T> got = whole ? out.download(stream_) : gather(out.data(), at, stream_);
    return check_output(lesson_, variant_, case_name_, out, got, want, tol, stream_,
                        whole ? std::vector<std::size_t>{} : at);
  }

  /// @brief compare() of an output whose every element has a reference of its own: every
  /// element after a validated call, @p picks drawn now after a timed call (indices()), each
  /// against @p value at its index (lab::values_at).
  /// @param out the output
  /// @param picks how many elements to look at after a timed call
  /// @param tol the tolerance
  /// @param value the reference at an index, of the output's type
  /// @return the comparison, as recorded
  template <class T, class Value>
  Comparison compare_each(const GuardedBuffer<T>& out, std::size_t picks, Tolerance tol,
                          const Value& value) {
    const std::vector<std::size_t> at = indices(out.size(), picks);
    return compare(out, at, values_at(at, out.size(), value), tol);
  }

  /// @brief Compares an output in host memory with @p want and records it (Lesson::compare, so
  /// that a --replay run can make the same comparison, then Lesson::check).
  /// @param out the output, on the host
  /// @param at where each wanted value lies in @p out (from indices()), or empty: all of @p out,
  ///        want[i] for out[i] (no list of every index for a large output)
  /// @param want the reference at each of them
  /// @param tol the tolerance
  /// @return the comparison, as recorded
  Comparison compare_host(const float* out, const std::vector<std::size_t>& at,
                          const std::vector<float>& want, Tolerance tol) {
    std::vector<float> got;
    for (const std::size_t i : at) got.push_back(out[i]);
    Comparison c = lesson_.compare(variant_, case_name_, at.empty() ? out : got.data(),
                                   want.data(), want.size(), tol);
    if (!at.empty())
      for (Mismatch& m : c.first) m.index = at[m.index];
    lesson_.check(variant_, case_name_, c);
    return c;
  }

  /// @brief Records a yes/no check (a fact that is not an array comparison).
  /// @param ok passed
  /// @param message what went wrong
  void check(bool ok, const std::string& message) {
    lesson_.check(variant_, case_name_, ok, message);
  }

  /// @brief Records a fact of the call beside its outputs, as "<case>, <part>" (a range refused,
  /// a guard zone written, a stream left busy).
  /// @param part what the fact is about, e.g. "bounds"
  /// @param problem "" when it holds, else what went wrong
  void check_part(const std::string& part, const std::string& problem) {
    lesson_.check(variant_, case_name_ + ", " + part, problem.empty(), problem);
  }

 private:
  Lesson& lesson_;
  std::string variant_;
  std::string case_name_;
  std::uint64_t seed_;
  cudaStream_t stream_;
  std::mt19937_64* pick_;
};

/// @brief Which elements of a matrix product C (M x N, K deep) a check looks at, as row-major
/// indices i * N + j. After a timed call: where 32 rows and 32 columns picked only then cross
/// (rows drawn first). After a validated call: every element, up to 1e9 multiply-adds of host
/// work for one reference; past that, lab::lines_and_elements: four rows and four columns in
/// full (the first, the last and two random) and 8192 random elements, all drawn from the
/// inputs' seed (so that a --replay run checks the same ones).
/// @param look the look at the product (Checks::check)
/// @param M rows of C
/// @param N columns of C
/// @param K the length of each dot product
/// @return the elements, in that order (repeats possible)
inline std::vector<std::size_t> product_elements(Look& look, std::size_t M, std::size_t N,
                                                 std::size_t K) {
  if (look.everything() && static_cast<double>(M) * N * K > 1e9)
    return lines_and_elements(look.seed(), M, N, 2, 8192);
  const std::vector<std::size_t> rows = look.indices(M, 32);  // the order of the draws
  return crossings(rows, look.indices(N, 32), N);
}

/// @brief What the protocol needs to know about a lesson's problem (see the file's comment).
template <class Problem>
struct Checks {
  /// Writes every input a variant reads, from @p seed only (the reference regenerates them from
  /// it, never reads them back: the code under test could have written into them).
  std::function<void(Problem&, std::uint64_t seed, cudaStream_t)> fill = {};
  /// Makes the outputs ready for a call: poisoned (a NaN for floats), guard zones armed, any
  /// workspace filled with 0xFF bytes.
  std::function<void(Problem&, cudaStream_t)> reset = {};
  /// The lesson's one reference: compares what a call left with what the inputs made from
  /// Look::seed() give, through Look::compare (or Look::check).
  std::function<void(Look&, Problem&)> check = {};
  /// After timing: for each input, "" when it still holds what @p seed made, else what changed
  /// (lab::changed_input). Empty: the lesson has no device inputs to check.
  std::function<std::vector<std::string>(const Problem&, std::uint64_t seed, cudaStream_t)>
      inputs_changed = {};
  /// Optional. Before each timed call, instead of fill and reset: for inputs too large to
  /// rewrite before every call, a few changes made from @p seed (lab::SparseChanges) and the
  /// outputs poisoned where check will look; check sees the inputs through the changes.
  std::function<void(Problem&, std::uint64_t seed, cudaStream_t)> change = {};
  /// Optional. Before each timed call, first, outside its window: the harness's own work timed
  /// between the exercise's calls (lab::BetweenCalls), for a rule that divides by it.
  std::function<void(Problem&, cudaStream_t)> between_calls = {};
  /// Optional. Before each validated call, after reset and the wait, enqueued on the stream and
  /// not waited for: inputs that arrive through the stream only now (behind a hold), so that a
  /// call whose own streams do not wait for the given one reads poison.
  std::function<void(Problem&, cudaStream_t)> late_inputs = {};
  /// Optional. The streams a call is handed besides the lesson's (an exercise that forks onto
  /// them must join them back): after each validated call, queried as soon as the lesson's stream
  /// has finished, none may still have work (lab::busy_stream), recorded after check as
  /// "<case>, <main_stream> waits for every stream".
  std::function<std::vector<cudaStream_t>(const Problem&)> handed_streams = {};
  /// What the exercise calls the lesson's stream, in handed_streams' check.
  std::string main_stream = "main";
};

/// The extents of a validation case (Protocol::validate_shapes), e.g. {rows, cols}.
using Shape = std::vector<int>;

/// @brief The protocol itself, for one list of variants on one kind of problem.
template <class Problem, class V = Variant<Problem>>
class Protocol {
 public:
  /// @param lesson the lesson (outlives this)
  /// @param variants the variants (outlive this)
  /// @param checks fill, reset and check are required; inputs_changed is optional
  Protocol(Lesson& lesson, Variants<Problem, V>& variants, Checks<Problem> checks)
      : lesson_(lesson), variants_(variants), checks_(std::move(checks)) {
    if (!checks_.fill || !checks_.reset || !checks_.check)
      throw std::logic_error("lab::Protocol: fill, reset and check are required");
    // Each part of a lesson (each list of variants) gets seeds of its own, named by its first
    // variant (names are unique in a lesson): the same in a --replay run, whatever else ran.
    if (variants_.begin() != variants_.end())
      for (const char c : variants_.begin()->name)
        part_ = (part_ ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  }

  /// @brief Fresh inputs from the next seed, then every selected variant once (the exercise
  /// last, so that whatever it does to shared buffers cannot touch the others' checks), each on
  /// reset outputs, compared whole. Does nothing with --profile.
  /// @param p the problem (its buffers keep the last variant's outputs)
  /// @param case_name what the checks are recorded under, e.g. "1000x777"
  /// @param before_calls the lesson's own step after the inputs are made (a graph captured on
  ///        them, say), or empty
  void validate(Problem& p, const std::string& case_name,
                const std::function<void(Problem&)>& before_calls = {}) {
    if (lesson_.profiling()) return;
    cudaStream_t s = lesson_.stream();
    validated_seed_ = next_seed();
    checks_.fill(p, validated_seed_, s);
    if (before_calls) before_calls(p);
    for (const V* v : variants_.selected_exercise_last()) {
      checks_.reset(p, s);
      LAB_CHECK(cudaStreamSynchronize(s));  // a host-paced variant may use streams of its own
      if (checks_.late_inputs) checks_.late_inputs(p, s);
      v->launch(p, s);
      LAB_CHECK(cudaGetLastError());
      look_whole(p, v->name, case_name);
    }
  }

  /// @brief The outputs as they stand, checked whole against the inputs of the last validate()
  /// (before measure(), which changes them), once for each selected variant of @p others (the
  /// lesson's own call made of them, e.g. a chain of stages each timed alone), handed streams
  /// included. Does nothing with --profile.
  /// @param p the problem last validated, its outputs made by the lesson's own call
  /// @param others the variants the call is made of
  /// @param case_name what the checks are recorded under
  void check_as_is(Problem& p, const Variants<Problem, V>& others, const std::string& case_name) {
    if (lesson_.profiling()) return;
    for (const V* v : others.selected()) look_whole(p, v->name, case_name);
  }

  /// @brief A lesson's validation cases: for each shape, a fresh problem made by @p make and
  /// validated (validate()), named by its extents (lab::dims: "1000x777").
  /// @param shapes the cases, e.g. {{1000, 777}, {33, 4097}, {4097, 33}, {1, 1}}
  /// @param make the problem of a shape, returned by value (built in place, never moved)
  /// @param before_calls as for validate()
  template <class Make>
  void validate_shapes(const std::vector<Shape>& shapes, const Make& make,
                       const std::function<void(Problem&)>& before_calls = {}) {
    for (const Shape& shape : shapes) {
      Problem p = make(shape);
      validate(p, dims(shape), before_calls);
    }
  }

  /// @brief Fresh inputs, then every variant measured (Variants::measure_all). The exercise's
  /// timed calls each get new inputs and reset outputs before (or Checks::change, after
  /// Checks::between_calls), and are each checked after.
  /// Afterwards (unless --profile), the exercise's inputs must hold what its last call was given.
  /// @param p the problem at the timing size
  /// @param before_calls the lesson's own step after the inputs are made, or empty
  void measure(Problem& p, const std::function<void(Problem&)>& before_calls = {}) {
    cudaStream_t s = lesson_.stream();
    checks_.fill(p, next_seed(), s);
    checks_.reset(p, s);
    if (before_calls) before_calls(p);
    bool timed = false;
    std::uint64_t last_seed = 0;
    std::mt19937_64 pick;
    std::string exercise = "exercise";  // the variant the timed calls' checks are recorded for
    for (const V& v : variants_)
      if (v.role == Role::Exercise) exercise = v.name;
    TimedCallChecks calls;
    calls.prepare = [&](cudaStream_t stream, std::uint64_t call_seed) {
      timed = true;
      last_seed = call_seed;
      if (checks_.between_calls) checks_.between_calls(p, stream);
      if (checks_.change) return checks_.change(p, call_seed, stream);
      checks_.fill(p, call_seed, stream);
      checks_.reset(p, stream);
    };
    calls.verify = [&](cudaStream_t stream, const std::string& case_name, std::uint64_t pick_seed) {
      pick.seed(pick_seed);
      Look look(lesson_, exercise, case_name, last_seed, stream, &pick);
      checks_.check(look, p);
    };
    variants_.measure_all(p, calls);
    if (!timed || lesson_.profiling() || !checks_.inputs_changed) return;
    check_inputs_unchanged(lesson_, exercise, checks_.inputs_changed(p, last_seed, s));
  }

  /// @return the seed of the next set of inputs (validate() and measure() draw one each)
  std::uint64_t next_seed() { return derive_seed(lesson_.seed() ^ part_, drawn_++); }

 private:
  // A validated call's check (everything, from validated_seed_), the handed streams queried first.
  void look_whole(Problem& p, const std::string& variant, const std::string& case_name) {
    cudaStream_t s = lesson_.stream();
    std::string busy;
    if (checks_.handed_streams) {
      LAB_CHECK(cudaStreamSynchronize(s));
      busy = busy_stream(checks_.handed_streams(p), checks_.main_stream);
    }
    Look look(lesson_, variant, case_name, validated_seed_, s, nullptr);
    checks_.check(look, p);
    if (checks_.handed_streams)
      look.check_part(checks_.main_stream + " waits for every stream", busy);
  }

  Lesson& lesson_;
  Variants<Problem, V>& variants_;
  Checks<Problem> checks_;
  std::uint64_t validated_seed_ = 0;  // the inputs of the last validate()
  std::uint64_t drawn_ = 0;
  std::uint64_t part_ = 0xCBF29CE484222325ull;  // FNV-1a of the part's first variant's name
};

}  // namespace lab
