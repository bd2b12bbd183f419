// Lowering: one graph node (or a conv with the add that reads it) -> one NPU operation in
// hardware terms: geometry, packed weights, the bias/scale table and the requantization
// encoded as the DPU's scale/shift/offset fields. Every hardware limit is checked here, so
// that `supports()` and `compile()` give the same answer and the same reason.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tessera/graph.h"

namespace tessera::rknpu {

enum class NpuOpType : uint8_t { conv, depthwise, add, avg_pool, max_pool, matmul, lut, copy, resize, row_copy };
const char* npu_op_type_name(NpuOpType t);

// A multiplier encoded as mantissa * 2^-shift with a 16-bit signed mantissa in [2^14, 2^15).
struct Scale16 {
  int32_t mantissa = 1;
  int32_t shift = 0;
};
// m (> 0, finite) = mantissa * 2^-shift with mantissa in [2^(bits-1), 2^bits), rounded down
// (dir < 0), to nearest (0) or up (> 0); shift unbounded (the caller checks its field).
Scale16 split_mantissa(double m, int bits, int dir);
// Encodes `m` (> 0) with a 15-bit mantissa (a signed 16-bit field) rounded to nearest, giving up mantissa
// bits when the shift would exceed max_shift; error if it cannot be represented with shift
// in [0, max_shift].
Result<Scale16> encode_scale16(double m, int max_shift);
// Splits `m` over two multipliers applied in sequence with a rounding shift between them,
// m ~ A * 2^-s1 * B * 2^-s2, keeping |v| * A / 2^s1 < 2^30 for |v| <= vmax. Candidates A
// are searched (kPairSearch of them) for the pair closest to m.
using ScalePair = std::pair<Scale16, Scale16>;
constexpr int kPairSearch = 1024;
Result<ScalePair> encode_scale_pair(double m, double vmax, int max_shift1, int max_shift2);
// The kPairsKept pairs closest to m over every 15-bit A (not only the kPairSearch largest),
// closest first: what encode_requant tries when the first pair is not exact.
constexpr size_t kPairsKept = 256;
std::vector<ScalePair> scale_pair_candidates(double m, double vmax, int max_shift1, int max_shift2);

struct NpuOp {
  NpuOpType type = NpuOpType::conv;
  std::vector<int> nodes;  // graph nodes this op implements (a conv and a fused add: two)
  std::string label;       // for dumps and errors
  TensorId input = kNoTensor;     // [1, H, W, C], stored int8 NC1HWC2
  TensorId output = kNoTensor;    // [1, OH, OW, OC], stored int8 NC1HWC2
  TensorId ew_input = kNoTensor;  // the add's other operand (fused add, element-wise add)

  // Geometry.
  int64_t in_h = 0, in_w = 0, in_c = 0;
  int64_t out_h = 0, out_w = 0, out_c = 0;
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;

  // Convolution arithmetic: CNA input conversion and padding, packed weights.
  bool int16 = false;            // processing precision int16 (weights minus zero point exceed int8)
  int32_t pad_value = 0;         // CNA PAD_VALUE, in the processing domain
  int32_t cvt_offset = 0;        // CNA CVT offset added to each input value (int16 mode)
  std::vector<uint8_t> weights;  // rk_conv_weight / rk_dw_weight packed, int8 or int16 elements
  int64_t weight_bytes = 0;      // size of `weights` (known even when not packed)

  // DPU: BS stage. The table (convs) holds per output channel {int32 bias, int16 mul,
  // uint8 shift, pad} for BS, then a second block of such entries for BN's multiplier.
  bool bs_table_used = false;
  bool per_channel = false;      // the table's mul/shift are used (per-channel requantization)
  std::vector<uint8_t> bs_table;
  bool bs_relu = false;          // clamp at 0 after the BS multiplier (sign-split negative pass)
  int32_t bs_alu_operand = 0;    // register operand (element-wise add: -zero point)
  Scale16 bs_mul;                // register multiplier (element-wise add: first operand's scale)
  // DPU: BN stage (convs: the second multiplier, from the table's second half; per-channel
  // convs also add the table's int32 to move each channel's rounding threshold to TFLite's,
  // see lower.cpp encode_requant), then the activation clamps: ReLU at 0, ReLU-X at
  // bn_relux_value.
  bool bn_alu = false;
  bool bn_mul = false;
  bool bn_relu = false, bn_relux = false;
  int32_t bn_relux_value = 0;
  double ew_unit = 0;            // real value of one unit entering the EW stage (per-tensor conv)
  // Requantization inputs kept for re-encoding (fusion changes the rounding point): per
  // output channel, M, the largest |accumulator + bias| and TFLite's right shift for M.
  std::vector<double> req_m, req_vmax;
  std::vector<int> req_shift;
  std::vector<int32_t> req_bias;        // per output channel: the bias (zero point folded in)
  std::vector<bool> req_zero_weights;   // per output channel: all weights equal their zero point
  bool negatives_clamped = false;  // outputs below zero are clamped away (ReLU, or zp at the dtype's minimum)
  // TFLite rounds this op's requantization once (int8 conv / fully connected: ruy), not
  // twice: every channel's threshold moves by the same half step (encode_requant).
  bool single_round = false;
  // Output steps added before OUT_CVT's rounding (BN ALU) and taken off by its offset, so
  // that a single-rounding linear layer rounds every output as a positive value
  // (lower.cpp encode_requant); 0 otherwise.
  int32_t req_lift = 0;
  // Channels for which no scale pair tried gives TFLite's code on every accumulator the
  // channel can reach (encode_requant; 0 means the requantization is exact as modelled).
  int64_t req_inexact_channels = 0;
  // DPU: EW stage (the add's other operand, converted into this op's accumulator domain).
  // With ew_mul the EW multiplier takes the converted operand instead of the ALU adding it
  // (element-wise MUL: v * cvt(operand), rounded right by ew_truncate).
  int32_t ew_offset = 0;
  Scale16 ew_scale;
  bool ew_mul = false;
  // A constant EW operand (element-wise add / sub / mul with a constant tensor): its id (the
  // program binds ERDMA to its own buffer object, not to a tensor's) and its bytes, int8
  // NC1HWC2 [C1][H][W][16] of the task's cube (u8 stored as q - 0x80; a constant that is
  // subtracted is stored as the bitwise complement, -q - 1, see lower_binary.cpp).
  TensorId ew_constant = kNoTensor;
  std::vector<uint8_t> ew_constant_data;
  bool ew_relu = false, ew_relux = false;
  int32_t ew_relux_value = 0;
  // DPU: output conversion.
  Scale16 out_scale;
  int32_t out_offset = 0;        // out_zp - 0x80 for u8, out_zp for i8

  // PPU pooling.
  int32_t recip_w = 0, recip_h = 0;

  // Matrix multiplication (fully connected on f32 activations with GGUF weights), as a 1x1
  // convolution with H = M rows, W = 1, C = K (rknpu-matmul.md): in_h = out_h = M,
  // in_c = K, out_c = N. A is fp16 NC1HWC2 (C2 = 8), B the rk_matmul_weight fp16 blocks,
  // C fp32 NC1HWC2 (C2 = 4); `bs_table_used` adds the fp32 bias (one kBsEntryBytes entry per
  // output channel, the first 4 bytes the bias's fp32 bits) in the DPU's BS ALU.
  bool fp16 = false;
  // int8 x int8 -> int32 instead (weights=int8, docs/rknpu.md "The int8 weight policy"): A is
  // int8 NC1HWC2 (C2 = 16) quantized per row on the host, B the rk_matmul_weight int8 blocks
  // (32 kernels x 32 K) with one scale per output channel, C raw int32 (N/4, M, 4). The host
  // applies row scale x channel scale and adds the bias (mm_bias) when it converts C to f32.
  bool mm_int8 = false;
  std::vector<float> mm_wscale;  // [N] weight scale per output channel (int8)
  std::vector<float> mm_bias;    // [N] bias added on the host (int8), empty: none
  // Cores the matmul's N is split across (program.cpp): the tiling makes at least this many
  // N chunks, and chunk i runs on core i % lanes.
  int lanes = 1;

  // DPU lookup table (NpuOpType::lut: an element-wise task through the EW stage's LUT,
  // docs/rknpu.md "Lookup tables"): LE and LO tables in linear mode, LO chosen where both
  // hit and beyond both ends, with flat (zero-slope) extrapolation. The output conversion
  // is the identity (the entries are output values), out_offset 0.
  std::vector<int16_t> lut_le, lut_lo;  // kLutLeEntries, kLutLoEntries
  int32_t lut_le_start = 0, lut_lo_start = 0;
  int lut_le_select = 0, lut_lo_select = 0;
  std::string lut_function;  // "logistic", "silu (logistic + mul)"
  int lut_max_error = -1;    // largest |table - TFLite| in output steps over the 256 input codes
  int lut_exact_codes = -1;  // input codes (of 256) whose output equals TFLite's
  // A conv with a fused table (fuse_lut): the EW multiplier's right shift, OUT_CVT's 2^k.
  int ew_truncate = 0;

  // Channel block copies (NpuOpType::copy: an element-wise DPU task with every stage
  // bypassed; STRIDED_SLICE and CONCATENATION along channels): out_c channels from channel
  // src_c0 of the input to channel dst_c0 of the output, both multiples of 16 (whole
  // NC1HWC2 surfaces). A concat lowers to one copy per input (`concat_parts`, program.cpp).
  int64_t src_c0 = 0, dst_c0 = 0;
  std::vector<TensorId> concat_parts;

  // Row copies (NpuOpType::row_copy, lower.cpp lower_flat_concat_parts): in_c / 16 rows of
  // in_w atoms each, read one after another from the input, written row r at byte
  // dst_offset + r * dst_row_bytes of the output; a PPU 1x1 max pooling (a copy) whose
  // destination surface stride is the output's row. A concatenation of flat tensors along
  // an inner axis (YOLOv8's [1, 144, 6400 | 1600 | 400] -> [1, 144, 8400]).
  int64_t dst_offset = 0, dst_row_bytes = 0;

  // Nearest x2 resize (NpuOpType::resize, lower_resize.cpp): in_h/in_w/in_c the input,
  // out_h/out_w = 2x; PPU max pooling of a re-shaped view with kw = 2, kh = 1, pad_left = 1
  // (and right 1), one task per output row parity and run of at most 512 surfaces.

  int64_t macs = 0;  // useful multiply-accumulates (reporting)
  // Element-wise two-operand task (type add): "add", "sub" or "mul", and the input code
  // pairs (of 65,536) on which it equals TFLite's op.
  std::string eltwise = "add";
  int64_t exact_pairs = -1;
};

// Per-channel bias/scale table entry size in bytes (int32 bias, int16 mul, uint8 shift, pad).
constexpr int64_t kBsEntryBytes = 8;

// The weight policy of matrix multiplications (`--device-opt weights=`): GGUF weights are
// converted once, when the program is compiled, into the NPU's blocks: fp16 (as the values
// dequantize, rounded once) or int8 (one symmetric scale per output channel).
enum class WeightPolicy : uint8_t { fp16, int8 };

struct LowerOptions {
  bool pack = true;  // pack weights and tables (false: only check and size)
  bool pack_weights = true;  // matmul: convert the weights (false: they are already on the device)
  WeightPolicy weights = WeightPolicy::fp16;  // matmul: the NPU's weight blocks
};


// Lowers node `n` of `g`; an error (StatusCode::unsupported) carries the reason the NPU
// cannot run it, shown by `tessera inspect`.
Result<NpuOp> lower_node(const Graph& g, const Node& n, const LowerOptions& opts = {});

// The LOGISTIC node whose output `mul` multiplies by that LOGISTIC's own input, x *
// logistic(x) (SiLU as TFLite graphs hold it), or -1. lower_node lowers such a MUL as one
// lookup table from x, so the LOGISTIC need not run when the MUL is its only reader.
int silu_logistic(const Graph& g, const Node& mul);

// The table node (LOGISTIC, TANH, HARD_SWISH, QUANTIZE) whose output table node `n` alone
// reads, or -1: lower_node lowers `n` as one table of both from that node's input, so the
// first one need not run (program.cpp) and `n` reads its input (Device::extra_reads).
int absorbed_table(const Graph& g, const Node& n);
// The node kinds a table computes (LOGISTIC, TANH, HARD_SWISH, QUANTIZE): the only ones
// absorbed_table speaks of, as reader or as absorbed.
bool is_table_node(OpKind k);

// Fuses the lookup table `lut` (reading conv output `conv.output`) into the conv's DPU
// pass: BS and BN as before, the EW multiplier divides by 2^k as OUT_CVT did, the LUT (its
// start moved by the conv's output offset, zero slopes saturating as int8 would) maps the
// conv's output to the table's, OUT_CVT is the identity; the conv then writes lut.output.
// Error (unsupported) with the reason when the conv's DPU pass cannot take it.
Status fuse_lut(const NpuOp& lut, NpuOp& conv);

// The feature input of the conv whose output x a SiLU MUL reads (x * logistic(x), x made by
// a conv2d / depthwise_conv2d node), or kNoTensor. When the SiLU's table runs in that conv's
// pass, the pass runs at the MUL's turn and reads this tensor then (Device::extra_reads).
TensorId silu_conv_input(const Graph& g, const Node& mul);

// A CONCATENATION along channels as one copy per input, each to its channel offset.
Result<std::vector<NpuOp>> lower_concat_parts(const Graph& g, const Node& n);

// Fully connected on f32 activations (GGUF decoders): an fp16 matrix multiplication
// (lower_matmul.cpp). is_float_matmul tells lower_node to take this path.
bool is_float_matmul(const Graph& g, const Node& n);
Result<NpuOp> lower_matmul(const Graph& g, const Node& n, const LowerOptions& opts = {});

// Splits a per-channel convolution without an activation (a "linear" layer, whose negative
// outputs matter) into two passes that together round every channel exactly as TFLite:
//  - positive pass: the conv with a ReLU, writing max(out - zp, 0) - 128 to the output;
//  - negative pass: the conv with its BS/BN multipliers negated and a ReLU after BS (so it
//    sees -r for r < 0 and 0 otherwise), adding the positive pass back from the output
//    buffer through the EW stage, in place, and writing the final output.
// Each pass only rounds values of one sign, where the BN ALU offset reproduces TFLite's
// per-channel threshold (encode_requant). Costs the conv's MACs twice. Error (unsupported)
// with the reason when the op does not need or cannot take the split.
Result<std::pair<NpuOp, NpuOp>> split_by_sign(const NpuOp& op);

// Fuses the element-wise add `add` (reading conv output `op.output` and `other`) into the
// conv `op` as its DPU EW stage; error (unsupported) with the reason when it cannot.
Status fuse_add(const Graph& g, const Node& add, int add_index, NpuOp& op);

}  // namespace tessera::rknpu
