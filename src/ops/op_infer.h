// Shape inference functions, one per op in ops.def, implemented by the op family files.
#pragma once

#include <vector>

#include "tessera/graph.h"

namespace tessera::ops {

using InferResult = Result<std::vector<InferredOutput>>;

#define OP(name, min_in, max_in, summary) InferResult infer_##name(const Graph& g, const Node& n);
#include "ops/ops.def"
#undef OP

// Helpers shared by the family files.
const Tensor& in(const Graph& g, const Node& n, size_t i);
bool has_in(const Node& n, size_t i);
// The dtype requested for output 0 (the output tensor's dtype as the frontend declared it).
DType out_dtype(const Graph& g, const Node& n);
Status fail(const Node& n, const std::string& msg);
// Normalises a possibly negative axis for `rank`; error naming the op if out of range.
Result<int> norm_axis(const Node& n, int64_t axis, size_t rank);
InferResult one(Shape s, DType t);

}  // namespace tessera::ops
