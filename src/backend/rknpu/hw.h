// Facts about the RK3588 NPU the compiler and the device model share, and the model's
// knobs. Every number cites its source: rknpu.md (../shared/hardware/rknpu.md, which
// collects the mainline driver, Mesa and NVDLA facts), the register database (field
// widths; see registers.h), or "Mesa's choice" for empirical constants, or "model knob"
// for a parameter of Tessera's timing model (calibrated in docs/rknpu.md).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>

namespace tessera::rknpu {

// ---- the hardware (rknpu.md "The hardware") ----
constexpr int kCores = 3;                       // three NPU cores, sharing only DRAM
constexpr int64_t kMacsPerCycle = 1024;         // int8 MACs per cycle per core
constexpr double kClockHz = 1.0e9;              // "about 1 GHz"
constexpr int kCbufBanks = 12;                  // CBUF: 12 banks ...
constexpr int64_t kCbufBankBytes = 32 * 1024;   // ... of 32 KiB (256 entries of 128 bytes)
constexpr int64_t kCbufEntryBytes = 128;
constexpr uint64_t kAddressSpace = uint64_t{1} << 32;  // 32-bit device addresses
constexpr int64_t kPageBytes = 4096;            // buffers are page-aligned IOMMU mappings

// The kernel abandons a job that runs longer than this (rknpu.md "Kernel interface").
constexpr double kJobTimeoutSeconds = 0.5;

// ---- data formats (rknpu.md "Data formats") ----
constexpr int64_t kC2 = 16;                     // NC1HWC2 channel block for int8
constexpr int64_t kWeightGroupOc = 32;          // conv weights: 32 output channels ...
constexpr int64_t kWeightGroupIc = 32;          // ... x 32 input channels per block
constexpr int64_t kDwGroup = 64;                // depthwise weights: 64-channel groups
constexpr int32_t kU8Offset = 0x80;             // uint8 tensors are offset by 0x80 to int8

// ---- matrix multiplication (rknpu-matmul.md "Layouts") ----
constexpr int64_t kFp16C2 = 8;                  // fp16 feature data: NC1HWC2 with C2 = 8 (16-byte atoms)
constexpr int64_t kFp32OutC2 = 4;               // fp32 / int32 output: (N/4, M, 4)
constexpr int64_t kMatmulKGroup = 32;           // weight blocks hold 32 consecutive K values per kernel
constexpr int64_t kMatmulFp16Kernels = 16;      // fp16 weight block: 16 kernels x 32 K (1 KiB)
constexpr int64_t kMatmulInt8Kernels = 32;      // int8 weight block: 32 kernels x 32 K (1 KiB)
constexpr int64_t kFp16MacsPerCycle = 512;      // fp16 MACs per cycle per core (TRM via [S2])
// Empirical register values of the matmul path ([S1] gen_matmul_fp16 / gen_matmul_int8,
// rknpu-matmul.md "Precisions and register fields"); nothing documents their meaning.
constexpr uint32_t kMatmulSizeEFp32 = 3;        // DPU BS_OW_CFG SIZE_E_0/1/2 for fp32 output
constexpr uint32_t kMatmulSizeEInt32 = 7;       // ... for int32 output
constexpr int64_t kMatmulSurfAddFp32 = 4;       // DPU SURFACE_ADD = M x 4 for fp32 output
constexpr int64_t kMatmulSurfAddInt32 = 8;      // ... x 8 for int32 output
constexpr uint32_t kMatmulOutputMode = 2;       // DPU FEATURE_MODE_CFG OUTPUT_MODE
constexpr uint32_t kMatmulBurstLen = 15;        // DPU FEATURE_MODE_CFG BURST_LEN
constexpr uint32_t kMatmulQdEnFp16 = 1;         // CORE MISC_CFG QD_EN: 1 for fp16, 0 for int8 in [S1]
constexpr uint32_t kMatmulQdEnInt8 = 0;         // ... ([S10]: 1 is harmless for int8; open question 2)
// [S10]: a matmul without an element-wise input must still program DPU_RDMA with
// MRDMA_DISABLE set, or the job times out on rocket.
constexpr uint32_t kMatmulMrdmaDisable = 1;

// ---- register command streams (rknpu.md "Tasks, jobs and register command streams") ----
constexpr int64_t kRegcmdAlign = 64;            // a task's command buffer is 64-byte aligned
constexpr int kRegcmdTargetShift = 48;          // entry = target << 48 | value << 16 | offset
constexpr int kRegcmdValueShift = 16;

// Field encodings that the register database names but does not enumerate. They follow
// NVDLA's conventions (nvdla.org hardware manual), as Mesa's driver does.
constexpr uint32_t kPrecisionInt8 = 0;          // IN/PROC/OUT_PRECISION: int8
constexpr uint32_t kPrecisionInt16 = 1;         // int16
// Matmul precisions (rknpu-matmul.md "Precisions and register fields", [S1] npu_hw.h):
// fp16 = 2, int32 = 4, fp32 = 5 in the CNA/CORE/DPU precision fields.
constexpr uint32_t kPrecisionFp16 = 2;
constexpr uint32_t kPrecisionInt32 = 4;         // DPU OUT_PRECISION: raw int32 results
constexpr uint32_t kPrecisionFp32 = 5;          // DPU OUT_PRECISION: fp32 results
constexpr uint32_t kConvModeDirect = 0;         // CNA CONV_MODE: direct convolution
constexpr uint32_t kConvModeDepthwise = 3;      // depthwise (Mesa's value)
constexpr uint32_t kAluAlgoMax = 0;             // BS/EW ALU: max
constexpr uint32_t kAluAlgoMin = 1;             // min
constexpr uint32_t kAluAlgoAdd = 2;             // add
constexpr uint32_t kEwOpMul = 1;                // EW_CFG.EW_OP_TYPE: the multiplier (0: the ALU); model's choice
constexpr uint32_t kPoolMethodAverage = 0;      // PPU POOLING_METHOD
constexpr uint32_t kPoolMethodMax = 1;
constexpr uint32_t kRecipFractionBits = 16;     // PPU RECIP_KERNEL_*: 1/k in 0.16 fixed point (17-bit field)

// ---- the DPU's arithmetic, as the device model reads it (docs/rknpu.md) ----
inline int32_t sat32(int64_t v) { return static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX)); }
// round(v * m / 2^s), rounding half away from zero (CVT_ROUND), then saturated to int32:
// every DPU multiplier stage (BS, BN, EW converter, OUT_CVT). The compiler uses it too when
// it checks an encoding against TFLite (lower_binary.cpp encode_pair).
// Shifts of 64 and more (the OUT_CVT field has 12 bits) leave 0: |v * m| < 2^63.
inline int32_t scale_round(int64_t v, int64_t m, int s) {
  int64_t p = v * m;  // |v| <= 2^31, |m| <= 2^31 (register fields)
  if (s > 0) {
    if (s > 63) return 0;
    const uint64_t mag = p < 0 ? uint64_t{0} - static_cast<uint64_t>(p) : static_cast<uint64_t>(p);
    const uint64_t r = (mag + (uint64_t{1} << (s - 1))) >> s;
    p = p < 0 ? -static_cast<int64_t>(r) : static_cast<int64_t>(r);
  }
  return sat32(p);
}

// ---- the DPU's lookup table (EW stage; NVDLA SDP's LUT, docs/rknpu.md "Lookup tables") ----
// Two tables of signed 16-bit entries: LE (NVDLA's "linear or exponent" X table) with 65
// entries and LO (linear only, Y table) with 257 (nvdla.org hardware manual, SDP LUT). The
// model implements the linear mode of both; the exponent mode of LE is not modelled.
constexpr int kLutLeEntries = 65;
constexpr int kLutLoEntries = 257;
constexpr uint32_t kLutTableLe = 0;        // LUT_ACCESS_CFG.LUT_TABLE_ID (NVDLA: 0 = LE, 1 = LO)
constexpr uint32_t kLutTableLo = 1;
constexpr uint32_t kLutAccessWrite = 1;    // LUT_ACCESS_CFG.LUT_ACCESS_TYPE (NVDLA: 0 = read, 1 = write)
constexpr uint32_t kLutLeLinear = 1;       // LUT_CFG.LUT_ROAD_SEL at NVDLA's LUT_LE_FUNCTION bit (0 = exponent, 1 = linear)
constexpr uint32_t kLutPriorityLo = 1;     // LUT_CFG.*_PRIORITY (NVDLA: 0 = LE, 1 = LO)

// One table in linear mode: entries T[0..n-1] cover [start, start + (n-1) * 2^select].
struct LutTable {
  const int16_t* entries = nullptr;
  int n = 0;
  int64_t start = 0;
  int select = 0;           // index = (x - start) >> select, fraction = the low `select` bits
  int32_t uflow_scale = 0;  // slope below start: T[0] + round((x - start) * scale / 2^shift)
  int uflow_shift = 0;
  int32_t oflow_scale = 0;  // slope above end: T[n-1] + round((x - end) * scale / 2^shift)
  int oflow_shift = 0;
  int64_t end() const { return start + (int64_t(n - 1) << select); }
  bool under(int64_t x) const { return x < start; }
  bool over(int64_t x) const { return x > end(); }
  // The table's output for x: interpolated inside, extrapolated with the slopes outside
  // (every product rounded half away from zero, as the DPU's other multipliers).
  int32_t at(int64_t x) const {
    if (under(x)) return sat32(int64_t(entries[0]) + scale_round(x - start, uflow_scale, uflow_shift));
    if (over(x)) return sat32(int64_t(entries[n - 1]) + scale_round(x - end(), oflow_scale, oflow_shift));
    const int64_t d = x - start, i = d >> select, f = d - (i << select);
    if (f == 0) return entries[i];
    return sat32(int64_t(entries[i]) + scale_round(int64_t(entries[i + 1]) - entries[i], f, select));
  }
};
// NVDLA's hit rules: a table hits when x lies in its range; when both hit, the hybrid
// priority picks; when neither does, the underflow (both below) or overflow (both above)
// priority picks, and the hybrid priority otherwise.
inline int32_t lut_lookup(const LutTable& le, const LutTable& lo, bool hybrid_lo, bool uflow_lo, bool oflow_lo, int64_t x) {
  const bool le_hit = !le.under(x) && !le.over(x), lo_hit = !lo.under(x) && !lo.over(x);
  bool use_lo;
  if (le_hit != lo_hit) use_lo = lo_hit;
  else if (le_hit) use_lo = hybrid_lo;
  else if (le.under(x) && lo.under(x)) use_lo = uflow_lo;
  else if (le.over(x) && lo.over(x)) use_lo = oflow_lo;
  else use_lo = hybrid_lo;
  return use_lo ? lo.at(x) : le.at(x);
}

// ---- the compiler's policy ----
// Mesa reserves one weight bank more than the weights need (Mesa's choice).
constexpr int kMesaExtraWeightBanks = 1;
// When the weights do not fit beside the data, Mesa splits the CBUF 7 data + 5 weight banks
// and streams the weights per task (Mesa's choice).
constexpr int kMesaStreamDataBanks = 7;
constexpr int kMesaStreamWeightBanks = 5;

// ---- the timing model (model knobs; calibrated in docs/rknpu.md) ----
// DRAM bandwidth one core sees for its DMA (LPDDR4x/5 on RK3588 boards peaks near 17 GB/s
// for the whole SoC; a core's NVDLA-style DMA gets a fraction of it).
constexpr double kDramBytesPerSecond = 6.0e9;
// The SoC's DRAM bandwidth, which the three cores share when all are busy (LPDDR4x/5 on
// RK3588 boards: about 17 GB/s at peak).
constexpr double kSocDramBytesPerSecond = 17.0e9;
// DRAM bandwidth of a matmul's weight stream (1 KiB blocks read in order, megabytes long),
// the SoC's total and one core's share, calibrated against RKLLM's published decode speed
// (rknpu-matmul.md [S6]: TinyLlama 1.1B w8a8 at 24.43 tokens/s reads its 1.03 GB of int8
// weights 24.43 times a second, at least 25.2 GB/s; docs/rknpu.md "Matrix multiplication").
// Convolutions keep the knobs above (calibrated against Mesa's MobileNet).
constexpr double kMatmulSocDramBytesPerSecond = 25.2e9;
constexpr double kMatmulDramBytesPerSecond = kMatmulSocDramBytesPerSecond / 3;
// Fixed cost of one task: the PC fetching ~130 register writes, block setup and drain.
constexpr double kTaskOverheadSeconds = 18e-6;
// Fixed cost of one job: kernel scheduling, IOMMU/cache maintenance, the completion
// interrupt and fence signalling.
constexpr double kJobOverheadSeconds = 200e-6;
// Depthwise convolution uses one input channel per output channel, so only a fraction of
// the MAC array (which multiplies 32 input channels at once) does useful work.
constexpr double kDepthwiseMacEfficiency = 1.0 / 16.0;
// int16 processing runs at half the int8 MAC rate (NVDLA: int16 is half of int8).
constexpr double kInt16MacRateFactor = 0.5;

}  // namespace tessera::rknpu
