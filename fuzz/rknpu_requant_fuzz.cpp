// libFuzzer target for the rknpu compiler's requantization (lower.cpp encode_requant): a
// conv or depthwise node whose shape, quantization (scales spanning 2^-24..2^8, zero
// points), weights, bias and fused activation come from the input is lowered with its
// tables packed (each channel's scale pair searched and proven on its accumulator range),
// and, when it has no activation, split in its two passes. Any Status is an acceptable
// answer; a crash, undefined behaviour or a hang is a bug, and so is a channel more than one
// step off TFLite, or off at all when the compiler calls every channel exact: where the
// accumulator range is short, every reachable value is requantized through the packed
// tables (hw.h's arithmetic, the device model's) and compared with TFLite's. Quantizations
// the TFLite importer refuses (an accumulator that can overflow once rescaled) are skipped
// (scripts/fuzz.sh runs it).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "ops/quant_math.h"
#include "tessera/graph.h"

namespace {

using namespace tessera;

struct Reader {
  const uint8_t* p;
  size_t n, i = 0;
  uint8_t byte() { return n ? p[i++ % n] : 0; }
  // A positive scale 2^e * (1 + m / 256), e in [lo, hi].
  float scale(int lo, int hi) {
    const int e = lo + byte() % (hi - lo + 1);
    return std::ldexp(1.0f + float(byte()) / 256.0f, e);
  }
};

// Range of accumulators brute-forced per channel.
constexpr int64_t kBruteForceRange = int64_t{1} << 17;

// Every channel within one step of TFLite on its whole range, and exact when the compiler
// reports no inexact channel.
void check_exact(const rknpu::NpuOp& op, const Tensor& y, const std::string& act) {
  if (op.bs_table.empty() || op.req_vmax.size() != static_cast<size_t>(op.out_c)) return;
  const int64_t allowed = op.req_inexact_channels == 0 ? 0 : 1;
  const int32_t zp = static_cast<int32_t>(y.quant.zero_point_at(0));
  const int32_t off = y.dtype == DType::u8 ? 128 : 0;
  const q::Range r = q::activation_range(act, y.dtype, y.quant.scale_at(0), zp);
  const int k = op.out_scale.shift;
  for (int64_t c = 0; c < op.out_c; ++c) {
    if (op.req_zero_weights.size() == static_cast<size_t>(op.out_c) && op.req_zero_weights[c]) continue;
    const int64_t vmax = static_cast<int64_t>(std::ceil(op.req_vmax[c]));
    if (vmax > kBruteForceRange) continue;
    const uint8_t* bs = op.bs_table.data() + c * rknpu::kBsEntryBytes;
    const uint8_t* bn = op.bs_table.data() + (op.out_c + c) * rknpu::kBsEntryBytes;
    int16_t a, b;
    int32_t alu;
    std::memcpy(&a, bs + 4, 2), std::memcpy(&b, bn + 4, 2), std::memcpy(&alu, bn, 4);
    const q::Multiplier qm = q::quantize_multiplier(op.req_m[c]);
    for (int64_t v = -vmax; v <= vmax; ++v) {
      int32_t x = rknpu::scale_round(rknpu::sat32(v), a, bs[6]);
      x = rknpu::scale_round(rknpu::sat32(int64_t(x) + alu), b, bn[6]);
      if (op.bn_relu) x = std::max(x, 0);
      if (op.bn_relux) x = std::min(x, op.bn_relux_value);
      const int64_t dpu = std::clamp<int64_t>(int64_t(rknpu::scale_round(x, 1, k)) + op.out_offset, -128, 127);
      const int32_t t = op.single_round ? q::multiply_single_round(rknpu::sat32(v), qm) : q::multiply(rknpu::sat32(v), qm);
      const int64_t want = std::clamp<int64_t>(int64_t(t) + zp, r.lo, r.hi) - off;
      if (std::abs(dpu - want) > allowed) __builtin_trap();  // off by more than the compiler says
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, size};
  const uint8_t flags = in.byte();
  const bool depthwise = flags & 1, per_channel = flags & 2, u8 = !per_channel && (flags & 4);
  const char* acts[] = {"none", "relu", "relu6", "none"};
  const std::string act = acts[(flags >> 3) & 3];
  const DType dt = u8 ? DType::u8 : DType::i8;
  const int64_t k = 1 + in.byte() % 3, h = k + in.byte() % 4, ic = 1 + in.byte() % 8;
  const int64_t oc = depthwise ? ic : 1 + in.byte() % 8;
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, h, h, ic};
  x.dtype = dt;
  const float sx = in.scale(-12, 2);
  x.quant = {{sx}, {u8 ? int64_t(in.byte()) : int64_t(int8_t(in.byte()))}};
  x.role = Role::input;
  const TensorId xi = g.add_tensor(x);
  Tensor w;
  w.name = "w";
  w.shape = depthwise ? Shape{1, k, k, oc} : Shape{oc, k, k, ic};
  w.dtype = dt;
  w.role = Role::weight;
  if (per_channel) {
    for (int64_t c = 0; c < oc; ++c) w.quant.scale.push_back(in.scale(-16, 0)), w.quant.zero_point.push_back(0);
    w.quant.axis = depthwise ? 3 : 0;
  } else {
    w.quant = {{in.scale(-16, 0)}, {u8 ? int64_t(in.byte()) : 0}};
  }
  std::vector<uint8_t> wb(static_cast<size_t>(w.elements()));
  for (auto& v : wb) v = in.byte();
  if (per_channel && in.byte() % 4 == 0)  // a channel of zeros (its scale a placeholder)
    for (size_t i = 0; i < wb.size(); ++i)
      if ((depthwise ? int64_t(i) % oc : int64_t(i) / (k * k * ic)) == 0) wb[i] = 0;
  w.data = ConstData::from_vector(std::move(wb));
  const TensorId wi = g.add_tensor(w);
  Tensor b;
  b.name = "b";
  b.shape = {oc};
  b.dtype = DType::i32;
  b.role = Role::weight;
  for (int64_t c = 0; c < oc; ++c) b.quant.scale.push_back(sx * w.quant.scale_at(per_channel ? c : 0)), b.quant.zero_point.push_back(0);
  if (per_channel) b.quant.axis = 0;
  std::vector<uint8_t> bb(static_cast<size_t>(oc * 4));
  for (int64_t c = 0; c < oc; ++c) {
    const int32_t v = static_cast<int32_t>(uint32_t(in.byte()) << 24 | uint32_t(in.byte()) << 16 | uint32_t(in.byte()) << 8 | in.byte()) >>
                      (in.byte() % 32);
    std::memcpy(bb.data() + c * 4, &v, 4);
  }
  b.data = ConstData::from_vector(std::move(bb));
  const TensorId bi = g.add_tensor(b);
  const QuantParams yq{{in.scale(-12, 4)}, {u8 ? int64_t(in.byte()) : int64_t(int8_t(in.byte()))}};
  // What the TFLite importer lets through (op_builder.cpp check_accumulator_range): the
  // worst accumulator, rescaled, stays inside int32.
  double bias_max = 0, eff = 0;
  for (int64_t c = 0; c < oc; ++c) {
    int32_t v;
    std::memcpy(&v, b.data->data + c * 4, 4);
    bias_max = std::max(bias_max, std::fabs(double(v)));
    eff = std::max(eff, double(sx) * double(w.quant.scale_at(per_channel ? c : 0)) / double(yq.scale[0]));
  }
  const double worst = double(k * k * (depthwise ? 1 : ic)) * 255.0 * 255.0 + bias_max;
  if (!(worst * std::max(1.0, 2 * eff) <= 2147483647.0 - 256)) return 0;
  const int64_t pad = k - 1;
  AttrMap attrs = {{"stride_h", int64_t{1}}, {"stride_w", int64_t{1}}, {"pad_top", pad / 2}, {"pad_bottom", pad - pad / 2},
                   {"pad_left", pad / 2},    {"pad_right", pad - pad / 2}, {"activation", act},
                   {"dilation_h", int64_t{1}}, {"dilation_w", int64_t{1}}};
  if (depthwise) attrs["depth_multiplier"] = int64_t{1};
  auto y = g.add_op(depthwise ? OpKind::depthwise_conv2d : OpKind::conv2d, {xi, wi, bi}, attrs, "conv", dt, yq);
  if (!y.ok()) return 0;
  g.tensor(*y).role = Role::output;
  g.inputs = {xi};
  g.outputs = {*y};
  auto op = rknpu::lower_node(g, g.nodes()[0]);
  if (!op.ok()) {
    if (op.status().message().empty()) __builtin_trap();
    return 0;
  }
  check_exact(*op, g.tensor(*y), act);
  if (act == "none") {
    auto parts = rknpu::split_by_sign(*op);
    if (!parts.ok() && parts.status().message().empty()) __builtin_trap();
  }
  return 0;
}
