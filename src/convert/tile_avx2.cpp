// The tilize/untilize loops of tile_impl.h compiled for AVX2 (256-bit face-row moves).
#if defined(__x86_64__)  // x86-64 only (cmake/arch.cmake leaves it out elsewhere)
#include <cstdint>
#include <algorithm>
#include <cstring>

#include "convert/tile.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::convert::avx2 {
#include "convert/tile_impl.h"

void tilize(const void* src, void* dst, const TileGeom& g, int esize) { tilize_any(src, dst, g, esize); }
void untilize(const void* src, void* dst, const TileGeom& g, int esize) { untilize_any(src, dst, g, esize); }
}  // namespace tessera::convert::avx2

#pragma GCC pop_options
#endif  // __x86_64__
