// Conformance cases: reductions, softmax (with masks), rms_norm, layer_norm, rope, attention,
// arg_max.
#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

enum class Red { mean, sum, max, min, prod };

std::vector<Case> reduce_cases(Rng& rng, OpKind op, Red kind) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    const int rank = static_cast<int>(pick(rng, 1, 4));
    Shape s = random_shape(rng, rank, 1, 6);
    std::vector<int64_t> axes;
    for (int d = 0; d < rank; ++d)
      if (pick(rng, 0, 1)) axes.push_back(pick(rng, 0, 1) ? d : d - rank);  // negative axes too
    if (axes.empty()) axes.push_back(rank - 1);
    const bool keep = variant == 1;
    std::vector<bool> red(rank, false);
    for (int64_t a : axes) red[a < 0 ? a + rank : a] = true;
    // Products stay near 1 in magnitude: inputs in [0.5, 1.5] with random signs.
    auto x = uniform(rng, num_elements(s), -2, 2);
    if (kind == Red::prod)
      for (float& v : x) v = (v < 0 ? -1.0f : 1.0f) * (0.5f + std::fabs(v) / 2);
    CaseGraph cg;
    Case c = cg.finish(std::string(op_name(op)) + " " + shape_str(s) + " axes " + shape_str(axes), op,
                       {cg.input_f32("x", s, x)}, {{"axes", axes}, {"keep_dims", int64_t{keep}}});
    // Output index of each input element: the row-major index over the kept dims.
    const int64_t n_out = out_elements(c);
    std::vector<double> acc(n_out, kind == Red::max ? -1e300 : kind == Red::min ? 1e300 : kind == Red::prod ? 1.0 : 0.0),
        mag(n_out, kind == Red::prod ? 1.0 : 0.0);
    std::vector<int64_t> cnt(n_out, 0);
    for (int64_t i = 0; i < num_elements(s); ++i) {
      int64_t rem = i, o = 0, stride = 1;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t idx = rem % s[d];
        rem /= s[d];
        if (!red[d]) {
          o += idx * stride;
          stride *= s[d];
        }
      }
      switch (kind) {
        case Red::max: acc[o] = std::max(acc[o], static_cast<double>(x[i])); break;
        case Red::min: acc[o] = std::min(acc[o], static_cast<double>(x[i])); break;
        case Red::prod: acc[o] *= x[i]; break;
        default: acc[o] += x[i];
      }
      if (kind == Red::prod) mag[o] *= std::fabs(x[i]);
      else mag[o] += std::fabs(x[i]);
      cnt[o]++;
    }
    for (int64_t o = 0; o < n_out; ++o) {
      c.expected.push_back(kind == Red::mean ? acc[o] / cnt[o] : acc[o]);
      c.magnitude.push_back(kind == Red::mean                        ? mag[o] / cnt[o]
                            : kind == Red::max || kind == Red::min ? std::fabs(acc[o])
                                                                   : mag[o]);
      c.accum = std::max(c.accum, cnt[o]);
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(mean) { return reduce_cases(rng, OpKind::mean, Red::mean); }
TESSERA_CONFORMANCE_CASES(sum) { return reduce_cases(rng, OpKind::sum, Red::sum); }
TESSERA_CONFORMANCE_CASES(reduce_max) { return reduce_cases(rng, OpKind::reduce_max, Red::max); }
TESSERA_CONFORMANCE_CASES(reduce_min) { return reduce_cases(rng, OpKind::reduce_min, Red::min); }
TESSERA_CONFORMANCE_CASES(reduce_prod) { return reduce_cases(rng, OpKind::reduce_prod, Red::prod); }

// softmax over the last axis or an inner axis, with beta, and with a causal mask [T, T]
// broadcast over heads [H, T, T] (as attention uses it).
TESSERA_CONFORMANCE_CASES(softmax) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    const bool masked = variant == 2;
    const int64_t H = pick(rng, 1, 3), T = pick(rng, 2, 9);
    Shape s = masked ? Shape{H, T, T} : random_shape(rng, 3, 1, 8);
    const int axis = variant == 1 ? 1 : 2;
    const double beta = variant == 0 ? 0.5 : 1.0;
    auto x = uniform(rng, num_elements(s), -4, 4);
    std::vector<float> mask;
    CaseGraph cg;
    std::vector<TensorId> in = {cg.input_f32("x", s, x)};
    if (masked) {
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) mask.push_back(j <= i ? 0.0f : -INFINITY);
      in.push_back(cg.input_f32("mask", {T, T}, mask));
    }
    Case c = cg.finish("softmax " + shape_str(s) + " axis " + std::to_string(axis) + (masked ? " causal mask" : ""),
                       OpKind::softmax, in, {{"axis", int64_t{axis}}, {"beta", beta}});
    const int64_t outer = axis == 1 ? s[0] : s[0] * s[1], len = s[axis], inner = axis == 1 ? s[2] : 1;
    c.expected.resize(num_elements(s));
    c.magnitude.resize(num_elements(s));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t in2 = 0; in2 < inner; ++in2) {
        std::vector<double> z(len);
        double mx = -1e300, zmax = 0;
        for (int64_t k = 0; k < len; ++k) {
          const int64_t i = (o * len + k) * inner + in2;
          z[k] = beta * x[i] + (masked ? mask[i % (T * T)] : 0.0);
          mx = std::max(mx, z[k]);
          if (std::isfinite(z[k])) zmax = std::max(zmax, std::fabs(z[k]));
        }
        double sum = 0;
        for (int64_t k = 0; k < len; ++k) sum += std::exp(z[k] - mx);
        for (int64_t k = 0; k < len; ++k) {
          const int64_t i = (o * len + k) * inner + in2;
          c.expected[i] = std::exp(z[k] - mx) / sum;
          // A rounded logit moves every probability by about y * (|z| + max|z|) * e.
          c.magnitude[i] = c.expected[i] * (1 + 2 * zmax);
        }
      }
    c.accum = len;
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<Case> norm_cases(Rng& rng, bool layer) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    Shape s = random_shape(rng, static_cast<int>(pick(rng, 1, 3)), 1, 5);
    const int64_t D = pick(rng, 2, 48);
    s.push_back(D);
    const double eps = variant == 0 ? 1e-5 : 1e-6;
    auto x = uniform(rng, num_elements(s), -3, 3);
    auto g = uniform(rng, D, 0.5f, 1.5f), b = uniform(rng, D);
    CaseGraph cg;
    std::vector<TensorId> in = {cg.input_f32("x", s, x)};
    if (variant >= 1) in.push_back(cg.weight("gamma", {D}, DType::f32, bytes_of(g)));
    if (layer && variant == 2) in.push_back(cg.weight("beta", {D}, DType::f32, bytes_of(b)));
    const OpKind op = layer ? OpKind::layer_norm : OpKind::rms_norm;
    Case c = cg.finish(std::string(op_name(op)) + " " + shape_str(s) + " params " + std::to_string(in.size() - 1), op, in,
                       {{"eps", eps}});
    c.accum = D;
    for (int64_t r = 0; r < num_elements(s) / D; ++r) {
      double mean = 0, ss = 0, xmax = 0;
      for (int64_t i = 0; i < D; ++i) mean += x[r * D + i], xmax = std::max(xmax, std::fabs(static_cast<double>(x[r * D + i])));
      mean /= D;
      for (int64_t i = 0; i < D; ++i) {
        const double v = x[r * D + i] - (layer ? mean : 0.0);
        ss += v * v;
      }
      const double inv = 1 / std::sqrt(ss / D + eps);
      for (int64_t i = 0; i < D; ++i) {
        const double gi = variant >= 1 ? g[i] : 1.0, bi = layer && variant == 2 ? b[i] : 0.0;
        const double v = (x[r * D + i] - (layer ? mean : 0.0)) * inv * gi;
        c.expected.push_back(v + bi);
        // Every element of the row feeds the statistics: scale by the row's largest |x|.
        c.magnitude.push_back(std::fabs(v) + std::fabs(bi) + xmax * inv * gi);
      }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(rms_norm) { return norm_cases(rng, false); }
TESSERA_CONFORMANCE_CASES(layer_norm) { return norm_cases(rng, true); }

// attention: grouped KV heads, f32 and f16 caches, head sizes with and without a tail of
// D % 8, positions anywhere in the cache (rows past each position hold values that must
// not be read: large ones, so reading them would show); sliding windows (variants 4-6,
// the rows before each window hold large values too) and logit soft-capping (5-7).
TESSERA_CONFORMANCE_CASES(attention) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 8; ++variant) {
    const DType ct = variant % 2 ? DType::f16 : DType::f32;
    const int64_t Hkv = pick(rng, 1, 2), G = pick(rng, 1, 3), H = Hkv * G;
    const int64_t D = variant % 4 == 2 ? 12 : variant % 4 == 3 ? 40 : 8 * pick(rng, 1, 4);
    const int64_t L = pick(rng, 4, 20), T = pick(rng, 1, 4);
    const int64_t window = variant >= 4 && variant <= 6 ? pick(rng, 1, 4) : 0;
    const double softcap = variant >= 5 ? 1.5 : 0.0;  // below the scores' size: the cap matters
    const double scale = 1 / std::sqrt(static_cast<double>(D));
    std::vector<int32_t> pos(T);
    for (auto& p : pos) p = static_cast<int32_t>(pick(rng, 0, L - 1));
    auto q = uniform(rng, T * H * D, -2, 2);
    auto kf = uniform(rng, Hkv * L * D, -2, 2), vf = uniform(rng, Hkv * L * D, -2, 2);
    int32_t max_pos = 0;
    for (int32_t p : pos) max_pos = std::max(max_pos, p);
    int32_t min_first = max_pos;  // rows before every window are not read either
    for (int32_t p : pos) min_first = std::min<int32_t>(min_first, window ? std::max<int32_t>(0, p - window + 1) : 0);
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t j = 0; j < L; ++j)
        if (j > max_pos || j < min_first)
          for (int64_t i = 0; i < D; ++i) kf[(h * L + j) * D + i] = 1000, vf[(h * L + j) * D + i] = 1000;
    auto kb = encode(ct, kf), vb = encode(ct, vf);
    auto kd = decode(ct, kb, Hkv * L * D), vd = decode(ct, vb, Hkv * L * D);
    CaseGraph cg;
    const Shape cs = {Hkv, 1, L, D};
    std::vector<TensorId> in = {cg.input_f32("q", {T, H, D}, q), cg.input("k", cs, ct, kb), cg.input("v", cs, ct, vb),
                                cg.input("pos", {T}, DType::i32, bytes_of(pos))};
    Case c = cg.finish("attention q [" + std::to_string(T) + "," + std::to_string(H) + "," + std::to_string(D) +
                           "] cache " + shape_str(cs) + " " + dtype_name(ct) + " window " + std::to_string(window) +
                           " softcap " + std::to_string(softcap),
                       OpKind::attention, in, {{"scale", scale}, {"window", window}, {"softcap", softcap}});
    c.accum = std::max<int64_t>(L, D);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < H; ++h) {
        const int64_t kvh = h / G, j0 = window ? std::max<int64_t>(0, pos[t] - window + 1) : 0, n = pos[t] + 1 - j0;
        std::vector<double> s(n);
        double mx = -1e300, smag = 0;
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0, mag = 0;
          for (int64_t i = 0; i < D; ++i) {
            const double p = q[(t * H + h) * D + i] * kd[(kvh * L + j0 + j) * D + i];
            acc += p, mag += std::fabs(p);
          }
          s[j] = acc * scale;
          if (softcap > 0) s[j] = softcap * std::tanh(s[j] / softcap);
          smag = std::max(smag, mag * scale);
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (auto& v : s) sum += (v = std::exp(v - mx));
        for (int64_t i = 0; i < D; ++i) {
          double o = 0, vmax = 0;
          for (int64_t j = 0; j < n; ++j) {
            o += s[j] / sum * vd[(kvh * L + j0 + j) * D + i];
            vmax = std::max(vmax, std::fabs(vd[(kvh * L + j0 + j) * D + i]));
          }
          c.expected.push_back(o);
          // A score off by e moves the weights by a factor e^e: relative to the values'
          // size times the scores' size.
          c.magnitude.push_back(vmax * (1 + smag));
        }
      }
    cases.push_back(std::move(c));
  }
  return cases;
}

// rope: modes normal (llama) and neox, partial rotation (n_dims < D), a batch dim.
TESSERA_CONFORMANCE_CASES(rope) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 4; ++variant) {
    const bool neox = variant % 2 == 1;
    const int64_t T = pick(rng, 1, 5), H = pick(rng, 1, 3), D = 2 * pick(rng, 2, 8);
    const int64_t n_dims = variant == 2 ? D / 2 - (D / 2) % 2 : D;
    Shape s = variant == 3 ? Shape{2, T, H, D} : Shape{T, H, D};
    const double base = variant == 1 ? 500000.0 : 10000.0;
    auto x = uniform(rng, num_elements(s));
    std::vector<int32_t> pos(T);
    for (auto& p : pos) p = static_cast<int32_t>(pick(rng, 0, 64));
    CaseGraph cg;
    TensorId xi = cg.input_f32("x", s, x);
    TensorId pi = cg.input("pos", {T}, DType::i32, bytes_of(pos));
    AttrMap attrs = {{"mode", std::string(neox ? "neox" : "normal")}, {"freq_base", base}};
    if (n_dims != D) attrs["n_dims"] = n_dims;
    if (n_dims < 2) continue;
    Case c = cg.finish("rope " + std::string(neox ? "neox " : "normal ") + shape_str(s) + " n_dims " + std::to_string(n_dims),
                       OpKind::rope, {xi, pi}, attrs);
    c.expected.assign(x.begin(), x.end());
    c.magnitude.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) c.magnitude[i] = std::fabs(x[i]);
    const int64_t rows = num_elements(s) / (T * H * D);
    for (int64_t b = 0; b < rows; ++b)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t p = 0; p < n_dims / 2; ++p) {
            const int64_t off = ((b * T + t) * H + h) * D;
            const int64_t i0 = neox ? p : 2 * p, i1 = neox ? p + n_dims / 2 : 2 * p + 1;
            const double theta = pos[t] * std::pow(base, -2.0 * p / n_dims);
            const double x0 = x[off + i0], x1 = x[off + i1];
            c.expected[off + i0] = x0 * std::cos(theta) - x1 * std::sin(theta);
            c.expected[off + i1] = x0 * std::sin(theta) + x1 * std::cos(theta);
            // An f32 angle is off by about theta * 2^-24; that scales with the position.
            c.magnitude[off + i0] = c.magnitude[off + i1] = (std::fabs(x0) + std::fabs(x1)) * (1 + theta);
          }
    cases.push_back(std::move(c));
  }
  return cases;
}

// arg_max of f32 (i32 and i64 outputs) and of u8 codes.
TESSERA_CONFORMANCE_CASES(arg_max) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    Shape s = random_shape(rng, 3, 1, 7);
    const int64_t axis = pick(rng, -3, 2);
    const int ax = static_cast<int>(axis < 0 ? axis + 3 : axis);
    const DType in_t = variant == 2 ? DType::u8 : DType::f32;
    const DType out_t = variant == 1 ? DType::i64 : DType::i32;
    std::vector<double> vals;
    CaseGraph cg;
    TensorId xi;
    if (in_t == DType::f32) {
      auto x = uniform(rng, num_elements(s));
      vals.assign(x.begin(), x.end());
      xi = cg.input_f32("x", s, x);
    } else {
      std::vector<uint8_t> x(num_elements(s));
      for (auto& v : x) v = static_cast<uint8_t>(pick(rng, 0, 255));
      vals.assign(x.begin(), x.end());
      QuantParams q;
      q.scale = {0.05f};
      q.zero_point = {128};
      xi = cg.input("x", s, DType::u8, x, q);
    }
    Case c = cg.finish("arg_max " + std::string(dtype_name(in_t)) + " " + shape_str(s) + " axis " + std::to_string(axis),
                       OpKind::arg_max, {xi}, {{"axis", axis}}, out_t);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < 3; ++d) (d < ax ? outer : d > ax ? inner : outer) *= d == ax ? 1 : s[d];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        for (int64_t k = 1; k < s[ax]; ++k)
          if (vals[(o * s[ax] + k) * inner + i] > vals[(o * s[ax] + best) * inner + i]) best = k;
        c.expected.push_back(static_cast<double>(best));
      }
    cases.push_back(std::move(c));
  }
  return cases;
}

// arg_min: the first minimum along an axis, f32 with ties (values on a coarse grid) and i8
// codes.
TESSERA_CONFORMANCE_CASES(arg_min) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 2; ++variant) {
    Shape s = random_shape(rng, 3, 2, 7);
    const int64_t axis = pick(rng, -3, 2);
    const int ax = static_cast<int>(axis < 0 ? axis + 3 : axis);
    std::vector<double> vals;
    CaseGraph cg;
    TensorId xi;
    if (variant == 0) {
      auto x = uniform(rng, num_elements(s), -2, 2);
      for (float& v : x) v = std::round(v * 2) / 2;
      vals.assign(x.begin(), x.end());
      xi = cg.input_f32("x", s, x);
    } else {
      std::vector<uint8_t> x(num_elements(s));
      for (auto& v : x) v = static_cast<uint8_t>(pick(rng, 0, 255));
      for (uint8_t b : x) vals.push_back(static_cast<int8_t>(b));
      QuantParams q;
      q.scale = {0.1f};
      q.zero_point = {-3};
      xi = cg.input("x", s, DType::i8, x, q);
    }
    Case c = cg.finish("arg_min " + std::string(variant ? "i8 " : "f32 ") + shape_str(s) + " axis " + std::to_string(axis),
                       OpKind::arg_min, {xi}, {{"axis", axis}}, DType::i32);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < 3; ++d) (d < ax ? outer : d > ax ? inner : outer) *= d == ax ? 1 : s[d];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t best = 0;
        for (int64_t k = 1; k < s[ax]; ++k)
          if (vals[(o * s[ax] + k) * inner + i] < vals[(o * s[ax] + best) * inner + i]) best = k;
        c.expected.push_back(static_cast<double>(best));
      }
    cases.push_back(std::move(c));
  }
  return cases;
}

// log_softmax along the last axis: x - max - log(sum e^(x - max)).
TESSERA_CONFORMANCE_CASES(log_softmax) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 2; ++variant) {
    const Shape s = random_shape(rng, variant + 2, 1, 9);
    auto x = uniform(rng, num_elements(s), -6, 6);
    CaseGraph cg;
    Case c = cg.finish("log_softmax " + shape_str(s), OpKind::log_softmax, {cg.input_f32("x", s, x)}, {});
    const int64_t d = s.back();
    for (int64_t r = 0; r < num_elements(s) / d; ++r) {
      double mx = -1e300;
      for (int64_t k = 0; k < d; ++k) mx = std::max(mx, static_cast<double>(x[r * d + k]));
      double sum = 0;
      for (int64_t k = 0; k < d; ++k) sum += std::exp(x[r * d + k] - mx);
      for (int64_t k = 0; k < d; ++k) {
        const double y = x[r * d + k] - mx - std::log(sum);
        c.expected.push_back(y);
        c.magnitude.push_back(std::fabs(y) + std::fabs(mx) + std::fabs(std::log(sum)));
      }
    }
    c.accum = d;
    cases.push_back(std::move(c));
  }
  return cases;
}

// l2_norm along the last axis, with the eps floor reached by a zero row.
TESSERA_CONFORMANCE_CASES(l2_norm) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 2; ++variant) {
    const Shape s = random_shape(rng, variant + 2, 2, 8);
    auto x = uniform(rng, num_elements(s), -3, 3);
    const int64_t d = s.back();
    if (variant == 1)
      for (int64_t k = 0; k < d; ++k) x[k] = 0;  // row 0: norm 0, floored at eps
    const double eps = variant == 1 ? 1e-3 : 1e-6;
    CaseGraph cg;
    Case c = cg.finish("l2_norm " + shape_str(s), OpKind::l2_norm, {cg.input_f32("x", s, x)}, {{"eps", eps}});
    for (int64_t r = 0; r < num_elements(s) / d; ++r) {
      double sq = 0;
      for (int64_t k = 0; k < d; ++k) sq += static_cast<double>(x[r * d + k]) * x[r * d + k];
      const double norm = std::max(std::sqrt(sq), eps);
      for (int64_t k = 0; k < d; ++k) {
        c.expected.push_back(x[r * d + k] / norm);
        c.magnitude.push_back(std::max(std::fabs(x[r * d + k] / norm), 1e-3));
      }
    }
    c.accum = d;
    cases.push_back(std::move(c));
  }
  return cases;
}

// cumsum along each axis in turn, inclusive / exclusive, forward / reversed; f32 and i32.
TESSERA_CONFORMANCE_CASES(cumsum) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 5; ++variant) {
    const Shape s = random_shape(rng, 3, 1, 6);
    const int64_t axis = pick(rng, -3, 2);
    const int ax = static_cast<int>(axis < 0 ? axis + 3 : axis);
    const bool exclusive = variant & 1, reverse = (variant >> 1) & 1, integer = variant == 4;
    std::vector<double> vals;
    CaseGraph cg;
    TensorId xi;
    if (integer) {
      std::vector<int32_t> x(num_elements(s));
      for (auto& v : x) v = static_cast<int32_t>(pick(rng, -1000, 1000));
      vals.assign(x.begin(), x.end());
      xi = cg.input("x", s, DType::i32, bytes_of(x));
    } else {
      auto x = uniform(rng, num_elements(s), -2, 2);
      vals.assign(x.begin(), x.end());
      xi = cg.input_f32("x", s, x);
    }
    Case c = cg.finish("cumsum " + std::string(integer ? "i32 " : "f32 ") + shape_str(s) + " axis " + std::to_string(axis) +
                           (exclusive ? " exclusive" : "") + (reverse ? " reverse" : ""),
                       OpKind::cumsum, {xi},
                       {{"axis", axis}, {"exclusive", int64_t{exclusive}}, {"reverse", int64_t{reverse}}});
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < 3; ++d) (d < ax ? outer : d > ax ? inner : outer) *= d == ax ? 1 : s[d];
    c.expected.assign(vals.size(), 0);
    c.magnitude.assign(vals.size(), 0);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        double acc = 0, mag = 0;
        for (int64_t j = 0; j < s[ax]; ++j) {
          const int64_t k = reverse ? s[ax] - 1 - j : j;
          const int64_t at = (o * s[ax] + k) * inner + i;
          if (!exclusive) acc += vals[at], mag += std::fabs(vals[at]);
          c.expected[at] = acc;
          c.magnitude[at] = mag;
          if (exclusive) acc += vals[at], mag += std::fabs(vals[at]);
        }
      }
    c.accum = s[ax];
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
