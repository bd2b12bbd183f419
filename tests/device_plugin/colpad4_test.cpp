// The plugin device's layout, colpad4, through the public format registry and the shared
// conversion library, and the plugin device in a session (tests/device_plugin).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "device_plugin/colpad4_format.h"
#include "tessera/backend/convert.h"
#include "tessera/backend/device.h"
#include "tessera/backend/plan.h"
#include "tessera/format_registry.h"
#include "tessera/session.h"

namespace tessera::plugin {
namespace {

std::vector<uint8_t> random_bytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(static_cast<size_t>(n));
  for (auto& b : v) b = static_cast<uint8_t>(1 + rng() % 255);  // never zero: padding is
  return v;
}

TEST(Colpad4, IsRegisteredByName) {
  const Layout l = colpad4();
  EXPECT_GE(static_cast<int>(l), 32) << "a device's layout takes a free id";
  EXPECT_STREQ(layout_name(l), "colpad4");
  ASSERT_TRUE(layout_from_name("colpad4").has_value());
  EXPECT_EQ(*layout_from_name("colpad4"), l);
  ASSERT_NE(find_layout(l), nullptr);
  auto f = Format::parse("f32/colpad4", {2, 3, 5});
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->layout, l);
  EXPECT_EQ(f->to_string(), "f32/colpad4 [2,3,5]");
  // A second family cannot take its name.
  LayoutInfo dup = *find_layout(l);
  EXPECT_FALSE(register_layout(dup).ok());
  // The parse error lists it with the others.
  auto bad = Format::parse("f32/nosuch", {2});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("colpad4"), std::string::npos) << bad.status().message();
}

TEST(Colpad4, SizeRules) {
  // [2, 3, 5]: 2 slices of 5 columns of 3 values padded to 4.
  const Format f{Encoding::f32, colpad4(), {2, 3, 5}};
  EXPECT_EQ(f.padded_shape(), (Shape{2, 5, 4}));
  EXPECT_EQ(*f.byte_size(), 2 * 5 * 4 * 4);
  EXPECT_EQ(f.page_size(), 4 * 4);
  EXPECT_EQ(f.alignment(), 16);
  EXPECT_EQ(*Format({Encoding::i16, colpad4(), {7}}).byte_size(), 7 * 4 * 2);  // rank 1: H = 1
  EXPECT_EQ(*Format({Encoding::u8, colpad4(), {}}).byte_size(), 4);            // rank 0: one column
  EXPECT_EQ(*Format({Encoding::u8, colpad4(), {8, 0}}).byte_size(), 0);
  // Block encodings have no colpad4 form; sizes that overflow are errors, not wraps.
  EXPECT_EQ(Format({Encoding::q8_0, colpad4(), {4, 32}}).byte_size().status().code(), StatusCode::unsupported);
  EXPECT_FALSE(Format({Encoding::bfp8_b, colpad4(), {32, 32}}).byte_size().ok());
  const int64_t big = int64_t{1} << 40;
  auto over = Format({Encoding::f32, colpad4(), {big, big, 2}}).byte_size();
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("overflows"), std::string::npos) << over.status().message();
}

// Every element where the layout's definition puts it, padding zero, and back.
TEST(Colpad4, ConvertsExactly) {
  for (const Shape& s : {Shape{2, 3, 5}, Shape{1, 4, 1}, Shape{6}, Shape{3, 2, 7, 9}}) {
    SCOPED_TRACE(shape_str(s));
    for (Encoding e : {Encoding::u8, Encoding::i16, Encoding::f32}) {
      const int64_t eb = encoding_element_bytes(e), n = num_elements(s);
      const Format rm{e, Layout::row_major, s}, cp{e, colpad4(), s};
      const std::vector<uint8_t> src = random_bytes(n * eb, 7 + static_cast<uint32_t>(n));
      std::vector<uint8_t> dev(static_cast<size_t>(*cp.byte_size()), 0xAA), back(src.size());
      ASSERT_TRUE(convert::convert(rm, src.data(), cp, dev.data()).ok());
      const int64_t w = s.back(), h = s.size() < 2 ? 1 : s[s.size() - 2], hp = (h + 3) / 4 * 4;
      const int64_t outer = n / (h * w);
      std::vector<bool> used(dev.size() / eb, false);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t r = 0; r < h; ++r)
          for (int64_t c = 0; c < w; ++c) {
            const int64_t at = (o * w + c) * hp + r;
            used[at] = true;
            ASSERT_EQ(std::memcmp(&dev[at * eb], &src[((o * h + r) * w + c) * eb], eb), 0) << o << "," << r << "," << c;
          }
      for (size_t i = 0; i < used.size(); ++i) {
        if (used[i]) continue;
        for (int64_t k = 0; k < eb; ++k) {
          ASSERT_EQ(dev[i * eb + k], 0) << "padding element " << i;
        }
      }
      ASSERT_TRUE(convert::convert(cp, dev.data(), rm, back.data()).ok());
      EXPECT_EQ(back, src);
    }
  }
}

// The shared library chains its rules through row-major: u8 -> f32/colpad4 (a cast, then
// colpad4's rule), and tile32 -> colpad4 (untilize, then colpad4's rule).
TEST(Colpad4, ChainsWithTheSharedFormats) {
  const Shape s{3, 37, 33};
  const int64_t n = num_elements(s);
  const std::vector<uint8_t> u8 = random_bytes(n, 11);
  const Format from = Format::row_major(DType::u8, s), to{Encoding::f32, colpad4(), s};
  auto steps = convert::plan(from, to);
  ASSERT_TRUE(steps.ok()) << steps.status().to_string();
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_NE((*steps)[1].name.find("to_colpad4"), std::string::npos) << (*steps)[1].name;
  EXPECT_TRUE((*steps)[0].exact && (*steps)[1].exact);
  std::vector<uint8_t> dev(static_cast<size_t>(*to.byte_size()));
  ASSERT_TRUE(convert::convert(from, u8.data(), to, dev.data()).ok());
  const Colpad4Geom g = colpad4_geom(s);
  float v = 0;
  std::memcpy(&v, &dev[g.index(2, 36, 32) * 4], 4);
  EXPECT_EQ(v, static_cast<float>(u8[n - 1]));
  // tile32 -> colpad4 agrees with row-major -> colpad4.
  std::vector<float> f32(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) f32[i] = static_cast<float>(u8[i]) * 0.25f - 30.0f;
  const Format rm = Format::row_major(DType::f32, s), tiled = Format::tiled(Encoding::f32, s);
  std::vector<uint8_t> tiles(static_cast<size_t>(*tiled.byte_size())), a(dev.size()), b(dev.size());
  ASSERT_TRUE(convert::convert(rm, f32.data(), tiled, tiles.data()).ok());
  ASSERT_TRUE(convert::convert(tiled, tiles.data(), to, a.data()).ok());
  ASSERT_TRUE(convert::convert(rm, f32.data(), to, b.data()).ok());
  EXPECT_EQ(a, b);
}

TEST(PluginDevice, IsInTheRegistry) {
  bool found = false;
  for (const DeviceInfo& d : device_registry()) found |= d.name == "plugin";
  EXPECT_TRUE(found);
  auto dev = create_device("plugin");
  ASSERT_TRUE(dev.ok()) << dev.status().to_string();
  EXPECT_EQ((*dev)->name(), "plugin");
}

// relu(x + b) on the plugin device in colpad4, then logistic on the cpu (a transfer from
// colpad4 to row-major between them), against values computed here in double.
TEST(PluginDevice, RunsInItsLayoutBesideTheCpu) {
  const Shape s{3, 5, 6};
  const int64_t n = num_elements(s);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(n), bias(6);
  for (auto& v : x) v = u(rng);
  for (auto& v : bias) v = u(rng);
  Graph g;
  Tensor xt;
  xt.name = "x";
  xt.shape = s;
  xt.dtype = DType::f32;
  xt.role = Role::input;
  const TensorId xi = g.add_tensor(xt);
  g.inputs.push_back(xi);
  Tensor bt;
  bt.name = "bias";
  bt.shape = {6};
  bt.dtype = DType::f32;
  bt.role = Role::weight;
  std::vector<uint8_t> bb(bias.size() * 4);
  std::memcpy(bb.data(), bias.data(), bb.size());
  bt.data = ConstData::from_vector(std::move(bb));
  const TensorId bi = g.add_tensor(bt);
  auto sum = g.add_op(OpKind::add, {xi, bi}, {}, "sum");
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  auto act = g.add_op(OpKind::relu, {*sum}, {}, "act");
  ASSERT_TRUE(act.ok());
  auto y = g.add_op(OpKind::logistic, {*act}, {}, "y");
  ASSERT_TRUE(y.ok());
  g.tensor(*y).role = Role::output;
  g.outputs = {*y};

  SessionOptions opts;
  opts.device = "plugin";
  auto session = Session::create(g, opts);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  ASSERT_TRUE((*session)->set_input(0, x.data(), n * 4).ok());
  ASSERT_TRUE((*session)->run().ok());
  auto out = (*session)->output(0);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ(static_cast<int64_t>(out->size()), n * 4);
  std::vector<float> got(n);
  std::memcpy(got.data(), out->data(), out->size());
  for (int64_t i = 0; i < n; ++i) {
    const double r = std::max(0.0, static_cast<double>(x[i]) + bias[i % 6]);
    EXPECT_NEAR(got[i], 1.0 / (1.0 + std::exp(-r)), 1e-6) << i;
  }
  // add and relu (which the fuse pass may fold into the add) ran on the plugin with their
  // f32 tensors in colpad4; logistic on the cpu, after a transfer out of colpad4.
  const Plan& plan = (*session)->plan();
  int on_plugin = 0, transfers = 0;
  for (size_t i = 0; i < plan.graph.nodes().size(); ++i) {
    const Node& nd = plan.graph.nodes()[i];
    const std::string where = plan.devices[plan.nodes[i].device]->name();
    if (nd.op == OpKind::add || nd.op == OpKind::relu) {
      EXPECT_EQ(where, "plugin") << op_name(nd.op);
      EXPECT_EQ(plan.tensors[nd.outputs[0]].format.layout, colpad4());
      ++on_plugin;
    }
    if (nd.op == OpKind::transfer && plan.tensors[nd.inputs[0]].format.layout == colpad4()) ++transfers;
    if (nd.op == OpKind::logistic) {
      EXPECT_EQ(where, "cpu");
    }
  }
  EXPECT_GE(on_plugin, 1);
  EXPECT_GE(transfers, 1);
}

}  // namespace
}  // namespace tessera::plugin
