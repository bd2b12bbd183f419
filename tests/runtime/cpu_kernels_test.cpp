// CPU reference kernels through a Session: results independent of the thread count, and
// clear errors for bad indices at run time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> seeded(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TensorId add_input(Graph& g, const std::string& name, Shape s, DType t = DType::f32) {
  Tensor x;
  x.name = name;
  x.shape = std::move(s);
  x.dtype = t;
  x.role = Role::input;
  TensorId id = g.add_tensor(x);
  g.inputs.push_back(id);
  return id;
}

TensorId add_weight(Graph& g, const std::string& name, Shape s, const std::vector<float>& v) {
  Tensor w;
  w.name = name;
  w.shape = std::move(s);
  w.role = Role::weight;
  w.data = ConstData::from_vector(bytes_of(v));
  return g.add_tensor(w);
}

void set_output(Graph& g, TensorId y) {
  g.tensor(y).role = Role::output;
  g.outputs = {y};
}

Result<std::vector<uint8_t>> run(const Graph& g, const std::vector<std::vector<uint8_t>>& inputs, int threads) {
  SessionOptions o;
  o.device_options["threads"] = std::to_string(threads);
  TS_ASSIGN_OR_RETURN(auto s, Session::create(g, o));
  for (size_t i = 0; i < inputs.size(); ++i)
    TS_RETURN_IF_ERROR(s->set_input(i, inputs[i].data(), static_cast<int64_t>(inputs[i].size())));
  TS_RETURN_IF_ERROR(s->run());
  return s->output(0);
}

// Float max and average pooling keep each channel's operations and their order (the window's
// taps in turn; the average divided once by the taps inside the input): the outputs equal the
// definition computed here channel by channel in float, bit for bit, with NaN, infinities
// and signed zeros among the inputs, windows wholly in the padding, every activation, on 1
// and 3 threads.
TEST(CpuKernels, FloatPoolsKeepEveryChannelsOperationsInOrder) {
  struct Spec {
    int64_t n, h, w, c, k, stride, pad;
    std::string act;
  };
  const std::vector<Spec> specs = {{1, 20, 20, 128, 5, 1, 2, "none"},  // YOLOv8's SPPF
                                   {2, 9, 7, 3, 3, 2, 1, "relu"},
                                   {1, 6, 5, 17, 2, 2, 0, "relu6"},
                                   {1, 4, 4, 33, 3, 1, 3, "relu_n1_to_1"},  // corner windows all padding
                                   {1, 12, 11, 40, 3, 3, 1, "none"}};
  const float inf = std::numeric_limits<float>::infinity();
  for (const Spec& sp : specs)
    for (bool is_max : {true, false}) {
      SCOPED_TRACE(std::string(is_max ? "max" : "avg") + " c" + std::to_string(sp.c) + " k" + std::to_string(sp.k));
      const int64_t OH = (sp.h + 2 * sp.pad - sp.k) / sp.stride + 1, OW = (sp.w + 2 * sp.pad - sp.k) / sp.stride + 1;
      Graph g;
      const TensorId x = add_input(g, "x", {sp.n, sp.h, sp.w, sp.c});
      AttrMap attrs{{"filter_h", sp.k}, {"filter_w", sp.k}, {"stride_h", sp.stride}, {"stride_w", sp.stride},
                    {"pad_top", sp.pad},  {"pad_left", sp.pad}, {"pad_bottom", sp.pad}, {"pad_right", sp.pad},
                    {"activation", sp.act}};
      auto y = g.add_op(is_max ? OpKind::max_pool2d : OpKind::avg_pool2d, {x}, attrs, "pool");
      ASSERT_TRUE(y.ok()) << y.status().to_string();
      set_output(g, *y);
      ASSERT_EQ(g.tensor(*y).shape, (Shape{sp.n, OH, OW, sp.c}));
      std::vector<float> xv = seeded(static_cast<size_t>(sp.n * sp.h * sp.w * sp.c), 77 + static_cast<uint32_t>(sp.c));
      for (size_t i = 0; i < xv.size(); i += 97) xv[i] = std::nanf("");
      for (size_t i = 13; i < xv.size(); i += 101) xv[i] = i % 2 ? inf : -inf;
      for (size_t i = 29; i < xv.size(); i += 89) xv[i] = -0.0f;
      std::vector<float> want(static_cast<size_t>(sp.n * OH * OW * sp.c));
      auto act = [&](float v) {
        if (sp.act == "relu") return std::max(v, 0.0f);
        if (sp.act == "relu6") return std::min(std::max(v, 0.0f), 6.0f);
        if (sp.act == "relu_n1_to_1") return std::min(std::max(v, -1.0f), 1.0f);
        return v;
      };
      for (int64_t b = 0; b < sp.n; ++b)
        for (int64_t oy = 0; oy < OH; ++oy)
          for (int64_t ox = 0; ox < OW; ++ox)
            for (int64_t ch = 0; ch < sp.c; ++ch) {
              float acc = is_max ? -inf : 0.0f;
              int taps = 0;
              for (int64_t ky = 0; ky < sp.k; ++ky)
                for (int64_t kx = 0; kx < sp.k; ++kx) {
                  const int64_t iy = oy * sp.stride - sp.pad + ky, ix = ox * sp.stride - sp.pad + kx;
                  if (iy < 0 || iy >= sp.h || ix < 0 || ix >= sp.w) continue;
                  const float v = xv[static_cast<size_t>(((b * sp.h + iy) * sp.w + ix) * sp.c + ch)];
                  acc = is_max ? std::max(acc, v) : acc + v;
                  ++taps;
                }
              if (taps == 0) acc = 0.0f;
              else if (!is_max) acc /= static_cast<float>(taps);
              want[static_cast<size_t>(((b * OH + oy) * OW + ox) * sp.c + ch)] = act(acc);
            }
      for (int threads : {1, 3}) {
        auto got = run(g, {bytes_of(xv)}, threads);
        ASSERT_TRUE(got.ok()) << got.status().to_string();
        ASSERT_EQ(got->size(), want.size() * 4);
        EXPECT_EQ(std::memcmp(got->data(), want.data(), got->size()), 0) << threads << " threads";
      }
    }
}

// TRANSPOSE moves every element to its place, also where it copies blocks (an output axis
// that reads the input contiguously over 64 or more positions while the output rows gather
// with a stride: NHWC -> NCHW, YOLOv8's [1, 16, 4, N] -> [1, 4, N, 16]) and at their edges
// (extents not a multiple of the block); 1-, 2- and 4-byte elements, checked against the
// index arithmetic here.
TEST(CpuKernels, TransposeBlocksPutEveryElementInItsPlace) {
  struct Spec {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Spec> specs = {{{1, 16, 4, 300}, {0, 2, 3, 1}},   // YOLOv8's DFL, 300 anchors
                                   {{1, 9, 7, 130}, {0, 3, 1, 2}},    // NHWC -> NCHW, 130 channels
                                   {{2, 3, 70, 5}, {0, 2, 1, 3}},     // rows moved whole
                                   {{65, 3}, {1, 0}},                 // a matrix, 65 = one block and one
                                   {{3, 64, 2, 129}, {3, 1, 0, 2}}};
  for (DType t : {DType::i8, DType::i16, DType::f32})
    for (const Spec& sp : specs) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + shape_str(sp.shape));
      Graph g;
      const TensorId x = add_input(g, "x", sp.shape, t);
      auto y = g.add_op(OpKind::transpose, {x}, {{"perm", sp.perm}}, "t");
      ASSERT_TRUE(y.ok()) << y.status().to_string();
      set_output(g, *y);
      const int64_t es = t == DType::i8 ? 1 : t == DType::i16 ? 2 : 4, n = num_elements(sp.shape);
      std::vector<uint8_t> in(static_cast<size_t>(n * es));
      std::mt19937 rng(5);
      for (auto& b : in) b = static_cast<uint8_t>(rng());
      const Shape& os = g.tensor(*y).shape;
      const int rank = static_cast<int>(sp.shape.size());
      std::vector<int64_t> ist(rank, 1);
      for (int k = rank - 2; k >= 0; --k) ist[k] = ist[k + 1] * sp.shape[k + 1];
      std::vector<uint8_t> want(in.size());
      std::vector<int64_t> idx(rank, 0);
      for (int64_t o = 0; o < n; ++o) {
        int64_t src = 0;
        for (int k = 0; k < rank; ++k) src += idx[k] * ist[sp.perm[k]];
        std::memcpy(&want[o * es], &in[src * es], es);
        for (int k = rank - 1; k >= 0; --k) {
          if (++idx[k] < os[k]) break;
          idx[k] = 0;
        }
      }
      auto got = run(g, {in}, 1);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(*got, want);
    }
}

// A reshape of an intermediate is a view of it (plan_memory): no copy, and the source
// stays alive while the view is read, even after the source's own last reader, so the
// tensors made in between (same size, the arena's first choice) take other bytes. Reshapes
// of a graph input and into a graph output stay copies. The output is computed by hand.
TEST(CpuKernels, ReshapeOfAnIntermediateIsAViewThatKeepsItsSourceAlive) {
  Graph g;
  const std::vector<float> xv = seeded(12, 5);
  TensorId x = add_input(g, "x", {2, 6});
  TensorId xr = *g.add_op(OpKind::reshape, {x}, {{"shape", std::vector<int64_t>{3, 4}}}, "x_view");  // of an input
  TensorId a = *g.add_op(OpKind::relu, {x}, {}, "a");
  TensorId v = *g.add_op(OpKind::reshape, {a}, {{"shape", std::vector<int64_t>{3, 4}}}, "a_view");
  TensorId b = *g.add_op(OpKind::add, {a, a}, {}, "b");  // a's last direct reader
  TensorId c = *g.add_op(OpKind::add, {b, b}, {}, "c");
  TensorId d = *g.add_op(OpKind::add, {c, c}, {}, "d");
  TensorId dr = *g.add_op(OpKind::reshape, {d}, {{"shape", std::vector<int64_t>{3, 4}}}, "d_view");
  TensorId e = *g.add_op(OpKind::add, {dr, v}, {}, "e");  // 8 relu(x) + relu(x)
  TensorId f = *g.add_op(OpKind::add, {e, xr}, {}, "f");
  TensorId y = *g.add_op(OpKind::reshape, {f}, {{"shape", std::vector<int64_t>{12}}}, "y");
  set_output(g, y);
  SessionOptions o;
  auto s = Session::create(g, o);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const Plan& p = (*s)->plan();
  EXPECT_EQ(p.tensors[v].alias, a);
  EXPECT_EQ(p.tensors[dr].alias, d);
  EXPECT_EQ(p.tensors[xr].alias, kNoTensor);
  EXPECT_EQ(p.tensors[y].alias, kNoTensor);
  EXPECT_GE(p.tensors[a].last_use, p.tensors[v].last_use);
  for (TensorId t : {b, c, d})  // live while a (through its view) still is: other bytes
    EXPECT_TRUE(p.tensors[t].arena != p.tensors[a].arena || p.tensors[t].offset != p.tensors[a].offset) << p.graph.tensor(t).name;
  ASSERT_TRUE((*s)->set_input(0, xv.data(), 48).ok());
  ASSERT_TRUE((*s)->run().ok());
  auto out = (*s)->output(0);
  ASSERT_TRUE(out.ok());
  std::vector<float> got(12);
  std::memcpy(got.data(), out->data(), 48);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(got[i], 9 * std::max(xv[i], 0.0f) + xv[i]) << i;
}

// int32 ADD / SUB / MUL / SQUARED_DIFFERENCE wrap around as the interpreter's int32 arithmetic does (found by
// tflite_fuzz: an overflowing sum was undefined behaviour); INT32_MIN / -1 is an error
// naming the operands, where the interpreter traps.
TEST(CpuKernels, Int32ArithmeticWrapsAndDivisionOverflowIsAnError) {
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  const std::vector<int32_t> a = {kMax, kMin, -1878160861, 7, kMin, 12};
  const std::vector<int32_t> b = {1, -1, -1878160861, -3, 2, 5};
  auto run = [&](OpKind op, std::vector<int32_t>* out) -> Status {
    Graph g;
    std::vector<TensorId> ins;
    for (const char* name : {"a", "b"}) {
      Tensor t;
      t.name = name;
      t.shape = {6};
      t.dtype = DType::i32;
      t.role = Role::input;
      ins.push_back(g.add_tensor(t));
    }
    g.inputs = ins;
    auto y = g.add_op(op, ins, {}, "y", DType::i32);
    if (!y.ok()) return y.status();
    g.tensor(*y).role = Role::output;
    g.outputs = {*y};
    auto s = Session::create(g, SessionOptions{});
    if (!s.ok()) return s.status();
    TS_RETURN_IF_ERROR((*s)->set_input(0, a.data(), 24));
    TS_RETURN_IF_ERROR((*s)->set_input(1, b.data(), 24));
    TS_RETURN_IF_ERROR((*s)->run());
    TS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, (*s)->output(0));
    out->resize(6);
    std::memcpy(out->data(), bytes.data(), 24);
    return Status::Ok();
  };
  auto wrap = [](int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v))); };
  std::vector<int32_t> sum, diff, prod, sqd, quot;
  ASSERT_TRUE(run(OpKind::add, &sum).ok());
  ASSERT_TRUE(run(OpKind::sub, &diff).ok());
  ASSERT_TRUE(run(OpKind::mul, &prod).ok());
  ASSERT_TRUE(run(OpKind::squared_difference, &sqd).ok());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(sum[i], wrap(int64_t{a[i]} + b[i])) << i;
    EXPECT_EQ(diff[i], wrap(int64_t{a[i]} - b[i])) << i;
    EXPECT_EQ(prod[i], wrap(int64_t{a[i]} * b[i])) << i;
    const uint32_t d = static_cast<uint32_t>(wrap(int64_t{a[i]} - b[i]));
    EXPECT_EQ(sqd[i], static_cast<int32_t>(d * d)) << i;
  }
  EXPECT_EQ(sum[0], kMin);  // kMax + 1
  Status st = run(OpKind::div, &quot);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("integer division overflow"), std::string::npos) << st.to_string();
}

// x * LOGISTIC(x) (SiLU as TFLite graphs hold it): the MUL's byte table of x never reads
// LOGISTIC's output, so when the MUL is its only reader the LOGISTIC does not run (host time
// 0); the output is the reference kernels' byte for byte. When the LOGISTIC's output is also
// a graph output it runs, and both outputs are the reference's.
TEST(CpuKernels, LogisticReadOnlyByItsSiluTableIsNotRun) {
  for (bool also_output : {false, true}) {
    SCOPED_TRACE(also_output ? "logistic also an output" : "logistic read by the mul only");
    Graph g;
    Tensor xt;
    xt.name = "x";
    xt.shape = {1, 48, 40, 32};
    xt.dtype = DType::i8;
    xt.quant = QuantParams{{0.05f}, {-3}};
    xt.role = Role::input;
    const TensorId x = g.add_tensor(xt);
    g.inputs = {x};
    const TensorId sig = *g.add_op(OpKind::logistic, {x}, {}, "sig", DType::i8, QuantParams{{1.0f / 256}, {-128}});
    const TensorId y = *g.add_op(OpKind::mul, {x, sig}, {}, "silu", DType::i8, QuantParams{{0.03f}, {-20}});
    g.tensor(y).role = Role::output;
    g.outputs = {y};
    if (also_output) {
      g.tensor(sig).role = Role::output;
      g.outputs.push_back(sig);
    }
    std::mt19937 rng(21);
    std::vector<uint8_t> in(48 * 40 * 32);
    for (auto& b : in) b = static_cast<uint8_t>(rng());
    std::vector<std::vector<std::vector<uint8_t>>> outs;
    std::vector<double> logistic_seconds;
    for (const char* kernels : {"packed", "reference"}) {
      SessionOptions o;
      o.device_options["kernels"] = kernels;
      auto s = Session::create(g, o);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      ASSERT_TRUE((*s)->set_input(0, in.data(), static_cast<int64_t>(in.size())).ok());
      ASSERT_TRUE((*s)->run().ok());
      std::vector<std::vector<uint8_t>> o_k;
      for (size_t k = 0; k < g.outputs.size(); ++k) o_k.push_back(*(*s)->output(k));
      outs.push_back(o_k);
      double sec = -1;
      for (const auto& item : (*s)->profile().nodes)
        if (item.label == "logistic 'sig'") sec = item.host_seconds;
      logistic_seconds.push_back(sec);
    }
    EXPECT_EQ(outs[0], outs[1]);
    EXPECT_GT(logistic_seconds[1], 0);  // the reference kernels run it
    if (also_output)
      EXPECT_GT(logistic_seconds[0], 0);
    else
      EXPECT_EQ(logistic_seconds[0], 0);
  }
}

// conv2d -> depthwise_conv2d -> fully_connected -> matmul, each large enough to be split
// over threads: the same bits on 1, 2 and 5 threads (each output is summed by one thread,
// in order).
TEST(CpuKernels, ThreadCountDoesNotChangeTheBits) {
  Graph g;
  TensorId x = add_input(g, "x", {2, 24, 24, 5});
  TensorId c = *g.add_op(OpKind::conv2d, {x, add_weight(g, "w1", {16, 3, 3, 5}, seeded(16 * 45, 1))},
                         {{"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}}, {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}}});
  TensorId d = *g.add_op(OpKind::depthwise_conv2d, {c, add_weight(g, "w2", {1, 3, 3, 16}, seeded(144, 2))},
                         {{"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}}, {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}}});
  TensorId f = *g.add_op(OpKind::fully_connected, {d, add_weight(g, "w3", {24, 16}, seeded(24 * 16, 3))});
  TensorId r = *g.add_op(OpKind::reshape, {f}, {{"shape", std::vector<int64_t>{2, 576, 24}}});
  TensorId m = *g.add_op(OpKind::matmul, {r, add_weight(g, "w4", {24, 7}, seeded(24 * 7, 4))});
  set_output(g, m);
  const std::vector<std::vector<uint8_t>> in = {bytes_of(seeded(2 * 24 * 24 * 5, 5))};
  auto one = run(g, in, 1), two = run(g, in, 2), five = run(g, in, 5);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  ASSERT_TRUE(two.ok() && five.ok());
  EXPECT_EQ(*one, *two);
  EXPECT_EQ(*one, *five);
}

TEST(CpuKernels, GetRowsRejectsAnIdOutsideTheTable) {
  Graph g;
  TensorId ids = add_input(g, "ids", {3}, DType::i32);
  set_output(g, *g.add_op(OpKind::get_rows, {add_weight(g, "table", {4, 2}, seeded(8, 6)), ids}));
  auto r = run(g, {bytes_of(std::vector<int32_t>{1, 4, 0})}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::out_of_range);
  EXPECT_NE(r.status().message().find("index 4"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'ids'"), std::string::npos) << r.status().message();
}

TEST(CpuKernels, GatherRejectsANegativeIndex) {
  Graph g;
  TensorId x = add_input(g, "x", {3, 2});
  TensorId idx = add_input(g, "idx", {2}, DType::i64);
  set_output(g, *g.add_op(OpKind::gather, {x, idx}, {{"axis", int64_t{0}}}));
  auto r = run(g, {bytes_of(seeded(6, 7)), bytes_of(std::vector<int64_t>{0, -1})}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::out_of_range);
  EXPECT_NE(r.status().message().find("[gather]"), std::string::npos) << r.status().message();
}

TEST(CpuKernels, ScatterRowsRejectsRowsPastTheState) {
  Graph g;
  Tensor st;
  st.name = "cache";
  st.shape = {4, 2};
  st.role = Role::state;
  TensorId s = g.add_tensor(st);
  TensorId v = add_input(g, "rows", {2, 2});
  TensorId pos = add_input(g, "pos", {1}, DType::i32);
  set_output(g, *g.add_op(OpKind::scatter_rows, {s, v, pos}));
  auto ok = run(g, {bytes_of(seeded(4, 8)), bytes_of(std::vector<int32_t>{2})}, 1);
  EXPECT_TRUE(ok.ok()) << ok.status().to_string();
  auto r = run(g, {bytes_of(seeded(4, 8)), bytes_of(std::vector<int32_t>{3})}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::out_of_range);
  EXPECT_NE(r.status().message().find("rows [3, 5)"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'cache'"), std::string::npos) << r.status().message();
}

TEST(CpuKernels, IntegerDivisionByZeroIsAnError) {
  Graph g;
  TensorId a = add_input(g, "a", {3}, DType::i32);
  TensorId b = add_input(g, "b", {3}, DType::i32);
  set_output(g, *g.add_op(OpKind::div, {a, b}));
  auto r = run(g, {bytes_of(std::vector<int32_t>{7, -7, 9}), bytes_of(std::vector<int32_t>{2, 0, 3})}, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("division by zero"), std::string::npos) << r.status().message();
  auto q = run(g, {bytes_of(std::vector<int32_t>{7, -7, 9}), bytes_of(std::vector<int32_t>{2, 2, -3})}, 1);
  ASSERT_TRUE(q.ok());
  std::vector<int32_t> y(3);
  std::memcpy(y.data(), q->data(), 12);
  EXPECT_EQ(y, (std::vector<int32_t>{3, -3, -3})) << "truncates toward zero";
}

}  // namespace
}  // namespace tessera
