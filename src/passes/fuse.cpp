// Pass: fuse. A relu / relu6 that is the only reader of a conv, depthwise conv, fully
// connected or add output (float path) becomes that op's `activation` attribute.
// Quantized graphs from TFLite arrive with activations already fused.
#include "passes/passes.h"

namespace tessera::passes {

namespace {
bool fusable_producer(OpKind k) {
  return k == OpKind::conv2d || k == OpKind::depthwise_conv2d || k == OpKind::fully_connected || k == OpKind::add;
}
}  // namespace

Status fuse_activations(PassContext& c) {
  Graph& g = c.plan.graph;
  std::vector<int> readers(g.tensors().size(), 0), producer(g.tensors().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    for (TensorId in : g.nodes()[i].inputs)
      if (in != kNoTensor) readers[in]++;
    for (TensorId o : g.nodes()[i].outputs) producer[o] = static_cast<int>(i);
  }
  for (TensorId o : g.outputs) readers[o]++;
  std::vector<bool> drop(g.nodes().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& act = g.nodes()[i];
    if (act.op != OpKind::relu && act.op != OpKind::relu6) continue;
    TensorId x = act.inputs[0];
    int p = producer[x];
    if (p < 0 || readers[x] != 1) continue;
    Node& prod = g.nodes()[p];
    if (!fusable_producer(prod.op) || prod.attr_str("activation", "none") != "none") continue;
    const Tensor& xt = g.tensor(x);
    const Tensor& yt = g.tensor(act.outputs[0]);
    if (!dtype_is_float(xt.dtype) || xt.dtype != yt.dtype) continue;
    prod.attrs["activation"] = std::string(act.op == OpKind::relu ? "relu" : "relu6");
    // The producer now writes the activation's output tensor directly.
    prod.outputs[0] = act.outputs[0];
    drop[i] = true;
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (!drop[i]) kept.push_back(std::move(g.nodes()[i]));
  g.nodes() = std::move(kept);
  return Status::Ok();
}

}  // namespace tessera::passes
