// Lesson 01: the interface between the harness (main.cu) and your exercise.cu.
#pragma once

// What exercise code may use, and what not (the checker refuses the latter before anything runs,
// naming the call, in `lab-check run` as in grading): the CUDA runtime for the work itself
// (kernels, copies, events, graphs, streams made with cudaStreamCreate* or lab::SideStream,
// which every timed sample waits for), CUB and Thrust, and the C and C++ libraries' containers,
// algorithms, maths and clocks. Not: files, threads, processes, the environment or leaving the
// program (no exercise needs them); device-wide settings (cudaDeviceReset, cudaDeviceSetLimit,
// cache and memory-pool settings); host callbacks (cudaLaunchHostFunc, host graph nodes: do the
// host's part in the function itself); cudaProfilerStart/Stop (run the program with --profile);
// the driver API (cu*: use the runtime's cuda* calls).

#include <cuda_runtime.h>

#include <functional>

/// Enqueues one execution of the kernel being timed on the given stream (and nothing else).
using Work = std::function<void(cudaStream_t)>;

/// Returns how long ONE execution of `work` takes on the GPU, in milliseconds.
/// You may call work(stream) as often as you like; launch it only on `stream`.
/// The harness compares your number with its own measurement at several workload sizes.
double time_one_execution_ms(const Work& work, cudaStream_t stream);
