// Element casts between plain encodings: the scalar references, the dispatchers to the
// AVX2 kernels (dtype_avx2.cpp) and the generic cast through float or int64 chunks.
#include "convert/dtype.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "convert/simd.h"

namespace tessera::convert {

// ---- f16 ------------------------------------------------------------------------------

uint16_t f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u) return kF16NaN;
  // 65520 = 0x477FF000 is the midpoint between 65504 (largest f16) and 65536: ties go to
  // the even neighbour, which is Inf.
  if (x >= 0x477FF000u) return sign | 0x7C00u;
  if (x >= 0x38800000u) {  // >= 2^-14: a normal f16
    // Rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even; a
    // carry out of the mantissa correctly bumps the exponent.
    uint32_t odd = (x >> 13) & 1u;
    x += 0xC8000FFFu + odd;
    return sign | static_cast<uint16_t>(x >> 13);
  }
  // Below 2^-14: an f16 denormal k * 2^-24. Scaling by 2^24 is exact and nearbyint rounds
  // to nearest even; k = 1024 is the smallest normal, whose encoding is also 1024.
  float k = std::nearbyint(bits_f32(x) * 16777216.0f);
  return sign | static_cast<uint16_t>(k);
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
  if (e == 0) {
    float v = static_cast<float>(m) * (1.0f / 16777216.0f);  // m * 2^-24, exact
    return bits_f32(f32_bits(v) | sign);
  }
  if (e == 31) return bits_f32(sign | 0x7F800000u | (m ? (0x400000u | (m << 13)) : 0u));
  return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

namespace ref {
void f32_to_bf16_n(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_bf16(src[i]);
}
void bf16_to_f32_n(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}
void f32_to_f16_n(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}
void f16_to_f32_n(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}
}  // namespace ref

void f32_to_bf16_n(const float* src, uint16_t* dst, int64_t n) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::f32_to_bf16_n(src, dst, n);
#endif
  ref::f32_to_bf16_n(src, dst, n);
}
void bf16_to_f32_n(const uint16_t* src, float* dst, int64_t n) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::bf16_to_f32_n(src, dst, n);
#endif
  ref::bf16_to_f32_n(src, dst, n);
}
void f32_to_f16_n(const float* src, uint16_t* dst, int64_t n) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::f32_to_f16_n(src, dst, n);
#endif
  ref::f32_to_f16_n(src, dst, n);
}
void f16_to_f32_n(const uint16_t* src, float* dst, int64_t n) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::f16_to_f32_n(src, dst, n);
#endif
  ref::f16_to_f32_n(src, dst, n);
}
void flip_sign_bit_n(const uint8_t* src, uint8_t* dst, int64_t n) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::flip_sign_bit_n(src, dst, n);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] ^ 0x80u;
}

// ---- encodings --------------------------------------------------------------------------

int encoding_size(Encoding e) {
  switch (e) {
    case Encoding::f32: case Encoding::i32: return 4;
    case Encoding::f16: case Encoding::bf16: case Encoding::i16: return 2;
    case Encoding::i8: case Encoding::u8: case Encoding::boolean: return 1;
    case Encoding::i64: return 8;
    default: return 0;
  }
}
bool encoding_is_plain(Encoding e) { return encoding_size(e) != 0; }
bool encoding_is_float(Encoding e) { return e == Encoding::f32 || e == Encoding::f16 || e == Encoding::bf16; }

namespace {

constexpr int64_t kChunk = 256;  // elements per staging chunk of the generic cast

// Rounds an integer to `bits` significant bits (to nearest even) and returns it as a float
// (exact: bits <= 24). Used so int -> f16 / bf16 rounds once, not twice through f32.
float round_int_to_bits(int64_t v, int bits) {
  bool neg = v < 0;
  uint64_t m = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if ((m >> bits) == 0) return neg ? -static_cast<float>(m) : static_cast<float>(m);
  int shift = 64 - __builtin_clzll(m) - bits;
  uint64_t q = m >> shift, rem = m & ((uint64_t{1} << shift) - 1), half = uint64_t{1} << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  float r = std::ldexp(static_cast<float>(q), shift);
  return neg ? -r : r;
}

template <typename I>
I float_to_int(float f) {
  if (std::isnan(f)) return 0;
  double r = std::nearbyint(static_cast<double>(f));  // default rounding: nearest even
  if (r <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}

template <typename I>
I saturate(int64_t v) {
  return static_cast<I>(std::clamp<int64_t>(v, std::numeric_limits<I>::min(), std::numeric_limits<I>::max()));
}

template <typename T>
void widen(const void* src, int64_t* out, int64_t n) {
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < n; ++i) out[i] = s[i];
}

void load_floats(Encoding e, const void* src, float* out, int64_t n) {
  switch (e) {
    case Encoding::f32: std::memcpy(out, src, n * 4); break;
    case Encoding::f16: f16_to_f32_n(static_cast<const uint16_t*>(src), out, n); break;
    case Encoding::bf16: bf16_to_f32_n(static_cast<const uint16_t*>(src), out, n); break;
    default: break;
  }
}

void load_ints(Encoding e, const void* src, int64_t* out, int64_t n) {
  switch (e) {
    case Encoding::i8: widen<int8_t>(src, out, n); break;
    case Encoding::u8: widen<uint8_t>(src, out, n); break;
    case Encoding::i16: widen<int16_t>(src, out, n); break;
    case Encoding::i32: widen<int32_t>(src, out, n); break;
    case Encoding::i64: widen<int64_t>(src, out, n); break;
    case Encoding::boolean: {
      const uint8_t* s = static_cast<const uint8_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = s[i] != 0;
      break;
    }
    default: break;
  }
}

template <typename I>
void store_float_ints(const float* in, void* dst, int64_t n) {
  I* d = static_cast<I*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = float_to_int<I>(in[i]);
}

void store_floats(Encoding e, const float* in, void* dst, int64_t n) {
  switch (e) {
    case Encoding::f32: std::memcpy(dst, in, n * 4); break;
    case Encoding::f16: f32_to_f16_n(in, static_cast<uint16_t*>(dst), n); break;
    case Encoding::bf16: f32_to_bf16_n(in, static_cast<uint16_t*>(dst), n); break;
    case Encoding::i8: store_float_ints<int8_t>(in, dst, n); break;
    case Encoding::u8: store_float_ints<uint8_t>(in, dst, n); break;
    case Encoding::i16: store_float_ints<int16_t>(in, dst, n); break;
    case Encoding::i32: store_float_ints<int32_t>(in, dst, n); break;
    case Encoding::i64: store_float_ints<int64_t>(in, dst, n); break;
    case Encoding::boolean: {
      uint8_t* d = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = in[i] != 0.0f;  // NaN != 0: true
      break;
    }
    default: break;
  }
}

template <typename I>
void narrow(const int64_t* in, void* dst, int64_t n) {
  I* d = static_cast<I*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = saturate<I>(in[i]);
}

void store_ints(Encoding e, const int64_t* in, void* dst, int64_t n) {
  switch (e) {
    case Encoding::f32: {
      float* d = static_cast<float*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(in[i]);  // one rounding
      break;
    }
    case Encoding::f16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(round_int_to_bits(in[i], 11));
      break;
    }
    case Encoding::bf16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(round_int_to_bits(in[i], 8));
      break;
    }
    case Encoding::i8: narrow<int8_t>(in, dst, n); break;
    case Encoding::u8: narrow<uint8_t>(in, dst, n); break;
    case Encoding::i16: narrow<int16_t>(in, dst, n); break;
    case Encoding::i32: narrow<int32_t>(in, dst, n); break;
    case Encoding::i64: std::memcpy(dst, in, n * 8); break;
    case Encoding::boolean: {
      uint8_t* d = static_cast<uint8_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = in[i] != 0;
      break;
    }
    default: break;
  }
}

}  // namespace

void cast_values_n(Encoding from, const void* src, Encoding to, void* dst, int64_t n) {
  const uint8_t* s = static_cast<const uint8_t*>(src);
  uint8_t* d = static_cast<uint8_t*>(dst);
  int sb = encoding_size(from), db = encoding_size(to);
  if (from == to) {
    std::memcpy(d, s, n * sb);
    return;
  }
  if (from == Encoding::f32 && to == Encoding::bf16)
    return f32_to_bf16_n(reinterpret_cast<const float*>(s), reinterpret_cast<uint16_t*>(d), n);
  if (from == Encoding::bf16 && to == Encoding::f32)
    return bf16_to_f32_n(reinterpret_cast<const uint16_t*>(s), reinterpret_cast<float*>(d), n);
  if (from == Encoding::f32 && to == Encoding::f16)
    return f32_to_f16_n(reinterpret_cast<const float*>(s), reinterpret_cast<uint16_t*>(d), n);
  if (from == Encoding::f16 && to == Encoding::f32)
    return f16_to_f32_n(reinterpret_cast<const uint16_t*>(s), reinterpret_cast<float*>(d), n);
  if (encoding_is_float(from)) {
    float tmp[kChunk];
    for (int64_t i = 0; i < n; i += kChunk) {
      int64_t m = std::min(kChunk, n - i);
      load_floats(from, s + i * sb, tmp, m);
      store_floats(to, tmp, d + i * db, m);
    }
  } else {
    int64_t tmp[kChunk];
    for (int64_t i = 0; i < n; i += kChunk) {
      int64_t m = std::min(kChunk, n - i);
      load_ints(from, s + i * sb, tmp, m);
      store_ints(to, tmp, d + i * db, m);
    }
  }
}

void recode_n(Encoding from, const void* src, Encoding to, void* dst, int64_t n) {
  if ((from == Encoding::u8 && to == Encoding::i8) || (from == Encoding::i8 && to == Encoding::u8))
    return flip_sign_bit_n(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), n);
  cast_values_n(from, src, to, dst, n);
}

bool recode_is_exact(Encoding from, Encoding to) {
  if (from == to || from == Encoding::boolean) return true;
  if ((from == Encoding::u8 && to == Encoding::i8) || (from == Encoding::i8 && to == Encoding::u8)) return true;
  auto rank = [](Encoding e) {  // integer width in bits that the encoding holds exactly
    switch (e) {
      case Encoding::i8: return 8;
      case Encoding::u8: return 9;  // needs a sign bit more than i8 in a signed target
      case Encoding::i16: return 16;
      case Encoding::i32: return 32;
      case Encoding::i64: return 64;
      default: return 0;
    }
  };
  int f = rank(from);
  switch (to) {
    case Encoding::f32: return from == Encoding::f16 || from == Encoding::bf16 || (f && f <= 16);
    case Encoding::f16: return f && f <= 9;   // 11 significant bits
    case Encoding::bf16: return f && f <= 9;  // 8 significant bits hold |v| <= 256
    case Encoding::i16: case Encoding::i32: case Encoding::i64: return f && f <= rank(to);
    default: return false;
  }
}

}  // namespace tessera::convert
