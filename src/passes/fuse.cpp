// Pass: fuse.
// - A spatial PAD whose only reader is a conv2d / depthwise_conv2d, filling with what the
//   conv's own padding means (the zero point of a quantized input, 0.0 of a float one),
//   becomes that conv's padding: the same values, one node and one tensor less, and a
//   device that runs convolutions no longer needs a round trip for the pad (the int8
//   MobileNetV2 from PyTorch has 17 explicit PADs).
// - A relu / relu6 that is the only reader of a conv, depthwise conv, fully connected or add
//   output (float path) becomes that op's `activation` attribute. Quantized graphs from
//   TFLite arrive with activations already fused.
#include <algorithm>

#include "passes/passes.h"

namespace tessera::passes {

namespace {

bool fusable_producer(OpKind k) {
  return k == OpKind::conv2d || k == OpKind::depthwise_conv2d || k == OpKind::fully_connected || k == OpKind::add;
}

// Readers of every tensor, counting graph outputs as readers.
std::vector<int> count_readers(const Graph& g) {
  std::vector<int> readers(g.tensors().size(), 0);
  for (const Node& n : g.nodes())
    for (TensorId in : n.inputs)
      if (in != kNoTensor) readers[in]++;
  for (TensorId o : g.outputs) readers[o]++;
  return readers;
}

// Removes the nodes marked in `drop`, keeping the order of the others.
void erase_nodes(Graph& g, const std::vector<bool>& drop) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (!drop[i]) kept.push_back(std::move(g.nodes()[i]));
  g.nodes() = std::move(kept);
}

// Whether pad node `p` fills with the value a conv's own padding stands for.
bool fills_like_conv_padding(const Graph& g, const Node& p) {
  const Tensor& x = g.tensor(p.inputs[0]);
  const Tensor& y = g.tensor(p.outputs[0]);
  if (x.dtype != y.dtype || !(x.quant == y.quant)) return false;
  if (x.quant.empty()) return dtype_is_float(x.dtype) && p.find(attr::value).value_or(0.0) == 0.0;
  if (x.quant.per_axis()) return false;
  const double zp = static_cast<double>(x.quant.zero_point_at(0));
  return p.find(attr::value).value_or(zp) == zp;
}

void fold_pads(Graph& g) {
  const std::vector<int> readers = count_readers(g);
  std::vector<int> reader_of(g.tensors().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (TensorId in : g.nodes()[i].inputs)
      if (in != kNoTensor) reader_of[in] = static_cast<int>(i);
  std::vector<bool> drop(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& p = g.nodes()[i];
    if (p.op != OpKind::pad || g.tensor(p.inputs[0]).shape.size() != 4) continue;
    const TensorId t = p.outputs[0];
    if (readers[t] != 1 || reader_of[t] < 0) continue;
    Node& conv = g.nodes()[reader_of[t]];
    if ((conv.op != OpKind::conv2d && conv.op != OpKind::depthwise_conv2d) || conv.inputs[0] != t) continue;
    const std::vector<int64_t> pads = p.get(attr::paddings);  // [N, H, W, C] x (before, after)
    if (pads.size() != 8 || pads[0] || pads[1] || pads[6] || pads[7]) continue;
    if (std::any_of(pads.begin(), pads.end(), [](int64_t v) { return v < 0; })) continue;
    if (!fills_like_conv_padding(g, p)) continue;
    conv.inputs[0] = p.inputs[0];
    conv.set(attr::pad_top, conv.get(attr::pad_top) + pads[2]);
    conv.set(attr::pad_bottom, conv.get(attr::pad_bottom) + pads[3]);
    conv.set(attr::pad_left, conv.get(attr::pad_left) + pads[4]);
    conv.set(attr::pad_right, conv.get(attr::pad_right) + pads[5]);
    drop[i] = true;
  }
  erase_nodes(g, drop);
}

void fold_activations(Graph& g) {
  const std::vector<int> readers = count_readers(g);
  std::vector<int> producer(g.tensors().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (TensorId o : g.nodes()[i].outputs) producer[o] = static_cast<int>(i);
  std::vector<bool> drop(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& act = g.nodes()[i];
    if (act.op != OpKind::relu && act.op != OpKind::relu6) continue;
    TensorId x = act.inputs[0];
    int p = producer[x];
    if (p < 0 || readers[x] != 1) continue;
    Node& prod = g.nodes()[p];
    if (!fusable_producer(prod.op) || prod.get(attr::activation) != "none") continue;
    const Tensor& xt = g.tensor(x);
    const Tensor& yt = g.tensor(act.outputs[0]);
    if (!dtype_is_float(xt.dtype) || xt.dtype != yt.dtype) continue;
    prod.set(attr::activation, act.op == OpKind::relu ? "relu" : "relu6");
    // The producer now writes the activation's output tensor directly.
    prod.outputs[0] = act.outputs[0];
    drop[i] = true;
  }
  erase_nodes(g, drop);
}

}  // namespace

Status fuse(PassContext& c) {
  fold_pads(c.plan.graph);
  fold_activations(c.plan.graph);
  return Status::Ok();
}

}  // namespace tessera::passes
