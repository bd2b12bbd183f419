// The test device's own layout, colpad4: registered from this folder with its size and
// conversion rules, as a device folder of src/backend would register one (no edit to core
// or to the conversion library).
//
// colpad4 holds a logical [..., H, W] tensor (rank 1 [W] as [1, W], rank 0 as [1, 1])
// column by column: each of the W columns of an HxW slice is H values padded with zeros to
// Hp = H rounded up to 4; element (s, h, w) sits at ((s * W) + w) * Hp + h. Padded shape
// [outer, W, Hp]; plain encodings only; a page is one column.
#pragma once

#include "tessera/format.h"

namespace tessera::plugin {

// The id the registry gave colpad4.
Layout colpad4();

// Where element (slice, h, w) of `shape` is stored, and the stored element count.
struct Colpad4Geom {
  int64_t outer = 1, h = 1, w = 1, hp = 4;
  int64_t index(int64_t s, int64_t r, int64_t c) const { return (s * w + c) * hp + r; }
};
Colpad4Geom colpad4_geom(const Shape& shape);

}  // namespace tessera::plugin
