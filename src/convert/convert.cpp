// Conversion entry points. BASELINE: identity copies of row-major data and row-major
// region copies. The full registry (encodings, tile32, nc1hwc2, bfp) extends this file.
#include "tessera/convert.h"

#include <cstring>

namespace tessera::convert {

namespace {
int64_t elem_bytes(const Format& f) {
  auto dt = dtype_of(f.encoding);
  return dt ? dtype_size(*dt) : 0;
}

// Copies a box between a whole row-major tensor and a dense row-major region buffer.
Status copy_box(const Format& whole, uint8_t* whole_data, const Region& r, uint8_t* region_data, bool to_region) {
  const Shape& full = whole.shape;
  Shape ext = r.extent(full);
  int64_t eb = elem_bytes(whole);
  if (eb == 0) return error(StatusCode::unsupported, "region access to ", whole.to_string(), " needs a plain encoding");
  int rank = static_cast<int>(full.size());
  if (num_elements(ext) == 0) return Status::Ok();
  auto fs = row_major_strides(full);
  // Copy the innermost dim as one run.
  int64_t run = (rank == 0 ? 1 : ext.back()) * eb;
  std::vector<int64_t> idx(std::max(rank - 1, 0), 0);
  int64_t outer = rank <= 1 ? 1 : num_elements(Shape(ext.begin(), ext.end() - 1));
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off = 0;
    for (int d = 0; d < rank - 1; ++d) off += (r.begin[d] + idx[d]) * fs[d];
    if (rank > 0) off += r.begin[rank - 1];
    uint8_t* w = whole_data + off * eb;
    uint8_t* g = region_data + o * run;
    if (to_region) std::memcpy(g, w, run);
    else std::memcpy(w, g, run);
    for (int d = rank - 2; d >= 0; --d) {
      if (++idx[d] < ext[d]) break;
      idx[d] = 0;
    }
  }
  return Status::Ok();
}
}  // namespace

Result<std::vector<StepInfo>> plan(const Format& from, const Format& to) {
  if (from.shape != to.shape)
    return error(StatusCode::invalid_argument, "cannot convert ", from.to_string(), " to ", to.to_string(),
                 ": logical shapes differ");
  if (from == to) return std::vector<StepInfo>{{"identity", true, ""}};
  return error(StatusCode::unsupported, "no conversion from ", from.to_string(), " to ", to.to_string());
}

Status convert(const Format& from, const void* src, const Format& to, void* dst, Stats* stats) {
  TS_RETURN_IF_ERROR(plan(from, to).status());
  TS_ASSIGN_OR_RETURN(int64_t bytes, from.byte_size());
  std::memcpy(dst, src, bytes);
  if (stats) {
    stats->bytes_in += bytes;
    stats->bytes_out += bytes;
  }
  return Status::Ok();
}

Status write_region(const Format& whole, void* dst, const Region& region, const Format& src_fmt, const void* src,
                    Stats* stats) {
  TS_RETURN_IF_ERROR(region.validate(whole.shape));
  if (region.is_whole()) return convert(src_fmt, src, whole, dst, stats);
  if (whole.layout != Layout::row_major || src_fmt.encoding != whole.encoding)
    return error(StatusCode::unsupported, "region write from ", src_fmt.to_string(), " into ", whole.to_string());
  return copy_box(whole, static_cast<uint8_t*>(dst), region, const_cast<uint8_t*>(static_cast<const uint8_t*>(src)),
                  false);
}

Status read_region(const Format& whole, const void* src, const Region& region, const Format& dst_fmt, void* dst,
                   Stats* stats) {
  TS_RETURN_IF_ERROR(region.validate(whole.shape));
  if (region.is_whole()) return convert(whole, src, dst_fmt, dst, stats);
  if (whole.layout != Layout::row_major || dst_fmt.encoding != whole.encoding)
    return error(StatusCode::unsupported, "region read from ", whole.to_string(), " into ", dst_fmt.to_string());
  return copy_box(whole, const_cast<uint8_t*>(static_cast<const uint8_t*>(src)), region, static_cast<uint8_t*>(dst),
                  true);
}

}  // namespace tessera::convert
