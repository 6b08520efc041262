/// @file tensor_map.hpp
/// @brief A TMA tensor map for a row-major BF16 matrix, made by the driver's
/// cuTensorMapEncodeTiled (reached through lab::driver(), never linked). The one driver function
/// an exercise may reach (lesson 13): the entry-point look-up itself would hand exercise code
/// every driver function, so the checker allows this wrapper and refuses the look-up.
///
/// @code
/// // A box of 128 rows x 64 columns (64 BF16 = 128 bytes: one 128-byte swizzle row).
/// const CUtensorMap a_map = lab::tensor_map_2d_bf16(A, M, K, 128, 64);
/// kernel<<<grid, block, smem, stream>>>(a_map, ...);  // as a const __grid_constant__ parameter
/// @endcode
#pragma once

#include <cuda.h>  // CUtensorMap (a type only: nothing here links the driver)

#include <cstdint>

namespace lab {

/// @brief The tensor map of a rows x cols row-major BF16 matrix, read in boxes of box_rows x
/// box_cols with the 128-byte swizzle (what wgmma's 128-byte-swizzled shared-memory descriptors
/// read), elements outside the matrix filled with zeros, L2 promotion of 256 bytes.
/// @param base the matrix's first element, on the device, 16-byte aligned (cudaMalloc's are)
/// @param rows rows of the matrix (>= 1)
/// @param cols columns, the contiguous dimension (>= 1; cols * 2 bytes a multiple of 16)
/// @param box_rows rows of one box (1 to 256)
/// @param box_cols columns of one box (1 to 64: a box row must fit the 128-byte swizzle span)
/// @return the encoded map (128 bytes; pass it to a kernel as a const __grid_constant__ parameter)
/// @throws std::invalid_argument naming the argument that breaks these limits (before any CUDA
///         call); std::runtime_error with the driver's error when the driver refuses the map
CUtensorMap tensor_map_2d_bf16(const void* base, std::uint64_t rows, std::uint64_t cols,
                               std::uint32_t box_rows, std::uint32_t box_cols);

}  // namespace lab
