// Lowerings of flat tensors' data movement (flat.h, docs/rknpu.md "Flat tensors"): a slice,
// a reshape or a concatenation input that is one contiguous run of bytes is a DPU channel
// copy of whole surfaces (flat_run), a concatenation along an inner axis PPU row copies;
// moving bytes the cpu makes stays on the cpu.
#include "backend/rknpu/lower_internal.h"

#include <optional>
#include <utility>
#include <vector>

#include "backend/rknpu/flat.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/tiling.h"
#include "rknpu/registers.h"

namespace tessera::rknpu::detail {

namespace {

// A copy of `len` bytes from byte `src` of flat x to byte `dst` of flat y, as whole surfaces
// (flat.h flat_run).
Result<NpuOp> flat_copy(const Node& n, const Graph& g, TensorId xi, TensorId yi, int64_t src, int64_t dst, int64_t len) {
  const Tensor& x = g.tensor(xi);
  const Tensor& y = g.tensor(yi);
  for (TensorId t : {xi, yi})
    if (!is_flat(g, t)) {
      const Tensor& u = g.tensor(t);
      return no(n, "a copy " + dt(x) + " -> " + dt(y) + ": the NPU does not hold " + dt(u) + " flat" +
                       (u.elements() % kC2 != 0 ? " (" + std::to_string(u.elements()) + " bytes: not whole 16-byte atoms)"
                                                : " (a feature map of a spatial op)"));
    }
  if (x.dtype != y.dtype || x.quant != y.quant) return no(n, op_name(n.op) + std::string(" that changes the quantization"));
  auto run = flat_run(x.elements(), src, y.elements(), dst, len);
  if (!run.ok()) return no(n, run.status().message());
  NpuOp op = copy_op(n, xi, yi, Shape{1, run->h, run->w, run->channels}, run->src_c0, run->dst_c0, run->channels);
  TS_RETURN_IF_ERROR(check_tiling(op).status());
  return op;
}

// The byte range a stride-1 box [b, e) of a row-major tensor of shape `s` covers, when it is
// one contiguous run (every axis before the first partial one has extent 1).
std::optional<std::pair<int64_t, int64_t>> contiguous_box(const Shape& s, const std::vector<int64_t>& b,
                                                          const std::vector<int64_t>& e) {
  if (b.size() != s.size() || e.size() != s.size()) return std::nullopt;
  int64_t first = 0, last = 0, count = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (b[d] < 0 || e[d] > s[d] || e[d] <= b[d]) return std::nullopt;
    first = first * s[d] + b[d];
    last = last * s[d] + (e[d] - 1);
    count *= e[d] - b[d];
  }
  if (last - first + 1 != count) return std::nullopt;
  return std::pair<int64_t, int64_t>{first, count};
}

}  // namespace

Result<NpuOp> lower_flat_slice(const Graph& g, const Node& n) {
  const Tensor& x = g.tensor(n.inputs[0]);
  const std::vector<int64_t>& st = n.get(attr::strides);
  for (int64_t v : st)
    if (v != 1) return no(n, "strided_slice of a flat tensor with a stride other than 1");
  auto box = contiguous_box(x.shape, n.get(attr::begin), n.get(attr::end));
  if (!box || box->second != g.tensor(n.outputs[0]).elements())
    return no(n, "strided_slice of " + dt(x) + " that is not one contiguous run of its bytes");
  return flat_copy(n, g, n.inputs[0], n.outputs[0], box->first, 0, box->second);
}

namespace {

// Whether tensor `t` is made by a node the NPU does not run (looking through transfers, which
// carry a tensor between devices): a reshape of it is a free view on the cpu and a copy
// here, and moving its bytes costs the NPU more than the cpu (docs/rknpu.md "Flat tensors").
bool made_off_npu(const Graph& g, TensorId t) {
  for (int hops = 0; hops < 64; ++hops) {
    const Node* p = nullptr;
    for (const Node& m : g.nodes())
      for (TensorId o : m.outputs)
        if (o == t) p = &m;
    if (!p) return false;  // a graph input or a constant
    if (p->op != OpKind::transfer) {
      LowerOptions lo;
      lo.pack = false;
      return !lower_node(g, *p, lo).ok();
    }
    t = p->inputs[0];
  }
  return false;
}

}  // namespace

Result<NpuOp> lower_reshape(const Graph& g, const Node& n) {
  const Tensor& x = g.tensor(n.inputs[0]);
  if (!is_flat(g, n.inputs[0]) || !is_flat(g, n.outputs[0]))
    return no(n, "reshape of " + dt(x) + " -> " + dt(g.tensor(n.outputs[0])) +
                     " (only between flat tensors, whose bytes a reshape keeps in order)");
  if (made_off_npu(g, n.inputs[0]))
    return no(n, "reshape of " + dt(x) + ", which the cpu makes: a view there, a copy on the NPU");
  return flat_copy(n, g, n.inputs[0], n.outputs[0], 0, 0, x.elements());
}

namespace {

// A concatenation of flat tensors along an inner axis: `outer` rows, each input's rows
// interleaved in the output's (row r of input i at r * out_row + the inputs before it).
// One PPU row copy per input (NpuOpType::row_copy); rows must be whole 16-byte atoms.
Result<std::vector<NpuOp>> lower_row_copies(const Graph& g, const Node& n, int64_t outer) {
  const Tensor& y = g.tensor(n.outputs[0]);
  const int64_t out_row = y.elements() / outer;
  if (out_row % kC2 != 0) return no(n, "concat of flat rows of " + std::to_string(out_row) + " bytes (not whole 16-byte atoms)");
  std::vector<NpuOp> parts;
  int64_t at = 0;
  for (TensorId in : n.inputs) {
    const Tensor& x = g.tensor(in);
    if (!is_flat(g, in)) return no(n, "concat of a flat tensor and a feature map (" + dt(x) + ")");
    if (x.dtype != y.dtype || x.quant != y.quant) return no(n, "concat that requantizes an input");
    const int64_t row = x.elements() / outer;
    if (row % kC2 != 0 || at % kC2 != 0)
      return no(n, "concat input " + dt(x) + ": rows of " + std::to_string(row) + " bytes at offset " + std::to_string(at) +
                       " are not whole 16-byte atoms");
    if (!fits(regs::PPU::DATA_CUBE_IN_WIDTH__CUBE_IN_WIDTH, row / kC2 - 1) ||
        !fits(regs::PPU::DST_SURF_STRIDE__DST_SURF_STRIDE, out_row / kC2))
      return no(n, "concat rows of " + std::to_string(row) + " bytes exceed the PPU's fields");
    NpuOp op;
    op.type = NpuOpType::row_copy;
    op.label = n.label();
    op.input = in;
    op.output = n.outputs[0];
    op.in_h = op.out_h = 1;
    op.in_w = op.out_w = row / kC2;
    op.in_c = op.out_c = outer * kC2;
    op.dst_offset = at;
    op.dst_row_bytes = out_row;
    op.out_scale = Scale16{1, 0};
    TS_RETURN_IF_ERROR(check_tiling(op).status());
    parts.push_back(std::move(op));
    at += row;
  }
  if (parts.empty()) return no(n, "concat without inputs");
  return parts;
}

// A concatenation of flat tensors along an axis that every output axis before it has
// extent 1: each input is one run of the output's bytes.
}  // namespace

Result<std::vector<NpuOp>> lower_flat_concat_parts(const Graph& g, const Node& n) {
  const Tensor& y = g.tensor(n.outputs[0]);
  bool npu_made = false;
  for (TensorId in : n.inputs) npu_made = npu_made || !made_off_npu(g, in);
  if (!npu_made) return no(n, "concat of " + dt(y) + " whose inputs the cpu makes: moving their bytes costs the NPU more than the cpu");
  const int64_t rank = static_cast<int64_t>(y.shape.size());
  int64_t axis = n.get(attr::axis);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return no(n, "concat axis out of range");
  if (n.get(attr::activation) != "none") return no(n, "concat with a fused activation");
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y.shape[d];
  if (outer > 1) return lower_row_copies(g, n, outer);
  std::vector<NpuOp> parts;
  int64_t at = 0;
  for (TensorId in : n.inputs) {
    TS_ASSIGN_OR_RETURN(NpuOp op, flat_copy(n, g, in, n.outputs[0], 0, at, g.tensor(in).elements()));
    parts.push_back(std::move(op));
    at += g.tensor(in).elements();
  }
  if (parts.empty()) return no(n, "concat without inputs");
  return parts;
}


}  // namespace tessera::rknpu::detail
