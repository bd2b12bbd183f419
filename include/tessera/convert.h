// The conversion registry: the one place where bytes change format.
//
// Every conversion between two formats of the same logical shape goes through here:
// devices call it in write()/read(); nothing else converts. Each conversion states whether
// it is exact; a lossy one states its error bound (docs/formats.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/format.h"
#include "tessera/region.h"

namespace tessera::convert {

struct Stats {
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;
  int64_t rmw_bytes = 0;  // bytes read back for read-modify-write of partially covered pages
  bool identity = true;   // false if any step changed the bytes' encoding or layout
};

// One step of a chain, for `inspect` and errors.
struct StepInfo {
  std::string name;   // e.g. "f32->bfp8_b/tile32"
  bool exact = true;
  std::string bound;  // error bound of a lossy step, e.g. "|err| <= 2^(E-127-6)"
};

// The chain of steps that converts `from` to `to` (same logical shape), or an error
// naming both formats.
Result<std::vector<StepInfo>> plan(const Format& from, const Format& to);

// Converts a whole tensor. `src` holds from.byte_size() bytes, `dst` to.byte_size().
Status convert(const Format& from, const void* src, const Format& to, void* dst, Stats* stats = nullptr);

// Writes a region of a tensor stored as `whole` in `dst`. `src` holds the region's values
// in `src_fmt` (row-major, shape = the region's extent). Pages partly covered by the region
// are read, modified and written back (Stats::rmw_bytes counts them).
Status write_region(const Format& whole, void* dst, const Region& region, const Format& src_fmt,
                    const void* src, Stats* stats = nullptr);
// Reads a region of a tensor stored as `whole` in `src` into `dst` in `dst_fmt` (row-major,
// shape = the region's extent).
Status read_region(const Format& whole, const void* src, const Region& region, const Format& dst_fmt,
                   void* dst, Stats* stats = nullptr);

}  // namespace tessera::convert
