// Conformance cases: conv2d, depthwise_conv2d, transpose_conv2d, pools, fully_connected and
// matmul (float).
#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

double act_apply(double v, const std::string& a) {
  if (a == "relu") return std::max(v, 0.0);
  if (a == "relu6") return std::clamp(v, 0.0, 6.0);
  if (a == "relu_n1_to_1") return std::clamp(v, -1.0, 1.0);
  return v;
}

struct Win {
  int64_t kh, kw, sh, sw, dh, dw, pt, pb, pl, pr;
  AttrMap attrs() const {
    return {{"stride_h", sh}, {"stride_w", sw}, {"dilation_h", dh}, {"dilation_w", dw},
            {"pad_top", pt},  {"pad_bottom", pb}, {"pad_left", pl}, {"pad_right", pr}};
  }
  int64_t out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) const {
    return (in + p0 + p1 - ((k - 1) * d + 1)) / s + 1;
  }
};

Win random_window(Rng& rng, int64_t kh, int64_t kw, bool dilate) {
  Win w{kh, kw, pick(rng, 1, 2), pick(rng, 1, 2), dilate ? pick(rng, 1, 2) : 1, dilate ? pick(rng, 1, 2) : 1,
        pick(rng, 0, 1), pick(rng, 0, 1), pick(rng, 0, 1), pick(rng, 0, 1)};
  return w;
}

const char* kActs[] = {"none", "relu", "relu6", "relu_n1_to_1"};

// conv2d and depthwise_conv2d share one reference: output channel oc of group g reads
// input channels [g*IC, (g+1)*IC) (depthwise: IC = 1, channel oc / M).
std::vector<Case> conv_cases(Rng& rng, bool depthwise) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 4; ++variant) {
    const int64_t N = pick(rng, 1, 2), H = pick(rng, 3, 9), W = pick(rng, 3, 9), C = pick(rng, 1, 6);
    const int64_t KH = pick(rng, 1, 3), KW = pick(rng, 1, 3);
    const Win win = random_window(rng, KH, KW, true);
    if (H + win.pt + win.pb < (KH - 1) * win.dh + 1 || W + win.pl + win.pr < (KW - 1) * win.dw + 1) {
      --variant;
      continue;
    }
    const int64_t M = depthwise ? pick(rng, 1, 2) : 1;
    const int64_t groups = depthwise ? C : (variant == 3 && C % 2 == 0 ? 2 : 1);
    const int64_t IC = depthwise ? 1 : C / groups;
    const int64_t OC = depthwise ? C * M : pick(rng, 1, 6) * groups;
    const int64_t OH = win.out(H, KH, win.sh, win.dh, win.pt, win.pb), OW = win.out(W, KW, win.sw, win.dw, win.pl, win.pr);
    const Shape xs = {N, H, W, C};
    const Shape ws = depthwise ? Shape{1, KH, KW, OC} : Shape{OC, KH, KW, IC};
    auto x = uniform(rng, num_elements(xs));
    auto w = uniform(rng, num_elements(ws));
    auto b = uniform(rng, OC);
    const bool with_bias = variant != 1;
    const std::string act = kActs[variant % 4];
    CaseGraph cg;
    std::vector<TensorId> in = {cg.input_f32("x", xs, x), cg.weight("w", ws, DType::f32, bytes_of(w))};
    if (with_bias) in.push_back(cg.weight("bias", {OC}, DType::f32, bytes_of(b)));
    auto attrs = win.attrs();
    attrs["activation"] = act;
    if (depthwise) attrs["depth_multiplier"] = M;
    const OpKind op = depthwise ? OpKind::depthwise_conv2d : OpKind::conv2d;
    Case c = cg.finish(std::string(op_name(op)) + " x" + shape_str(xs) + " w" + shape_str(ws) + " act " + act, op, in, attrs);
    c.accum = KH * KW * IC + 1;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox)
          for (int64_t oc = 0; oc < OC; ++oc) {
            double acc = with_bias ? b[oc] : 0, mag = with_bias ? std::fabs(b[oc]) : 0;
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                const int64_t iy = oy * win.sh - win.pt + ky * win.dh, ix = ox * win.sw - win.pl + kx * win.dw;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                for (int64_t ic = 0; ic < IC; ++ic) {
                  const int64_t xc = depthwise ? oc / M : (oc / (OC / groups)) * IC + ic;
                  const double xv = x[((n * H + iy) * W + ix) * C + xc];
                  const double wv = depthwise ? w[(ky * KW + kx) * OC + oc] : w[((oc * KH + ky) * KW + kx) * IC + ic];
                  acc += xv * wv;
                  mag += std::fabs(xv * wv);
                }
              }
            c.expected.push_back(act_apply(acc, act));
            c.magnitude.push_back(mag);
          }
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(conv2d) { return conv_cases(rng, false); }
TESSERA_CONFORMANCE_CASES(depthwise_conv2d) { return conv_cases(rng, true); }

// transpose_conv2d: input pixel (iy, ix) adds x * w[oc, ky, kx, :] at output cell
// (iy * sh - pad_top + ky, ix * sw - pad_left + kx); reference in double by that scatter.
std::vector<Case> transpose_conv_cases(Rng& rng) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 4; ++variant) {
    const int64_t N = pick(rng, 1, 2), H = pick(rng, 2, 6), W = pick(rng, 2, 6), C = pick(rng, 1, 5);
    const int64_t KH = pick(rng, 1, 4), KW = pick(rng, 1, 4), SH = pick(rng, 1, 3), SW = pick(rng, 1, 3);
    const int64_t OC = pick(rng, 1, 6);
    // Output sizes and crops as TFLite's SAME (variant even) or VALID padding would give.
    const bool same = variant % 2 == 0;
    const int64_t OH = same ? H * SH : (H - 1) * SH + KH, OW = same ? W * SW : (W - 1) * SW + KW;
    const int64_t PT = std::max<int64_t>((H - 1) * SH + KH - OH, 0) / 2, PL = std::max<int64_t>((W - 1) * SW + KW - OW, 0) / 2;
    const Shape xs = {N, H, W, C}, ws = {OC, KH, KW, C};
    auto x = uniform(rng, num_elements(xs));
    auto w = uniform(rng, num_elements(ws));
    auto b = uniform(rng, OC);
    const bool with_bias = variant != 1;
    const std::string act = kActs[variant % 4];
    CaseGraph cg;
    std::vector<TensorId> in = {cg.input_f32("x", xs, x), cg.weight("w", ws, DType::f32, bytes_of(w))};
    if (with_bias) in.push_back(cg.weight("bias", {OC}, DType::f32, bytes_of(b)));
    AttrMap attrs{{"stride_h", SH}, {"stride_w", SW}, {"pad_top", PT}, {"pad_left", PL},
                  {"out_h", OH},    {"out_w", OW},    {"activation", act}};
    Case c = cg.finish("transpose_conv2d x" + shape_str(xs) + " w" + shape_str(ws) + " stride " + std::to_string(SH) + "x" +
                           std::to_string(SW) + (same ? " SAME" : " VALID") + " act " + act,
                       OpKind::transpose_conv2d, in, attrs);
    c.accum = KH * KW * C + 1;
    std::vector<double> acc(static_cast<size_t>(N * OH * OW * OC), 0.0), mag(acc.size(), 0.0);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t iy = 0; iy < H; ++iy)
        for (int64_t ix = 0; ix < W; ++ix)
          for (int64_t ky = 0; ky < KH; ++ky)
            for (int64_t kx = 0; kx < KW; ++kx) {
              const int64_t oy = iy * SH - PT + ky, ox = ix * SW - PL + kx;
              if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
              for (int64_t oc = 0; oc < OC; ++oc)
                for (int64_t ic = 0; ic < C; ++ic) {
                  const double p = static_cast<double>(x[((n * H + iy) * W + ix) * C + ic]) * w[((oc * KH + ky) * KW + kx) * C + ic];
                  acc[((n * OH + oy) * OW + ox) * OC + oc] += p;
                  mag[((n * OH + oy) * OW + ox) * OC + oc] += std::fabs(p);
                }
            }
    for (size_t i = 0; i < acc.size(); ++i) {
      const int64_t oc = static_cast<int64_t>(i) % OC;
      c.expected.push_back(act_apply(acc[i] + (with_bias ? b[oc] : 0.0), act));
      c.magnitude.push_back(mag[i] + (with_bias ? std::fabs(b[oc]) : 0.0));
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(transpose_conv2d) { return transpose_conv_cases(rng); }

std::vector<Case> pool_cases(Rng& rng, bool is_max) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 3; ++variant) {
    const int64_t N = pick(rng, 1, 2), H = pick(rng, 2, 9), W = pick(rng, 2, 9), C = pick(rng, 1, 5);
    const int64_t FH = pick(rng, 1, std::min<int64_t>(3, H)), FW = pick(rng, 1, std::min<int64_t>(3, W));
    Win win = random_window(rng, FH, FW, false);
    win.pt = std::min(win.pt, FH - 1), win.pb = std::min(win.pb, FH - 1);  // windows touch the input
    win.pl = std::min(win.pl, FW - 1), win.pr = std::min(win.pr, FW - 1);
    const int64_t OH = win.out(H, FH, win.sh, 1, win.pt, win.pb), OW = win.out(W, FW, win.sw, 1, win.pl, win.pr);
    const Shape xs = {N, H, W, C};
    auto x = uniform(rng, num_elements(xs), -3, 3);
    const std::string act = kActs[variant];
    auto attrs = win.attrs();
    attrs.erase("dilation_h");  // pools have none (ops.def)
    attrs.erase("dilation_w");
    attrs["filter_h"] = FH;
    attrs["filter_w"] = FW;
    attrs["activation"] = act;
    const OpKind op = is_max ? OpKind::max_pool2d : OpKind::avg_pool2d;
    CaseGraph cg;
    Case c = cg.finish(std::string(op_name(op)) + " " + shape_str(xs) + " filter " + std::to_string(FH) + "x" +
                           std::to_string(FW),
                       op, {cg.input_f32("x", xs, x)}, attrs);
    c.accum = FH * FW;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox)
          for (int64_t ch = 0; ch < C; ++ch) {
            double acc = is_max ? -1e300 : 0, mag = 0;
            int taps = 0;
            for (int64_t ky = 0; ky < FH; ++ky)
              for (int64_t kx = 0; kx < FW; ++kx) {
                const int64_t iy = oy * win.sh - win.pt + ky, ix = ox * win.sw - win.pl + kx;
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const double v = x[((n * H + iy) * W + ix) * C + ch];
                acc = is_max ? std::max(acc, v) : acc + v;
                mag = std::max(mag, std::fabs(v));
                ++taps;
              }
            if (!is_max) acc /= taps;
            c.expected.push_back(act_apply(acc, act));
            c.magnitude.push_back(mag);
          }
    cases.push_back(std::move(c));
  }
  return cases;
}

TESSERA_CONFORMANCE_CASES(avg_pool2d) { return pool_cases(rng, false); }
TESSERA_CONFORMANCE_CASES(max_pool2d) { return pool_cases(rng, true); }

// fully_connected with weights in every row dtype; keep_dims 0 flattens the input.
TESSERA_CONFORMANCE_CASES(fully_connected) {
  std::vector<Case> cases;
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16, DType::q8_0, DType::q4_0, DType::f32};
  for (int variant = 0; variant < 6; ++variant) {
    const DType wt = dtypes[variant];
    const int64_t IC = dtype_is_block(wt) ? 32 * pick(rng, 1, 3) : pick(rng, 1, 40);
    const int64_t OC = pick(rng, 1, 20);
    const bool batched = variant == 5;
    const Shape xs = batched ? Shape{2, pick(rng, 1, 3), IC} : Shape{pick(rng, 1, 5), IC};
    const int64_t M = num_elements(xs) / IC;
    auto x = uniform(rng, num_elements(xs));
    auto wv = uniform(rng, OC * IC);
    auto wbytes = encode(wt, wv);
    auto wdec = decode(wt, wbytes, OC * IC);  // the values the stored weights represent
    auto b = uniform(rng, OC);
    const bool with_bias = variant % 2 == 0;
    const std::string act = variant == 2 ? "relu" : "none";
    CaseGraph cg;
    std::vector<TensorId> in = {cg.input_f32("x", xs, x), cg.weight("w", {OC, IC}, wt, wbytes)};
    if (with_bias) in.push_back(cg.weight("bias", {OC}, DType::f32, bytes_of(b)));
    Case c = cg.finish(std::string("fully_connected w ") + dtype_name(wt) + " x" + shape_str(xs) + " OC " +
                           std::to_string(OC),
                       OpKind::fully_connected, in, {{"activation", act}});
    c.accum = IC + 1;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < OC; ++o) {
        double acc = with_bias ? b[o] : 0, mag = std::fabs(acc);
        for (int64_t k = 0; k < IC; ++k) {
          acc += x[m * IC + k] * wdec[o * IC + k];
          mag += std::fabs(x[m * IC + k] * wdec[o * IC + k]);
        }
        c.expected.push_back(act_apply(acc, act));
        c.magnitude.push_back(mag);
      }
    cases.push_back(std::move(c));
  }
  return cases;
}

// matmul: batch broadcasting, transpose_b, and b stored as a weight in f16 / q8_0.
TESSERA_CONFORMANCE_CASES(matmul) {
  std::vector<Case> cases;
  for (int variant = 0; variant < 5; ++variant) {
    const bool tb = variant >= 2;
    const DType bt = variant == 3 ? DType::q8_0 : variant == 4 ? DType::f16 : DType::f32;
    const int64_t M = pick(rng, 1, 6), N = pick(rng, 1, 7);
    const int64_t K = bt == DType::q8_0 ? 32 : pick(rng, 1, 24);
    Shape abatch = {pick(rng, 1, 3)}, bbatch = abatch;
    if (variant == 1) bbatch = {1};                        // b broadcast over a's batch
    if (variant == 2) abatch = {2, abatch[0]}, bbatch = {1, abatch[1]};
    Shape as = abatch, bs = bbatch;
    as.insert(as.end(), {M, K});
    bs.insert(bs.end(), tb ? std::initializer_list<int64_t>{N, K} : std::initializer_list<int64_t>{K, N});
    auto a = uniform(rng, num_elements(as));
    auto bv = uniform(rng, num_elements(bs));
    auto bbytes = encode(bt, bv);
    auto bdec = decode(bt, bbytes, num_elements(bs));
    CaseGraph cg;
    TensorId ai = cg.input_f32("a", as, a);
    TensorId bi = bt == DType::f32 ? cg.input_f32("b", bs, bv) : cg.weight("b", bs, bt, bbytes);
    Case c = cg.finish("matmul " + shape_str(as) + " x " + shape_str(bs) + " " + dtype_name(bt) + (tb ? " transpose_b" : ""),
                       OpKind::matmul, {ai, bi}, {{"transpose_b", int64_t{tb}}});
    c.accum = K;
    const Shape ys = c.g.tensor(c.g.outputs[0]).shape;
    const Shape ybatch(ys.begin(), ys.end() - 2);
    const int64_t nb = num_elements(ybatch);
    for (int64_t bi2 = 0; bi2 < nb; ++bi2) {
      // Batch index of a and b under broadcasting.
      int64_t rem = bi2, ia = 0, ib = 0, sa = 1, sb = 1;
      for (int d = static_cast<int>(ybatch.size()) - 1; d >= 0; --d) {
        const int64_t i = rem % ybatch[d];
        rem /= ybatch[d];
        const int ka = d - static_cast<int>(ybatch.size() - abatch.size());
        const int kb = d - static_cast<int>(ybatch.size() - bbatch.size());
        if (ka >= 0) { ia += (abatch[ka] == 1 ? 0 : i) * sa; sa *= abatch[ka]; }
        if (kb >= 0) { ib += (bbatch[kb] == 1 ? 0 : i) * sb; sb *= bbatch[kb]; }
      }
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double acc = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double av = a[(ia * M + m) * K + k];
            const double bvv = tb ? bdec[(ib * N + n) * K + k] : bdec[(ib * K + k) * N + n];
            acc += av * bvv;
            mag += std::fabs(av * bvv);
          }
          c.expected.push_back(acc);
          c.magnitude.push_back(mag);
        }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
