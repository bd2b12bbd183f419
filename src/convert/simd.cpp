#include "convert/simd.h"

#if TESSERA_X86_64
#include <cpuid.h>
#endif

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace tessera::convert {

namespace {
SimdLevel detect() {
  if (const char* env = std::getenv("TESSERA_SIMD"); env && std::strcmp(env, "scalar") == 0) return SimdLevel::scalar;
  if (cpu_has_avx2()) return SimdLevel::avx2;
  if (cpu_has_neon()) return SimdLevel::neon;
  return SimdLevel::scalar;
}
std::atomic<int>& level_store() {
  static std::atomic<int> level{static_cast<int>(detect())};
  return level;
}
}  // namespace

bool cpu_has_avx2() {
#if TESSERA_X86_64
  __builtin_cpu_init();
  // F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not know "f16c"
  // (the fuzz targets build this file with clang).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
#else
  return false;
#endif
}

// Advanced SIMD (NEON) is mandatory in AArch64: every aarch64 CPU runs the NEON kernels.
bool cpu_has_neon() { return TESSERA_AARCH64 != 0; }

SimdLevel simd_level() { return static_cast<SimdLevel>(level_store().load(std::memory_order_relaxed)); }

SimdLevel set_simd_level(SimdLevel want) {
  SimdLevel got = want;
  if (want == SimdLevel::avx2 && !cpu_has_avx2()) got = SimdLevel::scalar;
  if (want == SimdLevel::neon && !cpu_has_neon()) got = SimdLevel::scalar;
  level_store().store(static_cast<int>(got), std::memory_order_relaxed);
  return got;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::neon: return "neon";
    default: return "scalar";
  }
}

}  // namespace tessera::convert
