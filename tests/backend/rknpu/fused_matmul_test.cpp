// Fused sibling matmuls on rknpu (program.cpp fuse_sibling_matmuls, docs/rknpu.md "Fused
// projections"): consecutive fully connected nodes reading the same input (a decoder's
// q/k/v, its gate/up) run as one matmul whose weights stack theirs along N. Each output
// channel is the same dot product in the same order, so the fused program must give the
// unfused one's bytes (fp16 and int8, with and without biases, GEMV and prompt rows,
// weights of different GGUF types), in fewer tasks and less modelled time; nodes that do
// not qualify (another input, a different bias presence) stay apart.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/program.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "convert/dtype.h"
#include "tessera/backend/plan.h"
#include "tessera/session.h"

namespace tessera::rknpu_test {
namespace {

using namespace tessera::rknpu;

struct Proj {
  int64_t n;
  DType wtype;
  bool bias;
};

// Weight bytes of `t` ([n, k]): F16 values or GGUF Q8_0 / Q4_0 blocks, seeded.
std::vector<uint8_t> weight_bytes(DType t, int64_t n, int64_t k, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 0.05f);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> b;
  if (t == DType::f16) {
    b.resize(static_cast<size_t>(n * k * 2));
    for (int64_t i = 0; i < n * k; ++i) {
      const uint16_t h = convert::f32_to_f16(nd(rng));
      std::memcpy(b.data() + 2 * i, &h, 2);
    }
    return b;
  }
  const int64_t block = t == DType::q8_0 ? 34 : 18;
  b.resize(static_cast<size_t>(n * k / 32 * block));
  for (int64_t i = 0; i < n * k / 32; ++i) {
    uint8_t* p = b.data() + i * block;
    const uint16_t d = convert::f32_to_f16(0.001f * float(1 + i % 5));
    std::memcpy(p, &d, 2);
    for (int64_t j = 2; j < block; ++j) p[j] = static_cast<uint8_t>(byte(rng));
  }
  return b;
}

// x [m, k] -> one fully connected node per projection, all graph outputs, in order.
// `other_input`: the last projection reads a second input instead of x.
Graph build_siblings(int64_t m, int64_t k, const std::vector<Proj>& projs, bool other_input = false) {
  Graph g;
  std::mt19937 rng(static_cast<uint32_t>(m * 131 + k + projs.size()));
  auto input = [&](const char* name) {
    Tensor x;
    x.name = name;
    x.shape = {m, k};
    x.dtype = DType::f32;
    x.role = Role::input;
    return g.add_tensor(x);
  };
  const TensorId x = input("x");
  g.inputs = {x};
  if (other_input) g.inputs.push_back(input("x2"));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (size_t i = 0; i < projs.size(); ++i) {
    const Proj& p = projs[i];
    const std::string name = "proj" + std::to_string(i);
    std::vector<TensorId> ins{other_input && i + 1 == projs.size() ? g.inputs[1] : x,
                              add_const(g, name + ".w", {p.n, k}, p.wtype, {}, weight_bytes(p.wtype, p.n, k, rng))};
    if (p.bias) {
      std::vector<uint8_t> bb(static_cast<size_t>(p.n * 4));
      for (int64_t c = 0; c < p.n; ++c) {
        const float v = nd(rng);
        std::memcpy(bb.data() + 4 * c, &v, 4);
      }
      ins.push_back(add_const(g, name + ".b", {p.n}, DType::f32, {}, std::move(bb)));
    }
    auto y = g.add_op(OpKind::fully_connected, ins, {}, name);
    EXPECT_TRUE(y.ok()) << y.status().to_string();
    g.tensor(*y).role = Role::output;
    g.outputs.push_back(*y);
  }
  return g;
}

struct Run {
  std::vector<std::vector<uint8_t>> outputs;
  double modelled_seconds = 0;
  bool all_on_npu = true;
};

Result<Run> run(const Graph& g, int64_t m, int64_t k, const std::string& weights, const std::string& fuse) {
  SessionOptions so;
  so.device = "rknpu";
  so.device_options = {{"weights", weights}, {"fuse", fuse}};
  TS_ASSIGN_OR_RETURN(auto s, Session::create(g, so));
  Run r;
  const Plan& p = s->plan();
  for (size_t i = 0; i < p.graph.nodes().size(); ++i)
    if (p.graph.nodes()[i].op == OpKind::fully_connected)
      r.all_on_npu = r.all_on_npu && p.devices[p.nodes[i].device]->name() == "rknpu";
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (size_t in = 0; in < g.inputs.size(); ++in) {
    std::vector<float> x(static_cast<size_t>(m * k));
    for (auto& v : x) v = nd(rng);
    TS_RETURN_IF_ERROR(s->set_input(static_cast<int>(in), x.data(), static_cast<int64_t>(x.size() * 4)));
  }
  TS_RETURN_IF_ERROR(s->run());
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    TS_ASSIGN_OR_RETURN(std::vector<uint8_t> y, s->output(static_cast<int>(o)));
    r.outputs.push_back(std::move(y));
  }
  r.modelled_seconds = s->profile().modelled_seconds;
  return r;
}

// Qwen2-style q/k/v (a wide q, narrow k and v, biases) and gate/up (no biases), scaled down.
const std::vector<Proj> kQkv = {{256, DType::q8_0, true}, {64, DType::f16, true}, {64, DType::q4_0, true}};
const std::vector<Proj> kGateUp = {{512, DType::q8_0, false}, {512, DType::q8_0, false}};

TEST(RknpuFusedMatmul, SiblingsGiveTheUnfusedBytesInLessTime) {
  for (const std::string weights : {"fp16", "int8"})
    for (const int64_t m : {int64_t{1}, int64_t{5}})
      for (const auto* projs : {&kQkv, &kGateUp}) {
        SCOPED_TRACE(weights + " m " + std::to_string(m) + " " + std::to_string(projs->size()) + " nodes");
        const int64_t k = 256;
        Graph g = build_siblings(m, k, *projs);
        auto fused = run(g, m, k, weights, "on");
        auto apart = run(g, m, k, weights, "off");
        ASSERT_TRUE(fused.ok()) << fused.status().to_string();
        ASSERT_TRUE(apart.ok()) << apart.status().to_string();
        EXPECT_TRUE(fused->all_on_npu);
        ASSERT_EQ(fused->outputs.size(), projs->size());
        for (size_t o = 0; o < projs->size(); ++o) {
          ASSERT_EQ(fused->outputs[o].size(), static_cast<size_t>(m * (*projs)[o].n * 4));
          EXPECT_EQ(fused->outputs[o], apart->outputs[o]) << "output " << o;
          // Not a buffer left as it was: the results differ from zero.
          size_t nonzero = 0;
          for (size_t i = 0; i < fused->outputs[o].size(); i += 4) {
            float v;
            std::memcpy(&v, fused->outputs[o].data() + i, 4);
            nonzero += v != 0.0f;
          }
          EXPECT_GT(nonzero, fused->outputs[o].size() / 8) << "output " << o;
        }
        EXPECT_LT(fused->modelled_seconds, apart->modelled_seconds);
      }
}

Result<std::unique_ptr<RknpuProgram>> compile(const Graph& g, Transport* t, WeightCache* cache, bool fuse,
                                              WeightPolicy w = WeightPolicy::fp16) {
  Segment seg;
  seg.graph = &g;
  for (size_t i = 0; i < g.nodes().size(); ++i) seg.nodes.push_back(static_cast<int>(i));
  return compile_segment(seg, t, SchedulePolicy::tessera, Rounding::exact, kCores, cache, w, fuse);
}

size_t task_count(const RknpuProgram& p) {
  size_t n = 0;
  for (const auto& j : p.jobs) n += j.tasks.size();
  return n;
}

TEST(RknpuFusedMatmul, TheFusedOpStacksItsNodesChannels) {
  Graph g = build_siblings(1, 256, kQkv);
  auto t = make_model_transport(kAddressSpace);
  auto fused = compile(g, t.get(), nullptr, true);
  auto apart = compile(g, t.get(), nullptr, false);
  ASSERT_TRUE(fused.ok()) << fused.status().to_string();
  ASSERT_TRUE(apart.ok()) << apart.status().to_string();
  ASSERT_EQ((*fused)->ops.size(), 1u);
  const CompiledOp& c = (*fused)->ops[0];
  EXPECT_EQ(c.op.out_c, 384);
  ASSERT_EQ(c.parts.size(), 3u);
  const int64_t n0[] = {0, 256, 320}, n[] = {256, 64, 64};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c.parts[i].output, g.outputs[i]);
    EXPECT_EQ(c.parts[i].n0, n0[i]);
    EXPECT_EQ(c.parts[i].n, n[i]);
    EXPECT_EQ(c.parts[i].node, i);
  }
  EXPECT_TRUE(c.host_steps) << "the fused result reaches the outputs through the host step";
  // Three cores: N = 384 is one 128-wide task per core; apart, q takes three tasks and k and
  // v two each (their 64 channels split in 32-channel chunks over two cores).
  EXPECT_EQ(task_count(**fused), 3u) << (*fused)->describe();
  EXPECT_EQ(task_count(**apart), 7u) << (*apart)->describe();
  bool noted = false;
  for (const std::string& note : (*fused)->notes) noted = noted || note.find("one matmul of N = 384 (3 nodes") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ((*fused)->describe().rfind("1 NPU op (3 matmuls reading one input as 1 fused matmul), 3 tasks", 0), 0u)
      << (*fused)->describe();
}

TEST(RknpuFusedMatmul, OnlyConsecutiveNodesOfOneInputAndOneBiasPresenceFuse) {
  auto t = make_model_transport(kAddressSpace);
  {
    // The bias on q alone: q stays apart, k and v fuse.
    Graph g = build_siblings(1, 256, {{256, DType::f16, true}, {64, DType::f16, false}, {64, DType::f16, false}});
    auto p = compile(g, t.get(), nullptr, true);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_EQ((*p)->ops.size(), 2u);
    EXPECT_TRUE((*p)->ops[0].parts.empty());
    ASSERT_EQ((*p)->ops[1].parts.size(), 2u);
    EXPECT_EQ((*p)->ops[1].op.out_c, 128);
  }
  {
    // The last node reads another input.
    Graph g = build_siblings(1, 256, {{64, DType::f16, false}, {64, DType::f16, false}, {64, DType::f16, false}}, true);
    auto p = compile(g, t.get(), nullptr, true);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_EQ((*p)->ops.size(), 2u);
    EXPECT_EQ((*p)->ops[0].parts.size(), 2u);
    EXPECT_TRUE((*p)->ops[1].parts.empty());
  }
  {
    // K = 12288 needs two K segments (tiling.cpp): such matmuls run alone.
    Graph g = build_siblings(1, 12288, {{32, DType::f16, false}, {32, DType::f16, false}});
    auto p = compile(g, t.get(), nullptr, true);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ((*p)->ops.size(), 2u);
  }
}

// A decoder's prompt and decode programs share the fused weights (one cache entry, keyed
// by every member's constant), and an unfused program of the same nodes packs its own.
TEST(RknpuFusedMatmul, ProgramsShareTheFusedWeights) {
  for (const WeightPolicy w : {WeightPolicy::fp16, WeightPolicy::int8}) {
    SCOPED_TRACE(w == WeightPolicy::int8 ? "int8" : "fp16");
    Graph g = build_siblings(1, 256, kGateUp);
    auto t = make_model_transport(kAddressSpace);
    WeightCache cache;
    auto apart = compile(g, t.get(), &cache, false, w);
    ASSERT_TRUE(apart.ok()) << apart.status().to_string();
    EXPECT_EQ(cache.entries.size(), 2u);
    {
      auto a = compile(g, t.get(), &cache, true, w);
      auto b = compile(g, t.get(), &cache, true, w);
      ASSERT_TRUE(a.ok()) << a.status().to_string();
      ASSERT_TRUE(b.ok()) << b.status().to_string();
      ASSERT_EQ(cache.entries.size(), 3u);
      const auto& key = (*a)->ops[0].weight_key;
      ASSERT_EQ(key.size(), 2u);
      EXPECT_EQ(cache.entries.at(key).refs, 2);
      EXPECT_EQ((*a)->ops[0].weights.handle, (*b)->ops[0].weights.handle);
      EXPECT_EQ(cache.entries.at(key).bo.size, 2 * 512 * 256 * (w == WeightPolicy::int8 ? 1 : 2));
      if (w == WeightPolicy::int8) {
        // The second program takes the channel scales from the cache: the same 1024.
        EXPECT_EQ((*b)->ops[0].op.mm_wscale.size(), 1024u);
        EXPECT_EQ((*b)->ops[0].op.mm_wscale, (*a)->ops[0].op.mm_wscale);
      }
    }
    EXPECT_EQ(cache.entries.size(), 2u) << "the fused entry goes with its last program";
  }
}

}  // namespace
}  // namespace tessera::rknpu_test
