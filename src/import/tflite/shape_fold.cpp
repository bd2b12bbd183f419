// Constant folding of the integer shape arithmetic converters emit in front of RESHAPE
// (SHAPE -> STRIDED_SLICE -> PACK / CONCATENATION -> RESHAPE, with GATHER and i32 ADD /
// MUL on the way): a node whose inputs are all small i32/i64 constants is evaluated at
// import and its outputs become constants, so that the RESHAPE reads a constant shape.
// With a dynamic input resized at load (ImportOptions::input_shapes), SHAPE folds to the
// new size and the chain follows it. Values are computed in int64; a result that does not
// fit the output dtype, a division by zero or an index out of range leaves the node to run
// (its kernel reports it).
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "import/tflite/import_context.h"

namespace tessera::tflite {

namespace {

// Shape operands hold a few values; a larger constant computation is left to the kernels
// (folding it would copy a weight-sized tensor at import).
constexpr int64_t kMaxFoldElements = 4096;

bool is_int(DType t) { return t == DType::i32 || t == DType::i64; }

std::optional<std::vector<int64_t>> values(const Tensor& t) {
  if (!t.data || !is_int(t.dtype) || t.elements() > kMaxFoldElements) return std::nullopt;
  const size_t n = static_cast<size_t>(t.elements()), w = t.dtype == DType::i32 ? 4 : 8;
  if (static_cast<uint64_t>(t.data->size) != n * w) return std::nullopt;
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (w == 4) {
      int32_t x;
      std::memcpy(&x, t.data->data + 4 * i, 4);
      v[i] = x;
    } else {
      std::memcpy(&v[i], t.data->data + 8 * i, 8);
    }
  }
  return v;
}

// Row-major strides of `s`.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// Multi-index of flat position `i` in `s`.
std::vector<int64_t> unflatten(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] > 0 ? i % s[d] : 0;
    i = s[d] > 0 ? i / s[d] : 0;
  }
  return idx;
}

using Values = std::vector<int64_t>;

// Flat index into `in` (right-aligned broadcast against the output multi-index `o`).
int64_t broadcast_index(const Shape& in, const std::vector<int64_t>& o) {
  const auto st = strides_of(in);
  int64_t flat = 0;
  const size_t lead = o.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) flat += (in[d] == 1 ? 0 : o[lead + d]) * st[d];
  return flat;
}

std::optional<int64_t> binary(OpKind op, int64_t a, int64_t b) {
  switch (op) {
    case OpKind::add: return a + b;
    case OpKind::sub: return a - b;
    case OpKind::mul: return a * b;
    case OpKind::maximum: return std::max(a, b);
    case OpKind::minimum: return std::min(a, b);
    case OpKind::div:  // TFLite's int32 DIV: C++ division (toward zero)
      if (b == 0) return std::nullopt;
      return a / b;
    case OpKind::floor_div: {
      if (b == 0) return std::nullopt;
      int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return q;
    }
    default: return std::nullopt;
  }
}

// The output values of `n`, or nullopt when it is not foldable.
std::optional<Values> evaluate(const Graph& g, const Node& n, const std::vector<Values>& in) {
  const Tensor& y = g.tensor(n.outputs[0]);
  const int64_t count = y.elements();
  Values out(static_cast<size_t>(count));
  switch (n.op) {
    case OpKind::reshape:
    case OpKind::cast:
      if (static_cast<int64_t>(in[0].size()) != count) return std::nullopt;
      return in[0];
    case OpKind::add: case OpKind::sub: case OpKind::mul: case OpKind::div: case OpKind::floor_div:
    case OpKind::maximum: case OpKind::minimum: {
      if (n.get(attr::activation) != "none") return std::nullopt;
      const Shape& a = g.tensor(n.inputs[0]).shape;
      const Shape& b = g.tensor(n.inputs[1]).shape;
      if (a.size() > y.shape.size() || b.size() > y.shape.size()) return std::nullopt;
      for (int64_t i = 0; i < count; ++i) {
        const auto o = unflatten(i, y.shape);
        // |values| < 2^63 / 2 is not guaranteed: stay within int32 operands' products.
        const int64_t x = in[0][static_cast<size_t>(broadcast_index(a, o))];
        const int64_t z = in[1][static_cast<size_t>(broadcast_index(b, o))];
        constexpr int64_t kLim = int64_t{1} << 31;
        if (x < -kLim || x > kLim || z < -kLim || z > kLim) return std::nullopt;
        auto r = binary(n.op, x, z);
        if (!r) return std::nullopt;
        out[static_cast<size_t>(i)] = *r;
      }
      return out;
    }
    case OpKind::concat: {
      if (n.get(attr::activation) != "none") return std::nullopt;
      const int64_t rank = static_cast<int64_t>(y.shape.size());
      int64_t axis = n.get(attr::axis);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return std::nullopt;
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= y.shape[d];
      for (int64_t d = axis + 1; d < rank; ++d) inner *= y.shape[d];
      size_t pos = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (size_t k = 0; k < in.size(); ++k) {
          const int64_t chunk = g.tensor(n.inputs[k]).shape[static_cast<size_t>(axis)] * inner;
          for (int64_t j = 0; j < chunk; ++j) {
            if (pos >= out.size()) return std::nullopt;
            out[pos++] = in[k][static_cast<size_t>(o * chunk + j)];
          }
        }
      if (pos != out.size()) return std::nullopt;
      return out;
    }
    case OpKind::slice:
    case OpKind::strided_slice: {
      const Shape& xs = g.tensor(n.inputs[0]).shape;
      const auto begin = n.get(attr::begin);
      std::vector<int64_t> step(xs.size(), 1), extent(xs.size());
      if (begin.size() != xs.size()) return std::nullopt;
      if (n.op == OpKind::slice) {
        const auto size = n.get(attr::size);
        if (size.size() != xs.size()) return std::nullopt;
        for (size_t d = 0; d < xs.size(); ++d) extent[d] = size[d] < 0 ? xs[d] - begin[d] : size[d];
      } else {
        const auto end = n.get(attr::end);
        const auto st = n.get(attr::strides);
        if (end.size() != xs.size() || st.size() != xs.size()) return std::nullopt;
        for (size_t d = 0; d < xs.size(); ++d) {
          if (st[d] == 0) return std::nullopt;
          step[d] = st[d];
          const int64_t span = st[d] > 0 ? end[d] - begin[d] : begin[d] - end[d];
          const int64_t mag = st[d] > 0 ? st[d] : -st[d];
          extent[d] = std::max<int64_t>(0, (span + mag - 1) / mag);
        }
      }
      int64_t total = 1;
      for (int64_t e : extent) total *= e;
      if (total != count) return std::nullopt;
      const auto xst = strides_of(xs);
      for (int64_t i = 0; i < count; ++i) {
        const auto o = unflatten(i, extent);
        int64_t flat = 0;
        for (size_t d = 0; d < xs.size(); ++d) {
          const int64_t at = begin[d] + o[d] * step[d];
          if (at < 0 || at >= xs[d]) return std::nullopt;
          flat += at * xst[d];
        }
        out[static_cast<size_t>(i)] = in[0][static_cast<size_t>(flat)];
      }
      return out;
    }
    case OpKind::gather: {
      const Shape& xs = g.tensor(n.inputs[0]).shape;
      const int64_t rank = static_cast<int64_t>(xs.size());
      int64_t axis = n.get(attr::axis);
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return std::nullopt;
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
      for (int64_t d = axis + 1; d < rank; ++d) inner *= xs[d];
      const int64_t dim = xs[static_cast<size_t>(axis)];
      const Values& idx = in[1];
      if (outer * static_cast<int64_t>(idx.size()) * inner != count) return std::nullopt;
      size_t pos = 0;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t k : idx) {
          if (k < 0 || k >= dim) return std::nullopt;
          for (int64_t j = 0; j < inner; ++j) out[pos++] = in[0][static_cast<size_t>((o * dim + k) * inner + j)];
        }
      return out;
    }
    default: return std::nullopt;
  }
}

}  // namespace

Result<bool> fold_constant_node(ImportContext& cx) {
  Graph& g = cx.graph;
  if (g.nodes().empty()) return false;
  const Node& n = g.nodes().back();
  if (n.outputs.size() != 1) return false;
  const TensorId y = n.outputs[0];
  {
    const Tensor& yt = g.tensor(y);
    if (!is_int(yt.dtype) || !yt.quant.empty() || yt.role != Role::activation || yt.data || cx.is_model_output(y) ||
        yt.elements() > kMaxFoldElements)
      return false;
  }
  std::vector<Values> in;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k] == kNoTensor) return false;
    const Tensor& t = g.tensor(n.inputs[k]);
    // A reshape's optional second input is its shape: only the data must be constant.
    if (n.op == OpKind::reshape && k > 0) continue;
    if (!t.quant.empty()) return false;
    auto v = values(t);
    if (!v) return false;
    in.push_back(std::move(*v));
  }
  if (in.empty()) return false;
  auto out = evaluate(g, n, in);
  if (!out) return false;
  Tensor& yt = g.tensor(y);
  const bool narrow = yt.dtype == DType::i32;
  std::vector<uint8_t> bytes(out->size() * (narrow ? 4 : 8));
  for (size_t i = 0; i < out->size(); ++i) {
    const int64_t v = (*out)[i];
    if (narrow) {
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) return false;
      const int32_t x = static_cast<int32_t>(v);
      std::memcpy(bytes.data() + 4 * i, &x, 4);
    } else {
      std::memcpy(bytes.data() + 8 * i, &v, 8);
    }
  }
  yt.role = Role::weight;
  yt.data = ConstData::from_vector(std::move(bytes));
  g.nodes().pop_back();
  return true;
}

}  // namespace tessera::tflite
