// Block floats bfp8_b / bfp4_b in tile32 (tile-device.md "Element formats"):
// a tile is 64 exponent bytes (one per face row, face order: byte k = face k/16, row k%16)
// followed by the codes of the 64 face rows in the same order (16 values each, row-major
// within a face). bfp8: one byte per code; bfp4: two codes per byte, first in the low
// nibble. A code is a sign bit above a W-bit magnitude m (W = 7 or 3); its value is
// (-1)^s * m * 2^(E - 127 - (W - 1)). Packing one face row (the spec's five steps):
//   E = max biased exponent of the 16 values; values with exponent 0 get code 0; else the
//   24-bit significand is shifted right by E - e (truncating; >= 32 gives 0), rounded to W
//   bits to nearest even, clamped to 2^W - 1, and a zero magnitude drops its sign.
// Error bound of f32 -> bfp -> f32, per value of a row with exponent E:
//   |x - decoded| <= max(2^(E - 127 - (W - 1)), 2^-126)   (one code step; denormals flush).
// Inf / NaN force E = 255 and destroy the row's neighbours: packing rejects such a row
// with an error naming the tile, face row and logical position (docs/formats.md).
#pragma once

#include <cstdint>
#include <cstring>

#include "convert/tile.h"
#include "tessera/status.h"

namespace tessera::convert {

constexpr int kBfp8MantBits = 7;       // tile-device.md: W = 7 for bfp8
constexpr int kBfp4MantBits = 3;       // tile-device.md: W = 3 for bfp4
constexpr int64_t kBfpExpBytes = 64;   // tile-device.md: 64 exponent bytes per tile
constexpr uint8_t kBfpNonFiniteExp = 255;  // exponent field of Inf / NaN

int bfp_mant_bits(Encoding e);                                 // 7 or 3; 0 if not bfp
inline int64_t bfp_row_bytes(int wbits) { return wbits == kBfp8MantBits ? 16 : 8; }  // codes of one face row
inline int64_t bfp_tile_bytes(int wbits) { return kBfpExpBytes + kFaceRows * bfp_row_bytes(wbits); }
// The value of one code step for exponent E: 2^(E - 127 - (W - 1)) as an exact float.
// The biased f32 exponent is b = E - (W - 1); b <= 0 is an f32 denormal
// 2^(b - 1 - 126) = 2^-149 * 2^(b + 22) (b >= -6, always representable).
inline float bfp_step(int e, int wbits) {
  const int b = e - (wbits - 1);
  const uint32_t bits = b > 0 ? static_cast<uint32_t>(b) << 23 : 1u << (b + 22);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// One face row: 16 floats -> codes (16 or 8 bytes); returns E (255 if Inf/NaN present).
uint8_t pack_face_row(const float* v, uint8_t* codes, int wbits);
void unpack_face_row(uint8_t e, const uint8_t* codes, float* v, int wbits);

// Where packing met a non-finite value.
struct BfpBadRow {
  int64_t tile = -1;      // tile index in storage order
  int64_t face_row = -1;  // 0..63 within the tile
  int64_t slice = 0, row = 0, col = 0;  // logical slice, row and first column of the face row
};

// Whole tensors, [outer, H, W] with the tile geometry g. The pack functions return the
// number of face rows holding Inf/NaN and fill *bad with the first; with stop = true they
// return at that row (the rest of dst is then unspecified), otherwise such rows are packed
// as the spec says (E = 255) and packing goes on.
// q8_0 / q4_0 sources are GGUF rows [outer*H, W] (W % 32 == 0); each block is dequantized
// to 32 floats on the stack and packed at once, so no f32 copy of the tensor exists.
int64_t pack_f32_tiles(const float* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
int64_t pack_q8_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
int64_t pack_q4_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
void unpack_tiles(const uint8_t* src, float* dst, const TileGeom& g, int wbits);
// Any GGUF block dtype t (rows of W values, W a multiple of its block): each tile row's 32
// values are one chunk of a block, dequantized on the stack and packed (scalar code; the
// bytes equal dequantize-then-pack).
int64_t pack_gguf_tiles(DType t, const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad,
                        bool stop);

// The error for a rejected row: names the encoding, tile, face row and logical position.
Status bfp_nonfinite_error(Encoding e, const BfpBadRow& bad, const Shape& shape);

namespace ref {
uint8_t pack_face_row(const float* v, uint8_t* codes, int wbits);
void unpack_face_row(uint8_t e, const uint8_t* codes, float* v, int wbits);
int64_t pack_f32_tiles(const float* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
int64_t pack_q8_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
int64_t pack_q4_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
void unpack_tiles(const uint8_t* src, float* dst, const TileGeom& g, int wbits);
}  // namespace ref
#if defined(__x86_64__)
namespace avx2 {
uint8_t pack_face_row(const float* v, uint8_t* codes, int wbits);
void unpack_face_row(uint8_t e, const uint8_t* codes, float* v, int wbits);
int64_t pack_f32_tiles(const float* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
int64_t pack_q8_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
int64_t pack_q4_0_tiles(const uint8_t* src, uint8_t* dst, const TileGeom& g, int wbits, BfpBadRow* bad, bool stop);
void unpack_tiles(const uint8_t* src, float* dst, const TileGeom& g, int wbits);
}  // namespace avx2
#endif

}  // namespace tessera::convert
