// The TMA's tensor maps (lab/tensor_map.hpp).
#include "lab/tensor_map.hpp"

#include <stdexcept>
#include <string>

#include "lab/driver.hpp"

namespace lab {

CUtensorMap tensor_map_2d_bf16(const void* base, std::uint64_t rows, std::uint64_t cols,
                               std::uint32_t box_rows, std::uint32_t box_cols) {
  // The driver's limits for a tiled BF16 map with the 128-byte swizzle, checked here so that a
  // wrong argument is named in one sentence, not as CUDA_ERROR_INVALID_VALUE.
  // The call's name for messages, made only when one is needed: exercises call this every call.
  auto shape = [&] {
    return "tensor_map_2d_bf16(" + std::to_string(rows) + " x " + std::to_string(cols) + ", box " +
           std::to_string(box_rows) + " x " + std::to_string(box_cols) + ")";
  };
  auto refuse = [&](const std::string& why) { throw std::invalid_argument(shape() + ": " + why); };
  if (base == nullptr) refuse("the matrix's address is null");
  if (reinterpret_cast<std::uintptr_t>(base) % 16 != 0)
    refuse("the matrix's address is not 16-byte aligned (use cudaMalloc's)");
  if (rows < 1 || cols < 1) refuse("the matrix is empty");
  if (rows > (std::uint64_t{1} << 32) || cols > (std::uint64_t{1} << 32))
    refuse("a dimension is over 2^32 elements, the TMA's limit");
  if (cols * 2 % 16 != 0)
    refuse("a row is " + std::to_string(cols * 2) +
           " bytes, not a multiple of 16 (the TMA's row stride): cols must be a multiple of 8");
  if (box_rows < 1 || box_rows > 256) refuse("box_rows must be 1 to 256");
  if (box_cols < 1 || box_cols > 64)
    refuse("box_cols must be 1 to 64: a box row of BF16 must fit the 128-byte swizzle span");

  CUtensorMap map{};
  const cuuint64_t dims[2] = {cols, rows};            // innermost (contiguous) first
  const cuuint64_t row_stride[1] = {cols * 2};        // bytes between rows
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult r = driver().tensor_map_encode_tiled(
      &map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<void*>(base), dims, row_stride, box,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) check_driver(r, shape().c_str());  // throws, naming the driver's error
  return map;
}

}  // namespace lab
