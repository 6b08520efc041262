// Mutant (lesson 04): the reference solution, plus a host thread of its own that no reading of
// the object file can see. It names no forbidden function: from the address of puts (printing is
// allowed) it walks back to the C library's ELF header and through its dynamic symbol table to
// "pthread_create", and starts a thread through a pointer. Such a thread runs beside the harness
// for the rest of the run, where it could rewrite what the harness checks or writes after the
// exercise's calls. The harness's system-call filter (lab/syscall_filter.hpp) ends the program
// when the thread is created: an error (crash, SIGSYS), never the pass that the kernel alone
// would earn.
#include <cstdint>

#include "exercise.cuh"
#include "lab/check.hpp"

#include <cstdio>
#include <cstring>
#include <elf.h>
#include <pthread.h>

namespace {

// The address of `name` in the C library, found from an allowed function's address.
void* libc_lookup(const char* name) {
  auto base = reinterpret_cast<std::uintptr_t>(&std::puts) & ~std::uintptr_t{4095};
  while (std::memcmp(reinterpret_cast<const void*>(base), ELFMAG, SELFMAG) != 0) base -= 4096;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
  const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + eh->e_phoff);
  const Elf64_Dyn* dyn = nullptr;
  for (int i = 0; i < eh->e_phnum; ++i)
    if (ph[i].p_type == PT_DYNAMIC) dyn = reinterpret_cast<const Elf64_Dyn*>(base + ph[i].p_vaddr);
  std::uintptr_t symbols = 0, strings = 0;
  for (; dyn && dyn->d_tag != DT_NULL; ++dyn) {
    std::uintptr_t v = dyn->d_un.d_ptr;
    if (v < base) v += base;  // the loader may or may not have relocated it
    if (dyn->d_tag == DT_SYMTAB) symbols = v;
    if (dyn->d_tag == DT_STRTAB) strings = v;
  }
  for (auto* s = reinterpret_cast<const Elf64_Sym*>(symbols); reinterpret_cast<std::uintptr_t>(s) < strings; ++s)
    if (s->st_value != 0 && s->st_shndx != SHN_UNDEF &&
        std::strcmp(reinterpret_cast<const char*>(strings + s->st_name), name) == 0)
      return reinterpret_cast<void*>(base + s->st_value);
  return nullptr;
}

}  // namespace

namespace {

constexpr int kWarpsPerBlock = 8;  // 256 threads, 8 rows per block
constexpr unsigned kFullMask = 0xffffffffu;

// kVec = 4: every row starts on a 16-byte boundary (cols % 4 == 0, A and x aligned), so a row is
// cols / 4 float4s. kVec = 1: any size, scalar loads, still one contiguous 128-byte piece per warp
// per step.
template <int kVec>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_warp_per_row(int rows, int cols, float alpha, const float* __restrict__ A,
                      const float* __restrict__ x, float beta, float* __restrict__ y) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;  // the whole warp leaves together: the shuffles below stay full-warp

  const float* a = A + static_cast<std::size_t>(row) * cols;
  float sum = 0.0f;
  if constexpr (kVec == 4) {
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const int n4 = cols / 4;
#pragma unroll 4
    for (int i = lane; i < n4; i += 32) {
      const float4 av = a4[i];
      const float4 xv = x4[i];  // L1/L2 hits after the first warps
      sum += av.x * xv.x + av.y * xv.y + av.z * xv.z + av.w * xv.w;
    }
  } else {
#pragma unroll 4
    for (int c = lane; c < cols; c += 32) sum += a[c] * x[c];
  }

  // Tree reduction in registers: after offsets 16, 8, 4, 2, 1 every lane holds the row's sum.
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(kFullMask, sum, offset);

  if (lane == 0) y[row] = alpha * sum + (beta == 0.0f ? 0.0f : beta * y[row]);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

namespace exercise {

void gemv(int rows, int cols, float alpha, const float* A, const float* x, float beta, float* y,
          cudaStream_t stream) {
  static bool once = false;
  if (!once) {  // a thread that outlives the call, beside the harness
    once = true;
    using Create = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
    if (auto create = reinterpret_cast<Create>(libc_lookup("pthread_create"))) {
      pthread_t thread;
      create(&thread, nullptr, [](void*) -> void* {
        for (volatile unsigned long spin = 0;; ++spin) {}
      }, nullptr);
    }
  }
  const int blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;  // round up: every row a warp
  const int threads = kWarpsPerBlock * 32;
  if (cols % 4 == 0 && aligned16(A) && aligned16(x))
    gemv_warp_per_row<4><<<blocks, threads, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  else
    gemv_warp_per_row<1><<<blocks, threads, 0, stream>>>(rows, cols, alpha, A, x, beta, y);
  LAB_CHECK_LAUNCH();
}

}  // namespace exercise
