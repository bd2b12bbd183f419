// Register command emission. Every value goes through the generated field definitions,
// so a value that does not fit its field is an error, never a silently truncated write.
// Conventions the device model decodes the same way (docs/rknpu.md "Register streams"):
//  - CNA sizes are plain counts; CORE, DPU and PPU cube sizes are minus one (NVDLA style);
//  - strides and addresses in fields whose lowest bit is 4 are in 16-byte units;
//  - every task writes all the registers it uses; blocks whose OPERATION_ENABLE is not
//    written do not run.
#include "backend/rknpu/emit.h"

#include "backend/rknpu/hw.h"
#include "backend/rknpu/regcmd.h"
#include "convert/rk_weights.h"

namespace tessera::rknpu {

namespace {
namespace R = regs;
constexpr int64_t kAddrUnit = 16;  // fields starting at bit 4 hold 16-byte units

int64_t surf_bytes(int64_t h, int64_t w) { return h * w * kC2; }

void emit_cna_core(Regcmd& r, const NpuOp& op, const Tiling& t, const TaskTile& tile, const OpAddresses& a, bool reuse) {
  const bool dw = op.type == NpuOpType::depthwise;
  const int64_t eb = op.int16 ? 2 : 1;
  const uint32_t prec = op.int16 ? kPrecisionInt16 : kPrecisionInt8;
  const int64_t line = op.in_w * kC2;
  const int64_t icp = dw ? (op.in_c + kC2 - 1) / kC2 * kC2 : convert::rk_conv_padded_ic(op.in_c);
  r.set(R::CNA::CONV_CON1__CONV_MODE, dw ? kConvModeDepthwise : kConvModeDirect)
      .set(R::CNA::CONV_CON1__IN_PRECISION, kPrecisionInt8)
      .set(R::CNA::CONV_CON1__PROC_PRECISION, prec)
      .emit();
  r.set(R::CNA::CONV_CON3__CONV_X_STRIDE, op.stride_w).set(R::CNA::CONV_CON3__CONV_Y_STRIDE, op.stride_h).emit();
  r.set(R::CNA::DATA_SIZE0__DATAIN_WIDTH, op.in_w).set(R::CNA::DATA_SIZE0__DATAIN_HEIGHT, tile.in_rows).emit();
  r.set(R::CNA::DATA_SIZE1__DATAIN_CHANNEL, icp).set(R::CNA::DATA_SIZE1__DATAIN_CHANNEL_REAL, op.in_c - 1).emit();
  r.write(R::CNA::DATA_SIZE2__DATAOUT_WIDTH, op.out_w);
  r.write(R::CNA::DATA_SIZE3__DATAOUT_ATOMICS, op.out_w * tile.out_rows);
  // Weights of output channels [oc0, oc0 + ocn): whole 32-kernel groups from oc0.
  int64_t per_kernel = dw ? op.kh * op.kw * eb : op.kh * op.kw * icp * eb;
  int64_t ocn_p = dw ? (tile.ocn + kC2 - 1) / kC2 * kC2 : (tile.ocn + 1) / 2 * 2;
  r.write(R::CNA::WEIGHT_SIZE0__WEIGHT_BYTES, per_kernel * ocn_p);
  r.write(R::CNA::WEIGHT_SIZE1__WEIGHT_BYTES_PER_KERNEL, per_kernel);
  r.set(R::CNA::WEIGHT_SIZE2__WEIGHT_WIDTH, op.kw)
      .set(R::CNA::WEIGHT_SIZE2__WEIGHT_HEIGHT, op.kh)
      .set(R::CNA::WEIGHT_SIZE2__WEIGHT_KERNELS, tile.ocn)
      .emit();
  r.set(R::CNA::CBUF_CON0__DATA_BANK, t.data_banks)
      .set(R::CNA::CBUF_CON0__WEIGHT_BANK, t.weight_banks)
      .set(R::CNA::CBUF_CON0__WEIGHT_REUSE, reuse ? 1 : 0)
      .emit();
  r.write(R::CNA::CBUF_CON1__DATA_ENTRIES, (t.data_row_bytes + kCbufEntryBytes - 1) / kCbufEntryBytes);
  if (op.int16) {
    r.set(R::CNA::CVT_CON0__CVT_BYPASS, 0).set(R::CNA::CVT_CON0__DATA_SIGN, 1).emit();
    r.set(R::CNA::CVT_CON1__CVT_SCALE0, 1).set_signed(R::CNA::CVT_CON1__CVT_OFFSET0, op.cvt_offset).emit();
  } else {
    r.set(R::CNA::CVT_CON0__CVT_BYPASS, 1).set(R::CNA::CVT_CON0__DATA_SIGN, 1).emit();
  }
  r.set(R::CNA::PAD_CON0__PAD_TOP, tile.pad_top).set(R::CNA::PAD_CON0__PAD_LEFT, op.pad_left).emit();
  r.set_signed(R::CNA::PAD_CON1__PAD_VALUE, op.pad_value).emit();
  r.write(R::CNA::FEATURE_DATA_ADDR__FEATURE_BASE_ADDR, a.input + tile.in_row0 * line);
  r.write(R::CNA::DMA_CON1__LINE_STRIDE, line);
  r.write(R::CNA::DMA_CON2__SURF_STRIDE, surf_bytes(op.in_h, op.in_w));
  // Depthwise weights are never chunked (the tiling keeps all channels in one task).
  const int64_t woff = dw ? 0 : tile.oc0 * per_kernel;
  r.write(R::CNA::DCOMP_ADDR0__DECOMPRESS_ADDR0, a.weights + woff);
  r.write(R::CNA::OPERATION_ENABLE__OP_EN, 1);

  r.set(R::CORE::MISC_CFG__PROC_PRECISION, prec).set(R::CORE::MISC_CFG__DW_EN, dw ? 1 : 0).emit();
  r.set(R::CORE::DATAOUT_SIZE_0__DATAOUT_HEIGHT, tile.out_rows - 1).set(R::CORE::DATAOUT_SIZE_0__DATAOUT_WIDTH, op.out_w - 1).emit();
  r.write(R::CORE::DATAOUT_SIZE_1__DATAOUT_CHANNEL, tile.ocn - 1);
  r.write(R::CORE::CLIP_TRUNCATE__CLIP_TRUNCATE, 0);
  r.write(R::CORE::OPERATION_ENABLE__OP_EN, 1);
}

void emit_lut_tables(Regcmd& r, const NpuOp& op);

void emit_dpu(Regcmd& r, const NpuOp& op, const TaskTile& tile, const OpAddresses& a) {
  const bool from_memory = op.type == NpuOpType::add;  // element-wise: MRDMA reads the first operand
  const int64_t out_line = op.out_w * kC2, out_surf = surf_bytes(op.out_h, op.out_w);
  const int64_t out_off = tile.out_row0 * out_line + (tile.oc0 / kC2) * out_surf;
  r.set(R::DPU::FEATURE_MODE_CFG__FLYING_MODE, from_memory ? 1 : 0).emit();
  r.set(R::DPU::DATA_FORMAT__IN_PRECISION, kPrecisionInt8)
      .set(R::DPU::DATA_FORMAT__PROC_PRECISION, kPrecisionInt8)
      .set(R::DPU::DATA_FORMAT__OUT_PRECISION, kPrecisionInt8)
      .emit();
  r.write(R::DPU::DST_BASE_ADDR__DST_BASE_ADDR, a.output + out_off);
  r.write(R::DPU::DST_SURF_STRIDE__DST_SURF_STRIDE, out_surf / kAddrUnit);
  r.write(R::DPU::DATA_CUBE_WIDTH__WIDTH, op.out_w - 1);
  r.write(R::DPU::DATA_CUBE_HEIGHT__HEIGHT, tile.out_rows - 1);
  r.set(R::DPU::DATA_CUBE_CHANNEL__CHANNEL, tile.ocn - 1).set(R::DPU::DATA_CUBE_CHANNEL__ORIG_CHANNEL, tile.ocn - 1).emit();
  // BS: bias (table or register) and the first multiplier (table or register).
  const bool alu = op.bs_table_used || op.bs_alu_operand != 0 || op.type == NpuOpType::add;
  const bool mul = op.type == NpuOpType::conv || op.type == NpuOpType::depthwise || op.type == NpuOpType::add;
  r.set(R::DPU::BS_CFG__BS_BYPASS, 0)
      .set(R::DPU::BS_CFG__BS_ALU_BYPASS, alu ? 0 : 1)
      .set(R::DPU::BS_CFG__BS_ALU_SRC, op.bs_table_used ? 1 : 0)
      .set(R::DPU::BS_CFG__BS_ALU_ALGO, kAluAlgoAdd)
      .set(R::DPU::BS_CFG__BS_MUL_BYPASS, mul ? 0 : 1)
      .set(R::DPU::BS_CFG__BS_RELU_BYPASS, op.bs_relu ? 0 : 1)  // activations clamp at BN, after both multipliers
      .set(R::DPU::BS_CFG__BS_RELUX_EN, 0)
      .emit();
  r.set_signed(R::DPU::BS_ALU_CFG__BS_ALU_OPERAND, op.bs_alu_operand).emit();
  r.set(R::DPU::BS_MUL_CFG__BS_MUL_SRC, op.bs_table_used ? 1 : 0)
      .set_signed(R::DPU::BS_MUL_CFG__BS_MUL_OPERAND, op.bs_mul.mantissa)
      .set(R::DPU::BS_MUL_CFG__BS_MUL_SHIFT_VALUE, op.bs_mul.shift)
      .emit();
  // BN: the per-channel rounding offset (ALU, per-channel convs) and the second per-channel
  // multiplier, then ReLU / ReLU-X.
  const bool bn = op.bn_mul || op.bn_alu;
  r.set(R::DPU::BN_CFG__BN_BYPASS, bn ? 0 : 1)
      .set(R::DPU::BN_CFG__BN_ALU_BYPASS, op.bn_alu ? 0 : 1)
      .set(R::DPU::BN_CFG__BN_ALU_SRC, op.bn_alu ? 1 : 0)
      .set(R::DPU::BN_CFG__BN_ALU_ALGO, kAluAlgoAdd)
      .set(R::DPU::BN_CFG__BN_MUL_BYPASS, op.bn_mul ? 0 : 1)
      .set(R::DPU::BN_CFG__BN_RELU_BYPASS, op.bn_relu ? 0 : 1)
      .set(R::DPU::BN_CFG__BN_RELUX_EN, op.bn_relux ? 1 : 0)
      .emit();
  r.set(R::DPU::BN_MUL_CFG__BN_MUL_SRC, op.bn_mul ? 1 : 0).emit();
  r.set_signed(R::DPU::BN_RELUX_CMP_VALUE__BN_RELUX_CMP_DAT, op.bn_relux_value).emit();
  // A fused lookup table (program.cpp: a conv whose only reader is a SiLU): the EW
  // multiplier divides by 2^k (operand 1, EW_TRUNCATE k) as OUT_CVT would, the LUT maps the
  // conv's output in steps (offset and saturation in its start and end entries) to the
  // table's values, and OUT_CVT is the identity.
  if (!op.lut_lo.empty()) {
    r.set(R::DPU::EW_CFG__EW_BYPASS, 0)
        .set(R::DPU::EW_CFG__EW_OP_BYPASS, 0)
        .set(R::DPU::EW_CFG__EW_OP_TYPE, kEwOpMul)
        .set(R::DPU::EW_CFG__EW_OP_SRC, 0)
        .set(R::DPU::EW_CFG__EW_OP_CVT_BYPASS, 1)
        .set(R::DPU::EW_CFG__EW_LUT_BYPASS, 0)
        .set(R::DPU::EW_CFG__EW_RELU_BYPASS, 1)
        .emit();
    r.write(R::DPU::EW_OP_VALUE_0__EW_OPERAND_0, 1);
    r.write(R::DPU::EW_CVT_SCALE_VALUE__EW_TRUNCATE, op.ew_truncate);
    emit_lut_tables(r, op);
  }
  // EW: the other operand (a tensor's or a constant's buffer, ERDMA), converted into this
  // op's unit and summed by the ALU, or (ew_mul) multiplied in by the EW multiplier, which
  // rounds the product right by EW_TRUNCATE.
  const bool ew = op.ew_input != kNoTensor || op.ew_constant != kNoTensor;
  if (op.lut_lo.empty()) {
    r.set(R::DPU::EW_CFG__EW_BYPASS, ew ? 0 : 1)
        .set(R::DPU::EW_CFG__EW_OP_BYPASS, 0)
        .set(R::DPU::EW_CFG__EW_OP_TYPE, op.ew_mul ? kEwOpMul : 0)
        .set(R::DPU::EW_CFG__EW_LUT_BYPASS, 1)  // the lookup table only in lut tasks (emit_lut)
        .set(R::DPU::EW_CFG__EW_OP_SRC, ew ? 1 : 0)
        .set(R::DPU::EW_CFG__EW_ALU_ALGO, kAluAlgoAdd)
        .set(R::DPU::EW_CFG__EW_OP_CVT_BYPASS, 0)
        .set(R::DPU::EW_CFG__EW_RELU_BYPASS, op.ew_relu ? 0 : 1)
        .set(R::DPU::EW_CFG__EW_RELUX_EN, op.ew_relux ? 1 : 0)
        .emit();
    r.set_signed(R::DPU::EW_CVT_OFFSET_VALUE__EW_OP_CVT_OFFSET, op.ew_offset).emit();
    r.set(R::DPU::EW_CVT_SCALE_VALUE__EW_OP_CVT_SCALE, op.ew_scale.mantissa)
        .set(R::DPU::EW_CVT_SCALE_VALUE__EW_OP_CVT_SHIFT, op.ew_scale.shift)
        .set(R::DPU::EW_CVT_SCALE_VALUE__EW_TRUNCATE, op.ew_mul ? op.ew_truncate : 0)
        .emit();
    r.set_signed(R::DPU::EW_RELUX_CMP_VALUE__EW_RELUX_CMP_DAT, op.ew_relux_value).emit();
  }
  // Output conversion: round(v * scale / 2^shift) + offset, saturated to int8.
  r.set_signed(R::DPU::OUT_CVT_OFFSET__OUT_CVT_OFFSET, op.out_offset).emit();
  r.write(R::DPU::OUT_CVT_SCALE__OUT_CVT_SCALE, op.out_scale.mantissa);
  r.set(R::DPU::OUT_CVT_SHIFT__OUT_CVT_SHIFT, op.out_scale.shift).set(R::DPU::OUT_CVT_SHIFT__CVT_ROUND, 1).emit();
  r.write(R::DPU::OPERATION_ENABLE__OP_EN, 1);

  // DPU_RDMA: the bias/scale table, the EW operand and (element-wise) the main operand.
  if (!op.bs_table_used && !ew && !from_memory) return;
  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_WIDTH__WIDTH, op.out_w - 1);
  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_HEIGHT__HEIGHT, tile.out_rows - 1);
  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_CHANNEL__CHANNEL, tile.ocn - 1);
  r.set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__MRDMA_DISABLE, from_memory ? 0 : 1)
      .set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__FLYING_MODE, from_memory ? 1 : 0)
      .set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__IN_PRECISION, kPrecisionInt8)
      .emit();
  if (from_memory) r.write(R::DPU_RDMA::RDMA_SRC_BASE_ADDR__SRC_BASE_ADDR, a.input + out_off);
  // BRDMA_DATA_USE: bit 0 = the table supplies the ALU operand, bit 1 = the multiplier.
  uint32_t use = op.bs_table_used ? 3u : 0u;
  r.write(R::DPU_RDMA::RDMA_BRDMA_CFG__BRDMA_DATA_USE, use);
  if (use) r.write(R::DPU_RDMA::RDMA_BS_BASE_ADDR__BS_BASE_ADDR, a.bs + tile.oc0 * kBsEntryBytes);
  // NRDMA_DATA_USE: the BN table (after the BS entries) supplies the ALU operand (bit 0)
  // and the multiplier (bit 1).
  const uint32_t bn_use = (op.bn_alu ? 1u : 0u) | (op.bn_mul ? 2u : 0u);
  r.write(R::DPU_RDMA::RDMA_NRDMA_CFG__NRDMA_DATA_USE, bn_use);
  if (bn_use) r.write(R::DPU_RDMA::RDMA_BN_BASE_ADDR__BN_BASE_ADDR, a.bs + (op.out_c + tile.oc0) * kBsEntryBytes);
  r.set(R::DPU_RDMA::RDMA_ERDMA_CFG__ERDMA_DISABLE, ew ? 0 : 1).set(R::DPU_RDMA::RDMA_ERDMA_CFG__ERDMA_DATA_SIZE, 0).emit();
  if (ew) {
    r.write(R::DPU_RDMA::RDMA_EW_BASE_ADDR__EW_BASE_ADDR, a.ew + out_off);
    r.write(R::DPU_RDMA::RDMA_EW_SURF_STRIDE__EW_SURF_STRIDE, out_surf / kAddrUnit);
  }
  r.write(R::DPU_RDMA::RDMA_OPERATION_ENABLE__OP_EN, 1);
}

// Matrix multiplication (rknpu-matmul.md "Precisions and register fields", [S1]
// gen_matmul_fp16 / gen_matmul_int8): a 1x1 convolution over H = rows of A, W = 1, C = K.
//  - fp16 x fp16 -> fp32: the CORE's fp32 sums written by the DPU as fp32 (N/4, M, 4), the
//    bias added by BS's ALU;
//  - int8 x int8 -> int32: the CORE's int32 sums written raw as int32 (N/4, M, 4), every DPU
//    stage bypassed (the host applies the scales and the bias).
// A task of K segment s reads A's K values [k0, k0 + kn) (whole surfaces of the NC1HWC2
// cube), segment s of the packed weights, and writes partial result s (C-sized cubes one
// after another from the output address; only segment 0 adds the bias).
void emit_matmul(Regcmd& r, const NpuOp& op, const Tiling& t, const TaskTile& tile, const OpAddresses& a, bool reuse) {
  const bool int8 = op.mm_int8;
  const int64_t k = tile.kn > 0 ? tile.kn : op.in_c, kp = (k + kMatmulKGroup - 1) / kMatmulKGroup * kMatmulKGroup;
  const int64_t m = op.in_h;
  const int64_t eb = int8 ? 1 : 2;
  const int64_t c2 = int8 ? kC2 : kFp16C2;  // values per 16-byte atom of A
  const int64_t atom = 16;
  const int64_t kernels = int8 ? kMatmulInt8Kernels : kMatmulFp16Kernels;
  const uint32_t prec = int8 ? kPrecisionInt8 : kPrecisionFp16;
  const uint32_t out_prec = int8 ? kPrecisionInt32 : kPrecisionFp32;
  const int64_t per_kernel = kp * eb;
  const int64_t ocn_p = (tile.ocn + kernels - 1) / kernels * kernels;
  r.set(R::CNA::CONV_CON1__CONV_MODE, kConvModeDirect)
      .set(R::CNA::CONV_CON1__IN_PRECISION, prec)
      .set(R::CNA::CONV_CON1__PROC_PRECISION, prec)
      .emit();
  r.write(R::CNA::CONV_CON2__FEATURE_GRAINS, tile.in_rows + 1);  // [S1]: rows + 1
  r.set(R::CNA::CONV_CON3__CONV_X_STRIDE, 1).set(R::CNA::CONV_CON3__CONV_Y_STRIDE, 1).emit();
  r.set(R::CNA::DATA_SIZE0__DATAIN_WIDTH, 1).set(R::CNA::DATA_SIZE0__DATAIN_HEIGHT, tile.in_rows).emit();
  r.set(R::CNA::DATA_SIZE1__DATAIN_CHANNEL, kp).set(R::CNA::DATA_SIZE1__DATAIN_CHANNEL_REAL, k - 1).emit();
  r.write(R::CNA::DATA_SIZE2__DATAOUT_WIDTH, 1);
  r.write(R::CNA::DATA_SIZE3__DATAOUT_ATOMICS, tile.out_rows);
  r.write(R::CNA::WEIGHT_SIZE0__WEIGHT_BYTES, per_kernel * ocn_p);
  r.write(R::CNA::WEIGHT_SIZE1__WEIGHT_BYTES_PER_KERNEL, per_kernel);
  r.set(R::CNA::WEIGHT_SIZE2__WEIGHT_WIDTH, 1)
      .set(R::CNA::WEIGHT_SIZE2__WEIGHT_HEIGHT, 1)
      .set(R::CNA::WEIGHT_SIZE2__WEIGHT_KERNELS, tile.ocn)
      .emit();
  r.set(R::CNA::CBUF_CON0__DATA_BANK, t.data_banks)
      .set(R::CNA::CBUF_CON0__WEIGHT_BANK, t.weight_banks)
      .set(R::CNA::CBUF_CON0__WEIGHT_REUSE, reuse ? 1 : 0)
      .emit();
  // [S1]: ceil(K * W / 32) for fp16, ceil(K * W / 64) for int8.
  r.write(R::CNA::CBUF_CON1__DATA_ENTRIES, int8 ? (k + 63) / 64 : (k + 31) / 32);
  r.set(R::CNA::CVT_CON0__CVT_BYPASS, 1).set(R::CNA::CVT_CON0__CVT_TYPE, 1).set(R::CNA::CVT_CON0__DATA_SIGN, 1).emit();
  r.set(R::CNA::PAD_CON0__PAD_TOP, 0).set(R::CNA::PAD_CON0__PAD_LEFT, 0).emit();
  // A: NC1HWC2 (K/C2 surfaces of M 16-byte atoms); this task's rows start at row0 and its
  // K values at surface k0 / C2.
  r.write(R::CNA::FEATURE_DATA_ADDR__FEATURE_BASE_ADDR, a.input + (tile.k0 / c2) * m * atom + tile.in_row0 * atom);
  r.write(R::CNA::DMA_CON1__LINE_STRIDE, atom);
  r.write(R::CNA::DMA_CON2__SURF_STRIDE, m * atom);
  // B: whole kernel blocks from oc0 (a multiple of the block's kernels) of this K segment.
  r.write(R::CNA::DCOMP_ADDR0__DECOMPRESS_ADDR0,
          a.weights + matmul_segment_weight_offset(op, t, tile.kseg) + tile.oc0 * per_kernel);
  r.write(R::CNA::OPERATION_ENABLE__OP_EN, 1);

  r.set(R::CORE::MISC_CFG__PROC_PRECISION, prec).set(R::CORE::MISC_CFG__QD_EN, int8 ? kMatmulQdEnInt8 : kMatmulQdEnFp16).emit();
  r.set(R::CORE::DATAOUT_SIZE_0__DATAOUT_HEIGHT, tile.out_rows - 1).set(R::CORE::DATAOUT_SIZE_0__DATAOUT_WIDTH, 0).emit();
  r.write(R::CORE::DATAOUT_SIZE_1__DATAOUT_CHANNEL, tile.ocn - 1);
  r.write(R::CORE::CLIP_TRUNCATE__CLIP_TRUNCATE, 0);
  r.write(R::CORE::OPERATION_ENABLE__OP_EN, 1);

  // C: fp32 / int32 (N/4, M, 4): surfaces of M 16-byte atoms, this task's block at
  // (oc0/4, row0) of partial result kseg.
  const int64_t out_surf = m * atom;
  const int64_t partial = (op.out_c + kFp32OutC2 - 1) / kFp32OutC2 * out_surf;
  r.set(R::DPU::FEATURE_MODE_CFG__FLYING_MODE, 0)
      .set(R::DPU::FEATURE_MODE_CFG__OUTPUT_MODE, kMatmulOutputMode)
      .set(R::DPU::FEATURE_MODE_CFG__BURST_LEN, kMatmulBurstLen)
      .emit();
  r.set(R::DPU::DATA_FORMAT__IN_PRECISION, prec)
      .set(R::DPU::DATA_FORMAT__PROC_PRECISION, prec)
      .set(R::DPU::DATA_FORMAT__OUT_PRECISION, out_prec)
      .emit();
  r.write(R::DPU::DST_BASE_ADDR__DST_BASE_ADDR,
          a.output + tile.kseg * partial + tile.out_row0 * atom + (tile.oc0 / kFp32OutC2) * out_surf);
  r.write(R::DPU::DST_SURF_STRIDE__DST_SURF_STRIDE, out_surf / kAddrUnit);
  // [S1]: M x 4 for fp32 output, M x 8 for int32.
  r.write(R::DPU::SURFACE_ADD__SURF_ADD, m * (int8 ? kMatmulSurfAddInt32 : kMatmulSurfAddFp32));
  r.write(R::DPU::DATA_CUBE_WIDTH__WIDTH, 0);
  r.write(R::DPU::DATA_CUBE_HEIGHT__HEIGHT, tile.out_rows - 1);
  r.set(R::DPU::DATA_CUBE_CHANNEL__CHANNEL, tile.ocn - 1).set(R::DPU::DATA_CUBE_CHANNEL__ORIG_CHANNEL, tile.ocn - 1).emit();
  const uint32_t size_e = int8 ? kMatmulSizeEInt32 : kMatmulSizeEFp32;
  r.set(R::DPU::BS_OW_CFG__SIZE_E_0, size_e).set(R::DPU::BS_OW_CFG__SIZE_E_1, size_e).set(R::DPU::BS_OW_CFG__SIZE_E_2, size_e).emit();
  const bool bias = op.bs_table_used && tile.kseg == 0;
  r.set(R::DPU::BS_CFG__BS_BYPASS, bias ? 0 : 1)
      .set(R::DPU::BS_CFG__BS_ALU_BYPASS, bias ? 0 : 1)
      .set(R::DPU::BS_CFG__BS_ALU_SRC, bias ? 1 : 0)
      .set(R::DPU::BS_CFG__BS_ALU_ALGO, kAluAlgoAdd)
      .set(R::DPU::BS_CFG__BS_MUL_BYPASS, 1)
      .set(R::DPU::BS_CFG__BS_RELU_BYPASS, 1)
      .emit();
  r.set(R::DPU::BN_CFG__BN_BYPASS, 1).emit();
  r.set(R::DPU::EW_CFG__EW_BYPASS, 1).emit();
  r.write(R::DPU::OUT_CVT_SCALE__OUT_CVT_SCALE, 1);  // [S1]: scale 1, FP32TOFP16_EN 0
  r.set(R::DPU::OUT_CVT_SHIFT__OUT_CVT_SHIFT, 0).emit();
  r.write(R::DPU::OPERATION_ENABLE__OP_EN, 1);

  // DPU_RDMA: the bias table when there is one; programmed with MRDMA disabled either way ([S10]).
  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_WIDTH__WIDTH, 0);
  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_HEIGHT__HEIGHT, tile.out_rows - 1);
  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_CHANNEL__CHANNEL, tile.ocn - 1);
  r.set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__MRDMA_DISABLE, kMatmulMrdmaDisable)
      .set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__IN_PRECISION, prec)
      .set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__PROC_PRECISION, prec)
      .emit();
  r.write(R::DPU_RDMA::RDMA_BRDMA_CFG__BRDMA_DATA_USE, bias ? 1u : 0u);
  if (bias) r.write(R::DPU_RDMA::RDMA_BS_BASE_ADDR__BS_BASE_ADDR, a.bs + tile.oc0 * kBsEntryBytes);
  r.write(R::DPU_RDMA::RDMA_NRDMA_CFG__NRDMA_DATA_USE, 0);
  r.set(R::DPU_RDMA::RDMA_ERDMA_CFG__ERDMA_DISABLE, 1).emit();
  r.write(R::DPU_RDMA::RDMA_OPERATION_ENABLE__OP_EN, 1);
}

// The LUT's configuration and both tables (docs/rknpu.md "Lookup tables"): linear LE and
// LO, LO chosen where both hit and beyond both ends, zero slopes; the tables are written
// through LUT_ACCESS_CFG (write, table, start address 0) and then one LUT_ACCESS_DATA per
// entry, the address advancing after each (NVDLA's LUT access port).
void emit_lut_tables(Regcmd& r, const NpuOp& op) {
  r.set(R::DPU::LUT_CFG__LUT_ROAD_SEL, kLutLeLinear)
      .set(R::DPU::LUT_CFG__LUT_HYBRID_PRIORITY, kLutPriorityLo)
      .set(R::DPU::LUT_CFG__LUT_UFLOW_PRIORITY, kLutPriorityLo)
      .set(R::DPU::LUT_CFG__LUT_OFLOW_PRIORITY, kLutPriorityLo)
      .emit();
  r.set(R::DPU::LUT_INFO__LUT_LE_INDEX_SELECT, op.lut_le_select).set(R::DPU::LUT_INFO__LUT_LO_INDEX_SELECT, op.lut_lo_select).emit();
  r.set_signed(R::DPU::LUT_LE_START__LUT_LE_START, op.lut_le_start).emit();
  r.set_signed(R::DPU::LUT_LE_END__LUT_LE_END, op.lut_le_start + (int64_t(kLutLeEntries - 1) << op.lut_le_select)).emit();
  r.set_signed(R::DPU::LUT_LO_START__LUT_LO_START, op.lut_lo_start).emit();
  r.set_signed(R::DPU::LUT_LO_END__LUT_LO_END, op.lut_lo_start + (int64_t(kLutLoEntries - 1) << op.lut_lo_select)).emit();
  // Zero slopes: beyond either end a table holds its end entry.
  r.set(R::DPU::LUT_LE_SLOPE_SCALE__LUT_LE_SLOPE_OFLOW_SCALE, 0).set(R::DPU::LUT_LE_SLOPE_SCALE__LUT_LE_SLOPE_UFLOW_SCALE, 0).emit();
  r.set(R::DPU::LUT_LE_SLOPE_SHIFT__LUT_LE_SLOPE_OFLOW_SHIFT, 0).set(R::DPU::LUT_LE_SLOPE_SHIFT__LUT_LE_SLOPE_UFLOW_SHIFT, 0).emit();
  r.set(R::DPU::LUT_LO_SLOPE_SCALE__LUT_LO_SLOPE_OFLOW_SCALE, 0).set(R::DPU::LUT_LO_SLOPE_SCALE__LUT_LO_SLOPE_UFLOW_SCALE, 0).emit();
  r.set(R::DPU::LUT_LO_SLOPE_SHIFT__LUT_LO_SLOPE_OFLOW_SHIFT, 0).set(R::DPU::LUT_LO_SLOPE_SHIFT__LUT_LO_SLOPE_UFLOW_SHIFT, 0).emit();
  for (const auto& [id, entries] : {std::pair{kLutTableLe, &op.lut_le}, std::pair{kLutTableLo, &op.lut_lo}}) {
    r.set(R::DPU::LUT_ACCESS_CFG__LUT_ACCESS_TYPE, kLutAccessWrite)
        .set(R::DPU::LUT_ACCESS_CFG__LUT_TABLE_ID, id)
        .set(R::DPU::LUT_ACCESS_CFG__LUT_ADDR, 0)
        .emit();
    for (int16_t e : *entries) r.write(R::DPU::LUT_ACCESS_DATA__LUT_ACCESS_DATA, static_cast<uint16_t>(e));
  }
}

// Lookup table (lower.cpp lower_lut, docs/rknpu.md "Lookup tables"): an element-wise DPU
// task. MRDMA reads the int8 cube, BS and BN are bypassed, the EW stage runs only its LUT
// (no operand: EW_OP_BYPASS, ERDMA disabled), OUT_CVT is the identity. The tables are
// written through LUT_ACCESS_CFG (write, table, start address 0) and then one
// LUT_ACCESS_DATA per entry, the address advancing after each (NVDLA's LUT access port).
// A channel copy (NpuOpType::copy) is the same task with the EW stage bypassed too, reading
// from channel src_c0 and writing at channel dst_c0 (whole surfaces: H and W are equal on
// both sides, so is the surface stride).
void emit_lut(Regcmd& r, const NpuOp& op, const TaskTile& tile, const OpAddresses& a) {
  const bool table = op.type == NpuOpType::lut;
  const int64_t out_line = op.out_w * kC2, out_surf = surf_bytes(op.out_h, op.out_w);
  const int64_t off = tile.out_row0 * out_line + (tile.oc0 / kC2) * out_surf;
  const int64_t src = off + op.src_c0 / kC2 * out_surf, dst = off + op.dst_c0 / kC2 * out_surf;
  r.set(R::DPU::FEATURE_MODE_CFG__FLYING_MODE, 1).emit();
  r.set(R::DPU::DATA_FORMAT__IN_PRECISION, kPrecisionInt8)
      .set(R::DPU::DATA_FORMAT__PROC_PRECISION, kPrecisionInt8)
      .set(R::DPU::DATA_FORMAT__OUT_PRECISION, kPrecisionInt8)
      .emit();
  r.write(R::DPU::DST_BASE_ADDR__DST_BASE_ADDR, a.output + dst);
  r.write(R::DPU::DST_SURF_STRIDE__DST_SURF_STRIDE, out_surf / kAddrUnit);
  r.write(R::DPU::DATA_CUBE_WIDTH__WIDTH, op.out_w - 1);
  r.write(R::DPU::DATA_CUBE_HEIGHT__HEIGHT, tile.out_rows - 1);
  r.set(R::DPU::DATA_CUBE_CHANNEL__CHANNEL, tile.ocn - 1).set(R::DPU::DATA_CUBE_CHANNEL__ORIG_CHANNEL, tile.ocn - 1).emit();
  r.set(R::DPU::BS_CFG__BS_BYPASS, 1).emit();
  r.set(R::DPU::BN_CFG__BN_BYPASS, 1).emit();
  if (!table) {
    r.set(R::DPU::EW_CFG__EW_BYPASS, 1).emit();
  } else {
    r.set(R::DPU::EW_CFG__EW_BYPASS, 0)
        .set(R::DPU::EW_CFG__EW_OP_BYPASS, 1)
        .set(R::DPU::EW_CFG__EW_OP_CVT_BYPASS, 1)
        .set(R::DPU::EW_CFG__EW_LUT_BYPASS, 0)
        .set(R::DPU::EW_CFG__EW_RELU_BYPASS, 1)
        .set(R::DPU::EW_CFG__EW_OP_SRC, 0)
        .emit();
    emit_lut_tables(r, op);
  }
  r.write(R::DPU::OUT_CVT_OFFSET__OUT_CVT_OFFSET, 0);
  r.write(R::DPU::OUT_CVT_SCALE__OUT_CVT_SCALE, 1);
  r.set(R::DPU::OUT_CVT_SHIFT__OUT_CVT_SHIFT, 0).set(R::DPU::OUT_CVT_SHIFT__CVT_ROUND, 1).emit();
  r.write(R::DPU::OPERATION_ENABLE__OP_EN, 1);

  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_WIDTH__WIDTH, op.out_w - 1);
  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_HEIGHT__HEIGHT, tile.out_rows - 1);
  r.write(R::DPU_RDMA::RDMA_DATA_CUBE_CHANNEL__CHANNEL, tile.ocn - 1);
  r.set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__MRDMA_DISABLE, 0)
      .set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__FLYING_MODE, 1)
      .set(R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__IN_PRECISION, kPrecisionInt8)
      .emit();
  r.write(R::DPU_RDMA::RDMA_SRC_BASE_ADDR__SRC_BASE_ADDR, a.input + src);
  r.write(R::DPU_RDMA::RDMA_BRDMA_CFG__BRDMA_DATA_USE, 0);
  r.write(R::DPU_RDMA::RDMA_NRDMA_CFG__NRDMA_DATA_USE, 0);
  r.set(R::DPU_RDMA::RDMA_ERDMA_CFG__ERDMA_DISABLE, 1).emit();
  r.write(R::DPU_RDMA::RDMA_OPERATION_ENABLE__OP_EN, 1);
}

void emit_ppu(Regcmd& r, const NpuOp& op, const OpAddresses& a) {
  r.write(R::PPU::DATA_CUBE_IN_WIDTH__CUBE_IN_WIDTH, op.in_w - 1);
  r.write(R::PPU::DATA_CUBE_IN_HEIGHT__CUBE_IN_HEIGHT, op.in_h - 1);
  r.write(R::PPU::DATA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL, op.in_c - 1);
  r.write(R::PPU::DATA_CUBE_OUT_WIDTH__CUBE_OUT_WIDTH, op.out_w - 1);
  r.write(R::PPU::DATA_CUBE_OUT_HEIGHT__CUBE_OUT_HEIGHT, op.out_h - 1);
  r.write(R::PPU::DATA_CUBE_OUT_CHANNEL__CUBE_OUT_CHANNEL, op.out_c - 1);
  r.set(R::PPU::OPERATION_MODE_CFG__POOLING_METHOD, op.type == NpuOpType::avg_pool ? kPoolMethodAverage : kPoolMethodMax)
      .set(R::PPU::OPERATION_MODE_CFG__FLYING_MODE, 1)
      .emit();
  r.set(R::PPU::POOLING_KERNEL_CFG__KERNEL_WIDTH, op.kw)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_HEIGHT, op.kh)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_WIDTH, op.stride_w)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_HEIGHT, op.stride_h)
      .emit();
  r.write(R::PPU::RECIP_KERNEL_WIDTH__RECIP_KERNEL_WIDTH, op.recip_w);
  r.write(R::PPU::RECIP_KERNEL_HEIGHT__RECIP_KERNEL_HEIGHT, op.recip_h);
  r.set(R::PPU::POOLING_PADDING_CFG__PAD_TOP, op.pad_top).set(R::PPU::POOLING_PADDING_CFG__PAD_LEFT, op.pad_left).emit();
  // Padding never wins a max and is excluded from averages (no padded average pooling).
  r.set_signed(R::PPU::PADDING_VALUE_1_CFG__PAD_VALUE_0, -128).emit();
  r.write(R::PPU::DST_BASE_ADDR__DST_BASE_ADDR, a.output / kAddrUnit);
  r.write(R::PPU::DST_SURF_STRIDE__DST_SURF_STRIDE, surf_bytes(op.out_h, op.out_w) / kAddrUnit);
  r.write(R::PPU::DATA_FORMAT__PROC_PRECISION, kPrecisionInt8);
  r.write(R::PPU::OPERATION_ENABLE__OP_EN, 1);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_WIDTH__CUBE_IN_WIDTH, op.in_w - 1);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_HEIGHT__CUBE_IN_HEIGHT, op.in_h - 1);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL, op.in_c - 1);
  r.write(R::PPU_RDMA::RDMA_SRC_BASE_ADDR__SRC_BASE_ADDR, a.input);
  r.write(R::PPU_RDMA::RDMA_SRC_LINE_STRIDE__SRC_LINE_STRIDE, op.in_w * kC2 / kAddrUnit);
  r.write(R::PPU_RDMA::RDMA_SRC_SURF_STRIDE__SRC_SURF_STRIDE, surf_bytes(op.in_h, op.in_w) / kAddrUnit);
  r.write(R::PPU_RDMA::RDMA_DATA_FORMAT__IN_PRECISION, kPrecisionInt8);
  r.write(R::PPU_RDMA::RDMA_OPERATION_ENABLE__OP_EN, 1);
}
// Nearest x2 resize (lower_resize.cpp): tile.out_row0 is the output row parity dy, tile.oc0
// / ocn the view's channels (16 per surface s = c1 * H + y). PPU_RDMA reads each surface as
// W lines of one atom; the PPU's 2 x 1 max with one pad of -128 each side writes each atom
// twice (output atoms 2x, 2x + 1), surface s at output row 2y + dy of channel block c1.
void emit_resize(Regcmd& r, const NpuOp& op, const TaskTile& tile, const OpAddresses& a) {
  const int64_t w = op.in_w, s0 = tile.oc0 / kC2;
  const int64_t src = a.input + s0 * w * kC2;
  const int64_t dst = a.output + s0 * 4 * w * kC2 + tile.out_row0 * 2 * w * kC2;
  r.write(R::PPU::DATA_CUBE_IN_WIDTH__CUBE_IN_WIDTH, 0);
  r.write(R::PPU::DATA_CUBE_IN_HEIGHT__CUBE_IN_HEIGHT, w - 1);
  r.write(R::PPU::DATA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL, tile.ocn - 1);
  r.write(R::PPU::DATA_CUBE_OUT_WIDTH__CUBE_OUT_WIDTH, 1);
  r.write(R::PPU::DATA_CUBE_OUT_HEIGHT__CUBE_OUT_HEIGHT, w - 1);
  r.write(R::PPU::DATA_CUBE_OUT_CHANNEL__CUBE_OUT_CHANNEL, tile.ocn - 1);
  r.set(R::PPU::OPERATION_MODE_CFG__POOLING_METHOD, kPoolMethodMax).set(R::PPU::OPERATION_MODE_CFG__FLYING_MODE, 1).emit();
  r.set(R::PPU::POOLING_KERNEL_CFG__KERNEL_WIDTH, op.kw)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_HEIGHT, op.kh)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_WIDTH, 1)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_HEIGHT, 1)
      .emit();
  r.write(R::PPU::RECIP_KERNEL_WIDTH__RECIP_KERNEL_WIDTH, 0);
  r.write(R::PPU::RECIP_KERNEL_HEIGHT__RECIP_KERNEL_HEIGHT, 0);
  r.set(R::PPU::POOLING_PADDING_CFG__PAD_LEFT, op.pad_left).set(R::PPU::POOLING_PADDING_CFG__PAD_RIGHT, 1).emit();
  r.set_signed(R::PPU::PADDING_VALUE_1_CFG__PAD_VALUE_0, -128).emit();
  r.write(R::PPU::DST_BASE_ADDR__DST_BASE_ADDR, dst / kAddrUnit);
  r.write(R::PPU::DST_SURF_STRIDE__DST_SURF_STRIDE, 4 * w * kC2 / kAddrUnit);
  r.write(R::PPU::DATA_FORMAT__PROC_PRECISION, kPrecisionInt8);
  r.write(R::PPU::OPERATION_ENABLE__OP_EN, 1);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_WIDTH__CUBE_IN_WIDTH, 0);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_HEIGHT__CUBE_IN_HEIGHT, w - 1);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL, tile.ocn - 1);
  r.write(R::PPU_RDMA::RDMA_SRC_BASE_ADDR__SRC_BASE_ADDR, src);
  r.write(R::PPU_RDMA::RDMA_SRC_LINE_STRIDE__SRC_LINE_STRIDE, kC2 / kAddrUnit);
  r.write(R::PPU_RDMA::RDMA_SRC_SURF_STRIDE__SRC_SURF_STRIDE, w * kC2 / kAddrUnit);
  r.write(R::PPU_RDMA::RDMA_DATA_FORMAT__IN_PRECISION, kPrecisionInt8);
  r.write(R::PPU_RDMA::RDMA_OPERATION_ENABLE__OP_EN, 1);
}

// Row copies (lower.cpp lower_row_copies): tile.oc0 / ocn the rows, 16 channels each.
// PPU_RDMA reads each row as one line of in_w atoms (the input's rows are consecutive); a
// 1x1 max pooling passes every value; the PPU writes row r at dst_offset + r * dst_row_bytes.
void emit_row_copy(Regcmd& r, const NpuOp& op, const TaskTile& tile, const OpAddresses& a) {
  const int64_t w = op.in_w, r0 = tile.oc0 / kC2;
  const int64_t src = a.input + r0 * w * kC2;
  const int64_t dst = a.output + op.dst_offset + r0 * op.dst_row_bytes;
  r.write(R::PPU::DATA_CUBE_IN_WIDTH__CUBE_IN_WIDTH, w - 1);
  r.write(R::PPU::DATA_CUBE_IN_HEIGHT__CUBE_IN_HEIGHT, 0);
  r.write(R::PPU::DATA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL, tile.ocn - 1);
  r.write(R::PPU::DATA_CUBE_OUT_WIDTH__CUBE_OUT_WIDTH, w - 1);
  r.write(R::PPU::DATA_CUBE_OUT_HEIGHT__CUBE_OUT_HEIGHT, 0);
  r.write(R::PPU::DATA_CUBE_OUT_CHANNEL__CUBE_OUT_CHANNEL, tile.ocn - 1);
  r.set(R::PPU::OPERATION_MODE_CFG__POOLING_METHOD, kPoolMethodMax).set(R::PPU::OPERATION_MODE_CFG__FLYING_MODE, 1).emit();
  r.set(R::PPU::POOLING_KERNEL_CFG__KERNEL_WIDTH, 1)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_HEIGHT, 1)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_WIDTH, 1)
      .set(R::PPU::POOLING_KERNEL_CFG__KERNEL_STRIDE_HEIGHT, 1)
      .emit();
  r.write(R::PPU::RECIP_KERNEL_WIDTH__RECIP_KERNEL_WIDTH, 0);
  r.write(R::PPU::RECIP_KERNEL_HEIGHT__RECIP_KERNEL_HEIGHT, 0);
  r.set(R::PPU::POOLING_PADDING_CFG__PAD_TOP, 0).set(R::PPU::POOLING_PADDING_CFG__PAD_LEFT, 0).emit();
  r.set_signed(R::PPU::PADDING_VALUE_1_CFG__PAD_VALUE_0, -128).emit();
  r.write(R::PPU::DST_BASE_ADDR__DST_BASE_ADDR, dst / kAddrUnit);
  r.write(R::PPU::DST_SURF_STRIDE__DST_SURF_STRIDE, op.dst_row_bytes / kAddrUnit);
  r.write(R::PPU::DATA_FORMAT__PROC_PRECISION, kPrecisionInt8);
  r.write(R::PPU::OPERATION_ENABLE__OP_EN, 1);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_WIDTH__CUBE_IN_WIDTH, w - 1);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_HEIGHT__CUBE_IN_HEIGHT, 0);
  r.write(R::PPU_RDMA::RDMA_CUBE_IN_CHANNEL__CUBE_IN_CHANNEL, tile.ocn - 1);
  r.write(R::PPU_RDMA::RDMA_SRC_BASE_ADDR__SRC_BASE_ADDR, src);
  r.write(R::PPU_RDMA::RDMA_SRC_LINE_STRIDE__SRC_LINE_STRIDE, w * kC2 / kAddrUnit);
  r.write(R::PPU_RDMA::RDMA_SRC_SURF_STRIDE__SRC_SURF_STRIDE, w * kC2 / kAddrUnit);
  r.write(R::PPU_RDMA::RDMA_DATA_FORMAT__IN_PRECISION, kPrecisionInt8);
  r.write(R::PPU_RDMA::RDMA_OPERATION_ENABLE__OP_EN, 1);
}
}  // namespace

Result<std::vector<uint64_t>> emit_task(const NpuOp& op, const Tiling& tiling, const TaskTile& tile, const OpAddresses& a,
                                        bool weight_reuse) {
  Regcmd r;
  switch (op.type) {
    case NpuOpType::conv:
    case NpuOpType::depthwise:
      emit_cna_core(r, op, tiling, tile, a, weight_reuse);
      emit_dpu(r, op, tile, a);
      break;
    case NpuOpType::add: emit_dpu(r, op, tile, a); break;
    case NpuOpType::avg_pool:
    case NpuOpType::max_pool: emit_ppu(r, op, a); break;
    case NpuOpType::matmul: emit_matmul(r, op, tiling, tile, a, weight_reuse); break;
    case NpuOpType::lut:
    case NpuOpType::copy: emit_lut(r, op, tile, a); break;
    case NpuOpType::resize: emit_resize(r, op, tile, a); break;
    case NpuOpType::row_copy: emit_row_copy(r, op, tile, a); break;
  }
  if (!r.status().ok()) return r.status().with_context("[rknpu] " + op.label);
  return std::move(r.entries());
}

size_t chained_size(size_t body) {
  constexpr size_t kPerAlign = kRegcmdAlign / sizeof(uint64_t);
  return (body + 3 + kPerAlign - 1) / kPerAlign * kPerAlign;
}

Status append_chain(std::vector<uint64_t>& entries, uint32_t next_addr, uint32_t next_count) {
  size_t body = entries.size();
  Regcmd r;
  r.write(R::PC::BASE_ADDRESS__PC_SOURCE_ADDR, next_addr / kAddrUnit);
  r.write(R::PC::REGISTER_AMOUNTS__PC_DATA_AMOUNT, next_count);
  r.write(R::PC::OPERATION_ENABLE__OP_EN, 1);
  TS_RETURN_IF_ERROR(r.status());
  entries.insert(entries.end(), r.entries().begin(), r.entries().end());
  entries.resize(chained_size(body), 0);
  return Status::Ok();
}

}  // namespace tessera::rknpu
