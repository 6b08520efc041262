// lab::tensor_map_2d_bf16's argument checks: each refusal names what is wrong, before any CUDA
// call (so these run without a GPU).
#include <doctest/doctest.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "lab/tensor_map.hpp"

namespace {

// What tensor_map_2d_bf16 says about these arguments ("" if it refused nothing before the driver).
std::string refusal(const void* base, std::uint64_t rows, std::uint64_t cols, std::uint32_t box_rows,
                    std::uint32_t box_cols) {
  try {
    lab::tensor_map_2d_bf16(base, rows, cols, box_rows, box_cols);
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (const std::exception&) {  // the driver (absent here, or refusing): past the checks
  }
  return "";
}

}  // namespace

TEST_CASE("tensor_map_2d_bf16 refuses what the TMA cannot read, naming it") {
  alignas(256) static unsigned char matrix[256];
  const void* ok = matrix;
  CHECK(refusal(nullptr, 128, 64, 128, 64).find("address is null") != std::string::npos);
  CHECK(refusal(matrix + 8, 128, 64, 128, 64).find("16-byte aligned") != std::string::npos);
  CHECK(refusal(ok, 0, 64, 128, 64).find("empty") != std::string::npos);
  CHECK(refusal(ok, 128, 0, 128, 64).find("empty") != std::string::npos);
  // K = 515: a 1030-byte row, no 16-byte stride
  const std::string odd = refusal(ok, 128, 515, 128, 64);
  CHECK(odd.find("multiple of 8") != std::string::npos);
  CHECK(odd.find("128 x 515") != std::string::npos);  // the shape it was given
  CHECK(refusal(ok, 128, 64, 0, 64).find("box_rows") != std::string::npos);
  CHECK(refusal(ok, 128, 64, 257, 64).find("box_rows") != std::string::npos);
  CHECK(refusal(ok, 128, 64, 128, 72).find("128-byte swizzle") != std::string::npos);
  CHECK(refusal(ok, std::uint64_t{1} << 33, 64, 128, 64).find("2^32") != std::string::npos);
  // Within every limit (tails of M, N and K included): nothing refused before the driver.
  CHECK(refusal(ok, 1000, 520, 128, 64) == "");
  CHECK(refusal(ok, 8, 8, 256, 64) == "");
}
