// NHWC <-> NC1HWC2 and NHWC <-> NCHW relayouts (rknpu.md "Data formats").
#include "convert/nc1hwc2.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tessera::convert {

namespace {

constexpr int64_t kFastRunBytes = 16;  // C2 = 16 one-byte channels: one 128-bit move per line

// Copies n bytes, XORing each with 0x80 when kFlip (SSE2, part of every x86-64 CPU, does
// 16 at a time; the compiler does not vectorise the short byte loop on its own).
template <bool kFlip>
inline void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t n) {
  if constexpr (kFlip) {
    int64_t i = 0;
#if defined(__SSE2__)
    const __m128i k = _mm_set1_epi8(static_cast<char>(0x80));
    for (; i + 16 <= n; i += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                       _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)), k));
#endif
    for (; i < n; ++i) dst[i] = src[i] ^ 0x80u;
  } else {
    std::memcpy(dst, src, n);
  }
}

// Pixels per block: the block's source (or destination) pixels stay in L1 while each of
// the C1 planes receives one run of lines, so both sides stream.
constexpr int64_t kPixelBlock = 64;

// One C2 line of `valid` bytes followed by padding from pad_line (line bytes in all).
template <bool kFlip>
inline void write_line(uint8_t* dst, const uint8_t* src, int64_t valid, int64_t line, const uint8_t* pad_line) {
  if (valid == kFastRunBytes && line == kFastRunBytes) return copy_bytes<kFlip>(dst, src, kFastRunBytes);
  if (line == kFastRunBytes) {  // small channel counts (an RGB image): pad first, then the values
    std::memcpy(dst, pad_line, kFastRunBytes);
    for (int64_t i = 0; i < valid; ++i) dst[i] = kFlip ? src[i] ^ 0x80u : src[i];
    return;
  }
  copy_bytes<kFlip>(dst, src, valid);
  std::memcpy(dst + valid, pad_line + valid, line - valid);
}

template <bool kFlip>
void to_blocked(const uint8_t* src, uint8_t* dst, const Nhwc& s, int64_t c2, int esize, const uint8_t* pad) {
  const int64_t line = c2 * esize, pixel = s.c * esize, c1s = (s.c + c2 - 1) / c2;
  const int64_t hw = s.h * s.w;
  std::vector<uint8_t> pad_line(line);
  for (int64_t i = 0; i < c2; ++i) std::memcpy(pad_line.data() + i * esize, pad, esize);
  for (int64_t n = 0; n < s.n; ++n) {
    const uint8_t* img = src + n * hw * pixel;
    uint8_t* out = dst + n * c1s * hw * line;
    for (int64_t p0 = 0; p0 < hw; p0 += kPixelBlock) {
      const int64_t p1 = std::min(hw, p0 + kPixelBlock);
      for (int64_t c1 = 0; c1 < c1s; ++c1) {
        const int64_t valid = std::min(c2, s.c - c1 * c2) * esize;
        const uint8_t* in = img + p0 * pixel + c1 * line;
        uint8_t* o = out + (c1 * hw + p0) * line;
        for (int64_t p = p0; p < p1; ++p, in += pixel, o += line) write_line<kFlip>(o, in, valid, line, pad_line.data());
      }
    }
  }
}

template <bool kFlip>
void from_blocked(const uint8_t* src, uint8_t* dst, const Nhwc& s, int64_t c2, int esize) {
  const int64_t line = c2 * esize, pixel = s.c * esize, c1s = (s.c + c2 - 1) / c2;
  const int64_t hw = s.h * s.w;
  for (int64_t n = 0; n < s.n; ++n) {
    const uint8_t* in_img = src + n * c1s * hw * line;
    uint8_t* img = dst + n * hw * pixel;
    for (int64_t p0 = 0; p0 < hw; p0 += kPixelBlock) {
      const int64_t p1 = std::min(hw, p0 + kPixelBlock);
      for (int64_t c1 = 0; c1 < c1s; ++c1) {
        const int64_t valid = std::min(c2, s.c - c1 * c2) * esize;
        const uint8_t* in = in_img + (c1 * hw + p0) * line;
        uint8_t* o = img + p0 * pixel + c1 * line;
        if (valid == kFastRunBytes) {
          for (int64_t p = p0; p < p1; ++p, in += line, o += pixel) copy_bytes<kFlip>(o, in, kFastRunBytes);
        } else {
          for (int64_t p = p0; p < p1; ++p, in += line, o += pixel) copy_bytes<kFlip>(o, in, valid);
        }
      }
    }
  }
}

// [rows][cols] -> [cols][rows] of esize-byte elements, in cache-sized blocks.
template <int E>
void transpose(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) std::memcpy(dst + (c * rows + r) * E, src + (r * cols + c) * E, E);
    }
}

void transpose_any(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, int esize) {
  switch (esize) {
    case 1: return transpose<1>(src, dst, rows, cols);
    case 2: return transpose<2>(src, dst, rows, cols);
    case 4: return transpose<4>(src, dst, rows, cols);
    default: return transpose<8>(src, dst, rows, cols);
  }
}

}  // namespace

void nhwc_to_nc1hwc2(const uint8_t* src, uint8_t* dst, const Nhwc& s, int64_t c2, int esize, const uint8_t* pad,
                     bool flip) {
  flip ? to_blocked<true>(src, dst, s, c2, esize, pad) : to_blocked<false>(src, dst, s, c2, esize, pad);
}

void nc1hwc2_to_nhwc(const uint8_t* src, uint8_t* dst, const Nhwc& s, int64_t c2, int esize, bool flip) {
  flip ? from_blocked<true>(src, dst, s, c2, esize) : from_blocked<false>(src, dst, s, c2, esize);
}

void nhwc_to_nchw(const uint8_t* src, uint8_t* dst, const Nhwc& s, int esize) {
  const int64_t image = s.h * s.w * s.c * esize;
  for (int64_t n = 0; n < s.n; ++n) transpose_any(src + n * image, dst + n * image, s.h * s.w, s.c, esize);
}

void nchw_to_nhwc(const uint8_t* src, uint8_t* dst, const Nhwc& s, int esize) {
  const int64_t image = s.h * s.w * s.c * esize;
  for (int64_t n = 0; n < s.n; ++n) transpose_any(src + n * image, dst + n * image, s.c, s.h * s.w, esize);
}

}  // namespace tessera::convert
