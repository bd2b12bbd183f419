// Shape inference: reshape, transpose, concat, slicing, padding, gathers, resizes, state.
#include <algorithm>

#include "core/checked.h"
#include "ops/op_infer.h"

namespace tessera::ops {

InferResult infer_reshape(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  std::vector<int64_t> s = n.get(attr::shape);
  Size known_size = 1;  // the dims come from the file: checked
  int infer_at = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer_at >= 0) return fail(n, "more than one -1 in shape");
      infer_at = static_cast<int>(i);
    } else if (s[i] < 0) {
      return fail(n, "negative dim in shape " + shape_str(s));
    } else {
      known_size *= s[i];
    }
  }
  if (!known_size.ok()) return fail(n, "the element count of shape " + shape_str(s) + " overflows 64 bits");
  const int64_t known = known_size.value_or_zero();
  int64_t total = x.elements();
  if (infer_at >= 0) {
    if (known == 0 || total % known) return fail(n, "cannot infer -1 in " + shape_str(s) + " from " + shape_str(x.shape));
    s[infer_at] = total / known;
  } else if (known != total) {
    return fail(n, "shape " + shape_str(s) + " has " + std::to_string(known) + " elements, input '" + x.name + "' " +
                       shape_str(x.shape) + " has " + std::to_string(total));
  }
  return one(s, x.dtype);
}

InferResult infer_transpose(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  std::vector<int64_t> perm = n.get(attr::perm);
  if (perm.size() != x.shape.size()) return fail(n, "perm " + shape_str(perm) + " does not match rank " + std::to_string(x.shape.size()));
  std::vector<bool> seen(perm.size(), false);
  Shape s(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(perm.size()) || seen[perm[i]]) return fail(n, "perm " + shape_str(perm) + " is not a permutation");
    seen[perm[i]] = true;
    s[i] = x.shape[perm[i]];
  }
  return one(s, x.dtype);
}

InferResult infer_concat(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  // norm_axis lets axis 0 through for rank 0 (the ops that read a scalar as one element);
  // scalars have no axis to join along.
  if (x.shape.empty()) return fail(n, "input 0 '" + x.name + "' is a scalar; concat needs rank >= 1");
  TS_ASSIGN_OR_RETURN(int ax, norm_axis(n, n.get(attr::axis), x.shape.size()));
  Shape s = x.shape;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const Tensor& y = in(g, n, i);
    if (y.shape.size() != s.size()) return fail(n, "input " + std::to_string(i) + " '" + y.name + "' has rank " + std::to_string(y.shape.size()));
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int>(d) != ax && y.shape[d] != s[d])
        return fail(n, "input " + std::to_string(i) + " '" + y.name + "' " + shape_str(y.shape) + " does not match " + shape_str(x.shape) + " off the concat axis");
    s[ax] += y.shape[ax];
  }
  return one(s, x.dtype);
}

InferResult infer_slice(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  auto b = n.get(attr::begin), sz = n.get(attr::size);
  if (b.size() != x.shape.size() || sz.size() != x.shape.size()) return fail(n, "begin/size must have one entry per dim");
  Shape s(x.shape.size());
  for (size_t i = 0; i < s.size(); ++i) {
    int64_t e = sz[i] == -1 ? x.shape[i] : b[i] + sz[i];
    if (b[i] < 0 || e > x.shape[i] || e < b[i]) return fail(n, "slice [" + std::to_string(b[i]) + ", " + std::to_string(e) + ") outside dim " + std::to_string(i) + " of " + shape_str(x.shape));
    s[i] = e - b[i];
  }
  return one(s, x.dtype);
}

InferResult infer_strided_slice(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  auto b = n.get(attr::begin), e = n.get(attr::end), st = n.get(attr::strides);
  auto shrink = n.get(attr::shrink_axes);
  if (b.size() != x.shape.size() || e.size() != x.shape.size() || st.size() != x.shape.size())
    return fail(n, "begin/end/strides must have one entry per dim (the frontend normalises them)");
  Shape s;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (st[i] == 0) return fail(n, "stride 0 in dim " + std::to_string(i));
    int64_t len = st[i] > 0 ? (e[i] > b[i] ? (e[i] - b[i] + st[i] - 1) / st[i] : 0)
                            : (b[i] > e[i] ? (b[i] - e[i] - st[i] - 1) / -st[i] : 0);
    if (b[i] < -1 || b[i] > x.shape[i] || e[i] < -1 || e[i] > x.shape[i]) return fail(n, "bounds outside dim " + std::to_string(i));
    if (std::find(shrink.begin(), shrink.end(), static_cast<int64_t>(i)) != shrink.end()) {
      if (len != 1) return fail(n, "shrink axis " + std::to_string(i) + " does not have length 1");
      continue;
    }
    s.push_back(len);
  }
  return one(s, x.dtype);
}

InferResult infer_pad(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  auto p = n.get(attr::paddings);
  if (p.size() != 2 * x.shape.size()) return fail(n, "paddings needs 2 entries per dim");
  Shape s = x.shape;
  for (size_t i = 0; i < s.size(); ++i) {
    if (p[2 * i] < 0 || p[2 * i + 1] < 0) return fail(n, "negative padding");
    s[i] += p[2 * i] + p[2 * i + 1];
  }
  return one(s, x.dtype);
}

InferResult infer_gather(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  const Tensor& idx = in(g, n, 1);
  if (idx.dtype != DType::i32 && idx.dtype != DType::i64) return fail(n, "indices must be i32 or i64");
  TS_ASSIGN_OR_RETURN(int ax, norm_axis(n, n.get(attr::axis), x.shape.size()));
  Shape s(x.shape.begin(), x.shape.begin() + ax);
  s.insert(s.end(), idx.shape.begin(), idx.shape.end());
  s.insert(s.end(), x.shape.begin() + ax + 1, x.shape.end());
  return one(s, x.dtype);
}

InferResult infer_gather_nd(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  const Tensor& idx = in(g, n, 1);
  if (idx.dtype != DType::i32 && idx.dtype != DType::i64) return fail(n, "indices must be i32 or i64");
  if (idx.shape.empty()) return fail(n, "indices must have rank >= 1");
  const int64_t k = idx.shape.back();
  if (k < 1 || k > static_cast<int64_t>(x.shape.size()))
    return fail(n, "index tuples of " + std::to_string(k) + " do not fit params " + shape_str(x.shape));
  Shape s(idx.shape.begin(), idx.shape.end() - 1);
  s.insert(s.end(), x.shape.begin() + k, x.shape.end());
  return one(s, x.dtype);
}

InferResult infer_get_rows(const Graph& g, const Node& n) {
  const Tensor& t = in(g, n, 0);
  const Tensor& idx = in(g, n, 1);
  if (t.shape.size() != 2) return fail(n, "table '" + t.name + "' must be [N, D], got " + shape_str(t.shape));
  if (idx.dtype != DType::i32) return fail(n, "ids must be i32");
  return one({num_elements(idx.shape), t.shape[1]}, DType::f32);
}

static InferResult resize(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  if (x.shape.size() != 4) return fail(n, "input must be NHWC rank 4");
  int64_t h = n.get(attr::out_h), w = n.get(attr::out_w);
  if (h < 1 || w < 1) return fail(n, "out_h and out_w must be >= 1");
  return one({x.shape[0], h, w, x.shape[3]}, x.dtype);
}
InferResult infer_resize_bilinear(const Graph& g, const Node& n) { return resize(g, n); }
InferResult infer_resize_nearest(const Graph& g, const Node& n) { return resize(g, n); }

InferResult infer_scatter_rows(const Graph& g, const Node& n) {
  const Tensor& st = in(g, n, 0);
  const Tensor& v = in(g, n, 1);
  const Tensor& p = in(g, n, 2);
  if (st.role != Role::state) return fail(n, "input 0 '" + st.name + "' must be a state tensor");
  if (p.dtype != DType::i32 || num_elements(p.shape) != 1) return fail(n, "pos must be one i32");
  TS_ASSIGN_OR_RETURN(int ax, norm_axis(n, n.get(attr::axis), st.shape.size()));
  if (v.shape.size() != st.shape.size()) return fail(n, "values rank differs from state rank");
  for (size_t i = 0; i < v.shape.size(); ++i)
    if (static_cast<int>(i) != ax && v.shape[i] != st.shape[i])
      return fail(n, "values " + shape_str(v.shape) + " do not match state " + shape_str(st.shape) + " off the row axis");
  if (v.shape[ax] > st.shape[ax]) return fail(n, "more rows than the state holds");
  return one(st.shape, st.dtype);
}

InferResult infer_transfer(const Graph& g, const Node& n) {
  const Tensor& x = in(g, n, 0);
  return one(x.shape, x.dtype);
}

}  // namespace tessera::ops
