// The cost model of one core of a board's cpu (tessera/cpu_model.h): parameters with their
// sources, and the rule per op kind. The published figures it is checked against are in
// docs/rknpu.md "Frame time" and tests/runtime/cpu_model_test.cpp.
#include "tessera/cpu_model.h"
#include "tessera/backend/plan.h"

#include <algorithm>
#include <cstring>

namespace tessera {

namespace {

// RK3588: four Cortex-A76 at up to 2.4 GHz beside four Cortex-A55 (Rockchip RK3588 datasheet;
// boards ship at 2.26-2.4 GHz: sbc-bench's OpenSSL clock readings in ThomasKaiser/sbc-bench#117).
constexpr double kA76ClockHz = 2.4e9;
// Cortex-A76 Software Optimization Guide: two 128-bit ASIMD pipes (V0, V1), each taking one
// SDOT (16 int8 multiply-accumulates: 4 lanes x 4), FMLA .8H (8 fp16), FMLA .4S (4 fp32) or
// SMLAL/SMLAL2 (4 widened 16-bit products) per cycle.
constexpr double kAsimdPipes = 2;
constexpr double kA76Int8Macs = kAsimdPipes * 16;
constexpr double kA76Int16Macs = kAsimdPipes * 4;
constexpr double kA76F16Macs = kAsimdPipes * 8;
constexpr double kA76F32Macs = kAsimdPipes * 4;
// Calibrated: ncnn's int8 MobileNet v1 (569 M MACs) runs in 14.90 ms on one core of a
// Raspberry Pi 5 (Cortex-A76 at 2.4 GHz) and 14.85 ms on an Orange Pi 5 (RK3588S), so
// 15.9 MACs per cycle: half of the SDOT peak (benchncnn 10 1 0 -1 1, docs/rknpu.md).
constexpr double kA76MatrixEfficiency = 0.5;
// Two 16-byte ASIMD pipes (the guide above).
constexpr double kA76VectorBytes = kAsimdPipes * 16;
// tinymembench on an RK3588 (Turing RK1, geerlingguy/sbc-reviews#38): one core copies
// 12374 MB/s ("C copy"; bytes copied, so twice that read + written).
constexpr double kA76DramBytesPerS = 2 * 12374e6;
// An assumption, not a measurement: a kernel call, its loop set-up and the first cache misses
// of its operands, about 2,400 cycles.
constexpr double kA76NodeFixedSeconds = 1e-6;

// Cycles per element of the op classes below, from the instruction counts of NEON kernels
// (TFLite's optimized_ops, XNNPACK's vector microkernels) over 32-bit lanes: 8 lanes per
// cycle on two 128-bit pipes.
constexpr double kLanes32PerCycle = kAsimdPipes * 4;
constexpr double kFloatOpsPerElement = 2;        // the op and a load/store-side move or conversion
constexpr double kQuantOpsPerInput = 4;          // widen, subtract the zero point, shift, fixed-point multiply
constexpr double kQuantOpsPerOutput = 4;         // rounding shift, add the zero point, clamp, narrow
constexpr double kTranscendentalOps = 20;        // range reduction, degree-6 polynomial, reconstruction (exp, logistic, tanh)
constexpr double kLookupCyclesPerElement = 1;    // 8-bit LUT: an indexed load and a store per element (scalar)
constexpr double kScalarMovesPerCycle = 1;       // transpose / generic: one element loaded and stored per cycle
constexpr double kReductionOpsPerElement = 1;    // one accumulate per element read
constexpr double kNormOpsPerElement = 4;         // two passes: the statistic, then scale (and shift)
constexpr double kRopeOpsPerElement = 6;         // cos and sin loads, two multiplies, an add or subtract, a move
constexpr double kBilinearOpsPerElement = 10;    // four taps, three interpolations

bool is_8bit(DType t) { return t == DType::i8 || t == DType::u8 || dtype_is_block(t); }

double tensor_bytes(const Graph& g, TensorId id) {
  if (id == kNoTensor) return 0;
  const Tensor& t = g.tensor(id);
  if (auto b = t.host_bytes(); b.ok()) return static_cast<double>(*b);
  return static_cast<double>(t.elements()) * std::max(1, dtype_size(t.dtype));  // an overflowing size: its element count
}

double elements(const Graph& g, TensorId id) { return id == kNoTensor ? 0 : static_cast<double>(g.tensor(id).elements()); }

// Peak MACs per cycle for a matrix op whose operands are `a` and `b`.
double matrix_rate(const CpuCoreModel& m, DType a, DType b) {
  if (is_8bit(a) || is_8bit(b)) return m.int8_macs_per_cycle;
  if (a == DType::i16 || b == DType::i16) return m.int16_macs_per_cycle;
  if (a == DType::f16 && b == DType::f16) return m.f16_macs_per_cycle;
  return m.f32_macs_per_cycle;
}

enum class Kind {
  matrix, depthwise, elementwise, transcendental, reduction, softmax, norm, rope, pooling, resize, movement,
  transpose, generic
};

Kind kind_of(OpKind op) {
  switch (op) {
    case OpKind::conv2d: case OpKind::transpose_conv2d: case OpKind::fully_connected: case OpKind::matmul:
    case OpKind::attention:
      return Kind::matrix;
    case OpKind::depthwise_conv2d:
      return Kind::depthwise;
    case OpKind::add: case OpKind::sub: case OpKind::mul: case OpKind::div: case OpKind::floor_div:
    case OpKind::maximum: case OpKind::minimum: case OpKind::squared_difference: case OpKind::prelu:
    case OpKind::equal: case OpKind::not_equal: case OpKind::less: case OpKind::less_equal: case OpKind::greater:
    case OpKind::greater_equal: case OpKind::select: case OpKind::relu: case OpKind::relu6: case OpKind::leaky_relu:
    case OpKind::hard_swish: case OpKind::abs: case OpKind::neg: case OpKind::square: case OpKind::cast:
    case OpKind::quantize: case OpKind::dequantize: case OpKind::requantize:
      return Kind::elementwise;
    case OpKind::logistic: case OpKind::tanh: case OpKind::silu: case OpKind::elu: case OpKind::gelu: case OpKind::exp:
    case OpKind::rsqrt: case OpKind::sqrt: case OpKind::log: case OpKind::pow:
      return Kind::transcendental;
    case OpKind::mean: case OpKind::sum: case OpKind::reduce_max: case OpKind::reduce_min: case OpKind::reduce_prod:
    case OpKind::arg_max: case OpKind::arg_min: case OpKind::cumsum:
      return Kind::reduction;
    case OpKind::softmax: case OpKind::log_softmax:
      return Kind::softmax;
    case OpKind::l2_norm: case OpKind::rms_norm: case OpKind::layer_norm:
      return Kind::norm;
    case OpKind::rope:
      return Kind::rope;
    case OpKind::avg_pool2d: case OpKind::max_pool2d:
      return Kind::pooling;
    case OpKind::resize_bilinear:
      return Kind::resize;
    case OpKind::reshape: case OpKind::concat: case OpKind::slice: case OpKind::strided_slice: case OpKind::pad:
    case OpKind::gather: case OpKind::gather_nd: case OpKind::get_rows: case OpKind::scatter_rows:
    case OpKind::resize_nearest: case OpKind::transfer:
      return Kind::movement;
    case OpKind::transpose:
      return Kind::transpose;
    default:
      return Kind::generic;  // detection_postprocess, lstm, svdf and any op added later
  }
}

// Multiply-accumulates of a matrix op.
double matrix_macs(const Graph& g, const Node& n) {
  const double out = elements(g, n.outputs[0]);
  switch (n.op) {
    case OpKind::conv2d: {  // w [OC,KH,KW,IC]
      const Tensor& w = g.tensor(n.inputs[1]);
      return w.shape.empty() || w.shape[0] == 0 ? 0 : out * (static_cast<double>(w.elements()) / w.shape[0]);
    }
    case OpKind::depthwise_conv2d: {  // w [1,KH,KW,C*M]
      const Tensor& w = g.tensor(n.inputs[1]);
      return w.shape.empty() || w.shape.back() == 0 ? 0 : out * (static_cast<double>(w.elements()) / w.shape.back());
    }
    case OpKind::transpose_conv2d: {  // every input pixel adds into a KHxKWxOC window: x [N,H,W,IC], w [OC,KH,KW,IC]
      const Tensor& x = g.tensor(n.inputs[0]);
      const Tensor& w = g.tensor(n.inputs[1]);
      return x.shape.empty() || x.shape.back() == 0 ? 0 : elements(g, n.inputs[0]) / x.shape.back() * w.elements();
    }
    case OpKind::fully_connected: {  // w [OC, IC]
      const Tensor& w = g.tensor(n.inputs[1]);
      return w.shape.size() < 2 ? 0 : out * static_cast<double>(w.shape[1]);
    }
    case OpKind::matmul: {  // a [..., M, K]
      const Tensor& a = g.tensor(n.inputs[0]);
      return a.shape.empty() ? 0 : out * static_cast<double>(a.shape.back());
    }
    case OpKind::attention: {  // q [T,H,D] against the whole cache k, v [Hkv,1,L,D]: q.k and p.v
      const Tensor& k = g.tensor(n.inputs[1]);
      const double rows = k.shape.size() >= 2 ? static_cast<double>(k.shape[k.shape.size() - 2]) : 0;
      return 2 * out * rows;
    }
    default:
      return 0;
  }
}

// Window taps of a pooling node (kernel attributes).
double pool_window(const Node& n) {
  return static_cast<double>(n.get(attr::filter_h)) * static_cast<double>(n.get(attr::filter_w));
}

// Whether a transpose keeps the innermost axis (rows move whole: a vector copy).
bool keeps_inner_axis(const Node& n) {
  const std::vector<int64_t> perm = n.get(attr::perm);
  return !perm.empty() && perm.back() == static_cast<int64_t>(perm.size()) - 1;
}

CpuNodeCost finish(const CpuCoreModel& m, double cycles, double bytes, double macs, const char* rule) {
  CpuNodeCost c;
  c.compute_seconds = cycles / m.clock_hz;
  c.memory_seconds = bytes / m.dram_bytes_per_s;
  c.seconds = std::max(c.compute_seconds, c.memory_seconds) + m.node_fixed_seconds;
  c.macs = macs;
  c.bytes = bytes;
  c.rule = rule;
  return c;
}

}  // namespace

const CpuCoreModel& rk3588_cortex_a76() {
  static const CpuCoreModel m{"rk3588-a76",
                              "one Cortex-A76 core of the RK3588 at 2.4 GHz",
                              kA76ClockHz,
                              kA76Int8Macs,
                              kA76Int16Macs,
                              kA76F16Macs,
                              kA76F32Macs,
                              kA76MatrixEfficiency,
                              kA76VectorBytes,
                              kA76DramBytesPerS,
                              kA76NodeFixedSeconds};
  return m;
}

const CpuCoreModel* find_cpu_core_model(const std::string& name) {
  if (name == rk3588_cortex_a76().name) return &rk3588_cortex_a76();
  return nullptr;
}

bool CpuNodeCost::known() const { return std::strcmp(rule, "generic") != 0; }

std::vector<CpuNodeCost> plan_cpu_costs(const CpuCoreModel& m, const Plan& plan, int board_device) {
  const Graph& g = plan.graph;
  std::vector<CpuNodeCost> costs(g.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.op == OpKind::transfer) {
      const Format host = g.tensor(n.inputs[0]).host_format();
      const CpuNodeCost a = cpu_conversion_cost(m, plan.tensors[n.inputs[0]].format, host);
      const CpuNodeCost b = cpu_conversion_cost(m, host, plan.tensors[n.outputs[0]].format);
      costs[i] = a;
      costs[i].seconds += b.seconds, costs[i].compute_seconds += b.compute_seconds;
      costs[i].memory_seconds += b.memory_seconds, costs[i].bytes += b.bytes;
    } else if (i < plan.nodes.size() && plan.nodes[i].device == board_device) {
      costs[i].seconds = -1;
      costs[i].rule = "device";
    } else {
      const bool view = n.op == OpKind::reshape && plan.tensors[n.outputs[0]].alias != kNoTensor;
      costs[i] = cpu_node_cost(m, g, n, view);
    }
  }
  return costs;
}

CpuNodeCost cpu_node_cost(const CpuCoreModel& m, const Graph& g, const Node& n, bool view) {
  double in_bytes = 0, in_elems = 0;
  for (TensorId id : n.inputs) in_bytes += tensor_bytes(g, id), in_elems += elements(g, id);
  double out_bytes = 0, out_elems = 0;
  for (TensorId id : n.outputs) out_bytes += tensor_bytes(g, id), out_elems += elements(g, id);
  const DType in_t = n.inputs.empty() || n.inputs[0] == kNoTensor ? DType::f32 : g.tensor(n.inputs[0]).dtype;
  const bool quantized = dtype_is_quantized_int(in_t) && !g.tensor(n.inputs[0]).quant.empty();
  const double eff = m.matrix_efficiency;
  switch (kind_of(n.op)) {
    case Kind::matrix: {
      const double macs = matrix_macs(g, n);
      const DType w_t = n.inputs.size() > 1 && n.inputs[1] != kNoTensor ? g.tensor(n.inputs[1]).dtype : in_t;
      double cycles = macs / (matrix_rate(m, in_t, w_t) * eff);
      if (n.op == OpKind::attention)  // and a softmax over each query's scores: T x H x L exponentials
        cycles += macs / 2 / std::max(1.0, static_cast<double>(g.tensor(n.inputs[0]).shape.back())) *
                  kTranscendentalOps / kLanes32PerCycle;
      return finish(m, cycles, in_bytes + out_bytes, macs, "matrix");
    }
    case Kind::depthwise: {
      const double macs = matrix_macs(g, n);
      const double rate = is_8bit(in_t) ? m.int16_macs_per_cycle : matrix_rate(m, in_t, in_t);
      return finish(m, macs / (rate * eff), in_bytes + out_bytes, macs, "depthwise");
    }
    case Kind::elementwise: {
      if (quantized) {
        double operands = 0;
        for (TensorId id : n.inputs) operands += id != kNoTensor && g.tensor(id).elements() > 1 ? 1 : 0;
        const double ops = kQuantOpsPerInput * std::max(1.0, operands) + kQuantOpsPerOutput;
        return finish(m, out_elems * ops / kLanes32PerCycle, in_bytes + out_bytes, 0, "quantized elementwise");
      }
      return finish(m, out_elems * kFloatOpsPerElement / kLanes32PerCycle, in_bytes + out_bytes, 0, "elementwise");
    }
    case Kind::transcendental:
      if (is_8bit(in_t)) return finish(m, out_elems * kLookupCyclesPerElement, in_bytes + out_bytes, 0, "table lookup");
      return finish(m, out_elems * kTranscendentalOps / kLanes32PerCycle, in_bytes + out_bytes, 0, "transcendental");
    case Kind::softmax: {  // max, exponentials, sum, scale: three passes and one exponential per element
      const double exp_cycles = is_8bit(in_t) ? kLookupCyclesPerElement : kTranscendentalOps / kLanes32PerCycle;
      const double cycles = out_elems * (exp_cycles + 3 * kReductionOpsPerElement / kLanes32PerCycle);
      return finish(m, cycles, in_bytes + out_bytes, 0, "transcendental");
    }
    case Kind::reduction:
      return finish(m, in_elems * kReductionOpsPerElement / kLanes32PerCycle, in_bytes + out_bytes, 0, "reduction");
    case Kind::norm:
      return finish(m, out_elems * kNormOpsPerElement / kLanes32PerCycle, in_bytes + out_bytes, 0, "reduction");
    case Kind::rope:
      return finish(m, out_elems * kRopeOpsPerElement / kLanes32PerCycle, in_bytes + out_bytes, 0, "elementwise");
    case Kind::pooling:
      return finish(m, out_elems * pool_window(n) / kLanes32PerCycle, in_bytes + out_bytes, 0, "pooling");
    case Kind::resize:
      return finish(m, out_elems * kBilinearOpsPerElement / kLanes32PerCycle, in_bytes + out_bytes, 0, "resize");
    case Kind::movement: {
      if (view) return finish(m, 0, 0, 0, "data movement");  // a view: nothing moves
      double read = in_bytes;
      switch (n.op) {  // these read only what they keep (and their small index operands)
        case OpKind::slice: case OpKind::strided_slice: case OpKind::gather: case OpKind::gather_nd:
        case OpKind::get_rows: case OpKind::resize_nearest:
          read = out_bytes + (in_bytes - tensor_bytes(g, n.inputs[0]));
          break;
        case OpKind::scatter_rows:  // writes its update rows into the state in place
          read = in_bytes - tensor_bytes(g, n.inputs[0]);
          out_bytes = read;
          break;
        default:
          break;
      }
      // Vector copies: 16-byte loads and stores, far below the memory time.
      return finish(m, (read + out_bytes) / m.vector_bytes_per_cycle, read + out_bytes, 0, "data movement");
    }
    case Kind::transpose:
      if (keeps_inner_axis(n))
        return finish(m, (in_bytes + out_bytes) / m.vector_bytes_per_cycle, in_bytes + out_bytes, 0, "data movement");
      return finish(m, out_elems / kScalarMovesPerCycle, in_bytes + out_bytes, 0, "data movement");
    case Kind::generic:
      break;
  }
  return finish(m, (in_elems + out_elems) / kScalarMovesPerCycle, in_bytes + out_bytes, 0, "generic");
}

CpuNodeCost cpu_conversion_cost(const CpuCoreModel& m, const Format& from, const Format& to) {
  auto bytes = [](const Format& f) {
    if (auto b = f.byte_size(); b.ok()) return static_cast<double>(*b);
    return static_cast<double>(num_elements(f.shape));
  };
  const double traffic = bytes(from) + bytes(to);
  // Layout conversions move whole 16-byte channel groups (NC1HWC2 <-> NHWC) or widen/narrow
  // lanes: vector work, one pass over the bytes.
  return finish(m, traffic / m.vector_bytes_per_cycle, traffic, 0, "layout conversion");
}

}  // namespace tessera
