#include "backend/tile/dram.h"

#include <algorithm>
#include <cstring>

namespace tessera::tile {

int64_t align_up(int64_t v, int64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Dram::Dram(int banks, int64_t bank_bytes, int64_t alignment)
    : banks_(static_cast<size_t>(banks)), bank_bytes_(bank_bytes), alignment_(alignment) {}

int64_t Dram::footprint(int64_t pages, int64_t page_bytes) const {
  int64_t n = banks();
  return n * ceil_div(std::max<int64_t>(pages, 1), n) * align_up(std::max<int64_t>(page_bytes, 1), alignment_);
}

Result<uint64_t> Dram::allocate(int64_t bytes) {
  if (bytes <= 0) return error(StatusCode::invalid_argument, "DRAM allocation of ", bytes, " bytes");
  int64_t per_bank = align_up(ceil_div(bytes, banks()), alignment_);
  // First fit over the gaps between reserved ranges; the range is the same in every bank.
  uint64_t base = 0;
  for (const auto& [b, size] : used_ranges_) {
    if (base + per_bank <= b) break;
    base = std::max<uint64_t>(base, align_up(static_cast<int64_t>(b + size), alignment_));
  }
  if (static_cast<int64_t>(base) + per_bank > bank_bytes_)
    return error(StatusCode::out_of_memory, "DRAM: no free range of ", per_bank, " bytes in each of the ", banks(),
                 " banks (", bank_bytes_, " bytes per bank, ", high_water(), " in use at the top)");
  used_ranges_[base] = per_bank;
  for (Bank& bank : banks_) bank.ranges.emplace(base, std::vector<uint8_t>(static_cast<size_t>(per_bank), 0));
  uint64_t id = next_id_++;
  buffers_[id] = Buffer{base, per_bank};
  return id;
}

Status Dram::free(uint64_t id) {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) return error(StatusCode::invalid_argument, "DRAM: free of unknown buffer ", id);
  for (Bank& bank : banks_) bank.ranges.erase(it->second.base);
  used_ranges_.erase(it->second.base);
  buffers_.erase(it);
  return Status::Ok();
}

Result<int64_t> Dram::reserved_bytes(uint64_t id) const {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) return error(StatusCode::invalid_argument, "DRAM: unknown buffer ", id);
  return it->second.per_bank * banks();
}

Result<Dram::Location> Dram::locate(uint64_t id, int64_t page_bytes, int64_t page) const {
  auto it = buffers_.find(id);
  if (it == buffers_.end()) return error(StatusCode::invalid_argument, "DRAM: unknown buffer ", id);
  int64_t slot = align_up(page_bytes, alignment_);
  int64_t row = page / banks();
  if (page < 0 || (row + 1) * slot > it->second.per_bank)
    return error(StatusCode::out_of_range, "DRAM: page ", page, " of ", page_bytes, " bytes is outside a buffer of ",
                 it->second.per_bank, " bytes per bank");
  return Location{static_cast<int>(page % banks()), it->second.base + static_cast<uint64_t>(row * slot)};
}

Result<uint8_t*> Dram::bytes_at(int bank, uint64_t address, int64_t n) {
  TS_ASSIGN_OR_RETURN(const uint8_t* p, static_cast<const Dram*>(this)->bytes_at(bank, address, n));
  return const_cast<uint8_t*>(p);
}

Result<const uint8_t*> Dram::bytes_at(int bank, uint64_t address, int64_t n) const {
  if (bank < 0 || bank >= banks()) return error(StatusCode::out_of_range, "DRAM: no bank ", bank);
  const auto& ranges = banks_[bank].ranges;
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return error(StatusCode::out_of_range, "DRAM: bank ", bank, " address ", address, " is not reserved");
  --it;
  uint64_t off = address - it->first;
  if (off + n > it->second.size())
    return error(StatusCode::out_of_range, "DRAM: bank ", bank, " bytes [", address, ", ", address + n,
                 ") leave their range");
  return it->second.data() + off;
}

Status Dram::gather(uint64_t id, int64_t page_bytes, const std::vector<int64_t>& pages, uint8_t* image) const {
  for (int64_t p : pages) {
    TS_ASSIGN_OR_RETURN(Location loc, locate(id, page_bytes, p));
    TS_ASSIGN_OR_RETURN(const uint8_t* src, bytes_at(loc.bank, loc.address, page_bytes));
    std::memcpy(image + p * page_bytes, src, static_cast<size_t>(page_bytes));
  }
  return Status::Ok();
}

Status Dram::scatter(uint64_t id, int64_t page_bytes, const std::vector<int64_t>& pages, const uint8_t* image) {
  for (int64_t p : pages) {
    TS_ASSIGN_OR_RETURN(Location loc, locate(id, page_bytes, p));
    TS_ASSIGN_OR_RETURN(uint8_t * dst, bytes_at(loc.bank, loc.address, page_bytes));
    std::memcpy(dst, image + p * page_bytes, static_cast<size_t>(page_bytes));
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> Dram::read_bank(int bank, uint64_t address, int64_t bytes) const {
  TS_ASSIGN_OR_RETURN(const uint8_t* p, bytes_at(bank, address, bytes));
  return std::vector<uint8_t>(p, p + bytes);
}

uint64_t Dram::high_water() const {
  return used_ranges_.empty() ? 0 : used_ranges_.rbegin()->first + used_ranges_.rbegin()->second;
}

}  // namespace tessera::tile
