/// @file tensor_roofs.hpp
/// @brief The tensor-core roofs of this GPU, measured with cuBLAS, for lab-doctor.
///
/// lab::ceilings() leaves both tensor roofs 0: a lesson measures the one its variants can use
/// (Lesson::measure_tensor_roof, lessons 05 and 12), because the checker's implausible-rate bound
/// takes the highest compute roof of a result file, and a lesson on the FP32 pipes must keep the
/// FP32 one. lab-doctor shows what the GPU can do, so it measures both. A program that calls this
/// links lab_tensor_roofs (and with it cuBLAS).
#pragma once

#include <string>

#include "lab/device.hpp"

namespace lab {

/// @brief Measures ceilings.tf32_tensor_gflops (cuBLAS's SGEMM with TF32 tensor ops on FP32
/// data) and ceilings.bf16_tensor_gflops (cuBLAS's product of BF16 data, FP32 accumulation),
/// each an @p n x @p n x @p n product on random data, timed back to back with the roof options
/// Lesson::measure_tensor_roof uses. Throws std::runtime_error on a CUDA or cuBLAS error.
/// @param ceilings where the two roofs go (the others are left as they are)
/// @param n M = N = K of the products: large enough to reach the peak (8192: about 1.1 TFLOP,
///        a few milliseconds each on an H100)
/// @return "" when measured, else why not (a GPU before compute capability 8.0 has neither)
std::string measure_tensor_roofs(Ceilings& ceilings, int n = 8192);

}  // namespace lab
