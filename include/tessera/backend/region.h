// Region: a box of a tensor in logical coordinates, and host views of data.
#pragma once

#include <cstdint>
#include <vector>

#include "tessera/export.h"
#include "tessera/format.h"
#include "tessera/types.h"

namespace tessera {

// A box [begin, end) per dim in logical coordinates. Empty vectors mean the whole tensor.
struct TESSERA_API Region {
  std::vector<int64_t> begin;
  std::vector<int64_t> end;

  static Region whole() { return {}; }
  // Rows [r0, r1) along `axis` (negative counts from the back), everything else whole.
  static Region rows(const Shape& full, int axis, int64_t r0, int64_t r1);
  bool is_whole() const { return begin.empty() && end.empty(); }
  // The region's shape within a tensor of shape `full`.
  Shape extent(const Shape& full) const;
  // Error (out_of_range) naming the dim if the box is not inside `full`.
  Status validate(const Shape& full) const;
  // The single axis along which the box is partial, or -1 (whole) / -2 (several axes).
  int partial_axis(const Shape& full) const;
};

// Which region granularities a device's write/read accept (bit mask).
enum RegionSupport : uint32_t {
  kRegionWhole = 1u << 0,  // whole tensors
  kRegionRows = 1u << 1,   // a range along one axis (KV cache rows)
  kRegionBox = 1u << 2,    // any box
};

// Host memory holding the values of a region in a host format (row-major, the format's
// shape equals the region's extent).
struct TESSERA_API HostView {
  void* data = nullptr;
  Format format;
};
struct TESSERA_API ConstHostView {
  const void* data = nullptr;
  Format format;
};

}  // namespace tessera
