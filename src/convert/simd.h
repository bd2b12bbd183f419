// Run-time choice between the portable scalar reference kernels and the SIMD fast paths:
// AVX2 on x86-64, NEON on aarch64.
//
// Every fast path has a scalar reference with bit-identical results; the level is chosen
// once from the CPU (and TESSERA_SIMD=scalar forces the reference) and tests switch it to
// compare the two on the same inputs. Architecture-specific code is compiled only for its
// architecture (cmake/arch.cmake): on other CPUs use_avx2() / use_neon() are constant false
// and the callers' SIMD branches are compiled out (TESSERA_X86_64 / TESSERA_AARCH64).
#pragma once

#if defined(__x86_64__)
#define TESSERA_X86_64 1
#else
#define TESSERA_X86_64 0
#endif
#if defined(__aarch64__)
#define TESSERA_AARCH64 1
#else
#define TESSERA_AARCH64 0
#endif

namespace tessera::convert {

enum class SimdLevel { scalar = 0, avx2 = 1, neon = 2 };

// The level the kernels use now.
SimdLevel simd_level();
// Requests a level; returns the one in effect: avx2 only on x86-64 CPUs with AVX2, FMA and
// F16C, neon only on aarch64 (where Advanced SIMD is part of the architecture), else scalar.
SimdLevel set_simd_level(SimdLevel want);
// Whether this CPU can run the AVX2 kernels (false on every other architecture).
bool cpu_has_avx2();
// Whether this build and CPU run the NEON kernels (true exactly on aarch64).
bool cpu_has_neon();
const char* simd_level_name(SimdLevel level);

// VNNI's int16 dot product (vpdpwssd) on 256-bit vectors, for the AVX2 kernels: vex with
// AVX-VNNI, evex with AVX512-VNNI and AVX512VL (and the OS saving AVX-512 state), none
// otherwise, on other architectures, or with TESSERA_SIMD=avx2 (AVX2 without VNNI) or
// TESSERA_SIMD=scalar in the environment.
enum class Vnni { none = 0, vex = 1, evex = 2 };
Vnni cpu_vnni();
// Whether the 512-bit VNNI kernels can run: AVX512F, BW, VL and VNNI with the OS saving
// AVX-512 state, besides AVX2 (false elsewhere and under the same TESSERA_SIMD settings).
bool cpu_avx512_vnni();
// Whether 512-bit kernels can run: AVX512F, BW and VL with the OS saving AVX-512 state, besides
// AVX2 (false elsewhere and under the same TESSERA_SIMD settings).
bool cpu_avx512();
// Whether the AVX512-VBMI byte permutes can run (AVX512F, BW and VBMI with the OS saving
// AVX-512 state; false elsewhere and under the same TESSERA_SIMD settings).
bool cpu_avx512_vbmi();

#if TESSERA_X86_64
inline bool use_avx2() { return simd_level() == SimdLevel::avx2; }
#else
constexpr bool use_avx2() { return false; }
#endif
#if TESSERA_AARCH64
inline bool use_neon() { return simd_level() == SimdLevel::neon; }
#else
constexpr bool use_neon() { return false; }
#endif

}  // namespace tessera::convert
