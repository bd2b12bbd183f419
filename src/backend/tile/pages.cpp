#include "backend/tile/pages.h"

#include <algorithm>

namespace tessera::tile {

namespace {
// Iterates the multi-indices of the box [lo, hi) over `dims` row-major, calling fn(linear
// index in the full `dims` space).
template <typename F>
void for_each_in_box(const std::vector<int64_t>& dims, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi,
                     F fn) {
  size_t rank = dims.size();
  for (size_t d = 0; d < rank; ++d)
    if (lo[d] >= hi[d]) return;
  std::vector<int64_t> idx(lo);
  while (true) {
    int64_t lin = 0;
    for (size_t d = 0; d < rank; ++d) lin = lin * dims[d] + idx[d];
    fn(lin);
    int d = static_cast<int>(rank) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < hi[d]) break;
      idx[d] = lo[d];
    }
    if (d < 0) return;
  }
}
}  // namespace

Result<int64_t> page_count(const Format& f) {
  TS_ASSIGN_OR_RETURN(int64_t bytes, f.byte_size());
  int64_t page = std::max<int64_t>(f.page_size(), 1);
  if (bytes % page != 0)
    return error(StatusCode::internal, "format ", f.to_string(), ": ", bytes, " bytes are not whole pages of ", page);
  return std::max<int64_t>(bytes / page, 1);
}

Result<std::vector<int64_t>> touched_pages(const Format& f, const Region& region) {
  TS_RETURN_IF_ERROR(region.validate(f.shape));
  TS_ASSIGN_OR_RETURN(int64_t count, page_count(f));
  std::vector<int64_t> pages;
  if (region.is_whole()) {
    pages.resize(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) pages[i] = i;
    return pages;
  }
  const Shape& s = f.shape;
  int rank = static_cast<int>(s.size());
  if (rank == 0) return std::vector<int64_t>{0};
  if (f.layout == Layout::row_major) {
    if (rank == 1) return std::vector<int64_t>{0};
    if (region.begin.back() >= region.end.back()) return pages;
    std::vector<int64_t> dims(s.begin(), s.end() - 1);
    std::vector<int64_t> lo(region.begin.begin(), region.begin.end() - 1), hi(region.end.begin(), region.end.end() - 1);
    for_each_in_box(dims, lo, hi, [&](int64_t row) { pages.push_back(row); });
    return pages;
  }
  if (f.layout != Layout::tile32)
    return error(StatusCode::unsupported, "format ", f.to_string(), " is not paged by tiles or rows");
  // [outer..., H, W]: slices over the outer box, tile rows and tile columns inside each.
  int64_t h = rank >= 2 ? s[rank - 2] : 1, w = s[rank - 1];
  int64_t h0 = rank >= 2 ? region.begin[rank - 2] : 0, h1 = rank >= 2 ? region.end[rank - 2] : 1;
  int64_t w0 = region.begin[rank - 1], w1 = region.end[rank - 1];
  if (h0 >= h1 || w0 >= w1) return pages;
  int64_t ht = (h + kTileDim - 1) / kTileDim, wt = (w + kTileDim - 1) / kTileDim;
  std::vector<int64_t> dims, lo, hi;
  for (int d = 0; d + 2 < rank; ++d) {
    dims.push_back(s[d]);
    lo.push_back(region.begin[d]);
    hi.push_back(region.end[d]);
  }
  auto add_slice = [&](int64_t slice) {
    for (int64_t tr = h0 / kTileDim; tr <= (h1 - 1) / kTileDim; ++tr)
      for (int64_t tc = w0 / kTileDim; tc <= (w1 - 1) / kTileDim; ++tc) pages.push_back((slice * ht + tr) * wt + tc);
  };
  if (dims.empty()) add_slice(0);
  else for_each_in_box(dims, lo, hi, add_slice);
  return pages;
}

}  // namespace tessera::tile
