// x86-64 micro-kernels of the packed quantized conv path (see ukernels/qconv.h) on 512-bit
// vectors, the AVX512-VNNI kernel set (functions marked TS_AVX512_VNNI): the 8-bit GEMM
// (vpdpbusd, 12 rows x two panels, its k loop in asm), its requantization (rescale16, or
// the float form rescale16f where float_requant_form found one, inside the asm tile for
// whole tiles), depthwise rows, ADD / SUB and input centring. Where its own forms do not
// apply it takes the AVX2 kernels of qconv_avx2.h.
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
namespace {

// ---- u8 x s8 GEMM on 512-bit vectors (AVX512-VNNI) ----
//
// One zmm holds a panel's 16 channels, so a row's k quad is one broadcast and one vpdpbusd;
// 12 rows per tile give 12 independent sums (enough to cover vpdpbusd's latency at two per
// cycle) in 12 of the 32 registers. The accumulators go through `acc` to the AVX2
// requantization, as in gemm_u8.
#define TS_AVX512_VNNI __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
// GCC 12 reports the undefined pass-through operand of its own AVX-512 shift intrinsics
// (_mm512_undefined_epi32) as uninitialized where they are not inlined into their caller.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
constexpr int kZmmTileRows = 12;

// The full 12-row tile of two panels, written out (the compiled intrinsics keep a few row
// addresses on the stack, about 15% slower on Zen 5): 24 accumulators zmm0-23, the panels'
// vectors zmm24 / zmm25, the broadcast zmm26, the flip constant zmm27; row r at
// a0 / a3 / a6 / a9 + (0, 1, 2) lda. 12 cycles per k quad on Zen 5 (two vpdpbusd a cycle).
#define TS_ZROW(BASE, IDX, A0, A1, FLIP)                                   \
  "vpbroadcastd " BASE IDX ", %%zmm26\n\t" FLIP                              \
  "vpdpbusd %%zmm24, %%zmm26, %%zmm" A0 "\n\t"                              \
  "vpdpbusd %%zmm25, %%zmm26, %%zmm" A1 "\n\t"
// The float form of the requantization (Requant::fscale, float_requant_form) on 16 lanes
// (make_fq16 below).
struct Fq16 {
  __m512 scale, off_pos, off_neg;
};

// The tile's bias loads and k loop (asm text).
#define TS_ZLOOP12_TEXT(FLIP)                                                                               \
  "vmovdqu32 (%[bias]), %%zmm0\n\t"                                                                         \
  "vmovdqu32 64(%[bias]), %%zmm1\n\t"                                                                       \
  "vmovdqa32 %%zmm0, %%zmm2\n\t vmovdqa32 %%zmm1, %%zmm3\n\t"                                               \
  "vmovdqa32 %%zmm0, %%zmm4\n\t vmovdqa32 %%zmm1, %%zmm5\n\t"                                               \
  "vmovdqa32 %%zmm0, %%zmm6\n\t vmovdqa32 %%zmm1, %%zmm7\n\t"                                               \
  "vmovdqa32 %%zmm0, %%zmm8\n\t vmovdqa32 %%zmm1, %%zmm9\n\t"                                               \
  "vmovdqa32 %%zmm0, %%zmm10\n\t vmovdqa32 %%zmm1, %%zmm11\n\t"                                             \
  "vmovdqa32 %%zmm0, %%zmm12\n\t vmovdqa32 %%zmm1, %%zmm13\n\t"                                             \
  "vmovdqa32 %%zmm0, %%zmm14\n\t vmovdqa32 %%zmm1, %%zmm15\n\t"                                             \
  "vmovdqa32 %%zmm0, %%zmm16\n\t vmovdqa32 %%zmm1, %%zmm17\n\t"                                             \
  "vmovdqa32 %%zmm0, %%zmm18\n\t vmovdqa32 %%zmm1, %%zmm19\n\t"                                             \
  "vmovdqa32 %%zmm0, %%zmm20\n\t vmovdqa32 %%zmm1, %%zmm21\n\t"                                             \
  "vmovdqa32 %%zmm0, %%zmm22\n\t vmovdqa32 %%zmm1, %%zmm23\n\t"                                             \
  "vpbroadcastd %[flipc], %%zmm27\n\t"                                                                      \
  "test %[n], %[n]\n\t"                                                                                     \
  "jle 2f\n\t"                                                                                              \
  "1:\n\t"                                                                                                  \
  "vmovdqu64 (%[b]), %%zmm24\n\t"                                                                           \
  "vmovdqu64 (%[b],%[ps]), %%zmm25\n\t"                                                                     \
  TS_ZROW("(%[a0]", ")", "0", "1", FLIP)                                                                    \
  TS_ZROW("(%[a0],%[s]", ")", "2", "3", FLIP)                                                               \
  TS_ZROW("(%[a0],%[s],2", ")", "4", "5", FLIP)                                                             \
  TS_ZROW("(%[a3]", ")", "6", "7", FLIP)                                                                    \
  TS_ZROW("(%[a3],%[s]", ")", "8", "9", FLIP)                                                               \
  TS_ZROW("(%[a3],%[s],2", ")", "10", "11", FLIP)                                                           \
  TS_ZROW("(%[a6]", ")", "12", "13", FLIP)                                                                  \
  TS_ZROW("(%[a6],%[s]", ")", "14", "15", FLIP)                                                             \
  TS_ZROW("(%[a6],%[s],2", ")", "16", "17", FLIP)                                                           \
  TS_ZROW("(%[a9]", ")", "18", "19", FLIP)                                                                  \
  TS_ZROW("(%[a9],%[s]", ")", "20", "21", FLIP)                                                             \
  TS_ZROW("(%[a9],%[s],2", ")", "22", "23", FLIP)                                                           \
  "add $64, %[b]\n\t"                                                                                       \
  "add $4, %[a0]\n\t add $4, %[a3]\n\t add $4, %[a6]\n\t add $4, %[a9]\n\t"                                 \
  "dec %[n]\n\t"                                                                                            \
  "jnz 1b\n\t"                                                                                              \
  "2:\n\t"
#define TS_ZCLOBBER                                                                                          \
  "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",  \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",    \
      "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29"
#define TS_ZLOOP12(FLIP)                                                                                    \
  asm volatile(                                                                                              \
      TS_ZLOOP12_TEXT(FLIP)                                                                                  \
      "vmovdqu32 %%zmm0, (%[o])\n\t vmovdqu32 %%zmm1, 64(%[o])\n\t"                                          \
      "vmovdqu32 %%zmm2, 128(%[o])\n\t vmovdqu32 %%zmm3, 192(%[o])\n\t"                                      \
      "vmovdqu32 %%zmm4, 256(%[o])\n\t vmovdqu32 %%zmm5, 320(%[o])\n\t"                                      \
      "vmovdqu32 %%zmm6, 384(%[o])\n\t vmovdqu32 %%zmm7, 448(%[o])\n\t"                                      \
      "vmovdqu32 %%zmm8, 512(%[o])\n\t vmovdqu32 %%zmm9, 576(%[o])\n\t"                                      \
      "vmovdqu32 %%zmm10, 640(%[o])\n\t vmovdqu32 %%zmm11, 704(%[o])\n\t"                                    \
      "vmovdqu32 %%zmm12, 768(%[o])\n\t vmovdqu32 %%zmm13, 832(%[o])\n\t"                                    \
      "vmovdqu32 %%zmm14, 896(%[o])\n\t vmovdqu32 %%zmm15, 960(%[o])\n\t"                                    \
      "vmovdqu32 %%zmm16, 1024(%[o])\n\t vmovdqu32 %%zmm17, 1088(%[o])\n\t"                                  \
      "vmovdqu32 %%zmm18, 1152(%[o])\n\t vmovdqu32 %%zmm19, 1216(%[o])\n\t"                                  \
      "vmovdqu32 %%zmm20, 1280(%[o])\n\t vmovdqu32 %%zmm21, 1344(%[o])\n\t"                                  \
      "vmovdqu32 %%zmm22, 1408(%[o])\n\t vmovdqu32 %%zmm23, 1472(%[o])\n\t"                                  \
      : [b] "+r"(b), [a0] "+r"(a0), [a3] "+r"(a3), [a6] "+r"(a6), [a9] "+r"(a9), [n] "+r"(n)                  \
      : [s] "r"(lda), [ps] "r"(pstride), [o] "r"(acc), [bias] "r"(bias), [flipc] "m"(kFlipWord)              \
      : TS_ZCLOBBER)

// The float form's requantization of row sums ACC0 / ACC1 (the two panels) in place, their
// bytes (as int8, XOR: then flipped to u8 less 128 as bytes16_zmm's kind 3) to ADDR and
// ADDR + 16: zmm24 / zmm25 the panels' scales, zmm26 / zmm27 their offsets, xmm28 0x80s.
#define TS_ZRQ(ACC0, ACC1, ADDR, XOR)                                                       \
  "vcvtdq2ps %{rn-sae%}, %%zmm" ACC0 ", %%zmm" ACC0 "\n\t"                                    \
  "vcvtdq2ps %{rn-sae%}, %%zmm" ACC1 ", %%zmm" ACC1 "\n\t"                                    \
  "vfmadd213ps %{rn-sae%}, %%zmm26, %%zmm24, %%zmm" ACC0 "\n\t"                               \
  "vfmadd213ps %{rn-sae%}, %%zmm27, %%zmm25, %%zmm" ACC1 "\n\t"                               \
  "vcvtps2dq %{rd-sae%}, %%zmm" ACC0 ", %%zmm" ACC0 "\n\t"                                    \
  "vcvtps2dq %{rd-sae%}, %%zmm" ACC1 ", %%zmm" ACC1 "\n\t"                                    \
  "vpmovsdb %%zmm" ACC0 ", %%xmm29\n\t" XOR "vmovdqu32 %%xmm29, " ADDR "\n\t"                    \
  "vpmovsdb %%zmm" ACC1 ", %%xmm29\n\t" XOR "vmovdqu32 %%xmm29, 16" ADDR "\n\t"
#define TS_ZLOOP12_RQ(FLIP, XOR)                                                                            \
  asm volatile(                                                                                              \
      TS_ZLOOP12_TEXT(FLIP)                                                                                  \
      "vmovaps (%[f0]), %%zmm24\n\t vmovaps (%[f1]), %%zmm25\n\t"                                            \
      "vmovaps 64(%[f0]), %%zmm26\n\t vmovaps 64(%[f1]), %%zmm27\n\t"                                        \
      "vpbroadcastd %[flipc], %%xmm28\n\t"                                                                   \
      "lea (%[y],%[ly],2), %[a3]\n\t add %[ly], %[a3]\n\t"                                                   \
      "lea (%[a3],%[ly],2), %[a6]\n\t add %[ly], %[a6]\n\t"                                                  \
      "lea (%[a6],%[ly],2), %[a9]\n\t add %[ly], %[a9]\n\t"                                                  \
      TS_ZRQ("0", "1", "(%[y])", XOR)                                                                        \
      TS_ZRQ("2", "3", "(%[y],%[ly])", XOR)                                                                  \
      TS_ZRQ("4", "5", "(%[y],%[ly],2)", XOR)                                                                \
      TS_ZRQ("6", "7", "(%[a3])", XOR)                                                                       \
      TS_ZRQ("8", "9", "(%[a3],%[ly])", XOR)                                                                 \
      TS_ZRQ("10", "11", "(%[a3],%[ly],2)", XOR)                                                             \
      TS_ZRQ("12", "13", "(%[a6])", XOR)                                                                     \
      TS_ZRQ("14", "15", "(%[a6],%[ly])", XOR)                                                               \
      TS_ZRQ("16", "17", "(%[a6],%[ly],2)", XOR)                                                             \
      TS_ZRQ("18", "19", "(%[a9])", XOR)                                                                     \
      TS_ZRQ("20", "21", "(%[a9],%[ly])", XOR)                                                               \
      TS_ZRQ("22", "23", "(%[a9],%[ly],2)", XOR)                                                             \
      : [b] "+r"(b), [a0] "+r"(a0), [a3] "+r"(a3), [a6] "+r"(a6), [a9] "+r"(a9), [n] "+r"(n)                  \
      : [s] "r"(lda), [ps] "r"(pstride), [bias] "r"(bias), [flipc] "m"(kFlipWord), [f0] "r"(f0),             \
        [f1] "r"(f1), [y] "r"(y), [ly] "r"(ldy)                                                              \
      : TS_ZCLOBBER)

constexpr uint32_t kFlipWord = 0x80808080u;

template <bool kFlip>
TS_AVX512_VNNI __attribute__((noinline)) void gemm_u8_zmm_loop12x2(int64_t kquads, const uint8_t* a, int64_t lda,
                                                                   const int8_t* panel, const int32_t* bias,
                                                                   int32_t* acc) {
  const uint8_t* a0 = a;
  const uint8_t* a3 = a + 3 * lda;
  const uint8_t* a6 = a + 6 * lda;
  const uint8_t* a9 = a + 9 * lda;
  const int8_t* b = panel;
  const int64_t pstride = kquads * 64;
  int64_t n = kquads;
  if constexpr (kFlip)
    TS_ZLOOP12("vpxord %%zmm27, %%zmm26, %%zmm26\n\t");
  else
    TS_ZLOOP12("");
}

// The same tile requantized in registers with the float form (the panels' Fq16 at f0, f1),
// without the sign term, for whole-range output (kU8: u8 output, bytes16_zmm's kind 3; else
// int8, kind 1), no fixes, 16 valid channels in both panels; row r's 32 bytes at y + r ldy.
template <bool kFlip, bool kU8>
TS_AVX512_VNNI __attribute__((noinline)) void gemm_u8_zmm_loop12x2_rq(int64_t kquads, const uint8_t* a, int64_t lda,
                                                                      const int8_t* panel, const int32_t* bias,
                                                                      const Fq16* f0, const Fq16* f1, uint8_t* y,
                                                                      int64_t ldy) {
  const uint8_t* a0 = a;
  const uint8_t* a3 = a + 3 * lda;
  const uint8_t* a6 = a + 6 * lda;
  const uint8_t* a9 = a + 9 * lda;
  const int8_t* b = panel;
  const int64_t pstride = kquads * 64;
  int64_t n = kquads;
#define TS_XOR "vpxord %%xmm28, %%xmm29, %%xmm29\n\t"
  if constexpr (kFlip && kU8)
    TS_ZLOOP12_RQ("vpxord %%zmm27, %%zmm26, %%zmm26\n\t", TS_XOR);
  else if constexpr (kFlip)
    TS_ZLOOP12_RQ("vpxord %%zmm27, %%zmm26, %%zmm26\n\t", "");
  else if constexpr (kU8)
    TS_ZLOOP12_RQ("", TS_XOR);
  else
    TS_ZLOOP12_RQ("", "");
#undef TS_XOR
}

#undef TS_ZLOOP12_RQ
#undef TS_ZRQ
#undef TS_ZLOOP12
#undef TS_ZCLOBBER
#undef TS_ZLOOP12_TEXT
#undef TS_ZROW

template <int MR, int NP, bool kFlip>
TS_AVX512_VNNI __attribute__((noinline)) void gemm_u8_zmm_rows(int64_t kquads, const uint8_t* a, int64_t lda,
                                                               const int8_t* panel, const int32_t* bias,
                                                               int32_t* acc) {
  // Few sums (a tail of one to three rows): several chains per sum over alternate k quads,
  // added at the end, so that vpdpbusd's latency does not serialize the loop.
  constexpr int kChains = MR * NP <= 2 ? 4 : MR * NP <= 6 ? 2 : 1;
  const __m512i flip = _mm512_set1_epi32(static_cast<int32_t>(0x80808080u));
  const int64_t pstride = kquads * 64;  // the next panel
  __m512i c[kChains][MR][NP];
#pragma GCC unroll 2
  for (int p = 0; p < NP; ++p) {
    const __m512i b = _mm512_loadu_si512(bias + p * kPanel);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      c[0][r][p] = b;
#pragma GCC unroll 4
      for (int h = 1; h < kChains; ++h) c[h][r][p] = _mm512_setzero_si512();
    }
  }
  // (A macro, not a lambda: clang compiles lambdas without the function's target.)
#define TS_ZSTEP(H, Q)                                                                        \
  {                                                                                           \
    __m512i w[NP];                                                                            \
    for (int p = 0; p < NP; ++p) w[p] = _mm512_loadu_si512(panel + p * pstride + (Q) * 64);   \
    for (int r = 0; r < MR; ++r) {                                                            \
      int32_t four;                                                                           \
      std::memcpy(&four, a + r * lda + (Q) * 4, 4);                                           \
      __m512i av = _mm512_set1_epi32(four);                                                   \
      if constexpr (kFlip) av = _mm512_xor_si512(av, flip);                                   \
      for (int p = 0; p < NP; ++p) c[H][r][p] = _mm512_dpbusd_epi32(c[H][r][p], av, w[p]);    \
    }                                                                                         \
  }
  int64_t q = 0;
  for (; q + kChains <= kquads; q += kChains)
#pragma GCC unroll 4
    for (int h = 0; h < kChains; ++h) TS_ZSTEP(h, q + h)
  for (; q < kquads; ++q) TS_ZSTEP(0, q)
#undef TS_ZSTEP
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 2
    for (int p = 0; p < NP; ++p) {
      __m512i sum = c[0][r][p];
#pragma GCC unroll 4
      for (int h = 1; h < kChains; ++h) sum = _mm512_add_epi32(sum, c[h][r][p]);
      _mm512_store_si512(acc + (r * NP + p) * kPanel, sum);
    }
}

// rescale_hi32 on 16 lanes: the constants of 16 channels (Requant arrays from `ch`), built
// from the arrays in a few vector operations; make_rq16 returns false where some lane
// does not allow the form (hi32_constants' conditions), the caller then takes the AVX2
// forms.
struct Rq16 {
  __m512i mult, mult_odd, ce, co, t;
};

TS_AVX512_VNNI inline bool make_rq16(const Requant& rq, int64_t ch, Rq16& v) {
  const __m512i mult = _mm512_loadu_si512(rq.mult + ch);
  const __m512i lsh = _mm512_loadu_si512(rq.lshift + ch), rsh = _mm512_loadu_si512(rq.rshift + ch);
  const __m512i one64 = _mm512_set1_epi64(1), low32 = _mm512_set1_epi64(0xffffffffLL);
  v.mult = mult;
  v.mult_odd = _mm512_srli_epi64(mult, 32);
  if (rq.single_round) {
    // (p + 2^(ts-1)) >> ts, ts = 31 - lsh + rsh >= 32 on every lane
    const __m512i ts = _mm512_add_epi32(_mm512_sub_epi32(_mm512_set1_epi32(31), lsh), rsh);
    if (_mm512_cmplt_epi32_mask(ts, _mm512_set1_epi32(32)) != 0) return false;
    v.ce = _mm512_sllv_epi64(one64, _mm512_sub_epi64(_mm512_and_si512(ts, low32), one64));
    v.co = _mm512_sllv_epi64(one64, _mm512_sub_epi64(_mm512_srli_epi64(ts, 32), one64));
    v.t = _mm512_sub_epi32(ts, _mm512_set1_epi32(32));
  } else {
    // double rounding with lsh = 0 and rsh >= 1 on every lane: c = 2^30 + 2^(30 + rsh),
    // less 2^31 where the product is negative (rescale16 applies that), t = rsh - 1
    if (_mm512_test_epi32_mask(lsh, lsh) != 0 || _mm512_cmplt_epi32_mask(rsh, _mm512_set1_epi32(1)) != 0)
      return false;
    const __m512i base = _mm512_set1_epi64(int64_t{1} << 30);
    v.ce = _mm512_add_epi64(base, _mm512_sllv_epi64(base, _mm512_and_si512(rsh, low32)));
    v.co = _mm512_add_epi64(base, _mm512_sllv_epi64(base, _mm512_srli_epi64(rsh, 32)));
    v.t = _mm512_sub_epi32(rsh, _mm512_set1_epi32(1));
  }
  // The output zero point folded into the constants: zp * 2^(32 + t) per lane, so that the
  // floor comes out with it added (the low dwords, which double rounding's sign term reads,
  // are unchanged). |zp| <= 256 and t <= 20 keep the high dwords within int32
  // (|p + c| < 2^62, so |high| < 2^30, plus at most 2^28).
  if (rq.zp < -256 || rq.zp > 256 || _mm512_cmpgt_epi32_mask(v.t, _mm512_set1_epi32(20)) != 0) return false;
  const __m512i z = _mm512_set1_epi64(rq.zp), b32 = _mm512_set1_epi64(32);
  v.ce = _mm512_add_epi64(v.ce, _mm512_sllv_epi64(z, _mm512_add_epi64(_mm512_and_si512(v.t, low32), b32)));
  v.co = _mm512_add_epi64(v.co, _mm512_sllv_epi64(z, _mm512_add_epi64(_mm512_srli_epi64(v.t, 32), b32)));
  return true;
}

// 16 sums (bias included) -> requantized int32 before the zero point (kSigned: double
// rounding, the constant following the product's sign).
template <bool kSigned>
//
// The 64-bit sums p + c of the even and odd lanes give each lane's high dword (and, for
// double rounding, its low dword) through one two-source permute each. Double rounding's
// constant is 2^31 less where p < 0 (p has x's sign: the multiplier is positive): taking
// 2^31 from a 64-bit sum lowers its high dword by one exactly where the low dword is below
// 2^31, so the negative lanes with a low dword of bit 31 clear lose one.
TS_AVX512_VNNI inline __m512i rescale16(__m512i x, const Rq16& v) {
  const __m512i se = _mm512_add_epi64(_mm512_mul_epi32(x, v.mult), v.ce);
  const __m512i so = _mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), v.mult_odd), v.co);
  const __m512i hi_idx = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  __m512i h = _mm512_permutex2var_epi32(se, hi_idx, so);
  if constexpr (kSigned) {
    const __m512i lo_idx = _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    const __m512i l = _mm512_permutex2var_epi32(se, lo_idx, so);
    const __m512i zero = _mm512_setzero_si512();
    const __mmask16 borrow = _mm512_mask_cmpge_epi32_mask(_mm512_cmplt_epi32_mask(x, zero), l, zero);
    h = _mm512_mask_sub_epi32(h, borrow, h, _mm512_set1_epi32(1));
  }
  return _mm512_srav_epi32(h, v.t);
}

// The float form of the requantization (Requant::fscale, float_requant_form) on 16 lanes:
// make_fq16 returns false unless every lane of the 16 channels from `ch` has it.

TS_AVX512_VNNI inline bool make_fq16(const Requant& rq, int64_t ch, Fq16& v) {
  if (!rq.fscale) return false;
  v.scale = _mm512_loadu_ps(rq.fscale + ch);
  if (_mm512_cmp_ps_mask(v.scale, _mm512_setzero_ps(), _CMP_GT_OQ) != 0xFFFF) return false;
  v.off_pos = _mm512_loadu_ps(rq.foff_pos + ch);
  v.off_neg = _mm512_loadu_ps(rq.foff_neg + ch);
  return true;
}

// 16 sums (bias included) -> floor(fma(float(x), scale, offset)): the requantized value
// less float_rq_base (kSigned: the offset following x's sign). Rounding modes are the
// instructions' own (round to nearest, then down), whatever MXCSR says.
template <bool kSigned>
TS_AVX512_VNNI inline __m512i rescale16f(__m512i x, const Fq16& v) {
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512 xf = _mm512_cvt_roundepi32_ps(x, kNearest);
  __m512 off = v.off_pos;
  if constexpr (kSigned) off = _mm512_mask_mov_ps(off, _mm512_cmplt_epi32_mask(x, _mm512_setzero_si512()), v.off_neg);
  return _mm512_cvt_roundps_epi32(_mm512_fmadd_round_ps(xf, v.scale, off, kNearest),
                                  _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

// + zero point, the clamp on int32 (as requantize()), narrowed by truncation (exact: the
// values are in the output type's range).
// Whether rescale16 needs double rounding's sign term. Not where the activation range
// starts at or above the zero point (ReLU, ReLU6): a negative sum x then rounds to at most 0
// either way (with the non-negative constant, (x M + c) / 2^(31 + s) < c / 2^(31 + s) < 1),
// so both results clamp to the range's low end.
inline bool sign_term(const Requant& rq) { return !rq.single_round && rq.lo < rq.zp; }

// (The zero point is already in: make_rq16 folds it into the rounding constants.) Where the
// activation range is the whole output type, a saturating narrowing is the clamp.
// The float form's values come less float_rq_base (128 for u8 output): kinds 3 and 4 narrow
// them as int8 and flip the top bit (v + 128 and v ^ 0x80 have the same low byte).
struct Out16 {
  __m512i lo, hi;
  // 0: clamp to [lo, hi] then narrow; 1: int8, whole range; 2: u8, whole range; 3: u8 less
  // 128, whole range; 4: u8 less 128, clamped to [lo, hi] (bounds less 128)
  int kind;
};
TS_AVX512_VNNI inline Out16 make_out16(const Requant& rq) {
  const int kind = rq.out_i8 && rq.lo <= -128 && rq.hi >= 127 ? 1 : !rq.out_i8 && rq.lo <= 0 && rq.hi >= 255 ? 2 : 0;
  return {_mm512_set1_epi32(rq.lo), _mm512_set1_epi32(rq.hi), kind};
}
// The same for the float form's values.
TS_AVX512_VNNI inline Out16 make_out16f(const Requant& rq) {
  const int32_t base = float_rq_base(rq.out_i8);
  Out16 o{_mm512_set1_epi32(rq.lo - base), _mm512_set1_epi32(rq.hi - base), make_out16(rq).kind};
  if (!rq.out_i8) o.kind = o.kind == 2 ? 3 : 4;
  return o;
}
// kKind: o.kind, fixed by the caller.
template <int kKind>
TS_AVX512_VNNI inline __m128i bytes16_zmm(__m512i v, const Out16& o) {
  if constexpr (kKind == 1) return _mm512_cvtsepi32_epi8(v);
  if constexpr (kKind == 2) return _mm512_cvtusepi32_epi8(_mm512_max_epi32(v, _mm512_setzero_si512()));
  if constexpr (kKind == 3) return _mm_xor_si128(_mm512_cvtsepi32_epi8(v), _mm_set1_epi8(static_cast<char>(0x80)));
  const __m128i b = _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(v, o.lo), o.hi));
  return kKind == 4 ? _mm_xor_si128(b, _mm_set1_epi8(static_cast<char>(0x80))) : b;
}

// The requantization of `rows` rows of 16 sums (they started from the bias), one zmm per
// row, after the panel's fixes (added in the vector: each a masked add of the row's input
// byte times its rest), stored under a mask of the valid channels.
template <bool kFloat, bool kSigned, bool kFlip, int kKind>
TS_AVX512_VNNI inline void requant_rows_zmm(const int32_t* acc, int64_t acc_step, int rows, const uint8_t* a,
                                            int64_t lda, const U8Fix* fix, int64_t nfix, const Rq16& v,
                                            const Fq16& fv, const Out16& out, int nvalid, uint8_t* y,
                                            int64_t ldy) {
  const __mmask16 keep = static_cast<__mmask16>(nvalid >= 16 ? 0xFFFFu : (1u << nvalid) - 1u);
  for (int r = 0; r < rows; ++r) {
    __m512i s = _mm512_load_si512(acc + r * acc_step);
    for (int64_t f = 0; f < nfix; ++f) {  // int32 modulo 2^32, as the scalar definition
      const int32_t in = kFlip ? a[r * lda + fix[f].k] ^ 0x80 : a[r * lda + fix[f].k];
      s = _mm512_mask_add_epi32(s, static_cast<__mmask16>(1u << fix[f].lane), s,
                                _mm512_set1_epi32(static_cast<int32_t>(static_cast<uint32_t>(in) *
                                                                       static_cast<uint32_t>(fix[f].r))));
    }
    const __m512i q = kFloat ? rescale16f<kSigned>(s, fv) : rescale16<kSigned>(s, v);
    if (nvalid >= 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + r * ldy), bytes16_zmm<kKind>(q, out));
    else
      _mm_mask_storeu_epi8(y + r * ldy, keep, bytes16_zmm<kKind>(q, out));
  }
}

// The panel's fixes and the 512-bit requantization with v16 (the panel's constants, where
// they allow it), else the fixes and the AVX2 rows (sums at acc, rows acc_step apart).
template <bool kFlip>
TS_AVX512_VNNI __attribute__((always_inline)) inline void gemm_u8_zmm_finish(int32_t* acc, int64_t acc_step, int rows, const uint8_t* a, int64_t lda,
                                       const U8Fix* fix, int64_t nfix, const Requant& rq, const Rq16* v16,
                                       const Fq16* f16, const Out16* out, int64_t n0, int nvalid, uint8_t* y,
                                       int64_t ldy) {
  if (f16) {
    const int kind = out[1].kind;
#define TS_RQ_ROWS(S, K) \
  requant_rows_zmm<true, S, kFlip, K>(acc, acc_step, rows, a, lda, fix, nfix, Rq16{}, *f16, out[1], nvalid, y, ldy)
    if (!sign_term(rq)) {
      if (kind == 3) TS_RQ_ROWS(false, 3);
      else if (kind == 4) TS_RQ_ROWS(false, 4);
      else if (kind == 1) TS_RQ_ROWS(false, 1);
      else TS_RQ_ROWS(false, 0);
    } else {
      if (kind == 3) TS_RQ_ROWS(true, 3);
      else if (kind == 4) TS_RQ_ROWS(true, 4);
      else if (kind == 1) TS_RQ_ROWS(true, 1);
      else TS_RQ_ROWS(true, 0);
    }
#undef TS_RQ_ROWS
    return;
  }
  if (v16) {
    const int kind = out[0].kind;
#define TS_RQ_ROWS(S, K) \
  requant_rows_zmm<false, S, kFlip, K>(acc, acc_step, rows, a, lda, fix, nfix, *v16, Fq16{}, out[0], nvalid, y, ldy)
    if (!sign_term(rq)) {
      if (kind == 2) TS_RQ_ROWS(false, 2);
      else if (kind == 1) TS_RQ_ROWS(false, 1);
      else TS_RQ_ROWS(false, 0);
    } else {
      if (kind == 2) TS_RQ_ROWS(true, 2);
      else if (kind == 1) TS_RQ_ROWS(true, 1);
      else TS_RQ_ROWS(true, 0);
    }
#undef TS_RQ_ROWS
    return;
  }
  for (int64_t f = 0; f < nfix; ++f) {
    const U8Fix& fx = fix[f];
    for (int r = 0; r < rows; ++r) {  // int32 modulo 2^32, as the vector lanes
      const int32_t in = kFlip ? a[r * lda + fx.k] ^ 0x80 : a[r * lda + fx.k];
      int32_t& s = acc[r * acc_step + fx.lane];
      s = static_cast<int32_t>(static_cast<uint32_t>(s) + static_cast<uint32_t>(in * fx.r));
    }
  }
  const PanelRq prq(rq, n0);
  for (int r = 0; r < rows; ++r) {
    const __m256i c0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * acc_step));
    const __m256i c1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + r * acc_step + 8));
    store_tile_row<false>(c0, c1, prq.v0, prq.v1, rq, prq.out, nvalid, y + r * ldy);
  }
}

// NP (1 or 2) adjacent panels: channels n0 .. n0 + 16 NP - 1, the last panel's nvalid of
// them valid, its fixes fix1 (the first one's fix0).
template <int NP, bool kFlip>
TS_AVX512_VNNI void gemm_u8_zmm_np(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel,
                    const U8Fix* fix0, int64_t nfix0, const U8Fix* fix1, int64_t nfix1, const Requant& rq, int64_t n0,
                    int nvalid, uint8_t* y, int64_t ldy) {
  const int32_t* bias = rq.bias + n0;
  alignas(64) int32_t acc[kZmmTileRows * NP * kPanel];
  using RowsFn = void (*)(int64_t, const uint8_t*, int64_t, const int8_t*, const int32_t*, int32_t*);
  static constexpr RowsFn kRows[kZmmTileRows + 1] = {
      nullptr,
      gemm_u8_zmm_rows<1, NP, kFlip>,
      gemm_u8_zmm_rows<2, NP, kFlip>,
      gemm_u8_zmm_rows<3, NP, kFlip>,
      gemm_u8_zmm_rows<4, NP, kFlip>,
      gemm_u8_zmm_rows<5, NP, kFlip>,
      gemm_u8_zmm_rows<6, NP, kFlip>,
      gemm_u8_zmm_rows<7, NP, kFlip>,
      gemm_u8_zmm_rows<8, NP, kFlip>,
      gemm_u8_zmm_rows<9, NP, kFlip>,
      gemm_u8_zmm_rows<10, NP, kFlip>,
      gemm_u8_zmm_rows<11, NP, kFlip>,
      gemm_u8_zmm_rows<12, NP, kFlip>,
  };
  const RowsFn full = NP == 2 ? gemm_u8_zmm_loop12x2<kFlip> : kRows[kZmmTileRows];
  // Each panel's constants: the float form where it has one (the integer form's are then
  // not needed), else rescale16's where they apply.
  Fq16 f16[NP];
  const Fq16* f0 = make_fq16(rq, n0, f16[0]) ? &f16[0] : nullptr;
  const Fq16* f1 = NP == 2 && make_fq16(rq, n0 + kPanel, f16[NP - 1]) ? &f16[NP - 1] : nullptr;
  Rq16 v16[NP];
  const Rq16* v0 = !f0 && make_rq16(rq, n0, v16[0]) ? &v16[0] : nullptr;
  const Rq16* v1 = NP == 2 && !f1 && make_rq16(rq, n0 + kPanel, v16[NP - 1]) ? &v16[NP - 1] : nullptr;
  const Out16 out[2] = {make_out16(rq), make_out16f(rq)};  // rescale16's, rescale16f's
  // whole two-panel tiles requantized in the asm tile: float form, no sign term or fixes,
  // whole-range output, every channel valid
  const bool fused = NP == 2 && f0 && f1 && !sign_term(rq) && nfix0 == 0 && nfix1 == 0 && nvalid == kPanel &&
                     (out[1].kind == 3 || out[1].kind == 1);
  for (int64_t r = 0; r < m; r += kZmmTileRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kZmmTileRows, m - r));
    if (fused && rows == kZmmTileRows) {
      (out[1].kind == 3 ? gemm_u8_zmm_loop12x2_rq<kFlip, true> : gemm_u8_zmm_loop12x2_rq<kFlip, false>)(
          kquads, a + r * lda, lda, panel, bias, f0, f1, y + r * ldy, ldy);
      continue;
    }
    (rows == kZmmTileRows ? full : kRows[rows])(kquads, a + r * lda, lda, panel, bias, acc);
    if constexpr (NP == 1) {
      gemm_u8_zmm_finish<kFlip>(acc, kPanel, rows, a + r * lda, lda, fix0, nfix0, rq, v0, f0, out, n0, nvalid,
                                y + r * ldy, ldy);
    } else {
      gemm_u8_zmm_finish<kFlip>(acc, 2 * kPanel, rows, a + r * lda, lda, fix0, nfix0, rq, v0, f0, out, n0, kPanel,
                                y + r * ldy, ldy);
      gemm_u8_zmm_finish<kFlip>(acc + kPanel, 2 * kPanel, rows, a + r * lda, lda, fix1, nfix1, rq, v1, f1,
                                out, n0 + kPanel, nvalid, y + r * ldy + kPanel, ldy);
    }
  }
}

template <bool kFlip>
void gemm_u8_zmm(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const U8Fix* fix,
                 int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  gemm_u8_zmm_np<1, kFlip>(m, kquads, a, lda, panel, fix, nfix, nullptr, 0, rq, n0, nvalid, y, ldy);
}

template <bool kFlip>
void gemm_u8_zmm_pair(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel,
                      const U8Fix* fix0, int64_t nfix0, const U8Fix* fix1, int64_t nfix1, const Requant& rq,
                      int64_t n0, int nvalid1, uint8_t* y, int64_t ldy) {
  gemm_u8_zmm_np<2, kFlip>(m, kquads, a, lda, panel, fix0, nfix0, fix1, nfix1, rq, n0, nvalid1, y, ldy);
}


// ---- depthwise row on 512-bit vectors (AVX512-VNNI) ----
//
// Two channel groups per vector: 32 centred int16 inputs per tap, the pair of taps
// interleaved per 128-bit lane as dw_row_t does (so the low 256 bits are group g exactly
// as the AVX2 row has it, the high 256 bits group g + 1), one vpdpwssd per vector and tap
// pair. Each pair of groups goes across the whole row with its weights and requantization
// constants in registers (the float form, rescale16f, where both groups have it, else
// rescale16), each pixel's sums requantized and stored as they come: sums stored to the
// stack for a later pass made the next pixels' input loads wait behind those stores. A
// last odd group reads its 16 inputs under a mask (nothing beyond them is touched) with
// zero weights above. Ops whose constants allow neither form take dw_row_t.

// n bytes of `bytes` (grown as needed) from a 64-byte boundary.
inline unsigned char* aligned64(std::vector<unsigned char>& bytes, size_t n) {
  if (bytes.size() < n + 64) bytes.resize(n + 64);
  const uintptr_t misalign = reinterpret_cast<uintptr_t>(bytes.data()) % 64;
  return bytes.data() + (misalign ? 64 - misalign : 0);
}

// 16 requantized lanes of a group (row-kernel lane order: dwords 0, 2, 1, 3 of the bytes are
// channels 0-3, 4-7, 8-11, 12-15) stored in channel order under `keep`.
template <int kKind>
TS_AVX512_VNNI inline void dw_store16(uint8_t* p, __mmask16 keep, __m512i q, const Out16& out) {
  const __m128i b = _mm_shuffle_epi32(bytes16_zmm<kKind>(q, out), 0xD8);
  if (keep == 0xFFFF)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b);
  else
    _mm_mask_storeu_epi8(p, keep, b);
}

constexpr int kDwMaxPairs = 8;  // 15 or 16 taps; more: dw_row_t

// Groups g and g + 1 (g + 1 < groups: `two`) of the row; kFloat: rescale16f with fq16[g],
// else rescale16 with rq16[g]. kSign, kKind: as rescale16 / rescale16f and bytes16_zmm.
template <int TAPS, bool kFloat, bool kSign, int kKind>
TS_AVX512_VNNI void dw_pair_zmm(const DwRow& r, int64_t g, bool two, const int64_t* off, const Rq16* rq16,
                                const Fq16* fq16, const Out16& out) {
  const int taps = TAPS > 0 ? TAPS : r.taps;
  const int pairs = (taps + 1) / 2;
  const __mmask32 in_mask = two ? 0xFFFFFFFFu : 0x0000FFFFu;
  __m512i wlo[kDwMaxPairs], whi[kDwMaxPairs];
  const int16_t* w0 = r.w + g * pairs * 32;
  const int16_t* w1 = w0 + pairs * 32;
#pragma GCC unroll 8
  for (int p = 0; p < (TAPS > 0 ? (TAPS + 1) / 2 : kDwMaxPairs); ++p) {
    if (TAPS == 0 && p >= pairs) break;
    const __m256i lo1 = two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + p * 32)) : _mm256_setzero_si256();
    const __m256i hi1 =
        two ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + p * 32 + 16)) : _mm256_setzero_si256();
    wlo[p] = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + p * 32))), lo1, 1);
    whi[p] = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + p * 32 + 16))), hi1, 1);
  }
  const int64_t g1 = two ? g + 1 : g;
  const __m512i bias0 = _mm512_loadu_si512(r.rq->bias + g * kPanel);
  const __m512i bias1 = _mm512_loadu_si512(r.rq->bias + g1 * kPanel);
  const Fq16 f0 = kFloat ? fq16[g] : Fq16{}, f1 = kFloat ? fq16[g1] : Fq16{};
  const Rq16 v0 = kFloat ? Rq16{} : rq16[g], v1 = kFloat ? Rq16{} : rq16[g1];
  const int64_t left0 = r.channels - g * kPanel, left1 = left0 - kPanel;
  const __mmask16 keep0 = static_cast<__mmask16>(left0 >= kPanel ? 0xFFFFu : (1u << left0) - 1u);
  const __mmask16 keep1 =
      static_cast<__mmask16>(!two || left1 <= 0 ? 0u : left1 >= kPanel ? 0xFFFFu : (1u << left1) - 1u);
  const int16_t* xg = r.x + g * kPanel;
  uint8_t* y = r.y + g * kPanel;
  for (int64_t ox = 0; ox < r.ow; ++ox, xg += r.xstep, y += r.channels) {
    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int p = 0; p < (TAPS > 0 ? (TAPS + 1) / 2 : kDwMaxPairs); ++p) {
      if (TAPS == 0 && p >= pairs) break;
      const __m512i xa = _mm512_maskz_loadu_epi16(in_mask, xg + off[2 * p]);
      const __m512i xb =
          2 * p + 1 < taps ? _mm512_maskz_loadu_epi16(in_mask, xg + off[2 * p + 1]) : _mm512_setzero_si512();
      lo = _mm512_dpwssd_epi32(lo, _mm512_unpacklo_epi16(xa, xb), wlo[p]);
      hi = _mm512_dpwssd_epi32(hi, _mm512_unpackhi_epi16(xa, xb), whi[p]);
    }
    // group g: the low 256 bits of lo and hi; group g + 1: the high ones
    const __m512i a0 = _mm512_add_epi32(_mm512_shuffle_i64x2(lo, hi, 0x44), bias0);
    dw_store16<kKind>(y, keep0, kFloat ? rescale16f<kSign>(a0, f0) : rescale16<kSign>(a0, v0), out);
    if (keep1) {
      const __m512i a1 = _mm512_add_epi32(_mm512_shuffle_i64x2(lo, hi, 0xEE), bias1);
      dw_store16<kKind>(y + kPanel, keep1, kFloat ? rescale16f<kSign>(a1, f1) : rescale16<kSign>(a1, v1), out);
    }
  }
}

template <int TAPS>
TS_AVX512_VNNI void dw_row_zmm_t(const DwRow& r) {
  const int taps = TAPS > 0 ? TAPS : r.taps;
  const int pairs = (taps + 1) / 2;
  const int64_t groups = r.cpad / kPanel;
  // The op's constants per group and the form of each pair of groups (pair_float[g / 2]:
  // the float form, which both groups then have; else rescale16's, which both then have),
  // made by its first row on this thread.
  thread_local std::vector<unsigned char> rq_bytes, fq_bytes;
  thread_local std::vector<bool> pair_float;
  Rq16* rq16 = reinterpret_cast<Rq16*>(aligned64(rq_bytes, static_cast<size_t>(groups) * sizeof(Rq16)));
  Fq16* fq16 = reinterpret_cast<Fq16*>(aligned64(fq_bytes, static_cast<size_t>(groups) * sizeof(Fq16)));
  thread_local bool avx2_rows = false;  // some pair of groups has neither form
  if (!r.same_op) {
    avx2_rows = false;
    pair_float.assign(static_cast<size_t>((groups + 1) / 2), false);
    bool f_ok[2] = {false, false}, r_ok[2] = {false, false};
    for (int64_t g = 0; g < groups; ++g) {
      f_ok[g % 2] = make_fq16(*r.rq, g * kPanel, fq16[g]);
      r_ok[g % 2] = make_rq16(*r.rq, g * kPanel, rq16[g]);
      if (g % 2 == 1 || g + 1 == groups) {
        const bool two = g % 2 == 1;
        pair_float[g / 2] = f_ok[0] && (!two || f_ok[1]);
        if (!pair_float[g / 2] && !(r_ok[0] && (!two || r_ok[1]))) avx2_rows = true;
      }
    }
  }
  if (avx2_rows) {
    if constexpr (TAPS > 0) {
      dw_row_t<TAPS>(r);
    } else {
      dw_row_t<0>(r);
    }
    return;
  }
  const Out16 out_i = make_out16(*r.rq), out_f = make_out16f(*r.rq);
  const bool sign = sign_term(*r.rq);
  int64_t off[kDwMaxPairs * 2];
  for (int t = 0; t < 2 * pairs; ++t) off[t] = t < taps ? r.tap_off[t] : 0;
  for (int64_t g = 0; g < groups; g += 2) {
    const bool two = g + 1 < groups;
    const bool fl = pair_float[g / 2];
#define TS_DW_PAIR(F, S, K) dw_pair_zmm<TAPS, F, S, K>(r, g, two, off, rq16, fq16, F ? out_f : out_i)
    if (fl) {
      if (sign) {
        if (out_f.kind == 3) TS_DW_PAIR(true, true, 3);
        else if (out_f.kind == 4) TS_DW_PAIR(true, true, 4);
        else if (out_f.kind == 1) TS_DW_PAIR(true, true, 1);
        else TS_DW_PAIR(true, true, 0);
      } else {
        if (out_f.kind == 3) TS_DW_PAIR(true, false, 3);
        else if (out_f.kind == 4) TS_DW_PAIR(true, false, 4);
        else if (out_f.kind == 1) TS_DW_PAIR(true, false, 1);
        else TS_DW_PAIR(true, false, 0);
      }
    } else if (sign) {
      if (out_i.kind == 2) TS_DW_PAIR(false, true, 2);
      else if (out_i.kind == 1) TS_DW_PAIR(false, true, 1);
      else TS_DW_PAIR(false, true, 0);
    } else {
      if (out_i.kind == 2) TS_DW_PAIR(false, false, 2);
      else if (out_i.kind == 1) TS_DW_PAIR(false, false, 1);
      else TS_DW_PAIR(false, false, 0);
    }
#undef TS_DW_PAIR
  }
}

TS_AVX512_VNNI void dw_row_zmm(const DwRow& r) {
  if (r.taps == 9)
    dw_row_zmm_t<9>(r);
  else if (r.taps <= 16)
    dw_row_zmm_t<0>(r);
  else
    dw_row_t<0>(r);
}

// centre on 32 lanes: out[i] = x[i] - zp as int16 (u8 or int8 input).
TS_AVX512_VNNI void centre_zmm(const uint8_t* x, int64_t n, int32_t zp, bool is_i8, int16_t* out) {
  const __m512i z = _mm512_set1_epi16(static_cast<int16_t>(zp));
  int64_t i = 0;
  if (is_i8) {
    for (; i + 32 <= n; i += 32)
      _mm512_storeu_si512(out + i, _mm512_sub_epi16(_mm512_cvtepi8_epi16(_mm256_loadu_si256(
                                                         reinterpret_cast<const __m256i*>(x + i))),
                                                     z));
  } else {
    for (; i + 32 <= n; i += 32)
      _mm512_storeu_si512(out + i, _mm512_sub_epi16(_mm512_cvtepu8_epi16(_mm256_loadu_si256(
                                                         reinterpret_cast<const __m256i*>(x + i))),
                                                     z));
  }
  if (i < n) {
    const __mmask32 k = static_cast<__mmask32>((uint64_t{1} << (n - i)) - 1);
    const __m256i b = _mm256_maskz_loadu_epi8(k, x + i);
    const __m512i w = is_i8 ? _mm512_cvtepi8_epi16(b) : _mm512_cvtepu8_epi16(b);
    _mm512_mask_storeu_epi16(out + i, k, _mm512_sub_epi16(w, z));
  }
}

// TFLite's ADD / SUB (as add above) on 16 lanes. An operand's rescale with multiplier 1/2
// (the larger operand scale's: shift 0) is the rounding doubling high multiply alone,
// floor((p + 2^30) / 2^31) (srdhm_even / srdhm_odd's form); the others take rescale16's
// double-rounding form where it applies, else the whole op the AVX2 add.
struct AddRescale16 {
  Rq16 v;
  bool high_only = false;  // shift 0: the high multiply alone
  __m512i mult, mult_odd;
};

TS_AVX512_VNNI bool add_rescale16(int32_t mult, int32_t lshift, int32_t rshift, AddRescale16& r) {
  r.mult = _mm512_set1_epi32(mult);
  r.mult_odd = _mm512_set1_epi64(mult);
  r.high_only = lshift == 0 && rshift == 0;
  if (r.high_only) return true;
  alignas(64) int32_t m[16], l[16], s[16];
  for (int i = 0; i < 16; ++i) m[i] = mult, l[i] = lshift, s[i] = rshift;
  Requant rq;
  rq.mult = m, rq.lshift = l, rq.rshift = s;
  return make_rq16(rq, 0, r.v);
}

TS_AVX512_VNNI inline __m512i add_rescale(__m512i x, const AddRescale16& r) {
  if (!r.high_only) return rescale16<true>(x, r.v);
  const __m512i c = _mm512_set1_epi64(int64_t{1} << 30);
  const __m512i even = _mm512_srli_epi64(_mm512_add_epi64(_mm512_mul_epi32(x, r.mult), c), 31);
  const __m512i odd = _mm512_slli_epi64(_mm512_add_epi64(_mm512_mul_epi32(_mm512_srli_epi64(x, 32), r.mult_odd), c), 1);
  return _mm512_mask_blend_epi32(0xAAAA, even, odd);
}

// 16 operand pairs of add_zmm -> bytes.
TS_AVX512_VNNI inline __m128i add16(__m128i va, __m128i vb, const QAdd& p, const AddRescale16& m1,
                                    const AddRescale16& m2, const Rq16& mo, __m512i z1, __m512i z2, __m512i zo,
                                    __m512i lo, __m512i hi) {
  constexpr int kShift = 20;  // TFLite add.cc's left shift for 8-bit operands
  const __m512i wa = p.i8 ? _mm512_cvtepi8_epi32(va) : _mm512_cvtepu8_epi32(va);
  const __m512i wb = p.i8 ? _mm512_cvtepi8_epi32(vb) : _mm512_cvtepu8_epi32(vb);
  const __m512i v1 = add_rescale(_mm512_slli_epi32(_mm512_sub_epi32(wa, z1), kShift), m1);
  const __m512i v2 = add_rescale(_mm512_slli_epi32(_mm512_sub_epi32(wb, z2), kShift), m2);
  const __m512i s = p.subtract ? _mm512_sub_epi32(v1, v2) : _mm512_add_epi32(v1, v2);
  const __m512i r = _mm512_add_epi32(rescale16<true>(s, mo), zo);
  return _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(r, lo), hi));
}

TS_AVX512_VNNI void add_zmm(const uint8_t* a, const uint8_t* b, int64_t n, const QAdd& p, uint8_t* y) {
  AddRescale16 m1, m2;
  Rq16 mo;
  alignas(64) int32_t om[16], ol[16], os[16];
  for (int i = 0; i < 16; ++i) om[i] = p.mult[2], ol[i] = p.lshift[2], os[i] = p.rshift[2];
  Requant orq;
  orq.mult = om, orq.lshift = ol, orq.rshift = os;
  if (!add_rescale16(p.mult[0], p.lshift[0], p.rshift[0], m1) || !add_rescale16(p.mult[1], p.lshift[1], p.rshift[1], m2) ||
      !make_rq16(orq, 0, mo)) {
    add(a, b, n, p, y);
    return;
  }
  const __m512i z1 = _mm512_set1_epi32(p.z1), z2 = _mm512_set1_epi32(p.z2), zo = _mm512_set1_epi32(p.zo);
  const __m512i lo = _mm512_set1_epi32(p.lo), hi = _mm512_set1_epi32(p.hi);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     add16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)),
                           _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)), p, m1, m2, mo, z1, z2, zo, lo, hi));
  if (i < n) {
    const __mmask16 k = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm_mask_storeu_epi8(y + i, k,
                         add16(_mm_maskz_loadu_epi8(k, a + i), _mm_maskz_loadu_epi8(k, b + i), p, m1, m2, mo, z1, z2, zo,
                               lo, hi));
  }
}

}  // namespace

const QConvKernels* avx512_vnni_qconv_kernels() {
  static const QConvKernels k{centre_zmm, gemm_panel<Dot::vnni_evex>, dw_row_zmm, add_zmm, "avx512-vnni",
                              gemm_u8_zmm<false>, gemm_u8_zmm<true>, U8Split::bytes, kZmmTileRows,
                              gemm_u8_zmm_pair<false>, gemm_u8_zmm_pair<true>, /*float_requant=*/true};
  return convert::cpu_avx512_vnni() ? &k : nullptr;
}

}  // namespace tessera::cpu::uk

#pragma GCC pop_options
#endif  // __x86_64__
