/// @file exercise.cuh
/// @brief The lesson template: what exercise.cu must define, and what the harness (main.cu)
/// calls. A new lesson replaces this interface with its own.
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

#include <cstddef>

namespace exercise {

/// @brief y = a * x, element by element, in float32.
///
/// n is any size >= 1: the harness checks 1, 3, 1000003 and the timing size (2^26, or 2^22 with
/// --quick), before and after timing. x and y come from cudaMalloc (256-byte aligned) and never
/// overlap. x is read-only; nothing may be written outside y[0 .. n - 1] (the harness checks a
/// guard zone after it).
///
/// It must only enqueue work on @p stream: no synchronization, no allocation, no copies to the
/// host. Every call must compute: the harness changes x and poisons y between calls.
///
/// @param x device pointer, n floats
/// @param y device pointer, n floats
/// @param a the factor
/// @param n number of floats, >= 1
/// @param stream the stream to launch on
void scale(const float* x, float* y, float a, std::size_t n, cudaStream_t stream);

}  // namespace exercise
