// Lesson 13, the harness: Hopper's asynchronous machinery (TMA, mbarriers, wgmma and warp
// specialisation) on a linear layer's product, C = A B^T.
//
// Every variant computes C = A B^T (A: M x K, Bt: N x K, both BF16 row-major with K contiguous;
// C: M x N float32 row-major) from the same random BF16 inputs, accumulating in FP32:
// cublas_bf16 (the library on the same layout, "TN"), wmma_tiled (lesson 12's WMMA tiling on this
// layout: the starter) and your exercise. Each is checked against an FP64 reference computed on
// the host from the very inputs it multiplied, with the FP32-accumulation tolerance below.
//
// The lesson is built for sm_90a alone (its CMakeLists.txt): on any other GPU the program says
// so in one sentence and exits as "no GPU to run it on" (77), running nothing.
//
// Students read this file; they do not edit it. The checker compiles your exercise.cu against it.
#include <cuda_bf16.h>
#include <mma.h>

#include <iostream>

#include "exercise.cuh"
#include "lab/bf16.cuh"
#include "lab/cublas.hpp"
#include "lab/cublas_roof.cuh"
#include "lab/fill.cuh"
#include "lab/lesson.cuh"

namespace {

using bf16 = __nv_bfloat16;
namespace wmma = nvcuda::wmma;

// =============================================================================================
// wmma_tiled: the exercise's starter, lesson 12's block tiling on this layout. A block of 8 warps
// computes a 128 x 128 tile of C, 32 x 64 per warp (2 x 4 accumulator fragments); per step of 32
// along K, the 256 threads copy the 128 x 32 tiles of A and Bt into padded shared memory with
// 16-byte loads (K % 8 == 0: a row is 16-byte aligned), then each warp loads fragments (Bt's rows
// are B's columns: matrix_b col_major) and issues 8 mma_sync per 16 along K.

constexpr int kTile = 128, kTileK = 32, kPad = 8, kWarps = 8;  // 8 warps of 32 x 64 of C each
constexpr int kLd = kTileK + kPad;  // 40 BF16 a row: 8 rows of 16 bytes cover all 32 banks

__global__ void __launch_bounds__(kWarps * 32)
    wmma_tiled(int M, int N, int K, const bf16* __restrict__ A, const bf16* __restrict__ Bt,
               float* __restrict__ C) {
  __shared__ __align__(128) bf16 a_tile[kTile][kLd];  // rows of A: (m, k)
  __shared__ __align__(128) bf16 b_tile[kTile][kLd];  // rows of Bt: (n, k), i.e. B column-major
  __shared__ __align__(128) float c_stage[kWarps][16 * 16];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m0 = blockIdx.y * kTile, n0 = blockIdx.x * kTile;
  const int wm = (warp / 2) * 32, wn = (warp % 2) * 64;  // this warp's 32 x 64 piece

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][4];
  for (auto& row : acc)
    for (auto& f : row) wmma::fill_fragment(f, 0.0f);
  const uint4 zeros = make_uint4(0, 0, 0, 0);
  for (int k0 = 0; k0 < K; k0 += kTileK) {
    // 128 rows x 4 chunks of 8 BF16 (16 bytes) per tile, 2 chunks of each per thread. K % 8 == 0:
    // a chunk is either wholly inside K or wholly past it (zeros, like rows past M or N).
    for (int c = threadIdx.x; c < kTile * kTileK / 8; c += kWarps * 32) {
      const int r = c / 4, k = k0 + (c % 4) * 8;
      *reinterpret_cast<uint4*>(&a_tile[r][(c % 4) * 8]) =
          m0 + r < M && k < K
              ? *reinterpret_cast<const uint4*>(A + static_cast<std::size_t>(m0 + r) * K + k)
              : zeros;
      *reinterpret_cast<uint4*>(&b_tile[r][(c % 4) * 8]) =
          n0 + r < N && k < K
              ? *reinterpret_cast<const uint4*>(Bt + static_cast<std::size_t>(n0 + r) * K + k)
              : zeros;
    }
    __syncthreads();  // the tiles are complete before any warp loads fragments
    for (int kk = 0; kk < kTileK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> a[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> b[4];
      for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], &a_tile[wm + 16 * i][kk], kLd);
      for (int j = 0; j < 4; ++j) wmma::load_matrix_sync(b[j], &b_tile[wn + 16 * j][kk], kLd);
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // every warp has read the tiles before the next step overwrites them
  }
  // A fragment's layout in registers is unspecified: through shared memory, then the part
  // inside C, element by element.
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      wmma::store_matrix_sync(c_stage[warp], acc[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      for (int e = lane; e < 16 * 16; e += 32) {
        const int r = m0 + wm + 16 * i + e / 16, c = n0 + wn + 16 * j + e % 16;
        if (r < M && c < N) C[static_cast<std::size_t>(r) * N + c] = c_stage[warp][e];
      }
      __syncwarp();  // read before the next fragment overwrites the stage
    }
}

void launch_wmma_tiled(int M, int N, int K, const bf16* A, const bf16* Bt, float* C,
                       cudaStream_t s) {
  const dim3 grid((N + kTile - 1) / kTile, (M + kTile - 1) / kTile);
  wmma_tiled<<<grid, kWarps * 32, 0, s>>>(M, N, K, A, Bt, C);
  LAB_CHECK_LAUNCH();
}

// =============================================================================================
// cuBLAS is column-major: our row-major C (M x N) is, to it, the column-major C^T (N x M) =
// Bt A^T. The buffer Bt read column-major is B (K x N, ld K), transposed (OP_T) is Bt; the buffer
// A read column-major is A^T (K x M, ld K), used as is (OP_N). BF16 in, FP32 out, FP32 compute.
void cublas_gemm_tn(const lab::CublasHandle& cublas, int M, int N, int K, const bf16* A,
                    const bf16* Bt, float* C, cudaStream_t s) {
  const float one = 1.0f, zero = 0.0f;
  LAB_CUBLAS_CHECK(cublasGemmEx(cublas.on(s), CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, Bt,
                                CUDA_R_16BF, K, A, CUDA_R_16BF, K, &zero, C, CUDA_R_32F, N,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// =============================================================================================
// The problem, and the checks.

struct Gemm {
  Gemm(int m, int n, int k)
      : M(m), N(n), K(k), A(std::size_t(m) * k), Bt(std::size_t(n) * k), C(std::size_t(m) * n, "C") {}
  int M = 0, N = 0, K = 0;
  lab::DeviceBuffer<bf16> A, Bt;  // BF16 inputs, drawn in FP32 and rounded (lab::RandomBf16)
  lab::GuardedBuffer<float> C;    // write-only: NaN on entry
};

// A is made from the inputs' seed, Bt from the next one.
std::uint64_t bt_seed(std::uint64_t seed) { return seed + 1; }

// Tolerance: lab::sum_tolerance(K, max S), S = sum_k |a_ik b_kj| over the checked elements, as
// lesson 12 (its README derives it): a product of two BF16 numbers is exact in FP32, so all error
// is in the FP32 sums. Hopper's tensor cores do not round each addition: they align a chunk of
// products with the accumulator and truncate (Khattak and Mikaitis' model of the H100; the
// README's "Accuracy"). Its worst case is about sqrt(K) / 2 times this tolerance, but the errors
// of real data stay far inside it (the README's measured run), and cuBLAS, judged here on the
// same tensor cores, must pass it too. A layout or pipeline bug mixes
// whole slices of 16 or 64 products and is off by about 1, far outside.

// The exact products at @p at, from the inputs regenerated on the host (never read back).
std::vector<lab::Dot> products(const Gemm& g, std::uint64_t seed, const std::vector<std::size_t>& at) {
  const lab::RandomBf16 a{seed}, bt{bt_seed(seed)};
  const std::uint64_t N = g.N, K = g.K;
  return lab::product_at(
      at, g.N, g.K, [a](std::uint64_t i) { return __bfloat162float(a(i)); },
      // product_at asks for B[k][j] at k * N + j: Bt holds it at j * K + k
      [bt, N, K](std::uint64_t i) { return __bfloat162float(bt(i % N * K + i / N)); });
}

// Every call, timed ones too, gets a new A and Bt; after timing both must still hold what the
// harness wrote.
lab::Checks<Gemm> checks() {
  lab::Checks<Gemm> c;
  c.fill = [](Gemm& g, std::uint64_t seed, cudaStream_t s) {
    lab::fill_with(g.A.data(), g.A.size(), lab::RandomBf16{seed}, s);
    lab::fill_with(g.Bt.data(), g.Bt.size(), lab::RandomBf16{bt_seed(seed)}, s);
  };
  c.reset = [](Gemm& g, cudaStream_t s) { g.C.reset(s); };
  // The reference is kept for the next variant of the same validation.
  c.check = [kept = lab::KeptReference<std::vector<lab::Dot>>{}](lab::Look& look, Gemm& g) mutable {
    const std::vector<std::size_t> at = lab::product_elements(look, g.M, g.N, g.K);
    const lab::Rounded want = lab::rounded(
        kept.get(look.seed(), at, [&] { return products(g, look.seed(), at); }));
    look.compare(g.C, at, want.values, lab::sum_tolerance(g.K, want.magnitude));
  };
  c.inputs_changed = [](const Gemm& g, std::uint64_t seed, cudaStream_t s) {
    return std::vector<std::string>{
        lab::changed_input("A", g.A.data(), g.A.size(), lab::RandomBf16{seed}, s),
        lab::changed_input("Bt", g.Bt.data(), g.Bt.size(), lab::RandomBf16{bt_seed(seed)}, s)};
  };
  return c;
}

// "" on a Hopper GPU (compute capability 9.0) or where there is no GPU at all (Lesson::run says
// so itself); else the one sentence that says why this lesson cannot run here.
std::string not_hopper() {
  if (!lab::gpu_available()) return "";
  const lab::DeviceInfo& d = lab::device_info();
  if (d.cc_major == 9 && d.cc_minor == 0) return "";
  return "lesson 13 needs a Hopper GPU (sm_90): this is " + d.name + ", cc " +
         std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + "; skipped";
}

}  // namespace

int main(int argc, char** argv) {
  if (const std::string why = not_hopper(); !why.empty()) {
    std::cerr << why << "\n";
    return lab::kExitNoGpu;
  }
  lab::Lesson lesson("13-hopper-gemm",
                     "Hopper's asynchronous machinery: TMA, mbarriers, wgmma and warp specialisation");
  // Bytes a variant must move at least: A and Bt once (2 bytes an element), C written once
  // (4 bytes). FLOPs: 2 M N K.
  auto work = [](const Gemm& g) {
    const double M = g.M, N = g.N, K = g.K;
    return lab::Work{2.0 * (M * K + N * K) + 4.0 * M * N, 2.0 * M * N * K};
  };
  std::unique_ptr<lab::CublasHandle> cublas;  // made in run()
  lab::Variants<Gemm> gemms(lesson);
  gemms.add({"cublas_bf16", lab::Role::Reference,
             "[pipe: bf16] cuBLAS, C = A B^T (TN), BF16 in, CUBLAS_COMPUTE_32F, FP32 out",
             [&cublas](Gemm& g, cudaStream_t s) {
               cublas_gemm_tn(*cublas, g.M, g.N, g.K, g.A.data(), g.Bt.data(), g.C.data(), s);
             },
             work});
  gemms.add({"wmma_tiled", lab::Role::Baseline,
             "[pipe: bf16] lesson 12's WMMA tiling: 128x128 block tiles, 2x4 fragments a warp (the starter)",
             [](Gemm& g, cudaStream_t s) {
               launch_wmma_tiled(g.M, g.N, g.K, g.A.data(), g.Bt.data(), g.C.data(), s);
             },
             work});
  gemms.add({"exercise", lab::Role::Exercise,
             "[pipe: bf16] your Hopper GEMM (exercise.cu): BF16 in, FP32 accumulation and out",
             [](Gemm& g, cudaStream_t s) {
               exercise::gemm_bf16(g.M, g.N, g.K, g.A.data(), g.Bt.data(), g.C.data(), s);
             },
             work});
  long long size = 0;
  lesson.option("--size", &size, "M = N = K of the timed product (a multiple of 8)", 4096, 1024,
                {8, 16384});

  return lesson.run(argc, argv, [&](lab::Lesson& l) {
    if (size % 8 != 0) throw std::invalid_argument("--size must be a multiple of 8");
    // cuBLAS for the reference variant and the tensor roof (cuBLAS's BF16 product), measured
    // first, before any exercise code runs.
    cublas = std::make_unique<lab::CublasHandle>();
    if (!l.profiling())
      lab::measure_cublas_roof(l, *cublas, lab::TensorInput::bf16, l.quick() ? 4096 : 8192);

    lab::Protocol<Gemm> protocol(l, gemms, checks());
    // 1. Validation at sizes that are not multiples of any tile (M, N odd or not multiples of
    //    128 or 256; K a multiple of 8, as the contract says, but not of 16, 32 or 64).
    protocol.validate_shapes({{1000, 777, 520}, {129, 67, 1032}, {264, 392, 520}, {8, 8, 8}},
                             [](const lab::Shape& k) { return Gemm(k[0], k[1], k[2]); });

    // 2. Timing; 3. validation again, after timing, with new inputs in the same buffers.
    const int n = static_cast<int>(size);
    Gemm g(n, n, n);
    l.size("C = A B^T, M = N = K = " + std::to_string(n) + ": A and Bt BF16, C float32");
    protocol.measure(g);
    protocol.validate(g, lab::dims({n, n, n}) + " after timing");
    if (l.profiling()) return;

    // Speeds: TFLOP/s, fraction of cublas_bf16 and of the tensor roof (as lesson 12 prints them).
    l.note(lab::tflops_note(gemms, 2.0 * n * double(n) * n, "cublas_bf16", l.ceilings().bf16_tensor_gflops));
    if (const auto r = lab::speedup(gemms, "cublas_bf16", "exercise")) lab::metric(l, "fraction_of_cublas_bf16", *r);
    if (const auto r = lab::speedup(gemms, "wmma_tiled", "exercise")) lab::metric(l, "speedup_over_wmma_tiled", *r, "x");
  });
}
