// Run-time choice between the portable scalar reference kernels and the AVX2 fast paths.
//
// Every fast path has a scalar reference with bit-identical results; the level is chosen
// once from the CPU (and TESSERA_SIMD=scalar forces the reference) and tests switch it to
// compare the two on the same inputs.
#pragma once

namespace tessera::convert {

enum class SimdLevel { scalar = 0, avx2 = 1 };

// The level the kernels use now.
SimdLevel simd_level();
// Requests a level; returns the one in effect (avx2 only when the CPU has AVX2, FMA and F16C).
SimdLevel set_simd_level(SimdLevel want);
// Whether this CPU can run the AVX2 kernels.
bool cpu_has_avx2();
const char* simd_level_name(SimdLevel level);

inline bool use_avx2() { return simd_level() == SimdLevel::avx2; }

}  // namespace tessera::convert
