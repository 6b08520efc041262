// Lesson 01: the interface between the harness (main.cu) and your exercise.cu.
#pragma once

#include <cuda_runtime.h>

#include <functional>

/// Enqueues one execution of the kernel being timed on the given stream (and nothing else).
using Work = std::function<void(cudaStream_t)>;

/// Returns how long ONE execution of `work` takes on the GPU, in milliseconds.
/// You may call work(stream) as often as you like; launch it only on `stream`.
/// The harness compares your number with its own measurement at several workload sizes.
double time_one_execution_ms(const Work& work, cudaStream_t stream);
