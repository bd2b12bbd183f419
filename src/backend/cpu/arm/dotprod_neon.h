// Whether this aarch64 CPU has the ARMv8.2 dot-product instructions (sdot / udot), from the
// Linux hwcaps; the kernels that use them are compiled for that extension and chosen at run
// time (arm/linear_kq_neon.cpp, arm/linear_q8_dot_neon.cpp).
#pragma once

#if defined(__aarch64__)
#include <sys/auxv.h>

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)  // the Linux aarch64 hwcap bit of the dot-product instructions
#endif

namespace tessera::cpu::arm {

inline bool has_dotprod() { return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0; }

}  // namespace tessera::cpu::arm

#endif  // __aarch64__
