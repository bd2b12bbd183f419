// NEON micro-kernels of the packed quantized conv path (see ukernels/qconv.h), for aarch64.
// Products are widening multiply-accumulates (smlal) of centred int16 operands into int32
// lanes, exact like the scalar kernels' int32 sums; the requantization is TFLite's
// fixed-point arithmetic on 4 lanes, the same integers as q::multiply (sqrdmulh is
// gemmlowp's rounding doubling high multiply, then a rounding divide by 2^rshift with ties
// away from zero) and q::multiply_single_round (a 64-bit rounding shift, saturated to
// int32 like the scalar definition). The tests compare them with the scalar kernels.
#if defined(__aarch64__)  // aarch64 only (cmake/arch.cmake leaves it out elsewhere)
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>

#include <algorithm>

#include <cstring>

#include "backend/cpu/ukernels/qconv.h"

namespace tessera::cpu::uk {

namespace {

// Requantization parameters of 4 channels, loaded once and applied to many rows.
struct Rq4 {
  int32x4_t bias, mult, lsh, neg_rsh, mask, half_mask;
  int64x2_t neg_ts_lo, neg_ts_hi;  // single rounding: -(31 - lshift + rshift) per 64-bit lane
};

// The fields derived from per-lane bias, Q31 multiplier and left / right shifts.
inline Rq4 make_rq4(int32x4_t bias, int32x4_t mult, int32x4_t lsh, int32x4_t rsh) {
  Rq4 v;
  v.bias = bias;
  v.mult = mult;
  v.lsh = lsh;
  v.neg_rsh = vnegq_s32(rsh);
  const int32x4_t one = vdupq_n_s32(1);
  v.mask = vsubq_s32(vshlq_s32(one, rsh), one);  // 2^rsh - 1 (wraps to INT32_MAX at 31)
  v.half_mask = vshrq_n_s32(v.mask, 1);
  const int32x4_t neg_ts = vsubq_s32(vsubq_s32(v.lsh, rsh), vdupq_n_s32(31));
  v.neg_ts_lo = vmovl_s32(vget_low_s32(neg_ts));
  v.neg_ts_hi = vmovl_high_s32(neg_ts);
  return v;
}

inline Rq4 load_rq4(const Requant& rq, int64_t ch) {
  return make_rq4(vld1q_s32(rq.bias + ch), vld1q_s32(rq.mult + ch), vld1q_s32(rq.lshift + ch),
                  vld1q_s32(rq.rshift + ch));
}

// q::multiply on 4 lanes. gemmlowp's SaturatingRoundingDoublingHighMul of (x << lshift) is
// sqrdmulh: both are floor((a * b + 2^30) / 2^31), saturating only INT32_MIN * INT32_MIN
// (mult >= 0 here); then the rounding divide by 2^rshift, ties away from zero.
inline int32x4_t multiply4(int32x4_t x, const Rq4& v) {
  const int32x4_t hi = vqrdmulhq_s32(vshlq_s32(x, v.lsh), v.mult);
  const int32x4_t rem = vandq_s32(hi, v.mask);
  const int32x4_t thr = vsubq_s32(v.half_mask, vshrq_n_s32(hi, 31));  // + 1 where negative
  return vsubq_s32(vshlq_s32(hi, v.neg_rsh), vreinterpretq_s32_u32(vcgtq_s32(rem, thr)));
}

// The multiplier of every lane the same (an ADD's operand or output rescale).
inline Rq4 uniform_rq4(int32_t mult, int32_t lshift, int32_t rshift) {
  return make_rq4(vdupq_n_s32(0), vdupq_n_s32(mult), vdupq_n_s32(lshift), vdupq_n_s32(rshift));
}

// 4 accumulators -> requantized, zero point added, clamped (int32 lanes).
inline int32x4_t requant4(int32x4_t acc, const Rq4& v, const Requant& rq) {
  const int32x4_t x = vaddq_s32(acc, v.bias);
  int32x4_t r;
  if (!rq.single_round) {
    r = multiply4(x, v);
  } else {
    // (x * mult + 2^(ts - 1)) >> ts on 64 bits (a rounding shift), then saturated to int32.
    const int64x2_t lo = vrshlq_s64(vmull_s32(vget_low_s32(x), vget_low_s32(v.mult)), v.neg_ts_lo);
    const int64x2_t hi = vrshlq_s64(vmull_high_s32(x, v.mult), v.neg_ts_hi);
    r = vcombine_s32(vqmovn_s64(lo), vqmovn_s64(hi));
  }
  r = vaddq_s32(r, vdupq_n_s32(rq.zp));
  r = vmaxq_s32(r, vdupq_n_s32(rq.lo));
  return vminq_s32(r, vdupq_n_s32(rq.hi));
}

// 16 requantized lanes in channel order (values already in the 8-bit range) -> bytes.
inline uint8x16_t pack16(int32x4_t a, int32x4_t b, int32x4_t c, int32x4_t d, bool i8) {
  const int16x8_t lo = vcombine_s16(vqmovn_s32(a), vqmovn_s32(b));
  const int16x8_t hi = vcombine_s16(vqmovn_s32(c), vqmovn_s32(d));
  if (i8) return vreinterpretq_u8_s8(vcombine_s8(vqmovn_s16(lo), vqmovn_s16(hi)));
  return vcombine_u8(vqmovun_s16(lo), vqmovun_s16(hi));
}

inline void store_bytes(uint8_t* y, uint8x16_t v, int n) {
  if (n == 16) {
    vst1q_u8(y, v);
  } else {
    uint8_t tmp[16];
    vst1q_u8(tmp, v);
    std::memcpy(y, tmp, static_cast<size_t>(n));
  }
}

void centre(const uint8_t* x, int64_t n, int32_t zp, bool is_i8, int16_t* out) {
  const int16x8_t z = vdupq_n_s16(static_cast<int16_t>(zp));
  int64_t i = 0;
  if (is_i8) {
    const int8_t* s = reinterpret_cast<const int8_t*>(x);
    for (; i + 16 <= n; i += 16) {
      const int8x16_t b = vld1q_s8(s + i);
      vst1q_s16(out + i, vsubq_s16(vmovl_s8(vget_low_s8(b)), z));
      vst1q_s16(out + i + 8, vsubq_s16(vmovl_high_s8(b), z));
    }
    for (; i < n; ++i) out[i] = static_cast<int16_t>(s[i] - zp);
  } else {
    for (; i + 16 <= n; i += 16) {
      const uint8x16_t b = vld1q_u8(x + i);
      vst1q_s16(out + i, vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(b))), z));
      vst1q_s16(out + i + 8, vsubq_s16(vreinterpretq_s16_u16(vmovl_high_u8(b)), z));
    }
    for (; i < n; ++i) out[i] = static_cast<int16_t>(x[i] - zp);
  }
}

inline int32_t load_pair(const int16_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Row R of the tile: c += a_R[2p] * b.val[0] + a_R[2p + 1] * b.val[1] for 16 columns, the
// operand pair taken from lanes 2(R%4), 2(R%4)+1 of a03 (rows 0-3) or a45 (rows 4-5).
struct Acc16 {
  int32x4_t c[4];
};

template <int R>
inline Acc16 row_mac(Acc16 acc, const int16x8x2_t& b0, const int16x8x2_t& b1, int16x8_t a03, int16x4_t a45) {
  int32x4_t c0 = acc.c[0], c1 = acc.c[1], c2 = acc.c[2], c3 = acc.c[3];
  if constexpr (R < 4) {
    constexpr int l = 2 * R;
    c0 = vmlal_laneq_s16(c0, vget_low_s16(b0.val[0]), a03, l);
    c0 = vmlal_laneq_s16(c0, vget_low_s16(b0.val[1]), a03, l + 1);
    c1 = vmlal_high_laneq_s16(c1, b0.val[0], a03, l);
    c1 = vmlal_high_laneq_s16(c1, b0.val[1], a03, l + 1);
    c2 = vmlal_laneq_s16(c2, vget_low_s16(b1.val[0]), a03, l);
    c2 = vmlal_laneq_s16(c2, vget_low_s16(b1.val[1]), a03, l + 1);
    c3 = vmlal_high_laneq_s16(c3, b1.val[0], a03, l);
    c3 = vmlal_high_laneq_s16(c3, b1.val[1], a03, l + 1);
  } else {
    constexpr int l = 2 * (R - 4);
    c0 = vmlal_lane_s16(c0, vget_low_s16(b0.val[0]), a45, l);
    c0 = vmlal_lane_s16(c0, vget_low_s16(b0.val[1]), a45, l + 1);
    c1 = vmlal_high_lane_s16(c1, b0.val[0], a45, l);
    c1 = vmlal_high_lane_s16(c1, b0.val[1], a45, l + 1);
    c2 = vmlal_lane_s16(c2, vget_low_s16(b1.val[0]), a45, l);
    c2 = vmlal_lane_s16(c2, vget_low_s16(b1.val[1]), a45, l + 1);
    c3 = vmlal_high_lane_s16(c3, b1.val[0], a45, l);
    c3 = vmlal_high_lane_s16(c3, b1.val[1], a45, l + 1);
  }
  return Acc16{{c0, c1, c2, c3}};
}

// One requantized row of the tile (the accumulators passed by value: in registers).
inline void store_row(Acc16 a, const Rq4& v0, const Rq4& v1, const Rq4& v2, const Rq4& v3, const Requant& rq,
                      int nvalid, uint8_t* y) {
  store_bytes(y,
              pack16(requant4(a.c[0], v0, rq), requant4(a.c[1], v1, rq), requant4(a.c[2], v2, rq),
                     requant4(a.c[3], v3, rq), rq.out_i8),
              nvalid);
}

// Rows 0..MR-1 of the tile: MR x 16 int32 accumulators (24 of the 32 vector registers at
// MR = 6), the panel's pair p loaded once as two de-interleaved halves per 8 columns, the
// rows' operand pairs gathered into two registers.
template <int MR>
inline void gemm_tile(int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Requant& rq,
                      int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  static_assert(MR >= 1 && MR <= 6);
  const int32x4_t z = vdupq_n_s32(0);
  Acc16 c0{{z, z, z, z}}, c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0;
  const int16_t* ar[6];
  for (int r = 0; r < 6; ++r) ar[r] = a + (r < MR ? r : 0) * lda;
  for (int64_t p = 0; p < kpairs; ++p) {
    // b.val[0]: first operand of the pair for 8 columns, b.val[1]: the second
    const int16x8x2_t b0 = vld2q_s16(panel + p * 32), b1 = vld2q_s16(panel + p * 32 + 16);
    int32x4_t q = vdupq_n_s32(load_pair(ar[0] + 2 * p));
    if constexpr (MR > 1) q = vsetq_lane_s32(load_pair(ar[1] + 2 * p), q, 1);
    if constexpr (MR > 2) q = vsetq_lane_s32(load_pair(ar[2] + 2 * p), q, 2);
    if constexpr (MR > 3) q = vsetq_lane_s32(load_pair(ar[3] + 2 * p), q, 3);
    int32x2_t h = vdup_n_s32(0);
    if constexpr (MR > 4) h = vset_lane_s32(load_pair(ar[4] + 2 * p), h, 0);
    if constexpr (MR > 5) h = vset_lane_s32(load_pair(ar[5] + 2 * p), h, 1);
    const int16x8_t a03 = vreinterpretq_s16_s32(q);
    const int16x4_t a45 = vreinterpret_s16_s32(h);
    c0 = row_mac<0>(c0, b0, b1, a03, a45);
    if constexpr (MR > 1) c1 = row_mac<1>(c1, b0, b1, a03, a45);
    if constexpr (MR > 2) c2 = row_mac<2>(c2, b0, b1, a03, a45);
    if constexpr (MR > 3) c3 = row_mac<3>(c3, b0, b1, a03, a45);
    if constexpr (MR > 4) c4 = row_mac<4>(c4, b0, b1, a03, a45);
    if constexpr (MR > 5) c5 = row_mac<5>(c5, b0, b1, a03, a45);
  }
  const Rq4 v0 = load_rq4(rq, n0), v1 = load_rq4(rq, n0 + 4), v2 = load_rq4(rq, n0 + 8), v3 = load_rq4(rq, n0 + 12);
  store_row(c0, v0, v1, v2, v3, rq, nvalid, y);
  if constexpr (MR > 1) store_row(c1, v0, v1, v2, v3, rq, nvalid, y + ldy);
  if constexpr (MR > 2) store_row(c2, v0, v1, v2, v3, rq, nvalid, y + 2 * ldy);
  if constexpr (MR > 3) store_row(c3, v0, v1, v2, v3, rq, nvalid, y + 3 * ldy);
  if constexpr (MR > 4) store_row(c4, v0, v1, v2, v3, rq, nvalid, y + 4 * ldy);
  if constexpr (MR > 5) store_row(c5, v0, v1, v2, v3, rq, nvalid, y + 5 * ldy);
}

void gemm_panel(int64_t m, int64_t kpairs, const int16_t* a, int64_t lda, const int16_t* panel, const Requant& rq,
                int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  int64_t r = 0;
  for (; r + kTileRows <= m; r += kTileRows)
    gemm_tile<kTileRows>(kpairs, a + r * lda, lda, panel, rq, n0, nvalid, y + r * ldy, ldy);
  switch (m - r) {
    case 1: gemm_tile<1>(kpairs, a + r * lda, lda, panel, rq, n0, nvalid, y + r * ldy, ldy); break;
    case 2: gemm_tile<2>(kpairs, a + r * lda, lda, panel, rq, n0, nvalid, y + r * ldy, ldy); break;
    case 3: gemm_tile<3>(kpairs, a + r * lda, lda, panel, rq, n0, nvalid, y + r * ldy, ldy); break;
    case 4: gemm_tile<4>(kpairs, a + r * lda, lda, panel, rq, n0, nvalid, y + r * ldy, ldy); break;
    case 5: gemm_tile<5>(kpairs, a + r * lda, lda, panel, rq, n0, nvalid, y + r * ldy, ldy); break;
    default: break;
  }
}

// Lane l of a group holds channel dw_lane_channel(l) (qconv.h): accumulator vectors q0..q3
// hold lanes 0-3 (channels 0-3), 4-7 (8-11), 8-11 (4-7) and 12-15 (12-15); the weights of
// lane l are at (pair * 32 + l * 2), the requantization arrays at group * 16 + l.
void dw_row(const DwRow& r) {
  const int pairs = (r.taps + 1) / 2;
  const int64_t groups = r.cpad / kPanel;
  // Blocks of output pixels, every channel group within a block, so the block's input
  // lines stay in L1 while the groups pass over them (as the AVX2 row does).
  constexpr int64_t kPixels = 8;
  for (int64_t ox0 = 0; ox0 < r.ow; ox0 += kPixels) {
    for (int64_t g = 0; g < groups; ++g) {
      const int16_t* wg = r.w + g * pairs * 32;
      const Rq4 v0 = load_rq4(*r.rq, g * kPanel), v1 = load_rq4(*r.rq, g * kPanel + 4),
                v2 = load_rq4(*r.rq, g * kPanel + 8), v3 = load_rq4(*r.rq, g * kPanel + 12);
      const int64_t left = r.channels - g * kPanel;
      const int nstore = left >= kPanel ? kPanel : static_cast<int>(left);
      for (int64_t ox = ox0; ox < std::min(r.ow, ox0 + kPixels); ++ox) {
        const int16_t* xg = r.x + ox * r.xstep + g * kPanel;
        int32x4_t q0 = vdupq_n_s32(0), q1 = q0, q2 = q0, q3 = q0;
        for (int p = 0; p < pairs; ++p) {
          const int t0 = 2 * p, t1 = 2 * p + 1;
          // w.val[0]: weights of tap t0 for 8 lanes, w.val[1]: of tap t1
          const int16x8x2_t wa = vld2q_s16(wg + p * 32), wb = vld2q_s16(wg + p * 32 + 16);
          const int16x8_t xa0 = vld1q_s16(xg + r.tap_off[t0]), xa1 = vld1q_s16(xg + r.tap_off[t0] + 8);
          q0 = vmlal_s16(q0, vget_low_s16(xa0), vget_low_s16(wa.val[0]));
          q1 = vmlal_s16(q1, vget_low_s16(xa1), vget_high_s16(wa.val[0]));
          q2 = vmlal_s16(q2, vget_high_s16(xa0), vget_low_s16(wb.val[0]));
          q3 = vmlal_high_s16(q3, xa1, wb.val[0]);
          if (t1 < r.taps) {
            const int16x8_t xb0 = vld1q_s16(xg + r.tap_off[t1]), xb1 = vld1q_s16(xg + r.tap_off[t1] + 8);
            q0 = vmlal_s16(q0, vget_low_s16(xb0), vget_low_s16(wa.val[1]));
            q1 = vmlal_s16(q1, vget_low_s16(xb1), vget_high_s16(wa.val[1]));
            q2 = vmlal_s16(q2, vget_high_s16(xb0), vget_low_s16(wb.val[1]));
            q3 = vmlal_high_s16(q3, xb1, wb.val[1]);
          }
        }
        // channel order: lanes 0-3, 8-11, 4-7, 12-15
        const uint8x16_t bytes = pack16(requant4(q0, v0, *r.rq), requant4(q2, v2, *r.rq), requant4(q1, v1, *r.rq),
                                        requant4(q3, v3, *r.rq), r.rq->out_i8);
        store_bytes(r.y + ox * r.channels + g * kPanel, bytes, nstore);
      }
    }
  }
}

// TFLite's quantized ADD / SUB (QAdd) on 16 operand pairs per step, as q::add_codes.
void add(const uint8_t* a, const uint8_t* b, int64_t n, const QAdd& p, uint8_t* y) {
  const Rq4 m1 = uniform_rq4(p.mult[0], p.lshift[0], p.rshift[0]);
  const Rq4 m2 = uniform_rq4(p.mult[1], p.lshift[1], p.rshift[1]);
  const Rq4 mo = uniform_rq4(p.mult[2], p.lshift[2], p.rshift[2]);
  const int32x4_t z1 = vdupq_n_s32(p.z1), z2 = vdupq_n_s32(p.z2), zo = vdupq_n_s32(p.zo);
  const int32x4_t lo = vdupq_n_s32(p.lo), hi = vdupq_n_s32(p.hi);
  // 16 codes as four int32x4 (lanes 0-3, 4-7, 8-11, 12-15).
  auto widen = [&](const uint8_t* s, int32x4_t out[4]) {
    const uint8x16_t v = vld1q_u8(s);
    int16x8_t l, h;
    if (p.i8) {
      l = vmovl_s8(vget_low_s8(vreinterpretq_s8_u8(v)));
      h = vmovl_high_s8(vreinterpretq_s8_u8(v));
    } else {
      l = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(v)));
      h = vreinterpretq_s16_u16(vmovl_high_u8(v));
    }
    out[0] = vmovl_s16(vget_low_s16(l)), out[1] = vmovl_high_s16(l);
    out[2] = vmovl_s16(vget_low_s16(h)), out[3] = vmovl_high_s16(h);
  };
  auto sixteen = [&](const uint8_t* pa, const uint8_t* pb) {
    constexpr int kShift = 20;  // TFLite add.cc's left shift for 8-bit operands
    int32x4_t va[4], vb[4], r[4];
    widen(pa, va);
    widen(pb, vb);
    for (int i = 0; i < 4; ++i) {
      const int32x4_t v1 = multiply4(vshlq_n_s32(vsubq_s32(va[i], z1), kShift), m1);
      const int32x4_t v2 = multiply4(vshlq_n_s32(vsubq_s32(vb[i], z2), kShift), m2);
      const int32x4_t sum = p.subtract ? vsubq_s32(v1, v2) : vaddq_s32(v1, v2);
      r[i] = vminq_s32(vmaxq_s32(vaddq_s32(multiply4(sum, mo), zo), lo), hi);
    }
    return pack16(r[0], r[1], r[2], r[3], p.i8);
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) vst1q_u8(y + i, sixteen(a + i, b + i));
  if (i < n) {
    uint8_t ta[16] = {}, tb[16] = {}, ty[16];
    const size_t rest = static_cast<size_t>(n - i);
    std::memcpy(ta, a + i, rest);
    std::memcpy(tb, b + i, rest);
    vst1q_u8(ty, sixteen(ta, tb));
    std::memcpy(y + i, ty, rest);
  }
}

// ---- 8-bit GEMM with the dot product instructions (Armv8.2 DotProd, GemmU8Fn) ----
//
// sdot multiplies four signed bytes of a weight vector lane by four signed bytes of the
// input and adds them into the int32 lane, exactly. The weights' parts are signed bytes
// (U8Split::bytes); the input bytes x (u8, or int8 read as x + 128) become signed as
// x - 128, so sum x s = sum (x - 128) s + 128 sum s, the last term per channel added to the
// bias once per call. A tile is 4 rows x 16 channels (16 accumulators); each 16-byte load of
// a row feeds four k quads through the by-lane form.
#pragma GCC push_options
#pragma GCC target("arch=armv8.2-a+dotprod")

template <int MR, bool kFlip>
inline void gemm_u8_tile_dp(int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const int32x4_t* base,
                            int32_t* acc) {
  int32x4_t c[MR][4];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < 4; ++j) c[r][j] = base[j];
  const uint8x16_t flip = vdupq_n_u8(kFlip ? 0 : 0x80);  // u8 input: x - 128 = x ^ 0x80 as int8
  int64_t q = 0;
  for (; q + 4 <= kquads; q += 4) {
    int8x16_t x[MR];
    for (int r = 0; r < MR; ++r) x[r] = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(a + r * lda + q * 4), flip));
#define TS_DP_QUAD(L)                                                                         \
  {                                                                                           \
    const int8_t* w = panel + (q + L) * 64;                                                   \
    const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), w2 = vld1q_s8(w + 32), w3 = vld1q_s8(w + 48); \
    for (int r = 0; r < MR; ++r) {                                                            \
      c[r][0] = vdotq_laneq_s32(c[r][0], w0, x[r], L);                                        \
      c[r][1] = vdotq_laneq_s32(c[r][1], w1, x[r], L);                                        \
      c[r][2] = vdotq_laneq_s32(c[r][2], w2, x[r], L);                                        \
      c[r][3] = vdotq_laneq_s32(c[r][3], w3, x[r], L);                                        \
    }                                                                                         \
  }
    TS_DP_QUAD(0)
    TS_DP_QUAD(1)
    TS_DP_QUAD(2)
    TS_DP_QUAD(3)
#undef TS_DP_QUAD
  }
  for (; q < kquads; ++q) {
    const int8_t* w = panel + q * 64;
    const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), w2 = vld1q_s8(w + 32), w3 = vld1q_s8(w + 48);
    for (int r = 0; r < MR; ++r) {
      uint32_t four;
      std::memcpy(&four, a + r * lda + q * 4, 4);
      const int8x16_t x = vreinterpretq_s8_u8(veorq_u8(vreinterpretq_u8_u32(vdupq_n_u32(four)), flip));
      c[r][0] = vdotq_laneq_s32(c[r][0], w0, x, 0);
      c[r][1] = vdotq_laneq_s32(c[r][1], w1, x, 0);
      c[r][2] = vdotq_laneq_s32(c[r][2], w2, x, 0);
      c[r][3] = vdotq_laneq_s32(c[r][3], w3, x, 0);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < 4; ++j) vst1q_s32(acc + r * kPanel + j * 4, c[r][j]);
}

template <bool kFlip>
void gemm_u8_dp(int64_t m, int64_t kquads, const uint8_t* a, int64_t lda, const int8_t* panel, const U8Fix* fix,
                int64_t nfix, const Requant& rq, int64_t n0, int nvalid, uint8_t* y, int64_t ldy) {
  // bias + 128 * sum_k s per channel (int32 modulo 2^32, as the lanes)
  const int8x16_t ones = vdupq_n_s8(1);
  int32x4_t base[4] = {vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)};
  for (int64_t q = 0; q < kquads; ++q)
    for (int j = 0; j < 4; ++j) base[j] = vdotq_s32(base[j], vld1q_s8(panel + q * 64 + j * 16), ones);
  for (int j = 0; j < 4; ++j)
    base[j] = vaddq_s32(vreinterpretq_s32_u32(vshlq_n_u32(vreinterpretq_u32_s32(base[j]), 7)),
                        vld1q_s32(rq.bias + n0 + j * 4));
  const int32x4_t zero = vdupq_n_s32(0);
  const auto rq4 = [&](int64_t ch) {
    return make_rq4(zero, vld1q_s32(rq.mult + ch), vld1q_s32(rq.lshift + ch), vld1q_s32(rq.rshift + ch));
  };
  const Rq4 v0 = rq4(n0), v1 = rq4(n0 + 4), v2 = rq4(n0 + 8), v3 = rq4(n0 + 12);
  constexpr int kRows = 4;
  int32_t acc[kRows * kPanel];
  for (int64_t r = 0; r < m; r += kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kRows, m - r));
    const uint8_t* ar = a + r * lda;
    switch (rows) {
      case 1: gemm_u8_tile_dp<1, kFlip>(kquads, ar, lda, panel, base, acc); break;
      case 2: gemm_u8_tile_dp<2, kFlip>(kquads, ar, lda, panel, base, acc); break;
      case 3: gemm_u8_tile_dp<3, kFlip>(kquads, ar, lda, panel, base, acc); break;
      default: gemm_u8_tile_dp<4, kFlip>(kquads, ar, lda, panel, base, acc); break;
    }
    for (int64_t f = 0; f < nfix; ++f)
      for (int i = 0; i < rows; ++i) {  // int32 modulo 2^32, as the lanes
        const uint32_t in = kFlip ? ar[i * lda + fix[f].k] ^ 0x80u : ar[i * lda + fix[f].k];
        int32_t& s = acc[i * kPanel + fix[f].lane];
        s = static_cast<int32_t>(static_cast<uint32_t>(s) + in * static_cast<uint32_t>(fix[f].r));
      }
    for (int i = 0; i < rows; ++i) {
      const int32_t* ai = acc + i * kPanel;
      store_row(Acc16{{vld1q_s32(ai), vld1q_s32(ai + 4), vld1q_s32(ai + 8), vld1q_s32(ai + 12)}}, v0, v1, v2, v3, rq,
                nvalid, y + (r + i) * ldy);
    }
  }
}

#pragma GCC pop_options

// Armv8.2 DotProd in this CPU (HWCAP_ASIMDDP from the kernel).
bool cpu_has_dotprod() {
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
}

}  // namespace

const QConvKernels& neon_qconv_kernels() {
  static const QConvKernels plain{centre, gemm_panel, dw_row, add, "neon", nullptr, nullptr, U8Split::pairs, kTileRows};
  static const QConvKernels dot{centre,          gemm_panel,          dw_row,          add, "neon+dotprod",
                                gemm_u8_dp<false>, gemm_u8_dp<true>, U8Split::bytes, 4};
  return cpu_has_dotprod() ? dot : plain;
}

}  // namespace tessera::cpu::uk

#endif  // __aarch64__
