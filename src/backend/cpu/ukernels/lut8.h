// A byte table lookup, y[i] = table[x[i]], for the 8-bit ops whose 256 possible results are
// computed once (REQUANTIZE between 8-bit types, LOGISTIC / TANH). Portable code, and on x86-64
// CPUs with AVX512-VBMI 64 bytes per step (x86/lut8_avx512.cpp: two 128-byte vpermi2b halves
// chosen by each index's top bit); the same bytes either way.
#pragma once

#include <cstdint>

namespace tessera::cpu::uk {

using Lut8Fn = void (*)(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y);

// The definition.
void lut8_scalar(const uint8_t* x, int64_t n, const uint8_t* table, uint8_t* y);
#if defined(__x86_64__)
// The AVX512-VBMI kernel; nullptr unless convert::cpu_avx512_vbmi().
Lut8Fn avx512_vbmi_lut8();
#endif
// The kernel the cpu uses now (the scalar one under TESSERA_SIMD=scalar or =avx2, or with
// the scalar SIMD level set).
Lut8Fn lut8_kernel();

}  // namespace tessera::cpu::uk
