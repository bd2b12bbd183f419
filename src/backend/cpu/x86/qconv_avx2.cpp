// x86-64 micro-kernels of the packed quantized conv path (see ukernels/qconv.h): the AVX2
// kernel set and the AVX2 one with VNNI's k steps (AVX-VNNI or AVX512-VNNI on ymm: vpdpwssd
// for the int16 products, vpdpbusd for the 8-bit GEMM). The kernels are in qconv_avx2.h,
// which the 512-bit set (qconv_avx512.cpp) shares.
#if defined(__x86_64__)
// (Every other header before the target pragma, so that nothing outside these kernels is
// compiled for AVX2.)
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/ukernels/qconv.h"
#include "convert/simd.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

#include "backend/cpu/x86/qconv_avx2.h"

namespace tessera::cpu::uk {

const QConvKernels& avx2_qconv_kernels() {
  static const QConvKernels k{centre, gemm_panel<Dot::madd>, dw_row, add, "avx2",
                              gemm_u8<Dot::madd, false>, gemm_u8<Dot::madd, true>, U8Split::pairs, kTileRows};
  return k;
}

const QConvKernels* avx2_vnni_qconv_kernels(convert::Vnni kind) {
  static const QConvKernels vex{centre, gemm_panel<Dot::vnni_vex>, dw_row, add, "avx2+avx-vnni",
                                gemm_u8<Dot::vnni_vex, false>, gemm_u8<Dot::vnni_vex, true>, U8Split::bytes, kTileRows};
  static const QConvKernels evex{centre, gemm_panel<Dot::vnni_evex>, dw_row, add, "avx2+avx512-vnni",
                                 gemm_u8<Dot::vnni_evex, false>, gemm_u8<Dot::vnni_evex, true>, U8Split::bytes, kTileRows};
  switch (kind) {
    case convert::Vnni::vex: return &vex;
    case convert::Vnni::evex: return &evex;
    default: return nullptr;
  }
}

}  // namespace tessera::cpu::uk

#pragma GCC pop_options
#endif  // __x86_64__
