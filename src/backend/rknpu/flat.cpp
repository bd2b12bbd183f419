// Flat tensors (docs/rknpu.md "Flat tensors"): 8-bit activations that are not NHWC feature
// maps -- YOLOv8's head works on [1, C, 8400] -- held on the NPU in plain row-major order.
// Row-major bytes are an NC1HWC2 cube with 16 channels (one surface, C2 = 16), so an
// element-wise DPU task (a lookup table, an add) reads and writes them as [1, H, W, 16] with
// H x W x 16 = the element count, and a contiguous run of them (a slice, a concatenation
// input, a reshape) is a run of whole surfaces of a cube whose surface is a common divisor
// of the offsets and lengths.
#include "backend/rknpu/flat.h"

#include <numeric>
#include <vector>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower_internal.h"
#include "rknpu/registers.h"

namespace tessera::rknpu {

namespace {

// The ops a flat tensor may meet: its layout carries through reshapes and element-wise ops,
// slices and concatenations move runs of its bytes, and ops that only the cpu runs (a
// transpose, a softmax) read or write it through a transfer. A tensor that a spatial op
// (convolution, pooling, resize, fully connected) reads or writes on the NPU is a feature map.
bool propagates(OpKind k) {
  switch (k) {
    case OpKind::transfer:  // the same tensor on two devices (inserted after partitioning)
    case OpKind::reshape:
    case OpKind::logistic:
    case OpKind::tanh:
    case OpKind::hard_swish:
    case OpKind::requantize:
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul: return true;
    default: return false;
  }
}

bool spatial(OpKind k) {
  switch (k) {
    case OpKind::conv2d:
    case OpKind::depthwise_conv2d:
    case OpKind::avg_pool2d:
    case OpKind::max_pool2d:
    case OpKind::resize_nearest:
    case OpKind::resize_bilinear:
    case OpKind::fully_connected: return true;
    default: return false;
  }
}

// Whether every activation a node reads or writes passes the feature-map checks
// (detail::check_feature: rank 4, batch 1, H and W within 2047, channels within 8192). A
// fully connected layer's rank-2 rows are NC1HWC2 lines (format.h): always within.
bool within_fields(const Graph& g, const Node& n) {
  if (n.op == OpKind::fully_connected) return true;
  auto ok = [&](TensorId t) { return t == kNoTensor || g.tensor(t).data || detail::check_feature(n, g.tensor(t), "").ok(); };
  for (TensorId t : n.inputs)
    if (!ok(t)) return false;
  for (TensorId t : n.outputs)
    if (!ok(t)) return false;
  return true;
}

// An 8-bit per-tensor activation whose bytes are whole 16-byte atoms, batch 1.
bool candidate(const Tensor& t) {
  if ((t.dtype != DType::i8 && t.dtype != DType::u8) || t.quant.empty() || t.quant.per_axis() || t.data) return false;
  if (t.shape.empty() || t.shape[0] != 1) return false;
  const int64_t n = t.elements();
  return n > 0 && n % kC2 == 0;
}

}  // namespace

std::vector<bool> flat_tensors(const Graph& g) {
  const size_t nt = g.tensors().size();
  std::vector<bool> blocked(nt, false), flat(nt, false);
  for (size_t t = 0; t < nt; ++t) blocked[t] = !candidate(g.tensor(static_cast<TensorId>(t)));
  for (const Node& n : g.nodes()) {
    // A spatial op whose feature maps exceed the CNA's fields runs on the cpu (its lowering
    // refuses it the same way): its tensors are free to be flat on the NPU side.
    if (!spatial(n.op) || !within_fields(g, n)) continue;
    for (TensorId t : n.inputs)
      if (t != kNoTensor) blocked[t] = true;
    for (TensorId t : n.outputs) blocked[t] = true;
  }
  std::vector<TensorId> work;
  for (size_t t = 0; t < nt; ++t) {
    const size_t rank = g.tensor(static_cast<TensorId>(t)).shape.size();
    if (!blocked[t] && rank != 2 && rank != 4) flat[t] = true, work.push_back(static_cast<TensorId>(t));
  }
  // Connected through reshapes and element-wise ops: one layout for the whole group.
  std::vector<std::vector<int>> touching(nt);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (!propagates(n.op)) continue;
    for (TensorId t : n.inputs)
      if (t != kNoTensor) touching[t].push_back(static_cast<int>(i));
    for (TensorId t : n.outputs) touching[t].push_back(static_cast<int>(i));
  }
  while (!work.empty()) {
    const TensorId t = work.back();
    work.pop_back();
    for (int i : touching[t]) {
      const Node& n = g.nodes()[i];
      auto reach = [&](TensorId u) {
        if (u == kNoTensor || blocked[u] || flat[u]) return;
        flat[u] = true;
        work.push_back(u);
      };
      for (TensorId u : n.inputs) reach(u);
      for (TensorId u : n.outputs) reach(u);
    }
  }
  return flat;
}

bool is_flat(const Graph& g, TensorId id) {
  if (id == kNoTensor || !candidate(g.tensor(id))) return false;
  return flat_tensors(g)[id];
}

// H x W = atoms with W <= the DPU cube's field limit (the CNA's 11 bits, as every
// element-wise task is checked against): the widest W that divides.
Result<FlatCube> flat_cube(int64_t atoms) {
  const int64_t wmax = static_cast<int64_t>(regs::CNA::DATA_SIZE0__DATAIN_WIDTH.max());
  const int64_t hmax = static_cast<int64_t>(regs::CNA::DATA_SIZE0__DATAIN_HEIGHT.max());
  if (atoms <= 0) return error(StatusCode::unsupported, "an empty run of atoms");
  for (int64_t w = std::min(atoms, wmax); w >= 1; --w)
    if (atoms % w == 0 && atoms / w <= hmax) return FlatCube{atoms / w, w};
  return error(StatusCode::unsupported, std::to_string(atoms), " atoms of 16 bytes do not factor into H x W with both <= ",
               wmax);
}

Result<FlatRun> flat_run(int64_t in_bytes, int64_t src, int64_t out_bytes, int64_t dst, int64_t len) {
  int64_t u = std::gcd(std::gcd(in_bytes, out_bytes), std::gcd(std::gcd(src, dst), len));
  if (u % kC2 != 0)
    return error(StatusCode::unsupported, "a run of ", len, " bytes at offset ", src, " -> ", dst,
                 " is not whole 16-byte atoms");
  // The largest surface (fewest, longest surfaces) that still factors into H x W.
  for (int64_t s = u; s >= kC2; s -= kC2) {
    if (u % s != 0 || s % kC2 != 0) continue;
    auto c = flat_cube(s / kC2);
    if (!c.ok()) continue;
    return FlatRun{c->h, c->w, s, src / s * kC2, dst / s * kC2, len / s * kC2};
  }
  return error(StatusCode::unsupported, "no surface size divides a run of ", len, " bytes");
}

}  // namespace tessera::rknpu
