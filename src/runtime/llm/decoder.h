// DecoderModel: what the generator needs from a decoder-only language model.
//
// A model builds "step graphs" of a fixed number of tokens T that all attend over the
// whole context (static shapes: planned and compiled once). Every step graph has the same
// inputs, in this order:
//   0 tokens   i32 [T]        token ids
//   1 pos      i32 [T]        absolute position of each token (RoPE)
//   2 mask     f32 [T, ctx]   additive attention mask: 0 where token t may attend to
//                             cache row j (j <= pos[t]), -inf elsewhere ([T, 1] and
//                             unused when every layer uses the attention op)
//   3 kv_pos   i32 [1]        first cache row this step writes (rows kv_pos .. kv_pos+T-1)
//   4 last     i32 [1]        index in [0, T) of the token whose logits are returned
//   5 mask_swa f32 [T, ctx]   only when sliding_window() > 0: the mask of the sliding-window
//                             layers, 0 where pos[t] - window < j <= pos[t] ([T, 1] and
//                             unused when every layer uses the attention op)
// and one output, logits f32 [1, vocab]. The KV cache is made of Role::state tensors
// (named the same in every step graph, so step graphs of different T share them through
// Session::create(..., share)) written with scatter_rows.
//
// Nodes of transformer layer i are named "blk.<i>/<what>"; other nodes have names without
// that prefix. layer_of_node() reads it (for `--offload N`).
#pragma once

#include <cstdint>
#include <string>

#include "tessera/graph.h"

namespace tessera::llm {

// How a step graph is built.
struct StepOptions {
  // Layers >= attention_op_from attend with the `attention` op over the KV cache rows in
  // use (the cpu's path); layers below it use matmul + masked softmax
  // over the whole context with an f32 cache, which every device runs. When no layer uses
  // the mask, the mask input is [T, 1] and ignored.
  int64_t attention_op_from = 0;
  // The cache of the layers that use the attention op: f16 (default), f32 or q8_0.
  DType attention_cache = DType::f16;
};

enum StepInput : size_t {
  kInTokens = 0, kInPos = 1, kInMask = 2, kInKvPos = 3, kInLast = 4, kNumStepInputs = 5,
  kInMaskSwa = 5,  // an extra input of models with sliding-window layers
};

class DecoderModel {
 public:
  virtual ~DecoderModel() = default;
  virtual int64_t context_length() const = 0;
  virtual int64_t vocab_size() const = 0;
  virtual int64_t layers() const = 0;
  // Rows a sliding-window layer attends (its own included), or 0 when no layer has a window.
  virtual int64_t sliding_window() const { return 0; }
  // A step graph for `tokens` tokens per run (1 <= tokens <= context_length()).
  virtual Result<Graph> build_step(int64_t tokens, const StepOptions& opts = {}) const = 0;
};

// The layer index in a node name "blk.<i>/...", or -1.
int layer_of_node(const Node& n);

}  // namespace tessera::llm
