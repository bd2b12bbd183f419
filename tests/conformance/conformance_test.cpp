// The conformance runner: every op of ops.def (except the planner's transfer) on every
// registered device, against the double-precision references of the family files.
#include "conformance/conformance.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "backend/cpu/kernel.h"
#include "tessera/backend/device.h"
#include "tessera/backend/plan.h"

namespace tessera::conformance {

// ---- tolerance ----

namespace {
// Relative error of one rounding into an encoding (unit roundoff; bfp: of the row max).
double encoding_eps(Encoding e) {
  switch (e) {
    case Encoding::f32: return 0x1p-24;  // binary32: 24-bit significand
    case Encoding::f16: return 0x1p-11;  // binary16: 11-bit significand
    case Encoding::bf16: return 0x1p-8;  // bfloat16: 8-bit significand
    case Encoding::bfp8_b: return 0x1p-6;  // 7-bit mantissa under a shared exponent (docs/formats.md)
    case Encoding::bfp4_b: return 0x1p-2;  // 3-bit mantissa under a shared exponent (docs/formats.md)
    default: return 0.0;  // integers and GGUF blocks hold the test's values exactly
  }
}
bool row_scaled(Encoding e) { return e == Encoding::bfp8_b || e == Encoding::bfp4_b; }
// Headroom for several tensors rounding once each and for the ulp errors of float
// transcendental functions.
constexpr double kMargin = 4.0;
// f32 roundings in any op's plain evaluation (expression temporaries, libm functions).
constexpr double kF32Slack = 16 * 0x1p-24;
}  // namespace

double tolerance(const std::vector<Encoding>& encodings, double elem, double row_max, int64_t accum,
                 double product_error) {
  double elem_rel = 0, row_rel = 0;
  for (Encoding e : encodings) {
    double& rel = row_scaled(e) ? row_rel : elem_rel;
    rel = std::max(rel, encoding_eps(e));
  }
  return kMargin * (elem_rel * elem + row_rel * row_max) + (static_cast<double>(accum) * 0x1p-24 + kF32Slack) * elem +
         product_error * elem;
}

// ---- random values and encodings ----

std::vector<float> uniform(Rng& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  if (n > 0 && std::all_of(v.begin(), v.end(), [](float x) { return x == 0; })) v[0] = hi;
  return v;
}

int64_t pick(Rng& rng, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

Shape random_shape(Rng& rng, int rank, int64_t lo, int64_t hi) {
  Shape s(rank);
  for (auto& d : s) d = pick(rng, lo, hi);
  return s;
}

namespace {
uint16_t f16_bits(float f) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(static_cast<double>(f));
  if (a == 0) return sign;
  if (a < 0x1p-14) return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(a / 0x1p-24)));
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  int ex = e - 1;
  double q = std::nearbyint(a / std::ldexp(1.0, ex - 10));  // 11-bit significand, ties to even
  if (q == 2048) {
    q = 1024;
    ++ex;
  }
  if (ex > 15) return sign | 0x7c00;
  return static_cast<uint16_t>(sign | ((ex + 15) << 10) | (static_cast<int>(q) - 1024));
}
double f16_value(uint16_t h) {
  const double s = (h & 0x8000) ? -1 : 1;
  const int ex = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (ex == 0) return s * std::ldexp(m, -24);
  return s * std::ldexp(1024 + m, ex - 25);
}
uint16_t bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}
double bf16_value(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
constexpr int kBlock = 32;  // GGUF q8_0 / q4_0 block length
}  // namespace

std::vector<uint8_t> encode(DType t, const std::vector<float>& v) {
  std::vector<uint8_t> out;
  auto put16 = [&](uint16_t h) {
    out.push_back(h & 0xff);
    out.push_back(h >> 8);
  };
  switch (t) {
    case DType::f32: return bytes_of(v);
    case DType::f16: for (float x : v) put16(f16_bits(x)); return out;
    case DType::bf16: for (float x : v) put16(bf16_bits(x)); return out;
    case DType::q8_0:
      for (size_t b = 0; b < v.size(); b += kBlock) {
        float amax = 0;
        for (int i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(v[b + i]));
        const uint16_t dh = f16_bits(amax / 127.0f);
        const double d = f16_value(dh);
        put16(dh);
        for (int i = 0; i < kBlock; ++i)
          out.push_back(static_cast<uint8_t>(static_cast<int8_t>(d == 0 ? 0 : std::clamp(std::round(v[b + i] / d), -127.0, 127.0))));
      }
      return out;
    case DType::q4_0:
      for (size_t b = 0; b < v.size(); b += kBlock) {
        float mx = 0;  // the value of largest magnitude, with its sign
        for (int i = 0; i < kBlock; ++i)
          if (std::fabs(v[b + i]) > std::fabs(mx)) mx = v[b + i];
        const uint16_t dh = f16_bits(mx / -8.0f);
        const double d = f16_value(dh);
        put16(dh);
        auto code = [&](int i) {
          return d == 0 ? 8 : static_cast<int>(std::clamp(std::round(v[b + i] / d) + 8, 0.0, 15.0));
        };
        for (int j = 0; j < kBlock / 2; ++j) out.push_back(static_cast<uint8_t>(code(j) | (code(j + kBlock / 2) << 4)));
      }
      return out;
    default: ADD_FAILURE() << "encode: unsupported dtype " << dtype_name(t); return out;
  }
}

std::vector<double> decode(DType t, const std::vector<uint8_t>& b, int64_t n) {
  std::vector<double> v(n);
  auto u16 = [&](size_t off) { return static_cast<uint16_t>(b[off] | (b[off + 1] << 8)); };
  for (int64_t i = 0; i < n; ++i) {
    switch (t) {
      case DType::f32: { float f; std::memcpy(&f, &b[i * 4], 4); v[i] = f; break; }
      case DType::f16: v[i] = f16_value(u16(i * 2)); break;
      case DType::bf16: v[i] = bf16_value(u16(i * 2)); break;
      case DType::i8: v[i] = static_cast<int8_t>(b[i]); break;
      case DType::u8: case DType::boolean: v[i] = b[i]; break;
      case DType::i16: { int16_t x; std::memcpy(&x, &b[i * 2], 2); v[i] = x; break; }
      case DType::i32: { int32_t x; std::memcpy(&x, &b[i * 4], 4); v[i] = x; break; }
      case DType::i64: { int64_t x; std::memcpy(&x, &b[i * 8], 8); v[i] = static_cast<double>(x); break; }
      case DType::q8_0: {
        const size_t blk = (i / kBlock) * 34;
        v[i] = f16_value(u16(blk)) * static_cast<int8_t>(b[blk + 2 + i % kBlock]);
        break;
      }
      case DType::q4_0: {
        const size_t blk = (i / kBlock) * 18;
        const int j = i % kBlock;
        const int nib = j < kBlock / 2 ? (b[blk + 2 + j] & 0x0f) : (b[blk + 2 + j - kBlock / 2] >> 4);
        v[i] = f16_value(u16(blk)) * (nib - 8);
        break;
      }
    }
  }
  return v;
}

// ---- quantization helpers ----

QuantParams quant_for_range(double lo, double hi, DType t) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  const double qmin = t == DType::u8 ? 0 : -128, qmax = t == DType::u8 ? 255 : 127;
  QuantParams q;
  const double scale = hi > lo ? (hi - lo) / (qmax - qmin) : 1.0;
  q.scale = {static_cast<float>(scale)};
  q.zero_point = {static_cast<int64_t>(std::clamp(std::round(qmin - lo / scale), qmin, qmax))};
  return q;
}

std::vector<uint8_t> quantize_values(const std::vector<double>& real, DType t, const QuantParams& q) {
  std::vector<uint8_t> out;
  for (double c : expected_codes(real, t, q)) out.push_back(static_cast<uint8_t>(static_cast<int>(c)));
  return out;
}

std::vector<double> dequantize_codes(const std::vector<uint8_t>& codes, DType t, const QuantParams& q) {
  std::vector<double> v = decode(t, codes, static_cast<int64_t>(codes.size()));
  for (auto& x : v) x = static_cast<double>(q.scale[0]) * (x - static_cast<double>(q.zero_point_at(0)));
  return v;
}

std::vector<double> expected_codes(const std::vector<double>& real, DType t, const QuantParams& q) {
  const double qmin = t == DType::u8 ? 0 : -128, qmax = t == DType::u8 ? 255 : 127;
  std::vector<double> out;
  for (double r : real)
    out.push_back(std::clamp(std::round(r / q.scale[0]) + static_cast<double>(q.zero_point_at(0)), qmin, qmax));
  return out;
}

// ---- case graphs ----

TensorId CaseGraph::input(const std::string& name, Shape s, DType t, std::vector<uint8_t> bytes, QuantParams q) {
  Tensor x;
  x.name = name;
  x.shape = std::move(s);
  x.dtype = t;
  x.quant = std::move(q);
  x.role = Role::input;
  TensorId id = g_.add_tensor(x);
  g_.inputs.push_back(id);
  inputs_.push_back(std::move(bytes));
  return id;
}

TensorId CaseGraph::weight(const std::string& name, Shape s, DType t, std::vector<uint8_t> bytes, QuantParams q) {
  Tensor w;
  w.name = name;
  w.shape = std::move(s);
  w.dtype = t;
  w.quant = std::move(q);
  w.role = Role::weight;
  w.data = ConstData::from_vector(std::move(bytes));
  return g_.add_tensor(w);
}

TensorId CaseGraph::state(const std::string& name, Shape s, DType t) {
  Tensor x;
  x.name = name;
  x.shape = std::move(s);
  x.dtype = t;
  x.role = Role::state;
  return g_.add_tensor(x);
}

Case CaseGraph::finish(std::string label, OpKind op, std::vector<TensorId> in, AttrMap attrs,
                       std::optional<DType> out_dtype, QuantParams out_quant) {
  Case c;
  c.label = std::move(label);
  auto y = g_.add_op(op, std::move(in), std::move(attrs), "under_test", out_dtype, std::move(out_quant));
  EXPECT_TRUE(y.ok()) << c.label << ": " << y.status().to_string();
  if (y.ok()) {
    g_.tensor(*y).role = Role::output;
    g_.outputs = {*y};
  }
  c.g = g_;
  c.runs = {inputs_};
  return c;
}

std::map<OpKind, std::vector<CaseBuilder>>& case_registry() {
  static std::map<OpKind, std::vector<CaseBuilder>> r;
  return r;
}

// ---- the runner ----

namespace {

struct DeviceStats {
  std::set<std::string> on_device, fell_back;  // ops with at least one case there
  int cases = 0, skipped = 0;
};
std::map<std::string, DeviceStats>& stats() {
  static std::map<std::string, DeviceStats> s;
  return s;
}

// Prints, per device, how many ops ran on it and how many fell back to the cpu.
class ReportEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    for (const auto& [dev, st] : stats()) {
      std::vector<std::string> all, some, none;
      for (const auto& o : st.on_device) (st.fell_back.count(o) ? some : all).push_back(o);
      for (const auto& o : st.fell_back)
        if (!st.on_device.count(o)) none.push_back(o);
      std::printf("[conformance] device '%s': %d cases; ops on the device in every case %zu, in some %zu, "
                  "never (cpu fallback) %zu",
                  dev.c_str(), st.cases, all.size(), some.size(), none.size());
      if (st.skipped) std::printf("; %d quantized cases skipped (no quantized cpu kernel yet)", st.skipped);
      std::printf("\n");
      auto list = [](const char* what, const std::vector<std::string>& v) {
        if (v.empty()) return;
        std::printf("[conformance]   %s:", what);
        for (const auto& o : v) std::printf(" %s", o.c_str());
        std::printf("\n");
      };
      list("partly on the device", some);
      list("never on the device", none);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kReport = ::testing::AddGlobalTestEnvironment(new ReportEnvironment);

bool is_float(DType t) { return dtype_is_float(t); }

void run_case(const DeviceInfo& dev, OpKind op, const Case& c) {
  SCOPED_TRACE("device '" + dev.name + "', case '" + c.label + "'");
  if (c.g.outputs.empty()) return;  // build failure already reported
  DeviceStats& st = stats()[dev.name];
  if (c.quantized && !cpu::kernel_table().find(op, cpu::KernelKind::quant)) {
    st.skipped++;
    return;
  }
  SessionOptions opts;
  opts.device = dev.name;
  auto s = Session::create(c.g, opts);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  for (const auto& run : c.runs) {
    for (size_t i = 0; i < run.size(); ++i) {
      Status in = (*s)->set_input(i, run[i].data(), static_cast<int64_t>(run[i].size()));
      ASSERT_TRUE(in.ok()) << in.to_string();
    }
    Status r = (*s)->run();
    ASSERT_TRUE(r.ok()) << r.to_string();
  }
  st.cases++;
  // Where the op ran and the formats its tensors had there.
  const Plan& plan = (*s)->plan();
  std::vector<Encoding> encs;
  double product_error = 0;
  for (size_t i = 0; i < plan.graph.nodes().size(); ++i) {
    const Node& n = plan.graph.nodes()[i];
    if (n.op != op) continue;
    const std::string where = plan.devices[plan.nodes[i].device]->name();
    (where == plan.devices[0]->name() ? st.on_device : st.fell_back).insert(op_name(op));
    // A tensor held in its own dtype's encoding is exact (f16 weights as f16); one held
    // in another encoding (f32 values as bf16 or bfp8_b) is rounded on the way in.
    auto consider = [&](TensorId id) {
      const Encoding e = plan.tensors[id].format.encoding;
      if (e != encoding_of(plan.graph.tensor(id).dtype)) encs.push_back(e);
    };
    for (TensorId id : n.inputs)
      if (id != kNoTensor) consider(id);
    for (TensorId id : n.outputs) consider(id);
    // The device's own matrix arithmetic (the tile device's math fidelity) adds its
    // declared relative error per product term, i.e. of the dot product's magnitude.
    if (op == OpKind::matmul || op == OpKind::fully_connected || op == OpKind::conv2d ||
        op == OpKind::depthwise_conv2d)
      product_error = std::max(product_error, plan.devices[plan.nodes[i].device]->properties().matrix_product_error);
  }
  auto out = (*s)->output(0);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const Tensor& ot = c.g.tensor(c.g.outputs[0]);
  const int64_t n = ot.elements();
  ASSERT_EQ(static_cast<int64_t>(c.expected.size()), n) << "reference size";
  std::vector<double> got = decode(ot.dtype, *out, n);
  std::vector<double> mag = c.magnitude.empty() ? std::vector<double>(n) : c.magnitude;
  if (c.magnitude.empty())
    for (int64_t i = 0; i < n; ++i) mag[i] = std::fabs(c.expected[i]);
  const int64_t row = ot.shape.empty() ? 1 : std::max<int64_t>(ot.shape.back(), 1);
  int failures = 0;
  for (int64_t i = 0; i < n && failures < 5; ++i) {
    double tol = c.code_tolerance;
    if (is_float(ot.dtype)) {
      double row_max = 0;
      for (int64_t j = i / row * row; j < (i / row + 1) * row; ++j) row_max = std::max(row_max, mag[j]);
      tol = tolerance(encs, mag[i], row_max, c.accum, product_error);
    }
    const double diff = std::fabs(got[i] - c.expected[i]);
    if (!(diff <= tol) && !(got[i] == c.expected[i])) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", expected " << c.expected[i] << " (|diff| "
                    << diff << " > tolerance " << tol << ")";
      ++failures;
    }
  }
}

class Conformance : public ::testing::TestWithParam<OpKind> {};

TEST_P(Conformance, MatchesReferenceOnEveryDevice) {
  const OpKind op = GetParam();
  auto it = case_registry().find(op);
  ASSERT_TRUE(it != case_registry().end() && !it->second.empty())
      << "op '" << op_name(op) << "' has no conformance cases";
  for (size_t b = 0; b < it->second.size(); ++b) {
    // The same seeded cases on every device.
    Rng rng(static_cast<uint32_t>(1000 * static_cast<int>(op) + b + 1));
    std::vector<Case> cases = it->second[b](rng);
    for (const DeviceInfo& dev : device_registry())
      for (const Case& c : cases) run_case(dev, op, c);
  }
}

std::vector<OpKind> ops_under_test() {
  std::vector<OpKind> v;
  for (int i = 0; i < kNumOps; ++i)
    if (static_cast<OpKind>(i) != OpKind::transfer) v.push_back(static_cast<OpKind>(i));
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllOps, Conformance, ::testing::ValuesIn(ops_under_test()),
                         [](const ::testing::TestParamInfo<OpKind>& p) { return std::string(op_name(p.param)); });

TEST(ConformanceTolerance, FollowsTheFormats) {
  // f32 alone: a few roundings; bf16 input: 2^-8 relative; bfp4_b: a quarter of the row max.
  EXPECT_LT(tolerance({Encoding::f32}, 1.0, 1.0, 1), 1e-5);
  EXPECT_NEAR(tolerance({Encoding::f32, Encoding::bf16}, 1.0, 1.0, 1), kMargin * 0x1p-8, 1e-5);
  EXPECT_GE(tolerance({Encoding::bfp4_b}, 0.01, 2.0, 1), kMargin * 0.5);
  EXPECT_EQ(tolerance({Encoding::u8}, 0.0, 5.0, 1), 0.0);
}

}  // namespace
}  // namespace tessera::conformance
