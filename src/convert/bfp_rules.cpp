// The block-float encodings bfp8_b / bfp4_b (tile-device.md "Block floats"): one shared
// 8-bit exponent per 16 values (a face row), in tile32 only. Their registration (sizes) and
// their conversions: f32 and GGUF blocks in, f32 out.
#include "convert/bfp.h"
#include "convert/rules.h"

namespace tessera::convert {

namespace {

constexpr const char* kBfpBound =
    "per value of a face row with shared exponent E: |err| <= max(2^(E-127-(W-1)), 2^-126), W = 7 (bfp8_b) or "
    "3 (bfp4_b); Inf/NaN rows rejected";

bool is_bfp_tile(const Format& f) { return f.layout == Layout::tile32 && bfp_mant_bits(f.encoding) != 0; }

// Runs a packer and applies the Inf/NaN policy.
template <typename Pack>
Status pack_with_policy(const Format& to, const StepContext& ctx, Pack&& pack) {
  const bool stop = ctx.options->bfp_nonfinite == Options::NonFinite::reject;
  BfpBadRow bad;
  int64_t n_bad = pack(stop, &bad);
  if (n_bad == 0) return Status::Ok();
  if (stop) return bfp_nonfinite_error(to.encoding, bad, to.shape);
  if (ctx.stats) ctx.stats->nonfinite_rows += n_bad;
  return Status::Ok();
}

bool pack_matches(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && from.encoding == Encoding::f32 && is_bfp_tile(to);
}
Status pack_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext& ctx) {
  return pack_with_policy(to, ctx, [&](bool stop, BfpBadRow* bad) {
    return pack_f32_tiles(reinterpret_cast<const float*>(src), dst, tile_geom(from.shape), bfp_mant_bits(to.encoding),
                          bad, stop);
  });
}

bool unpack_matches(const Format& from, const Format& to) {
  return is_bfp_tile(from) && to.layout == Layout::row_major && to.encoding == Encoding::f32;
}
Status unpack_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext&) {
  unpack_tiles(src, reinterpret_cast<float*>(dst), tile_geom(from.shape), bfp_mant_bits(from.encoding));
  return Status::Ok();
}

// GGUF q8_0 / q4_0 rows straight into bfp tiles, one block (32 values) at a time.
bool pack_blocks_matches(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && (from.encoding == Encoding::q8_0 || from.encoding == Encoding::q4_0) &&
         is_bfp_tile(to);
}
Status pack_blocks_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext& ctx) {
  return pack_with_policy(to, ctx, [&](bool stop, BfpBadRow* bad) {
    const TileGeom g = tile_geom(from.shape);
    const int w = bfp_mant_bits(to.encoding);
    return from.encoding == Encoding::q8_0 ? pack_q8_0_tiles(src, dst, g, w, bad, stop)
                                           : pack_q4_0_tiles(src, dst, g, w, bad, stop);
  });
}

// The other GGUF block types (q4_1, q5_*, K-quants) straight into bfp tiles, 32 values at
// a time.
bool pack_chunks_matches(const Format& from, const Format& to) {
  return from.layout == Layout::row_major && encoding_is_gguf_block(from.encoding) &&
         from.encoding != Encoding::q8_0 && from.encoding != Encoding::q4_0 && is_bfp_tile(to);
}
Status pack_chunks_run(const Format& from, const uint8_t* src, const Format& to, uint8_t* dst, const StepContext& ctx) {
  return pack_with_policy(to, ctx, [&](bool stop, BfpBadRow* bad) {
    return pack_gguf_tiles(*dtype_of(from.encoding), src, dst, tile_geom(from.shape), bfp_mant_bits(to.encoding), bad,
                           stop);
  });
}

constexpr Rule kRules[] = {
    {"pack_bfp", pack_matches, pack_run, false, kBfpBound},
    {"unpack_bfp", unpack_matches, unpack_run, true, ""},
    {"pack_gguf_blocks_bfp", pack_blocks_matches, pack_blocks_run, false, kBfpBound},
    {"pack_gguf_chunks_bfp", pack_chunks_matches, pack_chunks_run, false, kBfpBound},
};

// A tile: 64 exponent bytes (one per face row) and the 1024 sign-magnitude mantissas of
// W + 1 bits each.
EncodingInfo bfp_info(const char* name, const char* alias, int64_t tile_bytes) {
  EncodingInfo i;
  i.name = name;
  i.aliases = {alias};
  i.tile_bytes = tile_bytes;
  i.block = true;
  i.has_row_major = false;
  i.decodes_to = Encoding::f32;
  return i;
}

}  // namespace

const bool kBfpFamily = [] {
  must_register(register_encoding(bfp_info("bfp8_b", "bfp8", 64 + 1024), Encoding::bfp8_b));
  must_register(register_encoding(bfp_info("bfp4_b", "bfp4", 64 + 512), Encoding::bfp4_b));
  return register_rules("bfp", kRules, 20);
}();

}  // namespace tessera::convert
