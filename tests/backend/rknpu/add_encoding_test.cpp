// Element-wise add on the rknpu device model: the compiler chooses the DPU encoding by
// comparing it with TFLite's ADD on all 65,536 pairs of input codes (lower_binary.cpp encode_pair)
// and reports how many it gets right. Checked here through the whole path (register
// streams, device model): every pair of codes is fed once, and the pairs that differ from
// the cpu's TFLite-exact kernel are exactly the ones the compiler reported.
#include <gtest/gtest.h>

#include <string>

#include "backend/rknpu/rknpu_test_util.h"
#include "tessera/backend/plan.h"

namespace tessera::rknpu_test {
namespace {

struct AddCase {
  DType dtype;
  float sa, sb, so;
  int za, zb, zo;
  const char* activation;
};

TEST(RknpuAdd, EveryPairOfCodesAsReported) {
  const AddCase cases[] = {{DType::i8, 0.0173f, 0.0291f, 0.0411f, 3, -7, 10, "none"},
                           {DType::u8, 0.05f, 0.0213f, 0.06f, 128, 121, 130, "relu"},
                           {DType::i8, 0.1f, 0.1f, 0.2f, 0, 0, -128, "relu6"}};
  for (const AddCase& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " " + c.activation);
    const bool u8 = c.dtype == DType::u8;
    Graph g;
    Tensor a;
    a.shape = {1, 256, 256, 1};
    a.dtype = c.dtype;
    a.role = Role::input;
    Tensor b = a;
    a.name = "a", b.name = "b";
    a.quant = {{c.sa}, {c.za}};
    b.quant = {{c.sb}, {c.zb}};
    TensorId ai = g.add_tensor(a), bi = g.add_tensor(b);
    auto y = g.add_op(OpKind::add, {ai, bi}, {{"activation", std::string(c.activation)}}, "add", c.dtype,
                      QuantParams{{c.so}, {c.zo}});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    g.tensor(*y).role = Role::output;
    g.inputs = {ai, bi};
    g.outputs = {*y};
    // a = row code, b = column code: every pair once.
    std::vector<uint8_t> va(65536), vb(65536);
    for (int i = 0; i < 256; ++i)
      for (int k = 0; k < 256; ++k) {
        va[i * 256 + k] = static_cast<uint8_t>(i);
        vb[i * 256 + k] = static_cast<uint8_t>(k);
      }
    std::vector<std::vector<uint8_t>> outs;
    int64_t reported = -1;
    for (const char* dev : {"cpu", "rknpu"}) {
      SessionOptions so;
      so.device = dev;
      auto s = Session::create(g, so);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      if (std::string(dev) == "rknpu") {
        const Plan& p = (*s)->plan();
        for (size_t i = 0; i < p.graph.nodes().size(); ++i) {
          if (p.graph.nodes()[i].op != OpKind::add) continue;
          ASSERT_EQ(p.devices[p.nodes[i].device]->name(), "rknpu") << p.nodes[i].note;
          const std::string& note = p.nodes[i].note;
          const size_t at = note.find("ADD on ");
          ASSERT_NE(at, std::string::npos) << note;
          reported = std::stoll(note.substr(at + 7));
        }
      }
      ASSERT_TRUE((*s)->set_input(0, va.data(), 65536).ok());
      ASSERT_TRUE((*s)->set_input(1, vb.data(), 65536).ok());
      ASSERT_TRUE((*s)->run().ok());
      auto o = (*s)->output(0);
      ASSERT_TRUE(o.ok());
      outs.push_back(*o);
    }
    int64_t differ = 0;
    int max_diff = 0;
    for (size_t i = 0; i < outs[0].size(); ++i) {
      const int x = u8 ? outs[0][i] : int8_t(outs[0][i]), z = u8 ? outs[1][i] : int8_t(outs[1][i]);
      differ += x != z;
      max_diff = std::max(max_diff, std::abs(x - z));
    }
    std::printf("[rknpu add] %s %s: %lld of 65536 pairs differ from TFLite's ADD (compiler reported %lld exact)\n",
                dtype_name(c.dtype), c.activation, static_cast<long long>(differ), static_cast<long long>(reported));
    EXPECT_EQ(differ, 65536 - reported);
    EXPECT_LE(max_diff, 1);
    EXPECT_LE(differ * 1000, 65536);
  }
}

}  // namespace
}  // namespace tessera::rknpu_test
