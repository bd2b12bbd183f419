// Helpers shared by the plain reference kernels: scalar number formats (f16, bf16, GGUF
// blocks), broadcasting, activations and the NHWC window parameters of conv and pools.
//
// Everything here is plain scalar code: the reference kernels are the oracle for every
// other device, so they favour being obviously correct over being fast.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/thread_pool.h"
#include "convert/gguf_kquants.h"

namespace tessera::cpu {

// ---- scalar formats ----

// IEEE 754 binary16 -> binary32 (exact; subnormals, infinities and NaN included).
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: value = man * 2^-24
      float v = std::ldexp(static_cast<float>(man), -24);
      std::memcpy(&bits, &v, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// binary32 -> binary16, round to nearest even, overflow to infinity.
inline uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past 65504
  if (abs < 0x38800000u) {  // below the smallest normal 2^-14: subnormal or zero
    float a;
    std::memcpy(&a, &abs, 4);
    // Units of 2^-24; nearbyint rounds half to even in the default rounding mode.
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t mant_odd = (abs >> 13) & 1u;
  abs += 0xfffu + mant_odd;  // round to nearest even at bit 13
  return static_cast<uint16_t>(sign | ((abs - (112u << 23)) >> 13));
}

inline float bf16_to_f32(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// binary32 -> bfloat16, round to nearest even (NaN stays NaN).
inline uint16_t f32_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// f16 -> f32 through a table of all 65536 values (256 KiB, built once): the weight-decoding
// loops of fully_connected / matmul / get_rows read f16 weights and GGUF block scales.
const float* f16_table();

// ---- GGUF blocks ----
// Block layouts: src/convert/gguf_blocks.h (q8_0, q4_0) and src/convert/gguf_kquants.h
// (q4_1, q5_0, q5_1 of 32 values; the K-quants q2_K ... q6_K, super-blocks of 256).
// Kernels walk weight rows in chunks of 32 values: chunk b of a 32-value type is block b;
// chunk b of a K-quant row is chunk b % 8 of super-block b / 8, decoded on its own (each
// 32 values of a super-block have their own scales), so no kernel needs a 256-value buffer.

// Dequantizes chunk `b` (values [32b, 32b + 32)) of a GGUF block row that starts at `row`.
inline void dequant_block(DType t, const uint8_t* row, int64_t b, float* out) {
  if (t == DType::q8_0) {
    const uint8_t* blk = row + b * kQ8_0BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    float d = f16_table()[dh];
    const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
    for (int i = 0; i < kQBlock; ++i) out[i] = static_cast<float>(q[i]) * d;
  } else if (t == DType::q4_0) {
    const uint8_t* blk = row + b * kQ4_0BlockBytes;
    uint16_t dh;
    std::memcpy(&dh, blk, 2);
    float d = f16_table()[dh];
    const uint8_t* q = blk + 2;
    for (int j = 0; j < kQBlock / 2; ++j) {
      out[j] = static_cast<float>((q[j] & 0x0f) - 8) * d;
      out[j + kQBlock / 2] = static_cast<float>((q[j] >> 4) - 8) * d;
    }
  } else {
    const int64_t per_block = dtype_block_values(t) / kQBlock;  // 1, or 8 for K-quants
    convert::dequant_gguf_chunk(t, row + b / per_block * dtype_block_bytes(t), static_cast<int>(b % per_block), out);
  }
}

// The dtypes a weight row may be stored in and read by fully_connected, matmul, get_rows.
inline bool is_row_dtype(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || dtype_is_block(t);
}

// Bytes of one row of `n` values of a row dtype (n a multiple of dtype_block_values(t)
// for blocks; checked by callers).
inline int64_t row_bytes(DType t, int64_t n) {
  if (dtype_is_block(t)) return n / dtype_block_values(t) * dtype_block_bytes(t);
  return n * dtype_size(t);
}

// Reads values [b*32, b*32 + len) of a row of a row dtype into out (len <= 32; for block
// dtypes the chunk is exactly chunk b as dequant_block defines it). Lets kernels walk any
// weight 32 values at a time without a full f32 copy of it.
inline void load_chunk(DType t, const uint8_t* row, int64_t b, int64_t len, float* out) {
  int64_t i0 = b * kQBlock;
  switch (t) {
    case DType::f32: std::memcpy(out, row + i0 * 4, len * 4); break;
    case DType::f16: {
      const float* table = f16_table();
      for (int64_t i = 0; i < len; ++i) {
        uint16_t h;
        std::memcpy(&h, row + (i0 + i) * 2, 2);
        out[i] = table[h];
      }
      break;
    }
    case DType::bf16:
      for (int64_t i = 0; i < len; ++i) {
        uint16_t h;
        std::memcpy(&h, row + (i0 + i) * 2, 2);
        out[i] = bf16_to_f32(h);
      }
      break;
    default: dequant_block(t, row, b, out); break;
  }
}

// Error unless every listed input / output is f32; names the offending tensor.
Status require_f32(const KernelContext& c, std::initializer_list<int> inputs);

// ---- per-dimension lists ----

// One integer per dimension (strides, an index being walked), held inline for up to
// kInline dimensions and on the heap beyond: the run path's index walks allocate nothing
// for the ranks networks use, and a deeper tensor still works.
class DimList {
 public:
  static constexpr size_t kInline = 8;
  explicit DimList(size_t n, int64_t v = 0) : n_(n) {
    if (n > kInline) heap_.resize(n);
    p_ = n > kInline ? heap_.data() : inline_;
    std::fill(p_, p_ + n, v);
  }
  DimList(DimList&& o) noexcept : heap_(std::move(o.heap_)), n_(o.n_) {
    if (n_ > kInline) {
      p_ = heap_.data();
    } else {
      std::copy(o.inline_, o.inline_ + n_, inline_);
      p_ = inline_;
    }
  }
  DimList(const DimList&) = delete;
  DimList& operator=(const DimList&) = delete;
  DimList& operator=(DimList&&) = delete;
  int64_t& operator[](size_t i) { return p_[i]; }
  int64_t operator[](size_t i) const { return p_[i]; }
  size_t size() const { return n_; }
  int64_t* data() { return p_; }
  const int64_t* data() const { return p_; }

 private:
  int64_t inline_[kInline];
  std::vector<int64_t> heap_;
  int64_t* p_;
  size_t n_;
};

// Row-major strides (in elements) of a shape.
DimList row_major_dims(const Shape& s);

// ---- broadcasting ----

// Strides (in elements) that map an index of `out` to an index of `in` under numpy
// broadcasting: broadcast dims get stride 0. Result has out.size() entries.
DimList broadcast_strides(std::span<const int64_t> out, std::span<const int64_t> in);
// The same into `st` (its capacity is reused: no allocation once it has grown).
void broadcast_strides_into(const Shape& out, const Shape& in, std::vector<int64_t>& st);

// Calls f(ia, ib, iy) for every output element with its broadcast input indices.
template <typename F>
void for_each_broadcast(const Shape& out, const Shape& a, const Shape& b, F&& f) {
  auto sa = broadcast_strides(out, a), sb = broadcast_strides(out, b);
  const int rank = static_cast<int>(out.size());
  DimList idx(static_cast<size_t>(rank));
  int64_t ia = 0, ib = 0;
  const int64_t total = num_elements(out);
  for (int64_t i = 0; i < total; ++i) {
    f(ia, ib, i);
    for (int d = rank - 1; d >= 0; --d) {
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < out[d]) break;
      ia -= sa[d] * out[d];
      ib -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

// ---- activations (attr "activation" of conv, fc, add, pools) ----

enum class Activation { none, relu, relu6, relu_n1_to_1 };
Result<Activation> activation_of(const Node& n);
inline float activate(float v, Activation a) {
  switch (a) {
    case Activation::relu: return std::max(v, 0.0f);
    case Activation::relu6: return std::min(std::max(v, 0.0f), 6.0f);
    case Activation::relu_n1_to_1: return std::min(std::max(v, -1.0f), 1.0f);
    default: return v;
  }
}

// ---- threads ----

// Multiply-adds below which a chunk is not worth a thread wake-up (tens of microseconds
// of scalar work, about what waking a pool thread costs on a loaded machine).
constexpr int64_t kMinMacsPerChunk = 1 << 15;
// Rows per chunk for rows of `macs_per_row` multiply-adds each.
inline int64_t min_rows_per_chunk(int64_t macs_per_row) {
  return std::max<int64_t>(1, kMinMacsPerChunk / std::max<int64_t>(macs_per_row, 1));
}

// Runs fn(begin, end) over [0, n) on the context's pool (inline when it has none).
template <typename F>
void parallel_rows(const KernelContext& c, int64_t n, F&& fn, int64_t min_chunk) {
  if (!c.pool) {
    if (n > 0) fn(int64_t{0}, n);
    return;
  }
  c.pool->parallel_for(n, fn, min_chunk);
}

// ---- NHWC windows (conv2d, depthwise_conv2d, pools) ----

struct Window {
  int64_t kh = 1, kw = 1;        // filter size
  int64_t sh = 1, sw = 1;        // strides
  int64_t dh = 1, dw = 1;        // dilations
  int64_t pad_top = 0, pad_left = 0;  // explicit leading padding (trailing follows from shapes)
};
Window window_of(const Node& n, int64_t kh, int64_t kw);

}  // namespace tessera::cpu
