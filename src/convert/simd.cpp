#include "convert/simd.h"

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
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

SimdLevel simd_level() { return static_cast<SimdLevel>(level_store().load(std::memory_order_relaxed)); }

SimdLevel set_simd_level(SimdLevel want) {
  SimdLevel got = (want == SimdLevel::avx2 && !cpu_has_avx2()) ? SimdLevel::scalar : want;
  level_store().store(static_cast<int>(got), std::memory_order_relaxed);
  return got;
}

const char* simd_level_name(SimdLevel level) { return level == SimdLevel::avx2 ? "avx2" : "scalar"; }

}  // namespace tessera::convert
