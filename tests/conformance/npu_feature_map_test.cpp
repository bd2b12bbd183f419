// Conformance cases on quantized NHWC feature maps, the shape the NPU devices run:
// LOGISTIC and SiLU (LOGISTIC then MUL by the same input, as TFLite graphs hold x *
// sigmoid(x); rknpu: one DPU lookup-table task each, docs/rknpu.md "Lookup tables"), whose
// expected codes are the exact real results quantized with the output parameters (TFLite's
// arithmetic may differ from them by one code, the quantized cases' tolerance); and channel
// slices and concatenations of whole 16-channel blocks (rknpu: DPU copy tasks), exact;
// REQUANTIZE between 8-bit feature maps (rknpu: a lookup-table task), within one code of
// the exact real results; RESIZE_NEAREST_NEIGHBOR x2 (rknpu: PPU tasks), exact.
#include <cmath>

#include "conformance/conformance.h"

namespace tessera::conformance {
namespace {

constexpr double kOneCode = 1.0;

std::vector<uint8_t> random_codes(Rng& rng, DType t, int64_t n) {
  std::vector<uint8_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<uint8_t>(pick(rng, t == DType::u8 ? 0 : -128, t == DType::u8 ? 255 : 127)));
  return v;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// TFLite's LOGISTIC output parameters: scale 1/256, zero point 0 (u8) or -128 (i8).
QuantParams logistic_out(DType t) {
  QuantParams q;
  q.scale = {1.0f / 256.0f};
  q.zero_point = {t == DType::u8 ? 0 : -128};
  return q;
}

TESSERA_CONFORMANCE_CASES(logistic) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t h = pick(rng, 1, 6), w = pick(rng, 1, 9), c = pick(rng, 1, 40);
    const QuantParams xq = quant_for_range(-8, 6, t);
    std::vector<uint8_t> codes = random_codes(rng, t, h * w * c);
    std::vector<double> real;
    for (double v : dequantize_codes(codes, t, xq)) real.push_back(sigmoid(v));
    const QuantParams oq = logistic_out(t);
    CaseGraph cg;
    Case k = cg.finish(std::string("logistic NHWC ") + dtype_name(t) + " quantized", OpKind::logistic,
                       {cg.input("x", {1, h, w, c}, t, codes, xq)}, {}, t, oq);
    k.expected = expected_codes(real, t, oq);
    k.code_tolerance = kOneCode;
    k.quantized = true;
    cases.push_back(std::move(k));
  }
  return cases;
}

// SiLU: s = LOGISTIC(x) with TFLite's parameters, y = MUL(x, s) (and MUL(s, x)). Expected:
// the logistic's code quantized exactly, then the product of the two dequantized operands
// quantized exactly with y's parameters.
TESSERA_CONFORMANCE_CASES(mul) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8})
    for (bool x_first : {true, false}) {
      const int64_t h = pick(rng, 1, 6), w = pick(rng, 1, 9), c = pick(rng, 1, 40);
      const QuantParams xq = quant_for_range(-7, 9, t), sq = logistic_out(t);
      std::vector<uint8_t> codes = random_codes(rng, t, h * w * c);
      const std::vector<double> x = dequantize_codes(codes, t, xq);
      std::vector<double> s_real;
      for (double v : x) s_real.push_back(sigmoid(v));
      std::vector<double> s_codes = expected_codes(s_real, t, sq), y;
      for (size_t i = 0; i < x.size(); ++i)
        y.push_back(x[i] * (s_codes[i] - static_cast<double>(sq.zero_point_at(0))) * sq.scale[0]);
      const QuantParams yq = quant_for_range(-0.3, 9, t);
      CaseGraph cg;
      TensorId xi = cg.input("x", {1, h, w, c}, t, codes, xq);
      auto si = cg.graph().add_op(OpKind::logistic, {xi}, {}, "sigmoid", t, sq);
      EXPECT_TRUE(si.ok());
      if (!si.ok()) continue;
      Case k = cg.finish(std::string("silu (logistic, mul") + (x_first ? "(x, s)" : "(s, x)") + ") NHWC " + dtype_name(t) +
                             " quantized",
                         OpKind::mul, x_first ? std::vector<TensorId>{xi, *si} : std::vector<TensorId>{*si, xi}, {}, t, yq);
      k.expected = expected_codes(y, t, yq);
      k.code_tolerance = kOneCode;
      k.quantized = true;
      cases.push_back(std::move(k));
    }
  return cases;
}

// STRIDED_SLICE of a channel range (begin and size multiples of 16, as YOLO's C2f splits).
TESSERA_CONFORMANCE_CASES(strided_slice) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t h = pick(rng, 1, 6), w = pick(rng, 1, 9), blocks = pick(rng, 2, 4), c = 16 * blocks;
    const int64_t b0 = 16 * pick(rng, 0, blocks - 1), n = 16 * pick(rng, 1, (c - b0) / 16);
    const QuantParams xq = quant_for_range(-3, 5, t);
    std::vector<uint8_t> codes = random_codes(rng, t, h * w * c);
    CaseGraph cg;
    Case k = cg.finish(std::string("strided_slice NHWC channels [") + std::to_string(b0) + ", " + std::to_string(b0 + n) + ") of " +
                           std::to_string(c) + " " + dtype_name(t),
                       OpKind::strided_slice, {cg.input("x", {1, h, w, c}, t, codes, xq)},
                       {{"begin", std::vector<int64_t>{0, 0, 0, b0}}, {"end", std::vector<int64_t>{1, h, w, b0 + n}},
                        {"strides", std::vector<int64_t>{1, 1, 1, 1}}, {"shrink_axes", std::vector<int64_t>{}}},
                       t, xq);
    for (int64_t p = 0; p < h * w; ++p)
      for (int64_t ch = b0; ch < b0 + n; ++ch) {
        const uint8_t v = codes[static_cast<size_t>(p * c + ch)];
        k.expected.push_back(t == DType::u8 ? double(v) : double(int8_t(v)));
      }
    k.quantized = true;
    cases.push_back(std::move(k));
  }
  return cases;
}

// CONCATENATION along channels of inputs of whole 16-channel blocks, one quantization.
TESSERA_CONFORMANCE_CASES(concat) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8}) {
    const int64_t h = pick(rng, 1, 6), w = pick(rng, 1, 9), parts = pick(rng, 2, 4);
    const QuantParams q = quant_for_range(-2, 6, t);
    CaseGraph cg;
    std::vector<TensorId> in;
    std::vector<std::vector<uint8_t>> codes;
    std::vector<int64_t> cs;
    for (int64_t p = 0; p < parts; ++p) {
      cs.push_back(16 * pick(rng, 1, 3));
      codes.push_back(random_codes(rng, t, h * w * cs.back()));
      in.push_back(cg.input("x" + std::to_string(p), {1, h, w, cs.back()}, t, codes.back(), q));
    }
    Case k = cg.finish(std::string("concat NHWC channels, ") + std::to_string(parts) + " inputs " + dtype_name(t), OpKind::concat, in,
                       {{"axis", int64_t{-1}}}, t, q);
    for (int64_t px = 0; px < h * w; ++px)
      for (int64_t p = 0; p < parts; ++p)
        for (int64_t ch = 0; ch < cs[p]; ++ch) {
          const uint8_t v = codes[p][static_cast<size_t>(px * cs[p] + ch)];
          k.expected.push_back(t == DType::u8 ? double(v) : double(int8_t(v)));
        }
    k.quantized = true;
    cases.push_back(std::move(k));
  }
  return cases;
}

// QUANTIZE of an 8-bit feature map to 8 bits (u8 / i8 both ways), parameters that stretch
// and shrink the range: the real value re-quantized exactly with the output's parameters.
TESSERA_CONFORMANCE_CASES(requantize) {
  std::vector<Case> cases;
  for (DType ti : {DType::u8, DType::i8})
    for (DType to : {DType::u8, DType::i8}) {
      const int64_t h = pick(rng, 1, 6), w = pick(rng, 1, 9), c = pick(rng, 1, 40);
      const QuantParams xq = quant_for_range(-4, 6, ti), yq = quant_for_range(ti == to ? -2.5 : -5, ti == to ? 3.5 : 7, to);
      std::vector<uint8_t> codes = random_codes(rng, ti, h * w * c);
      CaseGraph cg;
      Case k = cg.finish(std::string("requantize NHWC ") + dtype_name(ti) + "->" + dtype_name(to), OpKind::requantize,
                         {cg.input("x", {1, h, w, c}, ti, codes, xq)}, {}, to, yq);
      k.expected = expected_codes(dequantize_codes(codes, ti, xq), to, yq);
      k.code_tolerance = kOneCode;
      k.quantized = true;
      cases.push_back(std::move(k));
    }
  return cases;
}

// Nearest-neighbour resize by exactly 2 (YOLO's upsampling), with and without half-pixel
// centres (the same pixels): each input pixel becomes a 2x2 block of its codes.
TESSERA_CONFORMANCE_CASES(resize_nearest) {
  std::vector<Case> cases;
  for (DType t : {DType::u8, DType::i8})
    for (int64_t half : {0, 1}) {
      const int64_t h = pick(rng, 1, 6), w = pick(rng, 1, 9), c = pick(rng, 1, 40);
      const QuantParams q = quant_for_range(-3, 5, t);
      std::vector<uint8_t> codes = random_codes(rng, t, h * w * c);
      CaseGraph cg;
      Case k = cg.finish(std::string("resize_nearest x2 NHWC ") + dtype_name(t) + (half ? " half-pixel" : ""),
                         OpKind::resize_nearest, {cg.input("x", {1, h, w, c}, t, codes, q)},
                         {{"out_h", 2 * h}, {"out_w", 2 * w}, {"align_corners", int64_t{0}}, {"half_pixel_centers", half}}, t, q);
      for (int64_t y = 0; y < 2 * h; ++y)
        for (int64_t x = 0; x < 2 * w; ++x)
          for (int64_t ch = 0; ch < c; ++ch) {
            const uint8_t v = codes[static_cast<size_t>(((y / 2) * w + x / 2) * c + ch)];
            k.expected.push_back(t == DType::u8 ? double(v) : double(int8_t(v)));
          }
      k.quantized = true;
      cases.push_back(std::move(k));
    }
  return cases;
}

}  // namespace
}  // namespace tessera::conformance
