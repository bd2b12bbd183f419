// TFLite-exact quantized matmul (TFLite BATCH_MATMUL): a [..., M, K] times b [..., K, N]
// (b [..., N, K] with transpose_b), batch dims broadcast, per-tensor quantization.
//  * i8: products of (a - za)(b - zb) summed in int32, rescaled by sa sb / so (the product
//    of the two scales in float, as GetQuantizedConvolutionMultipler) with one rounding, as
//    the interpreter's int8 GEMM does, plus zo, clamped to int8;
//  * i16 (zero points 0): summed in int64, rescaled by the 16x8 form's int64 multiply;
//  * hybrid (f32 a, i8 b with one scale and zero point 0): each row of a quantized alone to
//    int8 codes (symmetric, quantize_symmetric_row; with hybrid_inputs = "asymmetric",
//    quantize_asymmetric_row and its zero point z), summed against b's codes in int32
//    (wrapping); asymmetric: the sum minus s_j * z in int32, where s_j is the sum of b's
//    codes of output column j (TFLite's row sums); then the sum times (row scale * b's
//    scale) in float.
#include <string>
#include <vector>

#include "backend/cpu/kernels/hybrid.h"
#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_math.h"

namespace tessera::cpu {

namespace {

// Calls f(output batch, a's batch, b's batch) for every output batch (batch dims broadcast).
template <typename F>
void for_each_batch(const Shape& as, const Shape& bs, const Shape& ys, F&& f) {
  const std::span<const int64_t> batch(ys.data(), ys.size() - 2);
  const DimList a_st = broadcast_strides(batch, std::span<const int64_t>(as.data(), as.size() - 2));
  const DimList b_st = broadcast_strides(batch, std::span<const int64_t>(bs.data(), bs.size() - 2));
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t ai = 0, bj = 0;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1, rem = bi; d >= 0; --d) {
      const int64_t i = rem % batch[d];
      rem /= batch[d];
      ai += i * a_st[d];
      bj += i * b_st[d];
    }
    f(bi, ai, bj);
  }
}

}  // namespace

Status hybrid_matmul(KernelContext& c) {
  const Tensor& bt = *c.in[1].t;
  if (bt.quant.per_axis() || bt.quant.zero_point_at(0) != 0)
    return kernel_error(c.n, "hybrid matmul needs int8 '" + bt.name + "' with one scale and zero point 0");
  if (c.out[0].dtype() != DType::f32) return kernel_error(c.n, "hybrid matmul needs an f32 output");
  const float sb = bt.quant.scale[0];
  const bool tb = c.n.get(attr::transpose_b) != 0;
  const Shape &as = c.in[0].shape(), &bs = c.in[1].shape(), &ys = c.out[0].shape();
  const int64_t M = as[as.size() - 2], K = as.back(), N = ys.back();
  const float* a = c.in[0].as<float>();
  const int8_t* b = c.in[1].as<int8_t>();
  float* y = c.out[0].as<float>();
  const bool asymmetric = asymmetric_inputs(c.n);
  std::vector<int8_t> codes(static_cast<size_t>(K));
  std::vector<int32_t> col_sums(asymmetric ? static_cast<size_t>(N) : 0);  // [N]: sum over k of b[k, j]
  for_each_batch(as, bs, ys, [&](int64_t bi, int64_t ai, int64_t bj) {
    const int8_t* b0 = b + bj * K * N;
    for (int64_t j = 0; j < static_cast<int64_t>(col_sums.size()); ++j) {
      int32_t sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += b0[tb ? j * K + k : k * N + j];
      col_sums[static_cast<size_t>(j)] = sum;
    }
    for (int64_t i = 0; i < M; ++i) {
      int32_t offset = 0;
      const float* row = a + (ai * M + i) * K;
      const float factor =
          (asymmetric ? quantize_asymmetric_row(row, K, codes.data(), &offset) : quantize_symmetric_row(row, K, codes.data())) *
          sb;
      for (int64_t j = 0; j < N; ++j) {
        // The interpreter's 32-bit accumulator, wrapping (not overflowing) past 2^31 when K
        // exceeds 131072 products of 127 * 127.
        uint32_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<uint32_t>(int32_t{codes[static_cast<size_t>(k)]} * b0[tb ? j * K + k : k * N + j]);
        // Asymmetric: minus the column sum times the zero point, in wrapping int32 as the
        // interpreter computes it (exact: its outputs are bit-identical where a float
        // correction would round, past 2^24).
        if (asymmetric) acc -= static_cast<uint32_t>(col_sums[static_cast<size_t>(j)]) * static_cast<uint32_t>(offset);
        const int32_t total = static_cast<int32_t>(acc);
        y[(bi * M + i) * N + j] = factor * static_cast<float>(total);
      }
    }
  });
  return Status::Ok();
}

namespace {

Status matmul_q(KernelContext& c) {
  for (const TensorRef* r : {&c.in[0], &c.in[1], &c.out[0]})
    TS_RETURN_IF_ERROR(q::require_per_tensor(c.n, *r->t, /*allow_i16=*/true));
  const DType t = c.out[0].dtype();
  if (c.in[0].dtype() != t || c.in[1].dtype() != t || t == DType::u8)
    return kernel_error(c.n, std::string("quantized matmul takes i8 or i16 operands and output of one dtype, got ") +
                                 dtype_name(c.in[0].dtype()) + " x " + dtype_name(c.in[1].dtype()) + " -> " + dtype_name(t));
  const float sa = c.in[0].t->quant.scale[0], sb = c.in[1].t->quant.scale[0], so = c.out[0].t->quant.scale[0];
  const int32_t za = static_cast<int32_t>(c.in[0].t->quant.zero_point_at(0));
  const int32_t zb = static_cast<int32_t>(c.in[1].t->quant.zero_point_at(0));
  const int32_t zo = static_cast<int32_t>(c.out[0].t->quant.zero_point_at(0));
  if (t == DType::i16 && (za != 0 || zb != 0 || zo != 0)) return kernel_error(c.n, "i16 operands need zero points 0");
  const q::Multiplier m = q::quantize_multiplier(static_cast<double>(sa * sb) / static_cast<double>(so));
  const bool tb = c.n.get(attr::transpose_b) != 0;
  const Shape &as = c.in[0].shape(), &bs = c.in[1].shape(), &ys = c.out[0].shape();
  const int64_t M = as[as.size() - 2], K = as.back(), N = ys.back();
  const int32_t lo = q::qmin(t), hi = q::qmax(t);
  for_each_batch(as, bs, ys, [&](int64_t bi, int64_t ai, int64_t bj) {
    const int64_t a0 = ai * M * K, b0 = bj * K * N, y0 = bi * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          const int64_t b_at = b0 + (tb ? j * K + k : k * N + j);
          acc += int64_t{q::load(c.in[0].data, t, a0 + i * K + k) - za} * (q::load(c.in[1].data, t, b_at) - zb);
        }
        const int32_t v = t == DType::i8 ? q::multiply_single_round(static_cast<int32_t>(acc), m) : q::multiply_int64(acc, m);
        q::store(c.out[0].data, t, y0 + i * N + j, q::clamp(v + zo, lo, hi));
      }
  });
  return Status::Ok();
}

}  // namespace

void register_quant_matmul_kernels(KernelTable& t) { t.add(OpKind::matmul, KernelKind::quant, matmul_q); }

}  // namespace tessera::cpu
