/// @file graph.hpp
/// @brief lab::Graph: a CUDA graph made by capturing what a function enqueues on a stream, then
/// replayed with one cudaGraphLaunch. lab::benchmark's graph mode and the lessons use it.
#pragma once

#include <functional>
#include <utility>

#include "lab/check.hpp"

namespace lab {

/// @brief An instantiated CUDA graph (cudaGraphExec_t), destroyed with this object. Move-only.
class Graph {
 public:
  /// @brief No graph yet: capture() makes one.
  Graph() = default;
  /// @brief Destroys the graph.
  ~Graph() { reset(); }
  /// @param other the graph to take over
  Graph(Graph&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
  /// @param other the graph to take over
  /// @return this graph
  Graph& operator=(Graph&& other) noexcept {
    std::swap(exec_, other.exec_);
    return *this;
  }
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// @brief Waits for @p stream to be idle, captures what @p work enqueues on it (thread-local
  /// capture mode: other threads' CUDA calls are not affected) and instantiates it, replacing
  /// any graph captured before. @p work must only enqueue: a synchronization, a synchronous copy
  /// or an allocation inside a capture is an error.
  /// @param work enqueues the work once on the stream it is given
  /// @param stream the stream to capture on (it is back to normal afterwards)
  void capture(const std::function<void(cudaStream_t)>& work, cudaStream_t stream) {
    reset();
    LAB_CHECK(cudaStreamSynchronize(stream));
    LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    work(stream);
    cudaGraph_t graph = nullptr;
    LAB_CHECK(cudaStreamEndCapture(stream, &graph));
    const cudaError_t instantiated = cudaGraphInstantiate(&exec_, graph, 0);
    cudaGraphDestroy(graph);  // the instantiated graph no longer needs it
    LAB_CHECK(instantiated);
  }

  /// @brief Enqueues the whole captured work on @p stream with one call.
  /// @param stream where to launch it
  void launch(cudaStream_t stream) const { LAB_CHECK(cudaGraphLaunch(exec_, stream)); }

  /// @return true once capture() has made a graph
  explicit operator bool() const noexcept { return exec_ != nullptr; }

  /// @brief Destroys the graph (safe to call twice).
  void reset() noexcept {
    if (exec_) cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace lab
