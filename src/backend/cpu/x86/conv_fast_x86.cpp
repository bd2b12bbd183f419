// x86-64 rows of the float conv2d fast path (kernels/conv_fast.h): the portable-vector
// template of conv_fast_impl.h on 256-bit (AVX2) and 512-bit (AVX-512) vectors, the same
// additions in the same order, so the same bits. Compiled with -ffp-contract=off
// (cmake/components.cmake): the target's fma is never used.
#if defined(__x86_64__)
// The template's functions are always inlined: only the two functions below carry the
// target attributes, so nothing else in this file is compiled for AVX2 or AVX-512.
#include "backend/cpu/kernels/conv_fast_impl.h"

namespace tessera::cpu::fconv {

namespace {

// 8 channels x 4 pixels: 8 of the 16 ymm registers hold even / odd sums.
__attribute__((target("avx2"))) void rows8(const Args& a, int64_t r0, int64_t r1, const Scratch& s) {
  rows<VecOf<8>::type, 8, 4, 1>(a, r0, r1, s);
}

// 32 channels x 4 pixels: 16 of the 32 zmm registers hold even / odd sums.
__attribute__((target("avx2,avx512f"))) void rows16(const Args& a, int64_t r0, int64_t r1, const Scratch& s) {
  rows<VecOf<16>::type, 16, 4, 2>(a, r0, r1, s);
}

}  // namespace

RowsFn rows_avx2() { return rows8; }
RowsFn rows_avx512() { return rows16; }

}  // namespace tessera::cpu::fconv

#endif  // __x86_64__
