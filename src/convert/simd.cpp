#include "convert/simd.h"

#include <cpuid.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace tessera::convert {

namespace {
SimdLevel detect() {
  if (const char* env = std::getenv("TESSERA_SIMD"); env && std::strcmp(env, "scalar") == 0) return SimdLevel::scalar;
  return cpu_has_avx2() ? SimdLevel::avx2 : SimdLevel::scalar;
}
std::atomic<int>& level_store() {
  static std::atomic<int> level{static_cast<int>(detect())};
  return level;
}
}  // namespace

bool cpu_has_avx2() {
  __builtin_cpu_init();
  // F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports does not know "f16c"
  // (the fuzz targets build this file with clang).
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
}

SimdLevel simd_level() { return static_cast<SimdLevel>(level_store().load(std::memory_order_relaxed)); }

SimdLevel set_simd_level(SimdLevel want) {
  SimdLevel got = (want == SimdLevel::avx2 && !cpu_has_avx2()) ? SimdLevel::scalar : want;
  level_store().store(static_cast<int>(got), std::memory_order_relaxed);
  return got;
}

const char* simd_level_name(SimdLevel level) { return level == SimdLevel::avx2 ? "avx2" : "scalar"; }

}  // namespace tessera::convert
