// Conformance cases: data movement (reshape, transpose, concat, slice, strided_slice, pad,
// gather, get_rows, resizes, scatter_rows). Byte-moving ops run on several dtypes,
// including quantized u8 (their values must arrive unchanged).
#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

// Random stored values of a dtype: host bytes, and the values they hold as doubles.
struct Values {
  std::vector<uint8_t> bytes;
  std::vector<double> v;
  QuantParams quant;  // set for u8 (a quantized tensor)
};

Values random_values(Rng& rng, DType t, int64_t n) {
  Values r;
  if (dtype_is_float(t)) {
    r.bytes = encode(t, uniform(rng, n, -4, 4));
  } else {
    const int64_t lo = t == DType::u8 ? 0 : t == DType::i8 ? -128 : -30000, hi = t == DType::u8 ? 255 : t == DType::i8 ? 127 : 30000;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t x = pick(rng, lo, hi);
      const int sz = dtype_size(t);
      for (int b = 0; b < sz; ++b) r.bytes.push_back(static_cast<uint8_t>((static_cast<uint64_t>(x) >> (8 * b)) & 0xff));
    }
  }
  r.v = decode(t, r.bytes, n);
  if (t == DType::u8 || t == DType::i8) {
    r.quant.scale = {0.02f};
    r.quant.zero_point = {t == DType::u8 ? 120 : -3};
  }
  return r;
}

// The dtypes every byte-moving op is tested with.
const DType kMoveDTypes[] = {DType::f32, DType::u8, DType::i16, DType::f16, DType::i32};

// Source index of every output element of a strided box: out[idx] = in[start + idx . step].
std::vector<double> gather_box(const std::vector<double>& in, const Shape& ext, int64_t start,
                               const std::vector<int64_t>& step) {
  std::vector<double> out;
  for (int64_t i = 0; i < num_elements(ext); ++i) {
    int64_t rem = i, off = start;
    for (int d = static_cast<int>(ext.size()) - 1; d >= 0; --d) {
      off += (rem % ext[d]) * step[d];
      rem /= ext[d];
    }
    out.push_back(in[off]);
  }
  return out;
}

std::string dt(DType t) { return dtype_name(t); }

TESSERA_CONFORMANCE_CASES(reshape) {
  std::vector<Case> cases;
  for (DType t : kMoveDTypes) {
    Shape s = random_shape(rng, 3, 1, 5);
    Values x = random_values(rng, t, num_elements(s));
    CaseGraph cg;
    Case c = cg.finish("reshape " + dt(t) + " " + shape_str(s), OpKind::reshape, {cg.input("x", s, t, x.bytes, x.quant)},
                       {{"shape", std::vector<int64_t>{s[0] * s[1], -1}}}, std::nullopt, x.quant);
    c.expected = x.v;
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(transpose) {
  std::vector<Case> cases;
  for (DType t : kMoveDTypes) {
    Shape s = random_shape(rng, 4, 1, 5);
    std::vector<int64_t> perm = {0, 1, 2, 3};
    std::shuffle(perm.begin(), perm.end(), rng);
    Values x = random_values(rng, t, num_elements(s));
    CaseGraph cg;
    Case c = cg.finish("transpose " + dt(t) + " " + shape_str(s) + " perm " + shape_str(perm), OpKind::transpose,
                       {cg.input("x", s, t, x.bytes, x.quant)}, {{"perm", perm}}, std::nullopt, x.quant);
    auto st = row_major_strides(s);
    Shape ext(4);
    std::vector<int64_t> step(4);
    for (int i = 0; i < 4; ++i) ext[i] = s[perm[i]], step[i] = st[perm[i]];
    c.expected = gather_box(x.v, ext, 0, step);
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(concat) {
  std::vector<Case> cases;
  for (DType t : {DType::f32, DType::i32, DType::f16}) {
    const int64_t axis = pick(rng, 0, 2);
    Shape base = random_shape(rng, 3, 1, 4);
    const int parts = static_cast<int>(pick(rng, 1, 3));
    CaseGraph cg;
    std::vector<TensorId> in;
    std::vector<Values> vals;
    std::vector<Shape> shapes;
    for (int p = 0; p < parts; ++p) {
      Shape s = base;
      s[axis] = pick(rng, 1, 4);
      vals.push_back(random_values(rng, t, num_elements(s)));
      shapes.push_back(s);
      std::string name = "x";
      name += std::to_string(p);
      in.push_back(cg.input(name, s, t, vals.back().bytes));
    }
    Case c = cg.finish("concat " + dt(t) + " " + std::to_string(parts) + " inputs axis " + std::to_string(axis),
                       OpKind::concat, in, {{"axis", axis}});
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= base[d];
    for (int64_t o = 0; o < outer; ++o)
      for (int p = 0; p < parts; ++p) {
        const int64_t run = num_elements(shapes[p]) / outer;
        c.expected.insert(c.expected.end(), vals[p].v.begin() + o * run, vals[p].v.begin() + (o + 1) * run);
      }
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(slice) {
  std::vector<Case> cases;
  for (DType t : kMoveDTypes) {
    Shape s = random_shape(rng, 3, 1, 6);
    std::vector<int64_t> begin(3), size(3);
    Shape ext(3);
    for (int d = 0; d < 3; ++d) {
      begin[d] = pick(rng, 0, s[d] - 1);
      size[d] = pick(rng, 0, 2) == 0 ? -1 : pick(rng, 1, s[d] - begin[d]);
      ext[d] = size[d] == -1 ? s[d] - begin[d] : size[d];
    }
    Values x = random_values(rng, t, num_elements(s));
    CaseGraph cg;
    Case c = cg.finish("slice " + dt(t) + " " + shape_str(s) + " begin " + shape_str(begin) + " size " + shape_str(size),
                       OpKind::slice, {cg.input("x", s, t, x.bytes, x.quant)}, {{"begin", begin}, {"size", size}},
                       std::nullopt, x.quant);
    auto st = row_major_strides(s);
    c.expected = gather_box(x.v, ext, begin[0] * st[0] + begin[1] * st[1] + begin[2] * st[2], st);
    cases.push_back(std::move(c));
  }
  return cases;
}

// Positive and negative strides, and a shrink axis.
TESSERA_CONFORMANCE_CASES(strided_slice) {
  std::vector<Case> cases;
  for (DType t : kMoveDTypes) {
    Shape s = random_shape(rng, 3, 2, 7);
    std::vector<int64_t> b(3), e(3), st(3), shrink;
    Shape ext(3);
    for (int d = 0; d < 3; ++d) {
      st[d] = pick(rng, 0, 2) == 0 ? -pick(rng, 1, 2) : pick(rng, 1, 3);
      if (st[d] > 0) {
        b[d] = pick(rng, 0, s[d] - 1);
        e[d] = pick(rng, b[d] + 1, s[d]);
        ext[d] = (e[d] - b[d] + st[d] - 1) / st[d];
      } else {
        b[d] = pick(rng, 0, s[d] - 1);
        e[d] = pick(rng, -1, b[d] - 1);
        ext[d] = (b[d] - e[d] - st[d] - 1) / -st[d];
      }
    }
    if (ext[1] == 1) shrink.push_back(1);
    Values x = random_values(rng, t, num_elements(s));
    CaseGraph cg;
    Case c = cg.finish("strided_slice " + dt(t) + " " + shape_str(s) + " begin " + shape_str(b) + " end " + shape_str(e) +
                           " strides " + shape_str(st),
                       OpKind::strided_slice, {cg.input("x", s, t, x.bytes, x.quant)},
                       {{"begin", b}, {"end", e}, {"strides", st}, {"shrink_axes", shrink}}, std::nullopt, x.quant);
    auto rs = row_major_strides(s);
    std::vector<int64_t> step(3);
    for (int d = 0; d < 3; ++d) step[d] = st[d] * rs[d];
    c.expected = gather_box(x.v, ext, b[0] * rs[0] + b[1] * rs[1] + b[2] * rs[2], step);
    cases.push_back(std::move(c));
  }
  return cases;
}

// pad: floats with attr value; quantized with the zero point (PAD), or with attr value in
// stored units when given (PADV2's constant_values).
TESSERA_CONFORMANCE_CASES(pad) {
  std::vector<Case> cases;
  for (DType t : kMoveDTypes)
    for (bool with_value : {true, false}) {
      if (!with_value && dtype_is_float(t)) continue;
      Shape s = random_shape(rng, 3, 1, 4);
      std::vector<int64_t> p(6);
      for (auto& v : p) v = pick(rng, 0, 2);
      Values x = random_values(rng, t, num_elements(s));
      const double value = dtype_is_float(t) ? 1.5 : 7.0;
      const double fill = with_value ? value : static_cast<double>(x.quant.zero_point_at(0));
      AttrMap attrs{{"paddings", p}};
      if (with_value) attrs["value"] = value;
      CaseGraph cg;
      Case c = cg.finish("pad " + dt(t) + " " + shape_str(s) + " paddings " + shape_str(p) + (with_value ? " value" : " zero point"),
                         OpKind::pad, {cg.input("x", s, t, x.bytes, x.quant)}, attrs, std::nullopt, x.quant);
      Shape os = {s[0] + p[0] + p[1], s[1] + p[2] + p[3], s[2] + p[4] + p[5]};
      for (int64_t i = 0; i < os[0]; ++i)
        for (int64_t j = 0; j < os[1]; ++j)
          for (int64_t k = 0; k < os[2]; ++k) {
            const int64_t a = i - p[0], b = j - p[2], cc = k - p[4];
            const bool inside = a >= 0 && a < s[0] && b >= 0 && b < s[1] && cc >= 0 && cc < s[2];
            c.expected.push_back(inside ? x.v[(a * s[1] + b) * s[2] + cc] : fill);
          }
      cases.push_back(std::move(c));
    }
  return cases;
}

TESSERA_CONFORMANCE_CASES(gather) {
  std::vector<Case> cases;
  for (DType t : kMoveDTypes) {
    Shape s = random_shape(rng, 3, 1, 5);
    const int64_t axis = pick(rng, 0, 2);
    const bool i64 = t == DType::i16;
    Shape is = random_shape(rng, static_cast<int>(pick(rng, 1, 2)), 1, 4);
    std::vector<int64_t> idx(num_elements(is));
    for (auto& v : idx) v = pick(rng, 0, s[axis] - 1);
    Values x = random_values(rng, t, num_elements(s));
    CaseGraph cg;
    TensorId xi = cg.input("x", s, t, x.bytes, x.quant);
    std::vector<int32_t> idx32(idx.begin(), idx.end());
    TensorId ii = i64 ? cg.input("idx", is, DType::i64, bytes_of(idx)) : cg.input("idx", is, DType::i32, bytes_of(idx32));
    Case c = cg.finish("gather " + dt(t) + " " + shape_str(s) + " axis " + std::to_string(axis) + " idx " + shape_str(is),
                       OpKind::gather, {xi, ii}, {{"axis", axis}}, std::nullopt, x.quant);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < 3; ++d) {
      if (d < axis) outer *= s[d];
      if (d > axis) inner *= s[d];
    }
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j : idx)
        for (int64_t i = 0; i < inner; ++i) c.expected.push_back(x.v[(o * s[axis] + j) * inner + i]);
    cases.push_back(std::move(c));
  }
  return cases;
}

// gather_nd: index tuples of length k select slices x[i0, .., ik-1, ...].
TESSERA_CONFORMANCE_CASES(gather_nd) {
  std::vector<Case> cases;
  for (DType t : kMoveDTypes) {
    Shape s = random_shape(rng, 3, 1, 5);
    const int64_t k = pick(rng, 1, 3), n = pick(rng, 1, 5);
    std::vector<int32_t> idx;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t d = 0; d < k; ++d) idx.push_back(static_cast<int32_t>(pick(rng, 0, s[d] - 1)));
    Values x = random_values(rng, t, num_elements(s));
    CaseGraph cg;
    TensorId xi = cg.input("x", s, t, x.bytes, x.quant);
    TensorId ii = cg.input("idx", {n, k}, DType::i32, bytes_of(idx));
    Case c = cg.finish("gather_nd " + dt(t) + " " + shape_str(s) + " tuples of " + std::to_string(k), OpKind::gather_nd,
                       {xi, ii}, {}, std::nullopt, x.quant);
    auto st = row_major_strides(s);
    const int64_t slice = k == 3 ? 1 : st[k - 1];  // elements per selected slice
    for (int64_t j = 0; j < n; ++j) {
      int64_t off = 0;
      for (int64_t d = 0; d < k; ++d) off += idx[j * k + d] * st[d];
      c.expected.insert(c.expected.end(), x.v.begin() + off, x.v.begin() + off + slice);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// get_rows from tables in every row dtype.
TESSERA_CONFORMANCE_CASES(get_rows) {
  std::vector<Case> cases;
  for (DType t : {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0}) {
    const int64_t N = pick(rng, 2, 12), D = dtype_is_block(t) ? 32 * pick(rng, 1, 2) : pick(rng, 1, 20);
    const int64_t T = pick(rng, 1, 6);
    auto tab = uniform(rng, N * D);
    auto bytes = encode(t, tab);
    auto dec = decode(t, bytes, N * D);
    std::vector<int32_t> ids(T);
    for (auto& v : ids) v = static_cast<int32_t>(pick(rng, 0, N - 1));
    CaseGraph cg;
    TensorId ti = cg.weight("table", {N, D}, t, bytes);
    TensorId ii = cg.input("ids", {T}, DType::i32, bytes_of(ids));
    Case c = cg.finish("get_rows " + dt(t) + " [" + std::to_string(N) + "," + std::to_string(D) + "]", OpKind::get_rows,
                       {ti, ii}, {});
    for (int32_t r : ids) c.expected.insert(c.expected.end(), dec.begin() + r * D, dec.begin() + (r + 1) * D);
    cases.push_back(std::move(c));
  }
  return cases;
}

struct ResizeMode {
  bool align, half;
};
const ResizeMode kResizeModes[] = {{false, false}, {true, false}, {false, true}};

double resize_scale(int64_t in, int64_t out, bool align) {
  return (align && out > 1) ? static_cast<double>(in - 1) / (out - 1) : static_cast<double>(in) / out;
}

TESSERA_CONFORMANCE_CASES(resize_nearest) {
  std::vector<Case> cases;
  int m = 0;
  for (DType t : {DType::f32, DType::u8, DType::f16}) {
    for (const ResizeMode& mode : kResizeModes) {
      Shape s = {pick(rng, 1, 2), pick(rng, 1, 6), pick(rng, 1, 6), pick(rng, 1, 3)};
      const int64_t OH = pick(rng, 1, 12), OW = pick(rng, 1, 12);
      Values x = random_values(rng, t, num_elements(s));
      CaseGraph cg;
      Case c = cg.finish("resize_nearest " + dt(t) + " " + shape_str(s) + " -> " + std::to_string(OH) + "x" +
                             std::to_string(OW) + " mode " + std::to_string(m++ % 3),
                         OpKind::resize_nearest, {cg.input("x", s, t, x.bytes, x.quant)},
                         {{"out_h", OH}, {"out_w", OW}, {"align_corners", int64_t{mode.align}},
                          {"half_pixel_centers", int64_t{mode.half}}},
                         std::nullopt, x.quant);
      auto src = [&](int64_t o, int64_t in, int64_t out) {
        const double v = (o + (mode.half ? 0.5 : 0.0)) * resize_scale(in, out, mode.align);
        int64_t i = std::min<int64_t>(mode.align ? static_cast<int64_t>(std::round(v)) : static_cast<int64_t>(std::floor(v)), in - 1);
        return std::max<int64_t>(i, 0);
      };
      for (int64_t b = 0; b < s[0]; ++b)
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t xx = 0; xx < OW; ++xx)
            for (int64_t ch = 0; ch < s[3]; ++ch)
              c.expected.push_back(x.v[((b * s[1] + src(y, s[1], OH)) * s[2] + src(xx, s[2], OW)) * s[3] + ch]);
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(resize_bilinear) {
  std::vector<Case> cases;
  for (const ResizeMode& mode : kResizeModes) {
    Shape s = {pick(rng, 1, 2), pick(rng, 1, 6), pick(rng, 1, 6), pick(rng, 1, 3)};
    const int64_t OH = pick(rng, 1, 12), OW = pick(rng, 1, 12);
    auto x = uniform(rng, num_elements(s));
    CaseGraph cg;
    Case c = cg.finish("resize_bilinear " + shape_str(s) + " -> " + std::to_string(OH) + "x" + std::to_string(OW) +
                           (mode.align ? " align_corners" : "") + (mode.half ? " half_pixel" : ""),
                       OpKind::resize_bilinear, {cg.input_f32("x", s, x)},
                       {{"out_h", OH}, {"out_w", OW}, {"align_corners", int64_t{mode.align}},
                        {"half_pixel_centers", int64_t{mode.half}}});
    struct L {
      int64_t lo, hi;
      double f;
    };
    auto lerp = [&](int64_t o, int64_t in, int64_t out) {
      const double sc = resize_scale(in, out, mode.align);
      const double v = mode.half ? (o + 0.5) * sc - 0.5 : o * sc;
      L l{std::max<int64_t>(static_cast<int64_t>(std::floor(v)), 0), std::min<int64_t>(static_cast<int64_t>(std::ceil(v)), in - 1), 0};
      l.f = v - l.lo;
      return l;
    };
    auto at = [&](int64_t b, int64_t y, int64_t xx, int64_t ch) { return static_cast<double>(x[((b * s[1] + y) * s[2] + xx) * s[3] + ch]); };
    for (int64_t b = 0; b < s[0]; ++b)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t xx = 0; xx < OW; ++xx) {
          const L ly = lerp(y, s[1], OH), lx = lerp(xx, s[2], OW);
          for (int64_t ch = 0; ch < s[3]; ++ch) {
            c.expected.push_back(at(b, ly.lo, lx.lo, ch) * (1 - ly.f) * (1 - lx.f) + at(b, ly.hi, lx.lo, ch) * ly.f * (1 - lx.f) +
                                 at(b, ly.lo, lx.hi, ch) * (1 - ly.f) * lx.f + at(b, ly.hi, lx.hi, ch) * ly.f * lx.f);
            c.magnitude.push_back(1.0);  // a convex combination of values in [-1, 1]
          }
        }
    c.accum = 4;
    cases.push_back(std::move(c));
  }
  return cases;
}

// scatter_rows into a state over two runs: rows written by the first run must survive
// the second, which writes other rows.
TESSERA_CONFORMANCE_CASES(scatter_rows) {
  std::vector<Case> cases;
  for (DType t : {DType::f32, DType::f16, DType::i16}) {
    const int64_t H = pick(rng, 1, 3), L = pick(rng, 4, 10), D = pick(rng, 1, 8);
    const int64_t T1 = pick(rng, 1, L / 2);  // two writes of T1 rows fit in L
    const int32_t p1 = 0, p2 = static_cast<int32_t>(T1);
    Values v1 = random_values(rng, t, H * T1 * D), v2 = random_values(rng, t, H * T1 * D);
    CaseGraph cg;
    TensorId st = cg.state("kv", {H, L, D}, t);
    TensorId vi = cg.input("values", {H, T1, D}, t, v1.bytes);
    TensorId pi = cg.input("pos", {1}, DType::i32, bytes_of(std::vector<int32_t>{p1}));
    Case c = cg.finish("scatter_rows " + dt(t) + " state [" + std::to_string(H) + "," + std::to_string(L) + "," +
                           std::to_string(D) + "]",
                       OpKind::scatter_rows, {st, vi, pi}, {{"axis", int64_t{-2}}});
    // Second run: the same number of rows at position T1 (values v2).
    c.runs.push_back({v2.bytes, bytes_of(std::vector<int32_t>{p2})});
    c.expected.assign(H * L * D, 0.0);  // state starts cleared
    for (int64_t h = 0; h < H; ++h)
      for (int64_t r = 0; r < T1; ++r)
        for (int64_t d = 0; d < D; ++d) {
          c.expected[(h * L + p1 + r) * D + d] = v1.v[(h * T1 + r) * D + d];
          c.expected[(h * L + p2 + r) * D + d] = v2.v[(h * T1 + r) * D + d];
        }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
