/// @file sparse_changes.cuh
/// @brief lab::SparseChanges: new inputs for every timed call of an exercise whose input is too
/// large to rewrite before each call (256 MiB on the host, 1 GiB on the device). A full fill
/// writes the input once (Checks::fill); before each timed call (Checks::change) the places the
/// last call changed get their filled values back and a few new places, drawn from the call's
/// seed, get new values. A call that skips part of the input, or answers from an earlier call,
/// is wrong at those places, and nothing but the whole input says where they are. The check
/// (Checks::check) reads the input through the changes (operator()), and after timing the input
/// must hold exactly the fill with the last call's changes (Checks::inputs_changed).
///
/// @code
/// c.fill = [](Problem& p, std::uint64_t seed, cudaStream_t s) {
///   lab::fill_random(p.x.data(), p.n, seed, s);
///   p.changes.filled(p.n, lab::RandomInput{seed});
/// };
/// c.change = [](Problem& p, std::uint64_t seed, cudaStream_t s) {
///   p.changes.draw(seed, [](std::mt19937_64& g) { return std::uniform_real_distribution<float>(-1, 1)(g); });
///   p.changes.write_device(p.x.data(), s);
///   p.y.reset(s);
/// };
/// // check: want[k] from p.changes(at[k]); look at p.changes.changed() and .restored() too
/// c.inputs_changed = [](const Problem& p, std::uint64_t, cudaStream_t s) {
///   return std::vector<std::string>{p.changes.changed_device("x", p.x.data(), s)};
/// };
/// @endcode
/// Device code: include it from a .cu file (lab/lesson.cuh does).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lab/data.hpp"
#include "lab/harness.hpp"
#include "lab/memory.hpp"
#include "lab/protocol.cuh"
#include "lab/read_only.cuh"

namespace lab {

/// @brief An input's value at an index: what its fill wrote, except at a few changed places.
/// Callable on the host (with host arrays) and on the device (with device copies: the expected
/// value of lab::count_changed).
template <class Base>
struct ChangedValues {
  Base base;                        ///< the fill's value at an index
  const std::size_t* at = nullptr;  ///< the changed indices, ascending
  const float* value = nullptr;     ///< the value at each of them
  std::size_t count = 0;            ///< how many
  /// @param i element index
  /// @return the input's value at @p i
  __host__ __device__ float operator()(std::uint64_t i) const {
    std::size_t lo = 0, hi = count;  // the first k with at[k] >= i
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (at[mid] < i) lo = mid + 1;
      else hi = mid;
    }
    return lo < count && at[lo] == i ? value[lo] : base(i);
  }
};

/// @brief Writes value[k] at p[at[k]] for every k < n. Launched by SparseChanges::write_device.
/// @param p the input, on the device
/// @param at indices (distinct), on the device
/// @param value the value for each, on the device
/// @param n how many
template <class T>
__global__ void scatter_kernel(T* p, const std::size_t* at, const T* value, std::size_t n) {
  const std::size_t k = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (k < n) p[at[k]] = value[k];
}

/// @brief The changes made to a large float input before each timed call (see the file's
/// comment). @p Base is the fill's value at an index: RandomInput{seed}, or the lesson's own
/// functor (a struct with a __host__ __device__ float operator()(std::uint64_t) const).
template <class Base = RandomInput>
class SparseChanges {
 public:
  /// Draws a new value for a changed place from the call's generator.
  using Draw = std::function<float(std::mt19937_64&)>;

  /// @param per_call places drawn before each call (a place drawn twice counts once)
  explicit SparseChanges(std::size_t per_call = 64) : per_call_(per_call) {}

  /// @brief After a full fill: the input holds @p base everywhere, and nothing is changed.
  /// @param n elements of the input
  /// @param base the fill's value at an index
  void filled(std::size_t n, Base base) {
    n_ = n;
    base_ = base;
    at_.clear();
    value_.clear();
    restored_.clear();
  }

  /// @brief Before a timed call: the last call's places are to get their filled values back, and
  /// per_call places drawn from @p seed new values from @p draw (in ascending order of place).
  /// Nothing is written yet: write_host() or write_device() does (set() may come between).
  /// @param seed the call's seed
  /// @param draw a new value, from the call's generator
  void draw(std::uint64_t seed, const Draw& draw) {
    restored_ = at_;
    at_.clear();
    value_.clear();
    rng_.seed(seed);
    if (n_ == 0) return;
    for (std::size_t k = 0; k < per_call_; ++k) at_.push_back(static_cast<std::size_t>(rng_() % n_));
    std::sort(at_.begin(), at_.end());
    at_.erase(std::unique(at_.begin(), at_.end()), at_.end());
    for (std::size_t k = 0; k < at_.size(); ++k) value_.push_back(draw(rng_));
  }

  /// @brief Replaces the new value of this call's @p k-th changed place (after draw(), before
  /// the writes), e.g. so that a sum differs from the last call's.
  /// @param k an index into changed()
  /// @param value the value
  void set(std::size_t k, float value) { value_.at(k) = value; }

  /// @brief Makes this call's writes into an input in host memory: the last call's places back
  /// to their filled values, then this call's new values.
  /// @param p the input (size() floats)
  void write_host(float* p) const {
    for (const auto& [i, v] : writes()) p[i] = v;
  }

  /// @brief The same writes into an input in device memory, enqueued on @p stream (the copies
  /// are from pageable memory: they have taken the values when they return).
  /// @param p the input, on the device
  /// @param stream where to enqueue them
  void write_device(float* p, cudaStream_t stream) {
    const std::map<std::size_t, float> w = writes();
    if (w.empty()) return;
    std::vector<std::size_t> at;
    std::vector<float> value;
    for (const auto& [i, v] : w) {
      at.push_back(i);
      value.push_back(v);
    }
    upload(at, value, stream);
    const unsigned blocks = static_cast<unsigned>((at.size() + 255) / 256);
    scatter_kernel<<<blocks, 256, 0, stream>>>(p, device_at_.data(), device_value_.data(),
                                              at.size());
    LAB_CHECK_LAUNCH();
  }

  /// @param i element index (below size())
  /// @return the input's value at @p i: the fill's, or this call's new value
  float operator()(std::uint64_t i) const { return on_host()(i); }

  /// @return the input's values, for a host loop (valid until the next draw() or filled())
  ChangedValues<Base> on_host() const { return {base_, at_.data(), value_.data(), at_.size()}; }

  /// @return this call's changed places, ascending
  const std::vector<std::size_t>& changed() const { return at_; }
  /// @return the new value at each of changed()
  const std::vector<float>& new_values() const { return value_; }
  /// @return the last call's places, given back their filled values by this call's writes
  const std::vector<std::size_t>& restored() const { return restored_; }
  /// @return the fill's value at an index
  const Base& base() const { return base_; }
  /// @return elements of the input
  std::size_t size() const { return n_; }
  /// @return the call's generator after draw(): for the lesson's own draws of the same call
  ///         (outputs to poison, coefficients), made the same way in a --replay run
  std::mt19937_64& rng() { return rng_; }

  /// @brief After timing: is an input in host memory, bit for bit, the fill with this call's
  /// changes (waits for nothing: the caller has waited for the calls)?
  /// @param name what the message calls it, e.g. "input()"
  /// @param p the input (size() floats)
  /// @return "" when it is, else how many elements differ and the first (lab::changed_input)
  std::string changed_host(const std::string& name, const float* p) const {
    const ChangedValues<Base> want = on_host();
    Changed c;
    for (std::size_t i = 0; i < n_; ++i) {
      const float w = want(i);
      if (std::memcmp(&p[i], &w, sizeof w) != 0 && c.count++ == 0) c.first = i;
    }
    return changed_message(name, c, n_);
  }

  /// @brief The same for an input in device memory, compared on the device (waits for
  /// @p stream).
  /// @param name what the message calls it, e.g. "x"
  /// @param p the input, on the device
  /// @param stream where to compare
  /// @return "" when it is, else how many elements differ and the first
  std::string changed_device(const std::string& name, const float* p, cudaStream_t stream) const {
    upload(at_, value_, stream);
    const ChangedValues<Base> want{base_, device_at_.data(), device_value_.data(), at_.size()};
    return changed_message(name, count_changed(p, n_, want, stream), n_);
  }

 private:
  // Position -> value: the last call's places back to their filled values, then this call's
  // (which win where both are drawn).
  std::map<std::size_t, float> writes() const {
    std::map<std::size_t, float> w;
    for (const std::size_t i : restored_) w[i] = base_(i);
    for (std::size_t k = 0; k < at_.size(); ++k) w[at_[k]] = value_[k];
    return w;
  }

  // Copies places and values to the device (pageable: taken when the copies return).
  void upload(const std::vector<std::size_t>& at, const std::vector<float>& value,
              cudaStream_t stream) const {
    if (device_at_.size() < 2 * per_call_) {
      device_at_ = DeviceBuffer<std::size_t>(2 * per_call_);
      device_value_ = DeviceBuffer<float>(2 * per_call_);
    }
    if (at.empty()) return;
    LAB_CHECK(cudaMemcpyAsync(device_at_.data(), at.data(), at.size() * sizeof(std::size_t),
                              cudaMemcpyHostToDevice, stream));
    LAB_CHECK(cudaMemcpyAsync(device_value_.data(), value.data(), value.size() * sizeof(float),
                              cudaMemcpyHostToDevice, stream));
  }

  std::size_t per_call_;
  std::size_t n_ = 0;
  Base base_{};
  std::vector<std::size_t> at_, restored_;  // this call's places (ascending), the last call's
  std::vector<float> value_;                // this call's new values
  std::mt19937_64 rng_;
  mutable DeviceBuffer<std::size_t> device_at_;  // copies for write_device and changed_device
  mutable DeviceBuffer<float> device_value_;
};

/// @brief A round trip over the host link whose input and output both live in host memory and
/// are too large to rewrite before every timed call (lessons 03 and 07: 256 MiB each way; a few
/// hundred host writes per call instead of 2 x 256 MiB of memset). Before each timed call the
/// input changes at a few places drawn from the call's seed (SparseChanges), and the output gets
/// NaN at a few places drawn next from the same generator (and, for an elementwise trip whose
/// output i depends on input i only, at the input's changed places too). After the call the
/// check looks at what those writes could reveal: the changed places, the places given back,
/// the poisoned ones, and places it picks only then (places()).
///
/// @code
/// c.fill = [](Trip& t, std::uint64_t seed, cudaStream_t) { ...; t.io.filled(t.n, lab::RandomInput{seed}); };
/// c.change = [](Trip& t, std::uint64_t seed, cudaStream_t) {
///   t.io.change(seed, draw_value, t.in, t.out);
/// };
/// // check: at = t.io.places(look, limit, picks) (empty after a validated call); want from t.io(at[k])
/// @endcode
template <class Base = RandomInput>
class SparseRoundTrip {
 public:
  /// @param changes input places drawn before each call (SparseChanges' per_call)
  /// @param poisoned output places given NaN before each call, drawn after the changes
  /// @param poison_changed NaN at the input's changed places of the output too (elementwise)
  SparseRoundTrip(std::size_t changes, std::size_t poisoned, bool poison_changed)
      : input_(changes), poisoned_per_call_(poisoned), poison_changed_(poison_changed) {}

  /// @brief After a full fill of the input (and a full reset of the output): nothing changed,
  /// nothing poisoned.
  /// @param n elements of the input and of the output
  /// @param base the fill's value at an index
  void filled(std::size_t n, Base base) {
    input_.filled(n, base);
    poisoned_.clear();
    drawn_from_ = 0;
  }

  /// @brief Before a timed call: the input's changes drawn from @p seed, then the output's
  /// poisoned places from the same generator. Nothing is written yet (write_input(),
  /// poison_output()).
  /// @param seed the call's seed
  /// @param draw a new input value, from the call's generator
  void draw(std::uint64_t seed, const typename SparseChanges<Base>::Draw& draw) {
    input_.draw(seed, draw);
    poisoned_ = poison_changed_ ? input_.changed() : std::vector<std::size_t>{};
    drawn_from_ = poisoned_.size();
    if (input_.size() == 0) return;
    for (std::size_t k = 0; k < poisoned_per_call_; ++k)
      poisoned_.push_back(static_cast<std::size_t>(input_.rng()() % input_.size()));
  }

  /// @brief Checks::change of a trip with one input and one output: draw(), then
  /// write_input(@p in) and poison_output(@p out).
  /// @param seed the call's seed
  /// @param draw a new input value, from the call's generator
  /// @param in the input, on the host
  /// @param out the output, on the host
  void change(std::uint64_t seed, const typename SparseChanges<Base>::Draw& draw, float* in,
              float* out) {
    this->draw(seed, draw);
    write_input(in);
    poison_output(out);
  }

  /// @brief This call's writes into the input (SparseChanges::write_host).
  /// @param in the input, on the host (size() floats)
  void write_input(float* in) const { input_.write_host(in); }

  /// @brief NaN at this call's poisoned places of the output.
  /// @param out the output, on the host (size() floats)
  void poison_output(float* out) const {
    for (const std::size_t i : poisoned_) out[i] = std::numeric_limits<float>::quiet_NaN();
  }

  /// @brief Where a timed call's check looks: this call's changed places, the last call's given
  /// back, the first @p limit of the places drawn for poison (beyond the changed ones), then
  /// @p picked (drawn by the check once the call has finished: Look::indices).
  /// @param limit how many of the drawn poisoned places to look at (a costly reference)
  /// @param picked the check's own picks
  /// @return the places, in that order (repeats possible)
  std::vector<std::size_t> places(std::size_t limit, const std::vector<std::size_t>& picked) const {
    std::vector<std::size_t> at = input_.changed();
    at.insert(at.end(), input_.restored().begin(), input_.restored().end());
    const std::size_t drawn = std::min(limit, poisoned_.size() - drawn_from_);
    at.insert(at.end(), poisoned_.begin() + drawn_from_, poisoned_.begin() + drawn_from_ + drawn);
    at.insert(at.end(), picked.begin(), picked.end());
    return at;
  }

  /// @brief places() as a check asks for them: none listed after a validated call (every
  /// element: Look::compare_host), else places(limit, look.indices(size(), picks)).
  /// @param look the check's look
  /// @param limit how many of the drawn poisoned places to look at
  /// @param picks how many places the check picks itself
  /// @return the places
  std::vector<std::size_t> places(Look& look, std::size_t limit, std::size_t picks) const {
    if (look.everything()) return {};
    return places(limit, look.indices(size(), picks));
  }

  /// @param i element index
  /// @return the input's value at @p i (SparseChanges::operator())
  float operator()(std::uint64_t i) const { return input_(i); }
  /// @return the input's changes (on_host(), base(), changed() ...)
  const SparseChanges<Base>& input() const { return input_; }
  /// @return the call's generator after draw() and the poisoned places (the lesson's own draws)
  std::mt19937_64& rng() { return input_.rng(); }
  /// @return this call's poisoned output places (the changed ones first when poison_changed)
  const std::vector<std::size_t>& poisoned() const { return poisoned_; }
  /// @return elements of the input and of the output
  std::size_t size() const { return input_.size(); }

  /// @brief After timing: the input is the fill with the last call's changes
  /// (SparseChanges::changed_host).
  /// @param name what the message calls it
  /// @param in the input, on the host
  /// @return "" when it is, else what changed
  std::string changed_host(const std::string& name, const float* in) const {
    return input_.changed_host(name, in);
  }

 private:
  SparseChanges<Base> input_;
  std::size_t poisoned_per_call_;
  bool poison_changed_;
  std::vector<std::size_t> poisoned_;  // this call's NaN places: the changed ones first, if asked
  std::size_t drawn_from_ = 0;         // where the drawn ones start in poisoned_
};

}  // namespace lab
