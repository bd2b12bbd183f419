// Data-movement and reduction kernels: get_rows (embedding lookup), transpose, concat,
// reshape, slice, mean / sum / reduce_max, and scatter_rows (KV cache row writes). On the
// device these are reader/writer kernels that move tiles or rows between DRAM and L1;
// reductions accumulate in float32 on the vector engine.
#include <algorithm>
#include <limits>

#include "backend/tile/kernel.h"

namespace tessera::tile {

namespace {

int64_t norm_axis(int64_t a, size_t rank) { return a < 0 ? a + static_cast<int64_t>(rank) : a; }

KernelWork move_work(const Graph& g, const Node& n) {
  return {0, static_cast<double>(tiles_of(g.tensor(n.outputs[0]).shape))};
}

// ---- get_rows: table [N, D], ids i32 [T] -> [T, D]; reads only the pages of those rows ----

std::string get_rows_check(const Graph& g, const Node& n) {
  if (g.tensor(n.inputs[0]).shape.size() != 2) return "get_rows needs a [N, D] table";
  return "";
}

Status get_rows(KernelContext& c) {
  const int64_t rows = c.in(0).shape[0], d = c.in(0).shape[1];
  TS_ASSIGN_OR_RETURN(std::vector<int32_t> ids, c.io.load_i32(1));
  std::vector<float> y(ids.size() * static_cast<size_t>(d));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= rows)
      return error(StatusCode::out_of_range, "[get_rows] ", c.n.label(), ": index ", ids[i], " at position ", i,
                   " is outside the table's ", rows, " rows");
    TS_ASSIGN_OR_RETURN(std::vector<float> row, c.io.load_rows(0, ids[i], ids[i] + 1));
    std::copy(row.begin(), row.end(), y.begin() + static_cast<int64_t>(i) * d);
  }
  return c.io.store(0, y);
}

// ---- transpose (attr perm) ----

std::string transpose_check(const Graph& g, const Node& n) {
  std::vector<int64_t> perm = n.get(attr::perm);
  size_t rank = g.tensor(n.inputs[0]).shape.size();
  if (perm.size() != rank) return "transpose perm must list every dim";
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(rank) || seen[p]) return "transpose perm is not a permutation";
    seen[p] = true;
  }
  return "";
}

Status transpose(KernelContext& c) {
  const Shape& is = c.in(0).shape;
  const Shape& os = c.out(0).shape;
  std::vector<int64_t> perm = c.n.get(attr::perm);
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  auto ist = row_major_strides(is);
  std::vector<int64_t> st(os.size());
  for (size_t d = 0; d < os.size(); ++d) st[d] = ist[perm[d]];
  std::vector<float> y(x.size());
  std::vector<int64_t> idx(os.size(), 0);
  int64_t src = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = x[src];
    for (int d = static_cast<int>(os.size()) - 1; d >= 0; --d) {
      src += st[d];
      if (++idx[d] < os[d]) break;
      src -= st[d] * os[d];
      idx[d] = 0;
    }
  }
  return c.io.store(0, y);
}

// ---- concat (attr axis) ----

Status concat(KernelContext& c) {
  const Shape& os = c.out(0).shape;
  const int64_t axis = norm_axis(c.n.get(attr::axis), os.size());
  if (axis < 0 || axis >= static_cast<int64_t>(os.size())) return tile_kernel_error(c.n, "axis out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= os[d];
  for (size_t d = axis + 1; d < os.size(); ++d) inner *= os[d];
  std::vector<float> y(static_cast<size_t>(num_elements(os)));
  int64_t at = 0;  // offset along the axis
  for (size_t i = 0; i < c.n.inputs.size(); ++i) {
    TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(static_cast<int>(i)));
    const int64_t len = c.in(static_cast<int>(i)).shape[axis];
    for (int64_t o = 0; o < outer; ++o)
      std::copy(x.begin() + o * len * inner, x.begin() + (o + 1) * len * inner,
                y.begin() + (o * os[axis] + at) * inner);
    at += len;
  }
  return c.io.store(0, y);
}

// ---- reshape: the same values in a new shape (a relayout: tiles depend on the shape) ----

Status reshape(KernelContext& c) {
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  return c.io.store(0, x);
}

// ---- avg_pool2d / max_pool2d (NHWC; padding cells are not counted) ----

std::string pool_check(const Graph& g, const Node& n) {
  if (g.tensor(n.inputs[0]).shape.size() != 4) return "pools need a rank-4 NHWC input";
  return check_activation(n);
}

template <bool kMax>
Status pool(KernelContext& c) {
  const Shape& xs = c.in(0).shape;
  const Shape& ys = c.out(0).shape;
  const int64_t fh = c.n.get(attr::filter_h), fw = c.n.get(attr::filter_w);
  const int64_t sh = c.n.get(attr::stride_h), sw = c.n.get(attr::stride_w);
  const int64_t pt = c.n.get(attr::pad_top), pl = c.n.get(attr::pad_left);
  const std::string act = c.n.get(attr::activation);
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  const int64_t ch = xs[3];
  std::vector<float> y(static_cast<size_t>(num_elements(ys)));
  for (int64_t b = 0; b < ys[0]; ++b)
    for (int64_t oy = 0; oy < ys[1]; ++oy)
      for (int64_t ox = 0; ox < ys[2]; ++ox)
        for (int64_t k = 0; k < ch; ++k) {
          float acc = kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
          int64_t count = 0;
          for (int64_t dy = 0; dy < fh; ++dy)
            for (int64_t dx = 0; dx < fw; ++dx) {
              int64_t iy = oy * sh - pt + dy, ix = ox * sw - pl + dx;
              if (iy < 0 || iy >= xs[1] || ix < 0 || ix >= xs[2]) continue;
              float v = x[((b * xs[1] + iy) * xs[2] + ix) * ch + k];
              acc = kMax ? std::max(acc, v) : acc + v;
              ++count;
            }
          if (!kMax) acc = count ? acc / static_cast<float>(count) : 0.0f;
          y[((b * ys[1] + oy) * ys[2] + ox) * ch + k] = apply_activation(acc, act);
        }
  return c.io.store(0, y);
}

KernelWork pool_work(const Graph& g, const Node& n) {
  return {0, static_cast<double>(n.get(attr::filter_h) * n.get(attr::filter_w)) *
                 static_cast<double>(tiles_of(g.tensor(n.outputs[0]).shape))};
}

// ---- quantize / dequantize / requantize: the same real values in another representation ----
// (codes are converted to real values on load and back to codes on store; see kernel.h).

Status same_values(KernelContext& c) {
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  return c.io.store(0, x);
}

// ---- slice (attrs begin, size with -1 = to the end) ----

std::string slice_check(const Graph& g, const Node& n) {
  size_t rank = g.tensor(n.inputs[0]).shape.size();
  if (n.get(attr::begin).size() != rank) return "slice begin must list every dim";
  return "";
}

Status slice(KernelContext& c) {
  const Shape& is = c.in(0).shape;
  const Shape& os = c.out(0).shape;
  std::vector<int64_t> begin = c.n.get(attr::begin);
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  auto ist = row_major_strides(is);
  std::vector<float> y(static_cast<size_t>(num_elements(os)));
  std::vector<int64_t> idx(os.size(), 0);
  for (size_t i = 0; i < y.size(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < os.size(); ++d) src += (begin[d] + idx[d]) * ist[d];
    y[i] = x[src];
    for (int d = static_cast<int>(os.size()) - 1; d >= 0; --d) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
  return c.io.store(0, y);
}

// ---- mean / sum / reduce_max over attr axes ----

std::string reduce_check(const Graph& g, const Node& n) {
  size_t rank = g.tensor(n.inputs[0]).shape.size();
  for (int64_t a : n.get(attr::axes)) {
    int64_t ax = norm_axis(a, rank);
    if (ax < 0 || ax >= static_cast<int64_t>(rank)) return "reduction axis " + std::to_string(a) + " out of range";
  }
  return "";
}

template <OpKind kind>
Status reduce(KernelContext& c) {
  const Shape& is = c.in(0).shape;
  std::vector<bool> red(is.size(), false);
  for (int64_t a : c.n.get(attr::axes)) red[norm_axis(a, is.size())] = true;
  Shape kept;
  for (size_t d = 0; d < is.size(); ++d) kept.push_back(red[d] ? 1 : is[d]);
  auto ks = row_major_strides(kept);
  std::vector<int64_t> ost(is.size());
  for (size_t d = 0; d < is.size(); ++d) ost[d] = red[d] ? 0 : ks[d];
  TS_ASSIGN_OR_RETURN(std::vector<float> x, c.io.load(0));
  const int64_t outs = num_elements(kept);
  const int64_t count = outs == 0 ? 0 : static_cast<int64_t>(x.size()) / outs;
  std::vector<float> acc(static_cast<size_t>(outs),
                         kind == OpKind::reduce_max ? -std::numeric_limits<float>::infinity() : 0.0f);
  std::vector<int64_t> idx(is.size(), 0);
  int64_t o = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if constexpr (kind == OpKind::reduce_max) acc[o] = std::max(acc[o], x[i]);
    else acc[o] += x[i];
    for (int d = static_cast<int>(is.size()) - 1; d >= 0; --d) {
      o += ost[d];
      if (++idx[d] < is[d]) break;
      o -= ost[d] * is[d];
      idx[d] = 0;
    }
  }
  if constexpr (kind == OpKind::mean)
    for (float& v : acc) v /= static_cast<float>(count);
  return c.io.store(0, acc);
}

KernelWork reduce_work(const Graph& g, const Node& n) {
  return {0, static_cast<double>(tiles_of(g.tensor(n.inputs[0]).shape))};
}

// ---- scatter_rows: state [..., L, D] (aliased by the output), values [..., T, D], pos i32 [1] ----

std::string scatter_check(const Graph& g, const Node& n) {
  const Shape& s = g.tensor(n.inputs[0]).shape;
  int64_t axis = norm_axis(n.get(attr::axis), s.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s.size())) return "scatter_rows axis out of range";
  if (g.tensor(n.inputs[0]).role != Role::state && g.tensor(n.inputs[0]).role != Role::activation)
    return "scatter_rows writes into a state tensor";
  return "";
}

// A row-region write into the tiled state: only the tiles holding rows [pos, pos + T)
// are read, modified and written back (tile-device.md: pages are tiles).
Status scatter_rows(KernelContext& c) {
  const Shape& ss = c.in(0).shape;
  const int axis = static_cast<int>(norm_axis(c.n.get(attr::axis), ss.size()));
  TS_ASSIGN_OR_RETURN(std::vector<float> v, c.io.load(1));
  TS_ASSIGN_OR_RETURN(std::vector<int32_t> pos, c.io.load_i32(2));
  if (pos.empty()) return tile_kernel_error(c.n, "position tensor is empty");
  const int64_t rows = c.in(1).shape[axis];
  if (pos[0] < 0 || pos[0] + rows > ss[axis])
    return error(StatusCode::out_of_range, "[scatter_rows] ", c.n.label(), ": rows [", pos[0], ", ", pos[0] + rows,
                 ") are outside the state's ", ss[axis], " rows");
  return c.io.store_rows(0, axis, pos[0], pos[0] + rows, v);
}

KernelWork scatter_work(const Graph& g, const Node& n) {
  return {0, static_cast<double>(tiles_of(g.tensor(n.inputs[1]).shape))};
}

}  // namespace

void add_data_kernels(std::vector<TileKernel>& k) {
  k.push_back({OpKind::get_rows, 1u << 1, 1u << 0, get_rows_check, get_rows, move_work});
  k.push_back({OpKind::transpose, 0, 0, transpose_check, transpose, move_work});
  k.push_back({OpKind::concat, 0, 0, nullptr, concat, move_work});
  k.push_back({OpKind::reshape, 1u << 1, 0, nullptr, reshape, move_work});
  k.push_back({OpKind::slice, 0, 0, slice_check, slice, move_work});
  k.push_back({OpKind::avg_pool2d, 0, 0, pool_check, pool<false>, pool_work});
  k.push_back({OpKind::max_pool2d, 0, 0, pool_check, pool<true>, pool_work});
  for (OpKind op : {OpKind::quantize, OpKind::dequantize, OpKind::requantize})
    k.push_back({op, 0, 0, nullptr, same_values, move_work});
  k.push_back({OpKind::mean, 0, 0, reduce_check, reduce<OpKind::mean>, reduce_work});
  k.push_back({OpKind::sum, 0, 0, reduce_check, reduce<OpKind::sum>, reduce_work});
  k.push_back({OpKind::reduce_max, 0, 0, reduce_check, reduce<OpKind::reduce_max>, reduce_work});
  k.push_back({OpKind::scatter_rows, 1u << 2, 0, scatter_check, scatter_rows, scatter_work});
}

}  // namespace tessera::tile
