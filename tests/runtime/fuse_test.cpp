// The fuse pass folds an explicit spatial PAD into the convolution that alone reads it when
// the pad fills with what the conv's padding means (zero point, or 0.0): same values, one
// node less. Compared with the same graph where the pad must stay (its output also read).
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>

#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

struct PadConv {
  Graph g;
  TensorId padded = kNoTensor;
  std::vector<uint8_t> input;
};

// x [1,6,7,8] -> pad (`paddings`) -> depthwise 3x3 with its own padding 1 -> y.
PadConv build(DType t, std::vector<int64_t> paddings, std::optional<double> value) {
  PadConv r;
  std::mt19937 rng(3);
  const bool q = t == DType::u8;
  Tensor x;
  x.name = "x";
  x.shape = {1, 6, 7, 8};
  x.dtype = t;
  if (q) x.quant = {{0.05f}, {117}};
  x.role = Role::input;
  TensorId xi = r.g.add_tensor(x);
  const int64_t n = 6 * 7 * 8;
  r.input.resize(static_cast<size_t>(q ? n : n * 4));
  for (int64_t i = 0; i < n; ++i) {
    if (q) {
      r.input[i] = static_cast<uint8_t>(rng() % 256);
    } else {
      const float v = static_cast<float>(int(rng() % 2001) - 1000) / 250.0f;
      std::memcpy(r.input.data() + 4 * i, &v, 4);
    }
  }
  AttrMap pa{{"paddings", paddings}};
  if (value) pa["value"] = *value;
  auto p = r.g.add_op(OpKind::pad, {xi}, pa, "pad", t, x.quant);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  r.padded = *p;
  Tensor w;
  w.name = "w";
  w.shape = {1, 3, 3, 8};
  w.dtype = t;
  w.role = Role::weight;
  if (q) w.quant = {{0.01f}, {128}};
  std::vector<uint8_t> wb(static_cast<size_t>(q ? 72 : 288));
  for (size_t i = 0; i < 72; ++i) {
    if (q) {
      wb[i] = static_cast<uint8_t>(rng() % 256);
    } else {
      const float v = static_cast<float>(int(rng() % 201) - 100) / 100.0f;
      std::memcpy(wb.data() + 4 * i, &v, 4);
    }
  }
  w.data = ConstData::from_vector(std::move(wb));
  TensorId wi = r.g.add_tensor(w);
  auto y = r.g.add_op(OpKind::depthwise_conv2d, {*p, wi},
                      {{"stride_h", int64_t{1}}, {"stride_w", int64_t{1}}, {"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}},
                       {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}}, {"depth_multiplier", int64_t{1}}},
                      "dw", t, q ? QuantParams{{0.2f}, {100}} : QuantParams{});
  EXPECT_TRUE(y.ok()) << y.status().to_string();
  r.g.inputs = {xi};
  r.g.outputs = {*y};
  r.g.tensor(*y).role = Role::output;
  return r;
}

// Runs `g`; returns output 0 and whether a pad node is left in the plan.
std::pair<std::vector<uint8_t>, bool> run(Graph g, const std::vector<uint8_t>& input) {
  auto s = Session::create(std::move(g), SessionOptions{});
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  bool pad_left = false;
  for (const Node& n : (*s)->plan().graph.nodes()) pad_left = pad_left || n.op == OpKind::pad;
  EXPECT_TRUE((*s)->set_input(0, input.data(), static_cast<int64_t>(input.size())).ok());
  EXPECT_TRUE((*s)->run().ok());
  auto o = (*s)->output(0);
  return {o.ok() ? *o : std::vector<uint8_t>{}, pad_left};
}

// The same graph with the pad's output also a graph output: the pad must stay.
std::vector<uint8_t> run_unfolded(PadConv r) {
  r.g.outputs.push_back(r.padded);
  r.g.tensor(r.padded).role = Role::output;
  auto [out, pad_left] = run(r.g, r.input);
  EXPECT_TRUE(pad_left);
  return out;
}

TEST(FusePads, SpatialZeroPointPadBecomesConvPadding) {
  for (DType t : {DType::u8, DType::f32}) {
    SCOPED_TRACE(dtype_name(t));
    PadConv r = build(t, {0, 0, 1, 2, 2, 0, 0, 0}, std::nullopt);
    auto [folded, pad_left] = run(r.g, r.input);
    EXPECT_FALSE(pad_left);
    EXPECT_EQ(folded, run_unfolded(r));
    EXPECT_FALSE(folded.empty());
  }
}

// PADV2 filling with a constant other than the zero point stays a node; the zero point,
// given explicitly or not, folds. Either way the output is the unfolded graph's.
TEST(FusePads, OnlyTheConvPaddingValueFolds) {
  for (std::optional<double> value : {std::optional<double>{3.0}, std::optional<double>{117.0}, std::optional<double>{}}) {
    PadConv r = build(DType::u8, {0, 0, 1, 1, 1, 1, 0, 0}, value);
    auto [out, pad_left] = run(r.g, r.input);
    EXPECT_EQ(pad_left, value && *value != 117.0);
    EXPECT_EQ(out, run_unfolded(r));
  }
}

}  // namespace
}  // namespace tessera
