#include "backend/rknpu/regcmd.h"

#include <cstdio>
#include <sstream>

#include "backend/rknpu/hw.h"

namespace tessera::rknpu {

namespace {
// Register bases of each block (rknpu.md): PC 0x0, CNA 0x1000, CORE 0x3000, DPU 0x4000,
// DPU_RDMA 0x5000, PPU 0x6000, PPU_RDMA 0x7000. Each block spans up to the next base.
struct BlockRange {
  uint16_t base, end;
  uint32_t block;
};
constexpr BlockRange kRanges[] = {
    {regs::PC::VERSION, regs::CNA::S_STATUS, regs::kBlock_PC},
    {regs::CNA::S_STATUS, regs::CORE::S_STATUS, regs::kBlock_CNA},
    {regs::CORE::S_STATUS, regs::DPU::S_STATUS, regs::kBlock_CORE},
    {regs::DPU::S_STATUS, regs::DPU_RDMA::RDMA_S_STATUS, regs::kBlock_DPU},
    {regs::DPU_RDMA::RDMA_S_STATUS, regs::PPU::S_STATUS, regs::kBlock_DPU_RDMA},
    {regs::PPU::S_STATUS, regs::PPU_RDMA::RDMA_S_STATUS, regs::kBlock_PPU},
    {regs::PPU_RDMA::RDMA_S_STATUS, regs::DDMA::CFG_OUTSTANDING, regs::kBlock_PPU_RDMA},
};
}  // namespace

uint32_t block_of(uint16_t reg) {
  for (const auto& r : kRanges)
    if (reg >= r.base && reg < r.end) return r.block;
  return 0;
}

std::string register_name(uint16_t reg) {
  for (const auto& r : regs::kRegisters)
    if (r.offset == reg) return std::string(r.block) + "." + r.name;
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", reg);
  return buf;
}

uint64_t encode_entry(uint32_t target, uint32_t value, uint16_t reg) {
  return (uint64_t{target} << kRegcmdTargetShift) | (uint64_t{value} << kRegcmdValueShift) | reg;
}

Entry decode_entry(uint64_t e) {
  return {static_cast<uint32_t>(e >> kRegcmdTargetShift), static_cast<uint32_t>(e >> kRegcmdValueShift),
          static_cast<uint16_t>(e & 0xFFFF)};
}

Regcmd& Regcmd::set(const regs::Field& f, int64_t v) {
  if (pending_reg_ >= 0 && pending_reg_ != f.reg && status_.ok())
    status_ = error(StatusCode::internal, "field ", f.name, " set while assembling register ",
                    register_name(static_cast<uint16_t>(pending_reg_)));
  pending_reg_ = f.reg;
  if (!fits(f, v) && status_.ok())
    status_ = error(StatusCode::out_of_range, f.name, " = ", v, " does not fit its ", int(f.width), "-bit field");
  pending_value_ |= (static_cast<uint32_t>(v) & f.max()) << f.low;
  return *this;
}

Regcmd& Regcmd::set_signed(const regs::Field& f, int64_t v) {
  const int64_t lo = -(int64_t{1} << (f.width - 1)), hi = (int64_t{1} << (f.width - 1)) - 1;
  if ((v < lo || v > hi) && status_.ok())
    status_ = error(StatusCode::out_of_range, f.name, " = ", v, " does not fit its signed ", int(f.width), "-bit field");
  uint64_t bits = static_cast<uint64_t>(v) & f.max();
  return set(f, static_cast<int64_t>(bits));
}

Regcmd& Regcmd::emit() {
  if (pending_reg_ < 0) return *this;
  uint16_t reg = static_cast<uint16_t>(pending_reg_);
  entries_.push_back(encode_entry(block_of(reg) + 1, pending_value_, reg));
  pending_reg_ = -1;
  pending_value_ = 0;
  return *this;
}

Result<RegisterFile> decode_regcmd(const uint64_t* entries, size_t count) {
  RegisterFile rf;
  int lut_addr = 0;
  for (size_t i = 0; i < count; ++i) {
    Entry e = decode_entry(entries[i]);
    if (e.target == 0 && e.value == 0 && e.reg == 0) continue;  // padding to the 64-byte alignment
    uint32_t block = block_of(e.reg);
    if (block == 0 || e.target != block + 1)
      return error(StatusCode::invalid_argument, "register command ", i, ": target 0x", std::hex, e.target,
                   " does not own register 0x", e.reg);
    rf.values[e.reg] = e.value;
    if (e.reg == regs::DPU::LUT_ACCESS_CFG__LUT_ADDR.reg) {
      lut_addr = static_cast<int>(rf.get(regs::DPU::LUT_ACCESS_CFG__LUT_ADDR));
    } else if (e.reg == regs::DPU::LUT_ACCESS_DATA__LUT_ACCESS_DATA.reg) {
      if (!rf.written(regs::DPU::LUT_ACCESS_CFG__LUT_ADDR.reg))
        return error(StatusCode::invalid_argument, "register command ", i, ": DPU.LUT_ACCESS_DATA before any DPU.LUT_ACCESS_CFG");
      if (rf.get(regs::DPU::LUT_ACCESS_CFG__LUT_ACCESS_TYPE) != kLutAccessWrite)
        return error(StatusCode::unsupported, "register command ", i,
                     ": DPU.LUT_ACCESS_DATA with LUT_ACCESS_CFG.LUT_ACCESS_TYPE = 0 (read) is not modelled");
      const int table = static_cast<int>(rf.get(regs::DPU::LUT_ACCESS_CFG__LUT_TABLE_ID));
      const int size = table == static_cast<int>(kLutTableLo) ? kLutLoEntries : kLutLeEntries;
      if (lut_addr >= size)
        return error(StatusCode::out_of_range, "register command ", i, ": DPU.LUT_ACCESS_DATA at LUT_ADDR ", lut_addr,
                     " past the end of the ", table ? "LO" : "LE", " table (", size, " entries)");
      rf.lut[table][lut_addr++] = static_cast<int16_t>(e.value & 0xFFFFu);
      ++rf.lut_writes;
    }
  }
  return rf;
}

std::string format_regcmd(const std::vector<uint64_t>& entries) {
  std::ostringstream os;
  for (uint64_t raw : entries) {
    Entry e = decode_entry(raw);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%016llx  %-34s = 0x%08x\n", static_cast<unsigned long long>(raw),
                  register_name(e.reg).c_str(), e.value);
    os << buf;
  }
  return os.str();
}

}  // namespace tessera::rknpu
