// Lowering of fully connected nodes on f32 activations (the projections and FFN matrices of
// a GGUF decoder) to fp16 matrix multiplications, or int8 ones under weights=int8 (below and
// docs/rknpu.md "The int8 weight policy") (rknpu-matmul.md): the hardware runs
// C[M, N] = A[M, K] B[K, N] as a 1x1 convolution with H = M, W = 1, C = K.
//
//  - A: the activations, converted to fp16 on their way to the NPU (round to nearest even,
//    the transfer's conversion) in NC1HWC2 with C2 = 8;
//  - B: the weights, converted once at compile time to fp16 into the rk_matmul_weight
//    blocks: F16 as stored (exact); Q8_0/Q4_0 dequantized exactly (fp16 scale x code, in
//    f32) and then rounded once to fp16 (Q4_0's codes need at most 15 significant bits, so
//    its values round by at most 2^-11 relative, Q8_0's likewise); F32/BF16 rounded;
//  - C: fp32 NC1HWC2 with C2 = 4, plus the bias (fp32, from the DPU table) when there is one.
// The products of fp16 values are exact in fp32 and the hardware is taken to accumulate them
// in fp32 (docs/rknpu.md "Matrix multiplication"), so the tolerance against a double
// reference over the fp16-rounded inputs is that of a K-term fp32 sum.
// int8 (weights=int8): B as int8 rk_matmul_weight blocks (32 kernels x 32 K) with one
// symmetric scale per output channel (convert::quantize_matrix_i8, once at compile time),
// A quantized per row by the host step before the job, C the raw int32 sums, scaled and
// biased by the host step after it (program.cpp host_before / host_after).
// K beyond one task (11264) is split into segments packed one after another (tiling.cpp).
#include <cmath>
#include <cstring>

#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/tiling.h"
#include "convert/rk_weights.h"
#include "tessera/backend/convert.h"

namespace tessera::rknpu {

namespace {

Status no(const std::string& why) { return error(StatusCode::unsupported, why); }

std::string dt(const Tensor& t) { return std::string(dtype_name(t.dtype)) + shape_str(t.shape); }

// F16 (exact), Q8_0 / Q4_0 and the other GGUF blocks (their f32 values, rounded once to
// fp16), F32 / BF16 (rounded).
bool weight_dtype_ok(DType t) {
  return t == DType::f16 || t == DType::f32 || t == DType::bf16 || encoding_is_gguf_block(encoding_of(t));
}

}  // namespace

bool is_float_matmul(const Graph& g, const Node& n) {
  return n.op == OpKind::fully_connected && n.inputs.size() >= 2 && g.tensor(n.inputs[0]).dtype == DType::f32;
}

Result<NpuOp> lower_matmul(const Graph& g, const Node& n, const LowerOptions& opts) {
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& w = g.tensor(n.inputs[1]);
  const Tensor& y = g.tensor(n.outputs[0]);
  if (x.data) return no("input '" + x.name + "' is a constant");
  if (x.shape.size() != 2) return no("input " + dt(x) + " is not rows [M, K] (the NPU matmul takes rank 2)");
  if (!w.data) return no("weights '" + w.name + "' are not a constant (B must be converted once, at compile time)");
  if (w.shape.size() != 2) return no("weights " + dt(w) + " are not [N, K]");
  if (!weight_dtype_ok(w.dtype))
    return no("weights '" + w.name + "' are " + dtype_name(w.dtype) + "; the NPU matmul converts F16, F32, BF16 and GGUF blocks");
  const int64_t m = x.shape[0], k = x.shape[1], nn = w.shape[0];
  if (w.shape[1] != k) return no("weights " + dt(w) + " do not match input " + dt(x));
  if (y.dtype != DType::f32 || y.shape != Shape{m, nn}) return no("output " + dt(y) + " is not f32 [M, N]");
  const bool int8 = opts.weights == WeightPolicy::int8;
  const char* kind = int8 ? "int8 matmul" : "fp16 matmul";
  if (n.get(attr::activation) != "none")
    return no("activation '" + n.get(attr::activation) + "' on an " + kind + " (the DPU path is bypassed)");
  // Rockchip's matmul API (rknpu-matmul.md "Limits" [S3]): on RK3588 K is a multiple of 32,
  // and N a multiple of 16 for fp16, 32 for int8: the weight blocks' K runs and kernel groups.
  if (k % kMatmulKGroup != 0) return no("K = " + std::to_string(k) + " is not a multiple of 32 (" + kind + ", [S3])");
  const int64_t kernels = int8 ? kMatmulInt8Kernels : kMatmulFp16Kernels;
  if (nn % kernels != 0)
    return no("N = " + std::to_string(nn) + " is not a multiple of " + std::to_string(kernels) + " (" + kind + ", [S3])");
  const Tensor* bias = n.inputs.size() > 2 && n.inputs[2] != kNoTensor ? &g.tensor(n.inputs[2]) : nullptr;
  if (bias && (!bias->data || bias->dtype != DType::f32 || bias->elements() != nn))
    return no("bias '" + bias->name + "' is " + dt(*bias) + ", not a constant f32 [N]");

  NpuOp op;
  op.type = NpuOpType::matmul;
  op.fp16 = !int8;
  op.mm_int8 = int8;
  op.label = n.label();
  op.input = n.inputs[0];
  op.output = n.outputs[0];
  op.in_h = op.out_h = m;
  op.in_w = op.out_w = 1;
  op.in_c = k;
  op.out_c = nn;
  op.macs = m * k * nn;
  const int eb = int8 ? 1 : 2;
  const convert::RkMatmulGeometry geo = convert::rk_matmul_geometry(nn, k, eb);
  op.weight_bytes = geo.elements() * eb;
  // fp16: the bias is added by the DPU's BS ALU (fp32 from the table); int8: the DPU writes
  // raw int32 sums and the host adds it when it applies the scales.
  op.bs_table_used = bias != nullptr && !int8;
  // Every CBUF and field limit is checked here, so that supports() and compile() agree.
  TS_ASSIGN_OR_RETURN(Tiling tiling, check_tiling(op));
  if (!opts.pack) return op;

  // B: the weights as the NPU's blocks, converted once. With a K split, each K segment is a
  // complete block set of its own, the segments one after another ([S3]'s K segments).
  if (opts.pack_weights) {
    const std::string ctx = "[fully_connected] weights '" + w.name + "' to the NPU's " + (int8 ? "int8" : "fp16") + " blocks";
    std::vector<uint8_t> rows;  // row-major [N, K] elements of eb bytes (split or int8 only)
    if (int8) {
      auto q = convert::quantize_matrix_i8(w.host_format(), w.data->data);
      if (!q.ok()) return q.status().with_context(ctx);
      op.mm_wscale = std::move(q->scale);
      rows.resize(q->q.size());
      std::memcpy(rows.data(), q->q.data(), rows.size());
    } else if (tiling.k_segments > 1) {
      rows.resize(static_cast<size_t>(nn * k * 2));
      TS_RETURN_IF_ERROR(convert::convert(w.host_format(), w.data->data, Format{Encoding::f16, Layout::row_major, {nn, k}},
                                          rows.data())
                             .with_context(ctx));
    }
    op.weights.assign(static_cast<size_t>(op.weight_bytes), 0);
    if (tiling.k_segments == 1) {
      // Through the registry: GGUF blocks dequantize exactly to f32, then round to nearest
      // even fp16; int8 codes relayout into the int8 blocks.
      Format packed{int8 ? Encoding::i8 : Encoding::f16, Layout::rk_matmul_weight, {nn, k}};
      const Format from = int8 ? Format{Encoding::i8, Layout::row_major, {nn, k}} : w.host_format();
      TS_RETURN_IF_ERROR(convert::convert(from, int8 ? rows.data() : w.data->data, packed, op.weights.data()).with_context(ctx));
    } else {
      std::vector<uint8_t> seg;
      for (int s = 0; s < tiling.k_segments; ++s) {
        const int64_t k0 = s * tiling.k_chunk, kn = std::min(tiling.k_chunk, k - k0);
        seg.resize(static_cast<size_t>(nn * kn * eb));
        for (int64_t r = 0; r < nn; ++r)
          std::memcpy(seg.data() + r * kn * eb, rows.data() + (r * k + k0) * eb, static_cast<size_t>(kn * eb));
        const std::vector<uint8_t> packed = convert::pack_rk_matmul_weights(seg.data(), nn, kn, eb);
        const int64_t off = matmul_segment_weight_offset(op, tiling, s);
        if (off + static_cast<int64_t>(packed.size()) > op.weight_bytes)
          return error(StatusCode::internal, ctx, ": K segment ", s, " overruns the packed weights");
        std::memcpy(op.weights.data() + off, packed.data(), packed.size());
      }
    }
  }
  if (bias && int8) {
    op.mm_bias.resize(static_cast<size_t>(nn));
    std::memcpy(op.mm_bias.data(), bias->data->data, static_cast<size_t>(nn * 4));
  } else if (bias) {
    op.bs_table.assign(static_cast<size_t>(nn * kBsEntryBytes), 0);
    for (int64_t c = 0; c < nn; ++c) std::memcpy(op.bs_table.data() + c * kBsEntryBytes, bias->data->data + 4 * c, 4);
  }
  return op;
}

}  // namespace tessera::rknpu
