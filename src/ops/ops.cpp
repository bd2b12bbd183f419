// Op names, input counts and the shape-inference dispatch, all derived from ops.def.
#include <string>

#include "ops/op_infer.h"

namespace tessera {

namespace {
struct OpInfo {
  const char* name;
  int min_in;
  int max_in;
  const char* summary;
  ops::InferResult (*infer)(const Graph&, const Node&);
};
const OpInfo kOps[] = {
#define OP(name, min_in, max_in, summary) {#name, min_in, max_in, summary, &ops::infer_##name},
#include "ops/ops.def"
#undef OP
};
}  // namespace

// An OpKind outside ops.def (a corrupt or hand-made node) reads as "unknown" with no
// valid input count, so that checks reject it instead of indexing past the table.
static bool known(OpKind k) { return static_cast<unsigned>(k) < static_cast<unsigned>(kNumOps); }
const char* op_name(OpKind k) { return known(k) ? kOps[static_cast<int>(k)].name : "unknown"; }
int op_min_inputs(OpKind k) { return known(k) ? kOps[static_cast<int>(k)].min_in : 0; }
int op_max_inputs(OpKind k) { return known(k) ? kOps[static_cast<int>(k)].max_in : -1; }
const char* op_summary(OpKind k) { return known(k) ? kOps[static_cast<int>(k)].summary : "unknown op"; }

int op_aliased_input(OpKind k, size_t output) {
  if (k == OpKind::scatter_rows && output == 0) return 0;
  if (k == OpKind::lstm && (output == 1 || output == 2)) return static_cast<int>(9 + output);
  if (k == OpKind::svdf && output == 1) return 3;
  return -1;
}

std::optional<OpKind> op_from_name(const std::string& name) {
  for (int i = 0; i < kNumOps; ++i)
    if (name == kOps[i].name) return static_cast<OpKind>(i);
  return std::nullopt;
}

Result<std::vector<InferredOutput>> infer_outputs(const Graph& g, const Node& n) {
  if (static_cast<int>(n.op) >= kNumOps) return error(StatusCode::invalid_argument, "unknown op id ", int(n.op));
  return kOps[static_cast<int>(n.op)].infer(g, n);
}

namespace ops {

const Tensor& in(const Graph& g, const Node& n, size_t i) { return g.tensor(n.inputs[i]); }
bool has_in(const Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i] != kNoTensor; }
DType out_dtype(const Graph& g, const Node& n) { return g.tensor(n.outputs[0]).dtype; }

Status fail(const Node& n, const std::string& msg) {
  return error(StatusCode::invalid_argument, "[", op_name(n.op), "] ", n.name.empty() ? "" : "'" + n.name + "': ", msg);
}

Result<int> norm_axis(const Node& n, int64_t axis, size_t rank) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= std::max<int64_t>(r, 1)) return fail(n, "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

InferResult one(Shape s, DType t) { return std::vector<InferredOutput>{{std::move(s), t}}; }

}  // namespace ops
}  // namespace tessera
