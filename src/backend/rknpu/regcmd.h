// Register command streams: the 64-bit entries a task's command buffer holds.
//
// Entry format (rknpu.md): target << 48 | value32 << 16 | register_offset16, where target =
// block id + 1 (block ids from the register database's target enum). A Regcmd builder
// writes fields through the generated register map (registers.h) and checks every value
// against its field width, so that nothing the hardware cannot represent is emitted.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rknpu/registers.h"
#include "tessera/status.h"

namespace tessera::rknpu {

// The block a register offset belongs to (by the register base ranges of rknpu.md), or 0.
uint32_t block_of(uint16_t reg);
// The name "CNA.CONV_CON1" of a register offset, or "0x1234" if unknown.
std::string register_name(uint16_t reg);

uint64_t encode_entry(uint32_t target, uint32_t value, uint16_t reg);
struct Entry {
  uint32_t target = 0;  // block id + 1
  uint32_t value = 0;
  uint16_t reg = 0;
};
Entry decode_entry(uint64_t e);

// Builds one task's register writes, one register at a time from its fields.
class Regcmd {
 public:
  // Sets `f` to `v` in the register being assembled; records an error if v does not fit.
  Regcmd& set(const regs::Field& f, int64_t v);
  // Sets a field holding a two's-complement value; records an error if v does not fit.
  Regcmd& set_signed(const regs::Field& f, int64_t v);
  // Appends the register assembled by set() calls (all fields must name the same register).
  Regcmd& emit();
  // set() + emit() for a register with one field.
  Regcmd& write(const regs::Field& f, int64_t v) { return set(f, v).emit(); }

  // The first out-of-range field ("CNA.CONV_CON3.CONV_X_STRIDE = 9 does not fit 3 bits").
  const Status& status() const { return status_; }
  const std::vector<uint64_t>& entries() const { return entries_; }
  std::vector<uint64_t>& entries() { return entries_; }

 private:
  std::vector<uint64_t> entries_;
  int32_t pending_reg_ = -1;
  uint32_t pending_value_ = 0;
  Status status_;
};

// Whether `v` fits field `f` (unsigned); used by the compiler's limit checks.
inline bool fits(const regs::Field& f, int64_t v) { return v >= 0 && static_cast<uint64_t>(v) <= f.max(); }

// The register file one task programs, per block: offset -> value, as decoded from a
// command buffer. Reading a field that was never written yields 0.
struct RegisterFile {
  std::map<uint16_t, uint32_t> values;
  uint32_t get(const regs::Field& f) const {
    auto it = values.find(f.reg);
    uint32_t r = it == values.end() ? 0 : it->second;
    return (r >> f.low) & f.max();
  }
  // A field's value sign-extended from its width.
  int32_t get_signed(const regs::Field& f) const {
    uint32_t v = get(f);
    if (f.width < 32 && (v >> (f.width - 1)) & 1u) v |= ~f.max();
    return static_cast<int32_t>(v);
  }
  bool written(uint16_t reg) const { return values.count(reg) != 0; }
  // The DPU's lookup-table RAM as this task's writes left it: LUT_ACCESS_CFG sets the access
  // type, the table (LE 0, LO 1) and the address; each LUT_ACCESS_DATA stores its 16-bit
  // value there and advances the address (NVDLA's LUT access port). Entries never written
  // are absent (reading one is the model's error).
  std::map<int, int16_t> lut[2];
  int64_t lut_writes = 0;  // LUT_ACCESS_DATA entries (the model's command-stream cost)
};

// Decodes a command buffer; errors name the entry whose target and register disagree.
Result<RegisterFile> decode_regcmd(const uint64_t* entries, size_t count);

// Human-readable listing of a command buffer ("CNA.CONV_CON1 = 0x00000120"), for dumps.
std::string format_regcmd(const std::vector<uint64_t>& entries);

}  // namespace tessera::rknpu
