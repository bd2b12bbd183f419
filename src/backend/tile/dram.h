// The tile device's DRAM model: banks holding page-interleaved buffers.
//
// tile-device.md "Memory": a buffer is a sequence of pages (one tile of a tile32 tensor,
// one row of a row-major tensor). Page i lives in bank i % N at
// base + (i / N) * align_up(page, alignment); every bank reserves the same address range
// [base, base + per_bank) for the buffer. There are no byte offsets into a buffer: the
// only way in is by page. The bytes really live in the banks (one host vector per bank
// range); gather/scatter move whole pages between the banks and a contiguous image of the
// tensor in its format (page i at byte i * page in the image).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "tessera/status.h"

namespace tessera::tile {

int64_t align_up(int64_t v, int64_t a);
int64_t ceil_div(int64_t a, int64_t b);

class Dram {
 public:
  Dram(int banks, int64_t bank_bytes, int64_t alignment);

  int banks() const { return static_cast<int>(banks_.size()); }
  int64_t alignment() const { return alignment_; }
  // Bytes a buffer of `pages` pages of `page_bytes` takes over all banks:
  // banks * ceil(pages / banks) * align_up(page_bytes, alignment).
  int64_t footprint(int64_t pages, int64_t page_bytes) const;

  // Reserves ceil(bytes / banks) bytes (aligned) at the same base in every bank; returns
  // the buffer id. out_of_memory when no common free range is left.
  Result<uint64_t> allocate(int64_t bytes);
  Status free(uint64_t id);
  // Bytes the buffer reserves over all banks (banks * per-bank range).
  Result<int64_t> reserved_bytes(uint64_t id) const;

  struct Location {
    int bank = 0;
    uint64_t address = 0;  // byte address inside the bank
  };
  // Where page `page` of buffer `id` lives when the buffer is paged by `page_bytes`;
  // out_of_range when the buffer's range cannot hold that page.
  Result<Location> locate(uint64_t id, int64_t page_bytes, int64_t page) const;

  // Copies the listed pages from the banks into `image` (page i at i * page_bytes).
  Status gather(uint64_t id, int64_t page_bytes, const std::vector<int64_t>& pages, uint8_t* image) const;
  // Copies the listed pages from `image` into the banks.
  Status scatter(uint64_t id, int64_t page_bytes, const std::vector<int64_t>& pages, const uint8_t* image);

  // Raw bytes of a bank (for tests and debugging dumps).
  Result<std::vector<uint8_t>> read_bank(int bank, uint64_t address, int64_t bytes) const;
  // Highest address reserved in any bank (the used height of every bank).
  uint64_t high_water() const;

 private:
  struct Buffer {
    uint64_t base = 0;
    int64_t per_bank = 0;
  };
  // One bank: the ranges reserved in it, by base address, each with its bytes.
  struct Bank {
    std::map<uint64_t, std::vector<uint8_t>> ranges;
  };
  Result<uint8_t*> bytes_at(int bank, uint64_t address, int64_t n);
  Result<const uint8_t*> bytes_at(int bank, uint64_t address, int64_t n) const;

  std::vector<Bank> banks_;
  int64_t bank_bytes_ = 0;
  int64_t alignment_ = 1;
  std::map<uint64_t, Buffer> buffers_;       // by id
  std::map<uint64_t, int64_t> used_ranges_;  // base -> per-bank bytes, the same in every bank
  uint64_t next_id_ = 1;
};

}  // namespace tessera::tile
