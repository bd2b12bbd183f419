// The portable K-quant kernels of linear_kq.h (the definition of their arithmetic) and the
// run-time dispatch.
#include "backend/cpu/kernels/linear_kq.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "convert/gguf_kquants.h"
#include "convert/simd.h"

namespace tessera::cpu::kq {

namespace {

using convert::kquant_detail::f16_at;
using convert::kquant_detail::scale_min_k4;
using convert::kquant_detail::scale_q3_k;

constexpr int64_t kQ2KCodes = 16;   // byte offset of q2_K's 64 bytes of 2-bit codes (after 16 scales)
constexpr int64_t kQ2KD = 80;       // byte offset of q2_K's f16 d (dmin follows)
constexpr int64_t kQ3KCodes = 32;   // byte offset of q3_K's 2-bit codes (after the 32 hmask bytes)
constexpr int64_t kQ3KScales = 96;  // byte offset of q3_K's 12 scale bytes
constexpr int64_t kQ3KD = 108;      // byte offset of q3_K's f16 d
constexpr int64_t kQ4KScales = 4;   // byte offset of q4_K's 12 scale bytes (after d, dmin)
constexpr int64_t kQ4KCodes = 16;   // byte offset of q4_K's 128 nibble bytes
constexpr int64_t kQ5KHigh = 16;    // byte offset of q5_K's 32 bytes of fifth bits
constexpr int64_t kQ5KCodes = 48;   // byte offset of q5_K's 128 nibble bytes
constexpr int64_t kQ6KHigh = 128;   // byte offset of q6_K's 64 bytes of 2-bit highs
constexpr int64_t kQ6KScales = 192; // byte offset of q6_K's 16 int8 scales
constexpr int64_t kQ6KD = 208;      // byte offset of q6_K's f16 d

// One q4_K (qh = nullptr) or q5_K super-block against one Q8_K super-block: acc advanced as
// linear_kq.h says. qs: the 128 nibble bytes; qh: q5_K's 32 bytes of fifth bits.
float q4_5_k_block(const uint8_t* b, const uint8_t* qs, const uint8_t* qh, const int8_t* q, float dx,
                   const int16_t* bsums, float acc) {
  int32_t s = 0, mins = 0;
  for (int c = 0; c < 8; ++c) {
    int sc, m;
    scale_min_k4(b + kQ4KScales, c, sc, m);
    const int shift = 4 * (c % 2);
    int32_t t = 0;
    for (int l = 0; l < 32; ++l) {
      const int code = ((qs[32 * (c / 2) + l] >> shift) & 15) | (qh ? ((qh[l] >> c) & 1) << 4 : 0);
      t += code * int32_t{q[32 * c + l]};
    }
    s += sc * t;
    mins += m * (int32_t{bsums[2 * c]} + bsums[2 * c + 1]);
  }
  acc = std::fma(f16_at(b) * dx, static_cast<float>(s), acc);
  return std::fma(-(f16_at(b + 2) * dx), static_cast<float>(mins), acc);
}

// One q2_K super-block against one Q8_K super-block.
float q2_k_block(const uint8_t* b, const int8_t* q, float dx, const int16_t* bsums, float acc) {
  int32_t s = 0, mins = 0;
  for (int g = 0; g < 16; ++g) {  // 16-value group g: chunk c = g / 2 (gguf_kquants.h)
    const int c = g / 2, sc = b[g];
    const uint8_t* qs = b + kQ2KCodes + 32 * (c / 4) + 16 * (g % 2);
    int32_t t = 0;
    for (int l = 0; l < 16; ++l) t += ((qs[l] >> (2 * (c % 4))) & 3) * int32_t{q[16 * g + l]};
    s += (sc & 15) * t;
    mins += (sc >> 4) * int32_t{bsums[g]};
  }
  acc = std::fma(f16_at(b + kQ2KD) * dx, static_cast<float>(s), acc);
  return std::fma(-(f16_at(b + kQ2KD + 2) * dx), static_cast<float>(mins), acc);
}

// One q3_K super-block against one Q8_K super-block.
float q3_k_block(const uint8_t* b, const int8_t* q, float dx, float acc) {
  int32_t s = 0;
  for (int g = 0; g < 16; ++g) {
    const int c = g / 2;
    const int l0 = 16 * (g % 2);
    const uint8_t* qs = b + kQ3KCodes + 32 * (c / 4);
    int32_t t = 0;
    for (int l = l0; l < l0 + 16; ++l) {
      const int code = ((qs[l] >> (2 * (c % 4))) & 3) - ((b[l] >> c & 1) ? 0 : 4);
      t += code * int32_t{q[32 * c + l]};
    }
    s += (scale_q3_k(b + kQ3KScales, g) - 32) * t;
  }
  return std::fma(f16_at(b + kQ3KD) * dx, static_cast<float>(s), acc);
}

// One q6_K super-block against one Q8_K super-block.
float q6_k_block(const uint8_t* b, const int8_t* q, float dx, float acc) {
  const int8_t* scales = reinterpret_cast<const int8_t*>(b + kQ6KScales);
  int32_t s = 0;
  for (int c = 0; c < 8; ++c) {  // chunk c: values 32c .. 32c + 31 (gguf_kquants.h)
    const int half = c / 4, k = c % 4;
    const uint8_t* ql = b + 64 * half + 32 * (k & 1);
    const uint8_t* qh = b + kQ6KHigh + 32 * half;
    const int lshift = k < 2 ? 0 : 4, hshift = 2 * k;
    for (int g = 0; g < 2; ++g) {
      int32_t t = 0;
      for (int l = 16 * g; l < 16 * g + 16; ++l) {
        const int code = ((ql[l] >> lshift) & 15) | (((qh[l] >> hshift) & 3) << 4);
        t += (code - 32) * int32_t{q[32 * c + l]};
      }
      s += scales[8 * half + 2 * k + g] * t;
    }
  }
  return std::fma(f16_at(b + kQ6KD) * dx, static_cast<float>(s), acc);
}

// One iq4_xs super-block against one Q8_K super-block.
float iq4_xs_block(const uint8_t* b, const int8_t* q, float dx, float acc) {
  int32_t s = 0;
  for (int c = 0; c < 8; ++c) {
    const uint8_t* qs = b + 8 + 16 * c;
    int32_t t = 0;
    for (int l = 0; l < 16; ++l)
      t += convert::kIQ4Values[qs[l] & 15] * int32_t{q[32 * c + l]} +
           convert::kIQ4Values[qs[l] >> 4] * int32_t{q[32 * c + 16 + l]};
    s += convert::iq4_xs_scale(b, c) * t;
  }
  return std::fma(f16_at(b) * dx, static_cast<float>(s), acc);
}

}  // namespace

bool supported(DType wt) {
  return wt == DType::q2_k || wt == DType::q3_k || wt == DType::q4_k || wt == DType::q5_k || wt == DType::q6_k ||
         wt == DType::iq4_xs;
}

void quantize_row_q8k(const float* x, int64_t n, int8_t* q, float* d, int16_t* bsums) {
  for (int64_t b = 0; b < n / kSuper; ++b) {
    const float* xb = x + b * kSuper;
    int8_t* qb = q + b * kSuper;
    float amax = 0, max = 0;
    for (int i = 0; i < kSuper; ++i)
      if (std::fabs(xb[i]) > amax) amax = std::fabs(xb[i]), max = xb[i];
    if (amax == 0) {
      d[b] = 0;
      std::memset(qb, 0, kSuper);
    } else {
      const float iscale = -127.0f / max;
      // nearbyint rounds half to even in the default rounding mode (linear_kq.h).
      for (int i = 0; i < kSuper; ++i)
        qb[i] = static_cast<int8_t>(std::min(127.0f, std::nearbyint(iscale * xb[i])));
      d[b] = 1.0f / iscale;
    }
    for (int g = 0; g < kSuper / kGroup; ++g) {
      int t = 0;
      for (int i = 0; i < kGroup; ++i) t += qb[kGroup * g + i];
      bsums[b * (kSuper / kGroup) + g] = static_cast<int16_t>(t);
    }
  }
}

namespace scalar {

void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1) {
  const int64_t blocks = g.x.k / kSuper;
  const int64_t block_bytes = dtype_block_bytes(g.wt);
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = g.w + o * g.w_row_bytes;
    for (int64_t m = 0; m < g.x.m; ++m) {
      const int8_t* xq = g.x.q + m * g.x.k;
      const float* xd = g.x.d + m * blocks;
      const int16_t* xs = g.x.bsums + m * (g.x.k / kGroup);
      float acc = 0;
      for (int64_t i = 0; i < blocks; ++i) {
        const uint8_t* b = row + i * block_bytes;
        const int8_t* q = xq + i * kSuper;
        const int16_t* bs = xs + i * (kSuper / kGroup);
        if (g.wt == DType::q4_k) acc = q4_5_k_block(b, b + kQ4KCodes, nullptr, q, xd[i], bs, acc);
        else if (g.wt == DType::q5_k) acc = q4_5_k_block(b, b + kQ5KCodes, b + kQ5KHigh, q, xd[i], bs, acc);
        else if (g.wt == DType::q6_k) acc = q6_k_block(b, q, xd[i], acc);
        else if (g.wt == DType::q2_k) acc = q2_k_block(b, q, xd[i], bs, acc);
        else if (g.wt == DType::iq4_xs) acc = iq4_xs_block(b, q, xd[i], acc);
        else acc = q3_k_block(b, q, xd[i], acc);
      }
      g.y[m * g.ldy + o] = acc;
    }
  }
}

}  // namespace scalar

#if defined(__x86_64__)
void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1) {
  convert::use_avx2() ? avx2::gemm_kquant(g, o0, o1) : scalar::gemm_kquant(g, o0, o1);
}
#elif defined(__aarch64__)
void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1) {
  static const bool dotprod = neon::available();
  dotprod ? neon::gemm_kquant(g, o0, o1) : scalar::gemm_kquant(g, o0, o1);
}
#else
void gemm_kquant(const KQuantGemm& g, int64_t o0, int64_t o1) { scalar::gemm_kquant(g, o0, o1); }
#endif

}  // namespace tessera::cpu::kq
