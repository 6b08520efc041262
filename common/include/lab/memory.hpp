/// @file memory.hpp
/// @brief RAII owners for device memory, pinned and registered host memory, streams and events.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "lab/check.hpp"

namespace lab {

/// @brief An array of @p T in device memory (cudaMalloc), freed on destruction. Move-only.
template <class T>
class DeviceBuffer {
 public:
  /// @brief An empty buffer.
  DeviceBuffer() = default;
  /// @param count number of elements (uninitialised memory; see lab::poison and lab::fill_random)
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    if (count > 0) LAB_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  /// @brief Frees the memory.
  ~DeviceBuffer() { reset(); }
  /// @param other the buffer to take over
  DeviceBuffer(DeviceBuffer&& other) noexcept { swap(other); }
  /// @param other the buffer to take over
  /// @return this buffer
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    DeviceBuffer(std::move(other)).swap(*this);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  /// @return the device pointer
  T* data() const noexcept { return data_; }
  /// @return the number of elements
  std::size_t size() const noexcept { return count_; }
  /// @return the size in bytes
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  /// @brief Copies the elements back into @p host (resized to fit; waits for @p stream).
  /// @param stream where to enqueue the copy
  /// @param host where they go (a vector kept between calls keeps its memory)
  void download(cudaStream_t stream, std::vector<T>& host) const {
    host.resize(count_);
    LAB_CHECK(cudaMemcpyAsync(host.data(), data_, bytes(), cudaMemcpyDeviceToHost, stream));
    LAB_CHECK(cudaStreamSynchronize(stream));
  }
  /// @brief Copies the elements back (waits for @p stream).
  /// @param stream where to enqueue the copy
  /// @return the elements
  std::vector<T> download(cudaStream_t stream) const {
    std::vector<T> host;
    download(stream, host);
    return host;
  }
  /// @brief Frees the memory (safe to call twice).
  void reset() noexcept {
    if (data_) cudaFree(data_);
    data_ = nullptr;
    count_ = 0;
  }
  /// @param other the buffer to exchange contents with
  void swap(DeviceBuffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// @brief An array of @p T in page-locked host memory (cudaMallocHost). Pinning is slow
/// (tens of ms for hundreds of MB) and the memory is a finite system resource: pin once, reuse.
template <class T>
class PinnedBuffer {
 public:
  /// @brief An empty buffer.
  PinnedBuffer() = default;
  /// @param count number of elements
  explicit PinnedBuffer(std::size_t count) : count_(count) {
    if (count > 0) LAB_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  /// @brief Frees (unpins) the memory.
  ~PinnedBuffer() {
    if (data_) cudaFreeHost(data_);
  }
  /// @param other the buffer to take over
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  /// @param other the buffer to take over
  /// @return this buffer
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  /// @return the host pointer
  T* data() const noexcept { return data_; }
  /// @return the number of elements
  std::size_t size() const noexcept { return count_; }
  /// @return the size in bytes
  std::size_t bytes() const noexcept { return count_ * sizeof(T); }
  /// @param i element index
  /// @return element @p i
  T& operator[](std::size_t i) const noexcept { return data_[i]; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// @brief Page-locks existing host memory for the lifetime of this object (cudaHostRegister).
class HostRegistration {
 public:
  /// @param ptr start of the host memory
  /// @param bytes its size
  HostRegistration(void* ptr, std::size_t bytes) : ptr_(ptr) {
    LAB_CHECK(cudaHostRegister(ptr, bytes, cudaHostRegisterDefault));
  }
  /// @brief Unpins the memory.
  ~HostRegistration() {
    if (ptr_) cudaHostUnregister(ptr_);
  }
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;

 private:
  void* ptr_;
};

/// @brief A stream of the harness's own, blocking, and not ordered with lab::benchmark's samples
/// as every other stream the program makes is (lab::SideStream): the lesson's timed stream, or a
/// stream a harness keeps busy on purpose. Exercise code may not make one (the checker refuses it).
/// @return the new stream
cudaStream_t make_harness_stream();

/// @brief A CUDA stream. Created blocking (cudaStreamCreate), so work a student puts on the legacy
/// default stream still lands between events recorded on it.
class Stream {
 public:
  /// @brief Creates the stream.
  Stream() : stream_(make_harness_stream()) {}
  /// @brief Destroys the stream (work already queued still completes).
  ~Stream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// @return the underlying handle
  cudaStream_t get() const noexcept { return stream_; }
  /// @return the underlying handle
  operator cudaStream_t() const noexcept { return stream_; }
  /// @brief Waits for all work on this stream (and only this stream).
  void synchronize() const { LAB_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

/// @brief A stream for work beside the timed one: non-blocking, so nothing orders it implicitly.
/// Any stream an exercise makes (cudaStreamCreate and the like, or this class) is ordered the same
/// way, because lab::benchmark orders every such live stream with each sample: it waits for the
/// sample's start event before the timed call, and the stop event waits for it after the call.
/// Work put on a SideStream is therefore timed however the code orders it: it can neither start
/// while the lead-in holds the timed stream nor end after the stop event. (A harness hands the
/// exercise SideStreams for the same reason.)
class SideStream {
 public:
  /// @brief Creates the stream; made during a sample, it waits for that sample's start at once.
  SideStream();
  /// @brief Destroys the stream; during a sample, the timed stream first waits for its work.
  ~SideStream();
  SideStream(const SideStream&) = delete;
  SideStream& operator=(const SideStream&) = delete;
  /// @return the underlying handle
  cudaStream_t get() const noexcept { return stream_; }
  /// @return the underlying handle
  operator cudaStream_t() const noexcept { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// @brief A CUDA event with timing enabled.
class Event {
 public:
  /// @brief Creates the event.
  Event() { LAB_CHECK(cudaEventCreate(&event_)); }
  /// @brief Destroys the event.
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  /// @return the underlying handle
  cudaEvent_t get() const noexcept { return event_; }
  /// @param stream the stream on which to record this event
  void record(cudaStream_t stream) const { LAB_CHECK(cudaEventRecord(event_, stream)); }
  /// @brief Waits until the GPU has passed this event.
  void synchronize() const { LAB_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaEvent_t event_ = nullptr;
};

/// @param start an event recorded earlier
/// @param stop an event recorded later (waited for here)
/// @return milliseconds between the two events, as the GPU saw them
inline float elapsed_ms(const Event& start, const Event& stop) {
  stop.synchronize();
  float ms = 0.0f;
  LAB_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

}  // namespace lab
