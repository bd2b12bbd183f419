// Helpers for the rknpu tests: quantized graphs built by hand (seeded), run on the cpu
// reference kernels and on the rknpu device model through Session, and compared.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/transport.h"
#include "tessera/graph.h"
#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera::rknpu_test {

struct ConvSpec {
  int64_t h = 8, w = 8, ic = 16, oc = 16, k = 3, stride = 1;
  int64_t dilation = 1;  // the kernel spans (k - 1) * dilation + 1
  bool same = true;
  bool depthwise = false;
  DType dtype = DType::u8;
  bool per_channel = false;  // i8 weights, one scale per output channel, zero point 0
  bool narrow_weights = false;  // u8 weights within +-100 of their zero point (int8 path)
  std::string activation = "none";
  bool residual_add = false;  // add the input... (requires ic == oc, stride 1, same)
  uint32_t seed = 1;

  int64_t span() const { return (k - 1) * dilation + 1; }
  int64_t out_h() const { return same ? (h + stride - 1) / stride : (h - span()) / stride + 1; }
  int64_t out_w() const { return same ? (w + stride - 1) / stride : (w - span()) / stride + 1; }
  int64_t macs() const { return out_h() * out_w() * oc * k * k * (depthwise ? 1 : ic); }
  std::string label() const {
    return std::string(depthwise ? "dw" : "conv") + " " + std::to_string(h) + "x" + std::to_string(w) + "x" +
           std::to_string(ic) + "->" + std::to_string(oc) + " k" + std::to_string(k) + (dilation > 1 ? " d" + std::to_string(dilation) : "") + " s" + std::to_string(stride) +
           (same ? " SAME" : " VALID") + " " + dtype_name(dtype) + (per_channel ? " per-channel" : "") +
           (narrow_weights ? " narrow" : "") + (activation != "none" ? " " + activation : "") +
           (residual_add ? " +add" : "");
  }
};

inline std::vector<uint8_t> random_codes(size_t n, std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = static_cast<uint8_t>(d(rng));
  return v;
}

inline TensorId add_const(Graph& g, const std::string& name, Shape s, DType t, QuantParams q, std::vector<uint8_t> bytes) {
  Tensor w;
  w.name = name;
  w.shape = std::move(s);
  w.dtype = t;
  w.quant = std::move(q);
  w.role = Role::weight;
  w.data = ConstData::from_vector(std::move(bytes));
  return g.add_tensor(w);
}

// A conv (or depthwise) graph with realistic quantization: the output scale and zero point
// are set from the range of the exact real-valued results, as a calibrated model's are.
inline Graph build_conv(const ConvSpec& s, std::vector<uint8_t>& input) {
  std::mt19937 rng(s.seed);
  const bool u8 = s.dtype == DType::u8;
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, s.h, s.w, s.ic};
  x.dtype = s.dtype;
  x.quant = {{0.02f}, {u8 ? 120 : -8}};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  input = random_codes(static_cast<size_t>(s.h * s.w * s.ic), rng, u8 ? 0 : -128, u8 ? 255 : 127);
  const int64_t oc = s.oc, taps = s.k * s.k * (s.depthwise ? 1 : s.ic);
  Shape wshape = s.depthwise ? Shape{1, s.k, s.k, oc} : Shape{oc, s.k, s.k, s.ic};
  QuantParams wq;
  std::vector<uint8_t> wbytes;
  std::vector<double> wreal(static_cast<size_t>(oc * taps));
  if (s.per_channel) {
    for (int64_t c = 0; c < oc; ++c) {
      wq.scale.push_back(0.002f * (1.0f + float(c % 7)));
      wq.zero_point.push_back(0);
    }
    wq.axis = s.depthwise ? 3 : 0;
    wbytes = random_codes(wreal.size(), rng, -127, 127);
  } else {
    int zp = u8 ? (s.narrow_weights ? 128 : 100 + int(rng() % 60)) : 0;
    wq = {{0.005f}, {zp}};
    int lo = u8 ? (s.narrow_weights ? 28 : 0) : -127, hi = u8 ? (s.narrow_weights ? 227 : 255) : 127;
    wbytes = random_codes(wreal.size(), rng, lo, hi);
  }
  // Real weights, [oc][taps] (depthwise weights are [taps][oc] in memory).
  auto wcode = [&](int64_t c, int64_t t) -> int {
    size_t i = s.depthwise ? size_t(t * oc + c) : size_t(c * taps + t);
    return u8 || s.per_channel ? (u8 ? int(wbytes[i]) : int(int8_t(wbytes[i]))) : int(int8_t(wbytes[i]));
  };
  TensorId wi = add_const(g, "w", wshape, u8 ? DType::u8 : DType::i8, wq, wbytes);
  std::vector<int32_t> bias(oc);
  for (auto& b : bias) b = static_cast<int32_t>(int(rng() % 2001) - 1000);
  QuantParams bq;
  for (int64_t c = 0; c < oc; ++c) bq.scale.push_back(0.02f * wq.scale_at(c));
  bq.zero_point.assign(bq.scale.size(), 0);
  std::vector<uint8_t> bbytes(oc * 4);
  std::memcpy(bbytes.data(), bias.data(), bbytes.size());
  TensorId bi = add_const(g, "b", {oc}, DType::i32, bq, bbytes);
  const int64_t oh = s.out_h(), ow = s.out_w();
  int64_t pad_h = std::max<int64_t>((oh - 1) * s.stride + s.span() - s.h, 0), pad_w = std::max<int64_t>((ow - 1) * s.stride + s.span() - s.w, 0);
  AttrMap attrs = {{"stride_h", s.stride}, {"stride_w", s.stride},
                                             {"pad_top", pad_h / 2}, {"pad_bottom", pad_h - pad_h / 2},
                                             {"pad_left", pad_w / 2}, {"pad_right", pad_w - pad_w / 2},
                                             {"activation", s.activation},
                                             {"dilation_h", s.dilation}, {"dilation_w", s.dilation}};
  if (s.depthwise) attrs["depth_multiplier"] = int64_t{1};
  // Output range from the exact results in double.
  double lo = 1e30, hi = -1e30;
  const double xs = 0.02;
  const int xzp = u8 ? 120 : -8;
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t xx = 0; xx < ow; ++xx)
      for (int64_t c = 0; c < oc; ++c) {
        double acc = bias[c] * double(bq.scale[c]);
        for (int64_t ky = 0; ky < s.k; ++ky)
          for (int64_t kx = 0; kx < s.k; ++kx) {
            int64_t iy = y * s.stride - pad_h / 2 + ky * s.dilation, ix = xx * s.stride - pad_w / 2 + kx * s.dilation;
            if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
            for (int64_t i = 0; i < (s.depthwise ? 1 : s.ic); ++i) {
              int64_t ch = s.depthwise ? c : i;
              int64_t t = (ky * s.k + kx) * (s.depthwise ? 1 : s.ic) + i;
              int code = u8 ? input[(iy * s.w + ix) * s.ic + ch] : int(int8_t(input[(iy * s.w + ix) * s.ic + ch]));
              acc += xs * (code - xzp) * wq.scale_at(wq.per_axis() ? c : 0) * (wcode(c, t) - wq.zero_point_at(wq.per_axis() ? c : 0));
            }
          }
        lo = std::min(lo, acc);
        hi = std::max(hi, acc);
      }
  if (s.activation != "none") lo = 0;
  if (s.activation == "relu6") hi = std::min(hi, 6.0);
  lo = std::min(lo, 0.0);
  hi = std::max({hi, 0.0, lo + 0.05});
  float oscale = static_cast<float>((hi - lo) / 255.0);
  int64_t ozp = std::llround(-lo / oscale) + (u8 ? 0 : -128);
  QuantParams oq{{oscale}, {ozp}};
  auto y = g.add_op(s.depthwise ? OpKind::depthwise_conv2d : OpKind::conv2d, {xi, wi, bi}, attrs, "conv", s.dtype, oq);
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  TensorId out = *y;
  if (s.residual_add) {
    auto sum = g.add_op(OpKind::add, {out, xi}, {}, "residual", s.dtype, QuantParams{{oscale * 1.5f}, {ozp}});
    EXPECT_TRUE(sum.ok()) << sum.status().to_string();
    out = *sum;
  }
  g.tensor(out).role = Role::output;
  g.inputs = {xi};
  g.outputs = {out};
  return g;
}

// A 3x3 SAME depthwise conv over [1, 10, 10, c] with depth multiplier m (weights
// [1, 3, 3, c*m]: output channel c*m + j reads input channel c), relu6; u8 per tensor or
// i8 per channel. The output scale covers the exact results' range, computed in double.
inline Graph build_depthwise_multiplier(int64_t c, int64_t m, DType dtype, bool per_channel, uint32_t seed,
                                        std::vector<uint8_t>* input_out = nullptr) {
  std::mt19937 rng(seed);
  const bool u8 = dtype == DType::u8;
  const int64_t h = 10, w = 10, k = 3, oc = c * m;
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, h, w, c};
  x.dtype = dtype;
  x.quant = {{0.02f}, {u8 ? 120 : -8}};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  std::vector<uint8_t> input = random_codes(static_cast<size_t>(h * w * c), rng, u8 ? 0 : -128, u8 ? 255 : 127);
  QuantParams wq;
  if (per_channel) {
    for (int64_t o = 0; o < oc; ++o) wq.scale.push_back(0.003f * (1.0f + float(o % 5))), wq.zero_point.push_back(0);
    wq.axis = 3;
  } else {
    wq = {{0.004f}, {u8 ? 130 : 0}};
  }
  std::vector<uint8_t> wbytes = random_codes(static_cast<size_t>(k * k * oc), rng, u8 ? 0 : -127, u8 ? 255 : 127);
  TensorId wi = add_const(g, "w", {1, k, k, oc}, dtype, wq, wbytes);
  std::vector<int32_t> bias(static_cast<size_t>(oc));
  for (auto& b : bias) b = static_cast<int32_t>(int(rng() % 2001) - 1000);
  QuantParams bq;
  for (int64_t o = 0; o < oc; ++o) bq.scale.push_back(0.02f * wq.scale_at(per_channel ? o : 0)), bq.zero_point.push_back(0);
  std::vector<uint8_t> bbytes(static_cast<size_t>(oc * 4));
  std::memcpy(bbytes.data(), bias.data(), bbytes.size());
  TensorId bi = add_const(g, "b", {oc}, DType::i32, bq, bbytes);
  double lo = 0, hi = 0.05;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t xx = 0; xx < w; ++xx)
      for (int64_t o = 0; o < oc; ++o) {
        double acc = bias[o] * double(bq.scale[o]);
        for (int64_t ky = 0; ky < k; ++ky)
          for (int64_t kx = 0; kx < k; ++kx) {
            const int64_t iy = y - 1 + ky, ix = xx - 1 + kx;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const size_t xi8 = static_cast<size_t>((iy * w + ix) * c + o / m), wi8 = static_cast<size_t>((ky * k + kx) * oc + o);
            const int code = u8 ? input[xi8] : int(int8_t(input[xi8]));
            const int wc = u8 ? wbytes[wi8] : int(int8_t(wbytes[wi8]));
            acc += 0.02 * (code - (u8 ? 120 : -8)) * wq.scale_at(per_channel ? o : 0) * (wc - wq.zero_point_at(per_channel ? o : 0));
          }
        hi = std::max(hi, std::min(acc, 6.0));
      }
  const float oscale = static_cast<float>((hi - lo) / 255.0);
  auto y = g.add_op(OpKind::depthwise_conv2d, {xi, wi, bi},
                    {{"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}}, {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}},
                     {"depth_multiplier", m}, {"activation", std::string("relu6")}},
                    "dw", dtype, QuantParams{{oscale}, {u8 ? 0 : -128}});
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  g.tensor(*y).role = Role::output;
  g.inputs = {xi};
  g.outputs = {*y};
  if (input_out) *input_out = std::move(input);
  return g;
}

// The index in `p.devices` of the device named `name`, or -1.
// The graph's one input "x".
inline TensorId add_input(Graph& g, Shape shape, DType t, QuantParams q) {
  Tensor x;
  x.name = "x";
  x.shape = std::move(shape);
  x.dtype = t;
  x.quant = std::move(q);
  x.role = Role::input;
  const TensorId id = g.add_tensor(x);
  g.inputs = {id};
  return id;
}

// The output of `g` on `input` on `device` with `opts`, and the plan and profile of that session.
struct SessionRun {
  std::vector<uint8_t> out;
  std::vector<TensorPlacement> tensors;
  std::map<std::string, double> node_seconds;  // modelled, by node label
  double modelled = 0;
  std::string error;
};
inline SessionRun run_session(const Graph& g, const std::vector<uint8_t>& input, const std::string& device,
                              DeviceOptions opts = {}) {
  SessionRun r;
  SessionOptions so;
  so.device = device;
  so.device_options = std::move(opts);
  auto s = Session::create(g, so);
  if (!s.ok()) return r.error = s.status().to_string(), r;
  Status st = (*s)->set_input(0, input.data(), static_cast<int64_t>(input.size()));
  if (st.ok()) st = (*s)->run();
  if (!st.ok()) return r.error = st.to_string(), r;
  r.tensors = (*s)->plan().tensors;
  for (const auto& item : (*s)->profile().nodes) r.node_seconds[item.label] += item.modelled_seconds;
  r.modelled = (*s)->profile().modelled_seconds;
  auto o = (*s)->output(0);
  if (!o.ok()) return r.error = o.status().to_string(), r;
  r.out = *o;
  return r;
}

// Register streams by hand: field `f` set to `value` in every entry of stream `e` that writes
// f's register (false: none does), and one task's stream run on the model transport from
// the command buffer object `cmd`.
inline bool set_field(std::vector<uint64_t>& e, const rknpu::regs::Field& f, uint32_t value) {
  bool changed = false;
  for (uint64_t& x : e) {
    const rknpu::Entry d = rknpu::decode_entry(x);
    if (d.reg != f.reg) continue;
    const uint32_t mask = static_cast<uint32_t>(f.max()) << f.low;
    x = rknpu::encode_entry(d.target, (d.value & ~mask) | ((value & static_cast<uint32_t>(f.max())) << f.low), d.reg);
    changed = true;
  }
  return changed;
}
inline std::vector<uint64_t> with_field(std::vector<uint64_t> e, const rknpu::regs::Field& f, uint32_t value) {
  set_field(e, f, value);
  return e;
}
inline Status submit_stream(rknpu::Transport& tr, const rknpu::BoInfo& cmd, const std::vector<uint64_t>& entries) {
  std::memcpy(cmd.cpu, entries.data(), entries.size() * 8);
  rknpu::JobDesc j;
  j.tasks.push_back({cmd.dma_address, static_cast<uint32_t>(entries.size())});
  return tr.submit(0, {j}).status();
}

// Each (node index, phrase): the node stays off the NPU with a reason containing the phrase.
inline void expect_refused(const Graph& g, std::initializer_list<std::pair<int, const char*>> expect) {
  for (auto [i, why] : expect) {
    auto op = rknpu::lower_node(g, g.nodes()[i]);
    ASSERT_FALSE(op.ok()) << i;
    EXPECT_NE(op.status().message().find(why), std::string::npos) << op.status().message();
  }
}

inline int device_index(const Plan& p, const std::string& name) {
  for (size_t d = 0; d < p.devices.size(); ++d)
    if (p.devices[d]->name() == name) return static_cast<int>(d);
  return -1;
}

struct Compare {
  int64_t n = 0, exact = 0;
  int max_diff = 0;
  bool all_on_npu = true;
  std::string fallback;  // first node that did not run on the NPU
  std::string error;
  double modelled_seconds = 0;
};

// Runs `g` on the cpu and on rknpu (with `opts`) and compares output 0 code by code.
inline Compare run_and_compare(const Graph& g, const std::vector<uint8_t>& input, DeviceOptions opts = {}) {
  Compare r;
  std::vector<std::vector<uint8_t>> outs;
  for (const char* dev : {"cpu", "rknpu"}) {
    SessionOptions so;
    so.device = dev;
    if (std::string(dev) == "rknpu") so.device_options = opts;  // rknpu options: the cpu takes none of them
    auto s = Session::create(g, so);
    if (!s.ok()) {
      r.error = std::string(dev) + ": " + s.status().to_string();
      return r;
    }
    if (std::string(dev) == "rknpu") {
      const Plan& p = (*s)->plan();
      for (size_t i = 0; i < p.graph.nodes().size(); ++i) {
        if (p.graph.nodes()[i].op == OpKind::transfer) continue;
        if (p.devices[p.nodes[i].device]->name() != "rknpu") {
          r.all_on_npu = false;
          if (r.fallback.empty()) r.fallback = p.graph.nodes()[i].label() + ": " + p.nodes[i].note;
        }
      }
    }
    Status st = (*s)->set_input(0, input.data(), static_cast<int64_t>(input.size()));
    if (st.ok()) st = (*s)->run();
    if (!st.ok()) {
      r.error = std::string(dev) + ": " + st.to_string();
      return r;
    }
    if (std::string(dev) == "rknpu") r.modelled_seconds = (*s)->profile().modelled_seconds;
    auto o = (*s)->output(0);
    if (!o.ok()) {
      r.error = o.status().to_string();
      return r;
    }
    outs.push_back(*o);
  }
  const bool u8 = g.tensor(g.outputs[0]).dtype == DType::u8;
  r.n = static_cast<int64_t>(outs[0].size());
  for (size_t i = 0; i < outs[0].size(); ++i) {
    int a = u8 ? outs[0][i] : int8_t(outs[0][i]), b = u8 ? outs[1][i] : int8_t(outs[1][i]);
    r.max_diff = std::max(r.max_diff, std::abs(a - b));
    r.exact += a == b;
  }
  return r;
}

}  // namespace tessera::rknpu_test
