// bfp8_b / bfp4_b: the scalar reference packer (the spec's steps, one value at a time),
// the dispatchers and the Inf/NaN error (tile-device.md "Element formats and tile sizes").
#include "convert/bfp.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "convert/dtype.h"
#include "convert/gguf_blocks.h"
#include "convert/gguf_kquants.h"
#include "convert/simd.h"

namespace tessera::convert {

int bfp_mant_bits(Encoding e) {
  return e == Encoding::bfp8_b ? kBfp8MantBits : e == Encoding::bfp4_b ? kBfp4MantBits : 0;
}

namespace ref {

template <int W>
uint8_t pack_row(const float* v, uint8_t* codes) {
  uint32_t bits[kFaceDim];
  std::memcpy(bits, v, sizeof(bits));
  // Step 1: E = the largest exponent field (zeros count 0, Inf/NaN count 255).
  uint32_t e_max = 0;
  for (uint32_t b : bits) e_max = std::max(e_max, (b >> 23) & 0xFFu);
  uint8_t mag_codes[kFaceDim];
  for (int i = 0; i < kFaceDim; ++i) {
    uint32_t e = (bits[i] >> 23) & 0xFFu;
    uint32_t m = 0;
    if (e != 0) {  // Step 2: exponent 0 (zero or denormal) gives code 0.
      // Step 3: the 24-bit significand, truncating shift by E - e (>= 32 gives 0).
      uint32_t sig = 0x800000u | (bits[i] & 0x7FFFFFu);
      uint32_t shift = e_max - e;
      uint32_t t = shift >= 32 ? 0 : sig >> shift;
      // Step 4: keep the top W of the 24 bits, round to nearest even on the rest.
      constexpr int kDrop = 24 - W;
      uint32_t q = t >> kDrop, rem = t & ((1u << kDrop) - 1), half = 1u << (kDrop - 1);
      if (rem > half || (rem == half && (q & 1u))) ++q;
      // Step 5: clamp (no renormalisation).
      m = std::min(q, (1u << W) - 1);
    }
    uint32_t sign = m ? bits[i] >> 31 : 0;  // a zero magnitude drops its sign
    mag_codes[i] = static_cast<uint8_t>((sign << W) | m);
  }
  if constexpr (W == kBfp8MantBits) {
    std::memcpy(codes, mag_codes, kFaceDim);
  } else {
    for (int i = 0; i < kFaceDim / 2; ++i)
      codes[i] = static_cast<uint8_t>(mag_codes[2 * i] | (mag_codes[2 * i + 1] << 4));
  }
  return static_cast<uint8_t>(e_max);
}

template <int W>
void unpack_row(uint8_t e, const uint8_t* codes, float* v) {
  const double step = std::ldexp(1.0, static_cast<int>(e) - 127 - (W - 1));
  for (int i = 0; i < kFaceDim; ++i) {
    uint32_t c = W == kBfp8MantBits ? codes[i] : (codes[i / 2] >> (4 * (i & 1))) & 0x0Fu;
    uint32_t m = c & ((1u << W) - 1);
    double x = static_cast<double>(m) * step;  // exact in double; one rounding to f32 below
    v[i] = static_cast<float>((c >> W) & 1u ? -x : x);
  }
}

// The reference GGUF block path: dequantize 32 values (exact), then pack two rows.
template <int W>
void pack_q8_0_block(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  float v[kQBlock];
  dequant_q8_0_block(block, v);
  e[0] = pack_row<W>(v, c0);
  e[1] = pack_row<W>(v + kFaceDim, c1);
}

template <int W>
void pack_q4_0_block(const uint8_t* block, uint8_t* c0, uint8_t* c1, uint8_t* e) {
  float v[kQBlock];
  dequant_q4_0_block(block, v);
  e[0] = pack_row<W>(v, c0);
  e[1] = pack_row<W>(v + kFaceDim, c1);
}

#include "convert/bfp_impl.h"

// Any GGUF block type: tile column tw of a row is chunk tw of the row (32 values: block tw,
// or chunk tw % 8 of K-quant super-block tw / 8), decoded on the stack and packed.
template <int W>
int64_t pack_gguf_tiles_w(DType t, const uint8_t* src, uint8_t* dst, const TileGeom& g, BfpBadRow* bad, bool stop) {
  const int64_t per_block = dtype_block_values(t) / kQBlock, block_bytes = dtype_block_bytes(t);
  const int64_t row_bytes = g.w / dtype_block_values(t) * block_bytes;
  return pack_tiles_impl<W>(dst, g, bad, stop, [&](int64_t s, int64_t h, int64_t tw, uint8_t* c0, uint8_t* c1,
                                                   uint8_t* e) {
    float v[kQBlock];
    const uint8_t* block = src + (s * g.h + h) * row_bytes + tw / per_block * block_bytes;
    dequant_gguf_chunk(t, block, static_cast<int>(tw % per_block), v);
    e[0] = pack_row<W>(v, c0);
    e[1] = pack_row<W>(v + kFaceDim, c1);
  });
}

}  // namespace ref

int64_t pack_gguf_tiles(DType t, const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad,
                        bool stop) {
  return wbits == kBfp8MantBits ? ref::pack_gguf_tiles_w<kBfp8MantBits>(t, src, dst, g, bad, stop)
                                : ref::pack_gguf_tiles_w<kBfp4MantBits>(t, src, dst, g, bad, stop);
}

uint8_t pack_face_row(const float* v, uint8_t* codes, int wbits) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::pack_face_row(v, codes, wbits);
#endif
  return ref::pack_face_row(v, codes, wbits);
}
void unpack_face_row(uint8_t e, const uint8_t* codes, float* v, int wbits) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::unpack_face_row(e, codes, v, wbits);
#endif
  ref::unpack_face_row(e, codes, v, wbits);
}
int64_t pack_f32_tiles(const float* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::pack_f32_tiles(src, dst, g, wbits, bad, stop);
#endif
  return ref::pack_f32_tiles(src, dst, g, wbits, bad, stop);
}
int64_t pack_q8_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::pack_q8_0_tiles(src, dst, g, wbits, bad, stop);
#endif
  return ref::pack_q8_0_tiles(src, dst, g, wbits, bad, stop);
}
int64_t pack_q4_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::pack_q4_0_tiles(src, dst, g, wbits, bad, stop);
#endif
  return ref::pack_q4_0_tiles(src, dst, g, wbits, bad, stop);
}
void unpack_tiles(const uint8_t* src, float* dst, const TileGeom& g, int wbits) {
#if TESSERA_X86_64
  if (use_avx2()) return avx2::unpack_tiles(src, dst, g, wbits);
#endif
  ref::unpack_tiles(src, dst, g, wbits);
}

Status bfp_nonfinite_error(Encoding e, const BfpBadRow& bad, const Shape& shape) {
  return error(StatusCode::invalid_argument, encoding_name(e), "/tile32 ", shape_str(shape),
               ": Inf or NaN in tile ", bad.tile, " face ", bad.face_row / kFaceDim, " row ", bad.face_row % kFaceDim,
               " (slice ", bad.slice, ", logical row ", bad.row, ", columns ", bad.col, "..", bad.col + kFaceDim - 1,
               "); it would force the shared exponent to 255 and wipe out the other 15 values of the row,"
               " so the conversion is rejected");
}

}  // namespace tessera::convert
