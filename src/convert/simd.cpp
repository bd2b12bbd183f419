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

#if TESSERA_X86_64
namespace {

// TESSERA_SIMD=scalar or =avx2 in the environment: no VNNI kernels.
bool vnni_refused() {
  const char* env = std::getenv("TESSERA_SIMD");
  return env && (std::strcmp(env, "scalar") == 0 || std::strcmp(env, "avx2") == 0);
}

// Whether CPUID leaf 7 subleaf 0 reports every bit of `ebx_bits` in EBX and `ecx_bits` in
// ECX, and the OS saves the opmask and ZMM state (XCR0 bits 5-7) that any EVEX instruction
// needs (checked after OSXSAVE, CPUID leaf 1 ECX bit 27).
bool cpu_has_evex(unsigned ebx_bits, unsigned ecx_bits) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if ((ebx & ebx_bits) != ebx_bits || (ecx & ecx_bits) != ecx_bits) return false;
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  if (!__get_cpuid(1, &a1, &b1, &c1, &d1) || !(c1 & (1u << 27))) return false;
  unsigned lo = 0, hi = 0;
  asm volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0xE6u) == 0xE6u;
}

// Leaf 7 EBX: bit 16 AVX512F, bit 30 AVX512BW, bit 31 AVX512VL; ECX: bit 1 AVX512_VBMI,
// bit 11 AVX512_VNNI.
constexpr unsigned kAvx512FBw = (1u << 16) | (1u << 30), kAvx512FBwVl = kAvx512FBw | (1u << 31);
constexpr unsigned kVbmi = 1u << 1, kVnni = 1u << 11;

bool cpu_has_evex_vnni() { return cpu_has_evex(kAvx512FBwVl, kVnni); }

}  // namespace
#endif

Vnni cpu_vnni() {
#if TESSERA_X86_64
  if (vnni_refused() || !cpu_has_avx2()) return Vnni::none;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // CPUID leaf 7 subleaf 1, EAX bit 4: AVX-VNNI (VEX-encoded, AVX state only).
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0) return Vnni::vex;
  return cpu_has_evex_vnni() ? Vnni::evex : Vnni::none;
#else
  return Vnni::none;
#endif
}

bool cpu_avx512() {
#if TESSERA_X86_64
  return !vnni_refused() && cpu_has_avx2() && cpu_has_evex(kAvx512FBwVl, 0);
#else
  return false;
#endif
}

bool cpu_avx512_vbmi() {
#if TESSERA_X86_64
  return !vnni_refused() && cpu_has_avx2() && cpu_has_evex(kAvx512FBw, kVbmi);
#else
  return false;
#endif
}

bool cpu_avx512_vnni() {
#if TESSERA_X86_64
  return !vnni_refused() && cpu_has_avx2() && cpu_has_evex_vnni();
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
