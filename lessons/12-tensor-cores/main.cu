// Lesson 12, the harness: tensor cores. From the FP32 SGEMM to mixed precision, and what accuracy
// it costs.
//
// Every variant computes C = A B (M x K times K x N, row-major, C in float32) from the same random
// data, drawn in FP32 once and rounded to BF16 once (on the device, round to nearest even).
// sgemm_fp32 (lesson 05's register-tiled SGEMM), cublas_fp32 and cublas_tf32 (tensor cores that
// round each input to 10 bits) multiply the FP32 data; cublas_bf16, wmma_naive (this exercise's
// starter) and your exercise multiply the BF16 copies on the tensor cores; all accumulate in FP32
// (the README's table "The variants, and which inputs each one sees"; see --list).
//
// Accuracy is a result of its own: every variant is checked against an FP64 reference computed
// on the host from the very inputs it multiplied (the FP32 data, or its BF16 copies), with a
// tolerance derived from K and from the rounding the variant does inside (see "Tolerance" below);
// then, at the timing size, its error against the FP32 data shows what the precision costs.
#include <cuda_bf16.h>
#include <mma.h>

#include <array>
#include <map>

#include "exercise.cuh"
#include "lab/cublas.hpp"
#include "lab/cublas_roof.cuh"
#include "lab/lesson.cuh"

namespace {

using bf16 = __nv_bfloat16;  // BF16 copies: lab::round_to_bf16 and lab::RandomBf16 (lab/bf16.cuh)
namespace wmma = nvcuda::wmma;

// =============================================================================================
// sgemm_fp32: lesson 05's register-tiled SGEMM, C = A B in FP32. A 128 x 128 tile of C per block
// of 256 threads, an 8 x 8 piece of it per thread in registers; A and B tiles of depth 8 staged
// in two shared-memory buffers (the next one loaded into registers while the current one is
// used). Lesson 05's README explains each choice.

constexpr int kSgemmTile = 128, kSgemmBK = 8, kSgemmThreads = 256;

__device__ __forceinline__ float4 load4(const float* __restrict__ P, int rows, int cols, int r,
                                        int c, bool vec) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (r >= rows) return v;
  const float* p = P + static_cast<std::size_t>(r) * cols + c;
  if (vec && c + 3 < cols) return *reinterpret_cast<const float4*>(p);
  if (c < cols) v.x = p[0];
  if (c + 1 < cols) v.y = p[1];
  if (c + 2 < cols) v.z = p[2];
  if (c + 3 < cols) v.w = p[3];
  return v;
}

__global__ void __launch_bounds__(kSgemmThreads, 2)
    sgemm_fp32(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
               float* __restrict__ C, bool vec_a, bool vec_b) {
  constexpr int T = kSgemmTile, BK = kSgemmBK;
  __shared__ __align__(16) float As[2][BK][T + 4];  // A transposed: As[k][m]; +4 against conflicts
  __shared__ __align__(16) float Bs[2][BK][T];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int row0 = blockIdx.y * T, col0 = blockIdx.x * T;

  float4 a_next, b_next;  // one float4 of each tile per thread: 256 x 4 = 128 x 8
  auto load_tiles = [&](int k0) {
    a_next = load4(A, M, K, row0 + tid / 2, k0 + (tid % 2) * 4, vec_a);
    b_next = load4(B, K, N, k0 + tid / 32, col0 + (tid % 32) * 4, vec_b);
  };
  auto store_tiles = [&](int buf) {
    const int m = tid / 2, k = (tid % 2) * 4;
    As[buf][k + 0][m] = a_next.x;
    As[buf][k + 1][m] = a_next.y;
    As[buf][k + 2][m] = a_next.z;
    As[buf][k + 3][m] = a_next.w;
    *reinterpret_cast<float4*>(&Bs[buf][tid / 32][(tid % 32) * 4]) = b_next;
  };

  float acc[8][8] = {};
  const int steps = (K + BK - 1) / BK;
  load_tiles(0);
  store_tiles(0);
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int cur = step & 1;
    const bool more = step + 1 < steps;
    if (more) load_tiles((step + 1) * BK);
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a0 = *reinterpret_cast<const float4*>(&As[cur][k][ty * 4]);
      const float4 a1 = *reinterpret_cast<const float4*>(&As[cur][k][T / 2 + ty * 4]);
      const float4 b0 = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * 4]);
      const float4 b1 = *reinterpret_cast<const float4*>(&Bs[cur][k][T / 2 + tx * 4]);
      const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
      const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (more) store_tiles(cur ^ 1);  // the other buffer: nobody reads it this step
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int r = row0 + (i < 4 ? ty * 4 + i : T / 2 + ty * 4 + (i - 4));
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int c = col0 + (j < 4 ? tx * 4 + j : T / 2 + tx * 4 + (j - 4));
      if (c < N) C[static_cast<std::size_t>(r) * N + c] = acc[i][j];
    }
  }
}

bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

void launch_sgemm_fp32(int M, int N, int K, const float* A, const float* B, float* C,
                       cudaStream_t s) {
  const dim3 grid((N + kSgemmTile - 1) / kSgemmTile, (M + kSgemmTile - 1) / kSgemmTile);
  sgemm_fp32<<<grid, kSgemmThreads, 0, s>>>(M, N, K, A, B, C, K % 4 == 0 && aligned(A, 16),
                                            N % 4 == 0 && aligned(B, 16));
  LAB_CHECK_LAUNCH();
}

// =============================================================================================
// wmma_naive: the exercise's starter. A warp computes one 16 x 16 tile of C with the warp-level
// matrix API (nvcuda::wmma): per step of 16 along K, the warp copies its 16 x 16 piece of A and of
// B into a staging tile of its own in shared memory (zeros past M, N or K), loads them as
// fragments and does one 16 x 16 x 16 multiply-accumulate on the tensor cores. Nothing a warp
// loads is shared with another: every element of A is loaded N / 16 times, every element of B
// M / 16 times, 2 x 512 bytes for each 8192-FLOP tensor-core instruction.

constexpr int kNaiveWarps = 8;  // a block of 2 x 4 warps covers a 32 x 64 tile of C

__global__ void __launch_bounds__(kNaiveWarps * 32)
    wmma_naive(int M, int N, int K, const bf16* __restrict__ A, const bf16* __restrict__ B,
               float* __restrict__ C) {
  __shared__ __align__(32) bf16 a_stage[kNaiveWarps][16 * 16];
  __shared__ __align__(32) bf16 b_stage[kNaiveWarps][16 * 16];
  __shared__ __align__(32) float c_stage[kNaiveWarps][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row0 = blockIdx.y * 32 + (warp / 4) * 16;
  const int col0 = blockIdx.x * 64 + (warp % 4) * 16;
  if (row0 >= M || col0 >= N) return;  // the whole warp: no block-wide barrier below
  const bf16 zero = __float2bfloat16_rn(0.0f);

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int e = lane; e < 16 * 16; e += 32) {
      const int r = e / 16, c = e % 16;
      a_stage[warp][e] =
          row0 + r < M && k0 + c < K ? A[static_cast<std::size_t>(row0 + r) * K + k0 + c] : zero;
      b_stage[warp][e] =
          k0 + r < K && col0 + c < N ? B[static_cast<std::size_t>(k0 + r) * N + col0 + c] : zero;
    }
    __syncwarp();  // the staging tiles are complete before the fragments are loaded
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> b;
    wmma::load_matrix_sync(a, a_stage[warp], 16);
    wmma::load_matrix_sync(b, b_stage[warp], 16);
    wmma::mma_sync(acc, a, b, acc);
    __syncwarp();  // and read before the next step overwrites them
  }
  wmma::store_matrix_sync(c_stage[warp], acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < 16 * 16; e += 32) {
    const int r = row0 + e / 16, c = col0 + e % 16;
    if (r < M && c < N) C[static_cast<std::size_t>(r) * N + c] = c_stage[warp][e];
  }
}

void launch_wmma_naive(int M, int N, int K, const bf16* A, const bf16* B, float* C,
                       cudaStream_t s) {
  const dim3 grid((N + 63) / 64, (M + 31) / 32);
  wmma_naive<<<grid, kNaiveWarps * 32, 0, s>>>(M, N, K, A, B, C);
  LAB_CHECK_LAUNCH();
}

// =============================================================================================
// cuBLAS. Row-major C (M x N, float) = A B, A and B of type @p in. cuBLAS is column-major: our
// row-major C is, to it, the column-major C^T = B^T A^T, so "B" (N x K, ld N) times "A"
// (K x M, ld K) into "C" (N x M, ld N). Each call names its compute type, so nothing depends on
// the handle's math mode or on NVIDIA_TF32_OVERRIDE:
//  * CUBLAS_COMPUTE_32F_PEDANTIC with FP32 data: true FP32 FMAs, never TF32 (cublas_fp32);
//  * CUBLAS_COMPUTE_32F_FAST_TF32 with FP32 data: tensor cores, inputs rounded to TF32
//    inside, FP32 accumulation (cublas_tf32);
//  * CUBLAS_COMPUTE_32F with BF16 data: tensor cores, FP32 accumulation (cublas_bf16).
void cublas_gemm(const lab::CublasHandle& cublas, int M, int N, int K, const void* A, const void* B,
                 cudaDataType in, float* C, cublasComputeType_t compute, cudaStream_t s) {
  const float one = 1.0f, zero = 0.0f;
  LAB_CUBLAS_CHECK(cublasGemmEx(cublas.on(s), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, in, N, A,
                                in, K, &zero, C, CUDA_R_32F, N, compute, CUBLAS_GEMM_DEFAULT));
}

// =============================================================================================
// The problem, the variants and the accuracy model.

struct Gemm {
  Gemm(int m, int n, int k)
      : M(m), N(n), K(k), A32(std::size_t(m) * k), B32(std::size_t(k) * n), A16(A32.size()),
        B16(B32.size()), C(std::size_t(m) * n, "C") {}
  int M = 0, N = 0, K = 0;
  lab::DeviceBuffer<float> A32, B32;  // the FP32 data
  lab::DeviceBuffer<bf16> A16, B16;   // its BF16 copies (round to nearest even)
  lab::GuardedBuffer<float> C;        // write-only: NaN on entry
};

// A is made from the inputs' seed, B from the next one.
std::uint64_t b_seed(std::uint64_t seed) { return seed + 1; }

// Tolerance. Each C[i][j] is a dot product of length K. Let S = sum_k |a_ik b_kj| over the
// inputs the variant was given. Two sources of error:
//  * accumulation in FP32 (every variant here): a sum of K terms in any order, FMAs or not, is
//    within lambda sqrt(K) u_acc S of the exact sum with probability at least
//    1 - 2K exp(-lambda^2 / 2) (Higham and Mary, SIAM J. Sci. Comput. 2019), u_acc = 2^-24;
//    lambda = 4 as in lesson 05 is a working tolerance there, not a proven one (README);
//  * rounding the variant applies to its inputs on the way in (u_in): each product a b becomes
//    a(1 + d1) b(1 + d2), |d| <= u_in, so the sum moves by at most (2 u_in + u_in^2) S, whatever
//    the order. u_in = 0 for a variant that multiplies what it was given (FP32 data, or the BF16
//    copies: a product of two BF16 numbers is exact in FP32); 2^-10 for cuBLAS TF32, which
//    rounds the FP32 data to 10 fraction bits inside the tensor cores (one whole TF32 ulp: the
//    conversion may truncate rather than round).
//    atol = (lambda sqrt(K) u_acc + 2 u_in + u_in^2) max S over the checked elements,
//    rtol = 1e-6 (the rounding of the result itself): lab::sum_tolerance(K, max S, u_in).
// At K = 4096 and inputs in [-1, 1), S is about 1100 and the FP32 term allows 0.017; the BF16
// copies are each off the FP32 data by up to 2^-9 relative, which moves a result by about 0.07
// (one standard deviation): against the FP32 data and this FP32 tolerance a BF16 result fails,
// as it should; against its own inputs it passes, as it should. An FP16 accumulator (u = 2^-11
// on every partial sum of size ~20) is off by about 0.2 and fails.
constexpr double kTf32 = 0x1p-10;  // one TF32 ulp, relative (10 fraction bits)

// A variant of this lesson: which inputs it multiplies, and what it rounds them to inside.
struct GemmVariant : lab::Variant<Gemm> {
  bool bf16_inputs = false;  // reads the BF16 copies (else the FP32 data)
  double u_in = 0.0;         // rounding of its inputs inside (see "Tolerance")
};

constexpr unsigned kCublas = 1;  // lab::Variant::needs: the cuBLAS handle

// The FP64 reference at @p at, from the inputs made from @p seed regenerated on the host (never
// read back: the exercise could have written into them): the FP32 data, or its BF16 copies.
std::vector<lab::Dot> products(const Gemm& g, std::uint64_t seed,
                               const std::vector<std::size_t>& at, bool bf16_copies) {
  if (!bf16_copies) return lab::random_product_at(at, g.N, g.K, seed, b_seed(seed));
  auto copy = [](std::uint64_t s) {
    return [s](std::uint64_t i) { return __bfloat162float(lab::RandomBf16{s}(i)); };
  };
  return lab::product_at(at, g.N, g.K, copy(seed), copy(b_seed(seed)));
}

// What a validated call says about accuracy, against the FP32 data.
struct Accuracy {
  std::size_t elements = 0;  // checked
  double fp32_atol = 0;      // the FP32 tolerance (u_in = 0) over them
  double rel_l2 = 0;         // ||C - C_exact|| / ||C_exact|| over them
  double over_fp32_tol = 0;  // max |C - C_exact| / the FP32 tolerance
};

Accuracy accuracy_of(const std::vector<float>& got, const std::vector<lab::Dot>& exact, int K) {
  Accuracy a;
  a.elements = got.size();
  double s_exact = 0, err2 = 0, ref2 = 0, worst = 0;
  for (const lab::Dot& d : exact) s_exact = std::max(s_exact, d.magnitude);
  a.fp32_atol = lab::sum_tolerance(K, s_exact).atol;
  for (std::size_t e = 0; e < got.size(); ++e) {
    const double d = got[e] - exact[e].value;
    err2 += d * d;
    ref2 += exact[e].value * exact[e].value;
    worst = std::max(worst, std::fabs(d));
  }
  a.rel_l2 = ref2 > 0 ? std::sqrt(err2 / ref2) : 0.0;
  a.over_fp32_tol = a.fp32_atol > 0 ? worst / a.fp32_atol : 0.0;
  return a;
}

// Inputs, C and the checks (lab/protocol.cuh). Every call, timed ones too, gets a new A and B
// (FP32 data, and their BF16 copies: an unchanged B could be kept from call to call in a layout
// made once, its conversion left out of the timed calls). A variant is checked against the
// reference of the inputs it multiplied, with its own tolerance; a validated call also notes its
// accuracy against the FP32 data in @p accuracy (the last validation's stays). After timing, the
// exercise's A16 and B16 must still hold what the harness wrote.
lab::Checks<Gemm> checks(const lab::Variants<Gemm, GemmVariant>& gemms,
                         std::map<std::string, Accuracy>& accuracy) {
  lab::Checks<Gemm> c;
  c.fill = [](Gemm& g, std::uint64_t seed, cudaStream_t s) {
    lab::fill_random(g.A32.data(), g.A32.size(), seed, s);
    lab::fill_random(g.B32.data(), g.B32.size(), b_seed(seed), s);
    lab::round_to_bf16(g.A32.data(), g.A16.data(), g.A16.size(), s);
    lab::round_to_bf16(g.B32.data(), g.B16.data(), g.B16.size(), s);
  };
  c.reset = [](Gemm& g, cudaStream_t s) { g.C.reset(s); };
  // Both references are kept for the next variant of the same validation.
  c.check = [&gemms, &accuracy, kept = std::array<lab::KeptReference<std::vector<lab::Dot>>, 2>{}](
                lab::Look& look, Gemm& g) mutable {
    const GemmVariant& v = gemms[look.variant()];
    // every element up to 1e9 multiply-adds of host work (done twice here: two references)
    const std::vector<std::size_t> at = lab::product_elements(look, g.M, g.N, g.K);
    auto reference = [&](bool bf16) -> const std::vector<lab::Dot>& {
      return kept[bf16].get(look.seed(), at, [&] { return products(g, look.seed(), at, bf16); });
    };
    const lab::Rounded want = lab::rounded(reference(v.bf16_inputs));
    look.compare(g.C, at, want.values, lab::sum_tolerance(g.K, want.magnitude, v.u_in));
    if (look.everything())
      accuracy[v.name] =
          accuracy_of(lab::gather(g.C.data(), at, look.stream()), reference(false), g.K);
  };
  c.inputs_changed = [](const Gemm& g, std::uint64_t seed, cudaStream_t s) {
    return std::vector<std::string>{
        lab::changed_input("A", g.A16.data(), g.A16.size(), lab::RandomBf16{seed}, s),
        lab::changed_input("B", g.B16.data(), g.B16.size(), lab::RandomBf16{b_seed(seed)}, s)};
  };
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  lab::Lesson lesson("12-tensor-cores",
                     "Tensor cores: from the FP32 SGEMM to BF16, and what accuracy it costs");
  // Bytes a variant must move at least: A and B once in its input type (4 or 2 bytes an element),
  // C written once. FLOPs: 2 M N K.
  auto work = [](double input_bytes) {
    return [input_bytes](const Gemm& g) {
      const double M = g.M, N = g.N, K = g.K;
      return lab::Work{input_bytes * (M * K + K * N) + 4.0 * M * N, 2.0 * M * N * K};
    };
  };
  const auto fp32_work = work(4.0);
  const auto bf16_work = work(2.0);
  std::unique_ptr<lab::CublasHandle> cublas;  // made in run() when needed
  lab::Variants<Gemm, GemmVariant> gemms(lesson);
  gemms.add({{"sgemm_fp32", lab::Role::Baseline,
              "lesson 05's register-tiled SGEMM: FP32 data, FP32 FMA pipes",
              [](Gemm& g, cudaStream_t s) {
                launch_sgemm_fp32(g.M, g.N, g.K, g.A32.data(), g.B32.data(), g.C.data(), s);
              },
              fp32_work},
             /*bf16_inputs=*/false, /*u_in=*/0.0});
  // The cuBLAS references: one product on FP32 data or on the BF16 copies, in a compute type.
  auto add_cublas = [&](const char* name, const char* description, bool bf16,
                        cublasComputeType_t compute, double u_in) {
    gemms.add({{name, lab::Role::Reference, description,
                [&cublas, bf16, compute](Gemm& g, cudaStream_t s) {
                  if (bf16)
                    cublas_gemm(*cublas, g.M, g.N, g.K, g.A16.data(), g.B16.data(), CUDA_R_16BF,
                                g.C.data(), compute, s);
                  else
                    cublas_gemm(*cublas, g.M, g.N, g.K, g.A32.data(), g.B32.data(), CUDA_R_32F,
                                g.C.data(), compute, s);
                },
                bf16 ? bf16_work : fp32_work, kCublas},
               bf16, u_in});
  };
  add_cublas("cublas_fp32", "cuBLAS, CUBLAS_COMPUTE_32F_PEDANTIC: FP32 data, FP32 FMA pipes",
             false, CUBLAS_COMPUTE_32F_PEDANTIC, 0.0);
  add_cublas("cublas_tf32",
             "[pipe: tf32] cuBLAS, CUBLAS_COMPUTE_32F_FAST_TF32: FP32 data rounded to TF32",
             false, CUBLAS_COMPUTE_32F_FAST_TF32, kTf32);
  add_cublas("cublas_bf16",
             "[pipe: bf16] cuBLAS, BF16 copies, CUBLAS_COMPUTE_32F: FP32 accumulation", true,
             CUBLAS_COMPUTE_32F, 0.0);
  gemms.add({{"wmma_naive", lab::Role::Baseline,
              "[pipe: bf16] WMMA, one 16x16 fragment per warp, nothing shared (the starter)",
              [](Gemm& g, cudaStream_t s) {
                launch_wmma_naive(g.M, g.N, g.K, g.A16.data(), g.B16.data(), g.C.data(), s);
              },
              bf16_work},
             /*bf16_inputs=*/true, /*u_in=*/0.0});
  gemms.add({{"exercise", lab::Role::Exercise,
              "[pipe: bf16] your tensor-core GEMM (exercise.cu): BF16 copies, FP32 accumulation",
              [](Gemm& g, cudaStream_t s) {
                exercise::gemm_bf16(g.M, g.N, g.K, g.A16.data(), g.B16.data(), g.C.data(), s);
              },
              bf16_work},
             /*bf16_inputs=*/true, /*u_in=*/0.0});
  long long size = 0;
  lesson.option("--size", &size, "M = N = K of the timed product", 4096, 1024, {1, 16384});

  return lesson.run(argc, argv, [&](lab::Lesson& l) {

    // The tensor roof (cuBLAS's BF16 product, the best a library reaches here) first, before any
    // exercise code runs, whenever a variant on the tensor cores' BF16 inputs is selected.
    bool any_tensor = false;
    for (const GemmVariant* v : gemms.selected()) any_tensor = any_tensor || v->bf16_inputs;
    const bool roof = any_tensor && !l.profiling();
    if ((gemms.needs() & kCublas) || roof) cublas = std::make_unique<lab::CublasHandle>();
    if (roof) lab::measure_cublas_roof(l, *cublas, lab::TensorInput::bf16, l.quick() ? 4096 : 8192);

    std::map<std::string, Accuracy> accuracy;
    lab::Protocol<Gemm, GemmVariant> protocol(l, gemms, checks(gemms, accuracy));
    // 1. Validation at sizes that are not multiples of any tile: K and N odd (no 16-byte rows),
    //    then multiples of 8 but not of 16, 32 or 128 (the vector paths with partial tiles).
    protocol.validate_shapes({{1000, 777, 515}, {129, 67, 1031}, {264, 392, 520}, {1, 1, 1}},
                             [](const lab::Shape& k) { return Gemm(k[0], k[1], k[2]); });

    // 2. Timing; 3. validation again, after timing, with new inputs in the same buffers, and the
    //    accuracy of every variant against the FP32 data.
    const int n = static_cast<int>(size);
    Gemm g(n, n, n);
    l.size("C = A B, M = N = K = " + std::to_string(n) + ": A and B from FP32 data (and its BF16 "
           "copies), C float32");
    protocol.measure(g);
    const std::string nnn = lab::dims({n, n, n});
    protocol.validate(g, nnn + " after timing");
    if (l.profiling()) return;

    std::string line;
    for (const GemmVariant* v : gemms.selected_exercise_last()) {
      const Accuracy& a = accuracy.at(v->name);
      if (line.empty())
        line = lab::text("accuracy at %s against the FP32 data (%zu elements; FP32 tolerance "
                         "%.2e): relative L2 error, and worst error over the FP32 tolerance:",
                         nnn.c_str(), a.elements, a.fp32_atol);
      line += lab::text("\n  %s %.2e, %.2fx", v->name.c_str(), a.rel_l2, a.over_fp32_tol);
      // The lesson's claim, checked on the library's BF16 product: against the FP32 data, BF16
      // inputs cost more than the FP32 tolerance allows (if this passed, cuBLAS was not given
      // the BF16 copies, or the tolerance could not tell the precisions apart).
      if (v->name == "cublas_bf16")
        l.check(v->name, "against the FP32 data: outside the FP32 tolerance", a.over_fp32_tol > 1.0,
                "its worst error against the FP32 data is only " + lab::fixed(a.over_fp32_tol, 2) +
                    "x the FP32 tolerance: the BF16 inputs' rounding should be far more");
      if (!std::isfinite(a.rel_l2) || !std::isfinite(a.over_fp32_tol)) continue;  // NaN in C:
      l.metric("error_" + v->name, a.rel_l2, a.rel_l2, a.rel_l2);  // its check failed
      l.metric("error_over_fp32_tolerance_" + v->name, a.over_fp32_tol, a.over_fp32_tol,
               a.over_fp32_tol);
    }
    if (!line.empty()) l.note(line);

    // Speeds: TFLOP/s, fraction of cuBLAS BF16 and of the tensor roof.
    l.note(lab::tflops_note(gemms, 2.0 * n * double(n) * n, "cublas_bf16", l.ceilings().bf16_tensor_gflops));
    if (const auto r = lab::speedup(gemms, "cublas_bf16", "exercise")) lab::metric(l, "fraction_of_cublas_bf16", *r);
    if (const auto r = lab::speedup(gemms, "sgemm_fp32", "exercise")) lab::metric(l, "speedup_over_sgemm_fp32", *r, "x");
  });
}
