// The conversion registry: the one place where bytes change format.
//
// Every conversion between two formats of the same logical shape goes through here:
// devices call it in write()/read(); nothing else converts. Each conversion states whether
// it is exact; a lossy one states its error bound. The byte layouts, rounding rules and
// bounds are specified in docs/formats.md.
//
// Format-to-Format element rules (convert, write_region, read_region):
// - Between float encodings: round to nearest even; f32 -> bf16 NaN = 0x7FC0, f32 -> f16
//   NaN = 0x7E00. Float -> integer: round to nearest even, saturate, NaN -> 0. Integer ->
//   float: one correct rounding. Integer -> integer: saturate. Anything -> bool: != 0.
// - u8 <-> i8 is NOT a value cast: it is the 0x80 offset re-encoding q ^ 0x80 (exact, both
//   ways), because a device that computes in int8 stores the same quantized values
//   shifted by 128 (rknpu.md). Use cast_values() for a saturating value cast instead.
// - q8_0 / q4_0 -> f32 is exact, the other GGUF blocks (q4_1, q5_*, K-quants) give the
//   format's own f32 values; all convert to bfp8_b / bfp4_b tiles 32 values at a time.
// - f32 -> bfp8_b / bfp4_b rejects a face row holding Inf or NaN by default (the error
//   names the tile, face row and logical position); Options::bfp_nonfinite chooses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/format.h"
#include "tessera/backend/region.h"

namespace tessera::convert {

struct TESSERA_API Stats {
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;
  int64_t rmw_bytes = 0;  // bytes read back for read-modify-write of partially covered pages
  bool identity = true;   // false if any step changed the bytes' encoding or layout
  int64_t nonfinite_rows = 0;  // bfp face rows packed with Inf/NaN (NonFinite::pack only)
};

struct TESSERA_API Options {
  // What packing f32 into bfp8_b / bfp4_b does with a face row holding Inf or NaN, which
  // forces the row's shared exponent to 255 and wipes out its 15 neighbours:
  //   reject: fail with an error naming the tile, face row and logical position (default);
  //   pack:   pack it as the hardware would and count it in Stats::nonfinite_rows.
  enum class NonFinite { reject, pack };
  NonFinite bfp_nonfinite = NonFinite::reject;
};

// One step of a chain, for `inspect` and errors.
struct TESSERA_API StepInfo {
  std::string name;   // e.g. "f32->bfp8_b/tile32"
  bool exact = true;
  std::string bound;  // error bound of a lossy step, e.g. "|err| <= 2^(E-127-6)"
};

// The chain of steps that converts `from` to `to` (same logical shape), or an error
// naming both formats.
TESSERA_API Result<std::vector<StepInfo>> plan(const Format& from, const Format& to);

// Converts a whole tensor. `src` holds from.byte_size() bytes, `dst` to.byte_size().
TESSERA_API Status convert(const Format& from, const void* src, const Format& to, void* dst, Stats* stats = nullptr);
TESSERA_API Status convert(const Format& from, const void* src, const Format& to, void* dst, const Options& options,
               Stats* stats = nullptr);

// Writes a region of a tensor stored as `whole` in `dst`. `src` holds the region's values
// in `src_fmt` (row-major, shape = the region's extent). Pages partly covered by the region
// are read, modified and written back (Stats::rmw_bytes counts them): whole tiles for
// tile32 of plain encodings, whole face rows for bfp tiles, whole C2 lines for nc1hwc2.
TESSERA_API Status write_region(const Format& whole, void* dst, const Region& region, const Format& src_fmt,
                    const void* src, Stats* stats = nullptr);
TESSERA_API Status write_region(const Format& whole, void* dst, const Region& region, const Format& src_fmt,
                    const void* src, const Options& options, Stats* stats = nullptr);
// Reads a region of a tensor stored as `whole` in `src` into `dst` in `dst_fmt` (row-major,
// shape = the region's extent).
TESSERA_API Status read_region(const Format& whole, const void* src, const Region& region, const Format& dst_fmt,
                   void* dst, Stats* stats = nullptr);

// Value cast of `n` elements between plain dtypes (f32 f16 bf16 i8 u8 i16 i32 i64 bool) by
// the rules above, except that u8 <-> i8 saturates (200 -> 127) instead of offsetting.
TESSERA_API Status cast_values(DType from, const void* src, DType to, void* dst, int64_t n);

// Requantization of `shape` values between two affine parameter sets:
//   out = clamp(round_half_even(scale_in * (q - zp_in) / scale_out) + zp_out)
// computed in double; from/to are i8, u8, i16 or i32; per-axis parameters follow their
// `axis` (of `shape`). Exact with respect to that formula.
TESSERA_API Status requantize(DType from, const void* src, const QuantParams& in, DType to, void* dst, const QuantParams& out,
                  const Shape& shape);

}  // namespace tessera::convert
