// Helpers shared by the lowering files (lower.cpp, lower_requant.cpp, lower_eltwise.cpp, lower_resize.cpp):
// feature-map checks, the unsupported-node reason, and the lookup-table builder. Internal to
// the rknpu compiler; lower.h is the interface the rest of the device uses.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "rknpu/registers.h"

namespace tessera::rknpu::detail {

// The shift fields' widths (register database): BS_MUL_SHIFT_VALUE 6 bits, EW_OP_CVT_SHIFT
// 6 bits, OUT_CVT_SHIFT 12 bits.
constexpr int kBsShiftMax = static_cast<int>(regs::DPU::BS_MUL_CFG__BS_MUL_SHIFT_VALUE.max());
constexpr int kEwShiftMax = static_cast<int>(regs::DPU::EW_CVT_SCALE_VALUE__EW_OP_CVT_SHIFT.max());
constexpr int kOutShiftMax = static_cast<int>(regs::DPU::OUT_CVT_SHIFT__OUT_CVT_SHIFT.max());
constexpr int32_t kMantissaBits = 15;  // positive part of a signed 16-bit mantissa

// The error (StatusCode::unsupported) that `inspect` shows as the reason node `n` stays off the NPU.
Status no(const Node& n, const std::string& why);
// 0x80 for u8 (stored as q - 0x80), 0 for i8.
int32_t storage_offset(DType t);
bool quantized8(const Tensor& t);
std::string dt(const Tensor& t);  // "i8[1,2,3,4]"
// `t` is a u8/i8 per-tensor [1, H, W, C] activation within the CNA/DPU field limits.
Status check_feature(const Node& n, const Tensor& t, const char* what);
// The [1, H, W, C] cube an element-wise DPU task reads or writes for tensor `id` of node `n`
// (lookup tables, element-wise add/sub/mul, copies): a feature map's own H, W, C. Every
// operand and the output of one element-wise task must have the same cube.
struct Cube {
  int64_t h = 0, w = 0, c = 0;
  bool operator==(const Cube&) const = default;
};
Result<Cube> eltwise_cube(const Graph& g, const Node& n, TensorId id, const char* what);
// A TFLite fused activation as DPU clamps at `unit` (the real value of one unit there).
Status lower_activation(const Node& n, const Tensor& out, double unit, bool& relu, bool& relux, int32_t& relux_value);
float quant_scale(const Tensor& t);
int32_t quant_zp(const Tensor& t);

// TFLite's output code for each input code.
using CodeFn = std::function<int32_t(int32_t)>;
// y = f(x) element-wise as one DPU lookup-table task (lower.cpp lower_lut).
Result<NpuOp> lower_lut(const Node& n, const Graph& g, TensorId xi, TensorId yi, const CodeFn& code, const std::string& what);
// A unary node whose output code is a function of its input code: checks x and y as feature
// maps of one dtype, then `make(x, y)` gives the code function (or the reason it cannot).
Result<NpuOp> lower_code_table(const Graph& g, const Node& n, const std::string& name,
                               const std::function<Result<CodeFn>(const Tensor&, const Tensor&)>& make);

// lower_eltwise.cpp, lookup tables: LOGISTIC / TANH (TFLite's float tables), HARD_SWISH,
// the SiLU MUL (x * logistic(x); other MULs are lower_binary's) and QUANTIZE of
// an 8-bit tensor to 8 bits (requantize).
// LOGISTIC, TANH, HARD_SWISH and QUANTIZE (one table each, or one for two chained, see
// lower.h absorbed_table).
Result<NpuOp> lower_table(const Graph& g, const Node& n);
Result<NpuOp> lower_mul(const Graph& g, const Node& n);
// lower_binary.cpp: element-wise ADD, SUB and MUL of two maps, of a map and a constant of
// its element count (ERDMA reads the packed constant), or of a map and a one-element
// constant (a lookup table).
Result<NpuOp> lower_binary(const Graph& g, const Node& n);
// A DPU channel copy: `channels` channels from channel src_c0 of x to channel dst_c0 of y,
// both laid out with shape s's H and W (lower.cpp).
NpuOp copy_op(const Node& n, TensorId x, TensorId y, const Shape& s, int64_t src_c0, int64_t dst_c0, int64_t channels);
// lower_flat.cpp: slices, reshapes and concatenations of flat tensors (flat.h).
Result<NpuOp> lower_flat_slice(const Graph& g, const Node& n);
Result<NpuOp> lower_reshape(const Graph& g, const Node& n);
Result<std::vector<NpuOp>> lower_flat_concat_parts(const Graph& g, const Node& n);
// lower_requant.cpp: TFLite's rounding point for a multiplier M (its right shift k =
// max(-e, 0) for M = f * 2^e, f in [0.5, 1)), and a conv's requantization tables.
int tflite_shift(double m);
// What a channel's stored codes must be (TFLite's requantization, clamped to the fused
// activation's range), for encode_requant's search over the scale pairs: the DPU's result
// and TFLite's are both non-decreasing in v = acc + bias, so they agree on every v in
// [-vmax, vmax] iff they agree at both ends and on both sides of each of TFLite's code
// boundaries inside it (at most 256 of them): about 514 evaluations prove a channel exact.
struct RequantTarget {
  int32_t out_zp = 0;        // TFLite's output zero point
  int32_t off_out = 0;       // the storage offset (u8: 0x80), subtracted from stored codes
  int32_t act_lo = -128, act_hi = 127;  // TFLite's clamp (activation_range), in TFLite codes
};
// Fills the BS and BN halves of `op`'s table for the common output shift k (the bias halves
// are already in place), lifting a single-rounding linear layer (NpuOp::req_lift). With a
// target, each channel's scale pair is searched and proven against it; `by_sign` checks the
// two passes of split_by_sign instead of one.
Status encode_requant(NpuOp& op, int k, const RequantTarget* target = nullptr, bool by_sign = false);

// lower_resize.cpp: RESIZE_NEAREST_NEIGHBOR x2 as PPU tasks.
Result<NpuOp> lower_resize_nearest(const Graph& g, const Node& n);

}  // namespace tessera::rknpu::detail
