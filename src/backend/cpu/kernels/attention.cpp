// attention: causal attention of queries over the KV cache rows in use (ops.def). Each
// (token, head) is one work item; rows past pos[t] are never read, so a step costs what
// the filled part of the cache holds, not its length.
#include "backend/cpu/kernels/attention.h"

#include <cmath>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "convert/simd.h"

namespace tessera::cpu {

namespace attn {

namespace {
float hsum8(const float* a) {
  float s4[4];
  for (int i = 0; i < 4; ++i) s4[i] = a[i] + a[i + 4];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}
}  // namespace

namespace scalar {

void attend(const Item& it) {
  const int64_t d = it.d, d8 = d / 8 * 8;
  const float* table = f16_table();
  const int64_t rb = row_bytes(it.cache, d);
  auto value = [&](const uint8_t* base, int64_t j, int64_t i) {
    const uint8_t* row = base + j * rb;
    if (it.cache == Cache::f16) {
      uint16_t h;
      std::memcpy(&h, row + i * 2, 2);
      return table[h];
    }
    if (it.cache == Cache::q8_0) {
      const uint8_t* block = row + (i / kQBlock) * kQ8_0BlockBytes;
      uint16_t h;
      std::memcpy(&h, block, 2);
      return table[h] * static_cast<float>(static_cast<int8_t>(block[2 + i % kQBlock]));
    }
    float f;
    std::memcpy(&f, row + i * 4, 4);
    return f;
  };
  float m = -INFINITY;
  for (int64_t j = 0; j < it.rows; ++j) {
    float acc[8] = {};
    for (int64_t i = 0; i < d8; i += 8)
      for (int l = 0; l < 8; ++l) acc[l] = std::fma(it.q[i + l], value(it.k, j, i + l), acc[l]);
    float t = 0;
    for (int64_t i = d8; i < d; ++i) t = std::fma(it.q[i], value(it.k, j, i), t);
    it.scores[j] = (hsum8(acc) + t) * it.scale;
    m = std::max(m, it.scores[j]);
  }
  float sum = 0;
  for (int64_t j = 0; j < it.rows; ++j) {
    it.scores[j] = std::exp(it.scores[j] - m);
    sum += it.scores[j];
  }
  for (int64_t i = 0; i < d; ++i) it.out[i] = 0;
  for (int64_t j = 0; j < it.rows; ++j)
    for (int64_t i = 0; i < d; ++i) it.out[i] = std::fma(it.scores[j], value(it.v, j, i), it.out[i]);
  for (int64_t i = 0; i < d; ++i) it.out[i] = it.out[i] / sum;
}

}  // namespace scalar

void attend(const Item& it) {
#if defined(__x86_64__)
  if (convert::use_avx2()) return avx2::attend(it);
#endif
  scalar::attend(it);
}

}  // namespace attn

namespace {

Status attention(KernelContext& c) {
  const TensorRef &q = c.in[0], &k = c.in[1], &v = c.in[2], &pos = c.in[3];
  const int64_t T = q.shape()[0], H = q.shape()[1], D = q.shape()[2];
  const int64_t Hkv = k.shape()[0], L = k.shape()[2], G = H / Hkv;
  if (k.dtype() != v.dtype())
    return kernel_error(c.n, std::string("keys are ") + dtype_name(k.dtype()) + " but values " + dtype_name(v.dtype()));
  const int32_t* pp = pos.as<int32_t>();
  int64_t rows_max = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (pp[t] < 0 || pp[t] >= L)
      return error(StatusCode::out_of_range, "[attention] ", c.n.label(), ": position ", pp[t], " of token ", t,
                   " is outside the cache '", k.t->name, "' of ", L, " rows");
    rows_max = std::max<int64_t>(rows_max, pp[t] + 1);
  }
  const float scale = static_cast<float>(c.n.attr_float("scale", 1.0));
  const attn::Cache cache = k.dtype() == DType::f16    ? attn::Cache::f16
                            : k.dtype() == DType::q8_0 ? attn::Cache::q8_0
                                                       : attn::Cache::f32;
  if (cache == attn::Cache::q8_0 && D % kQBlock != 0)
    return kernel_error(c.n, "a q8_0 cache needs a head size that is a multiple of 32, got " + std::to_string(D));
  const int64_t head_bytes = L * attn::row_bytes(cache, D);
  const float* qp = q.as<float>();
  float* y = c.out[0].as<float>();
  auto work = [&](int64_t i0, int64_t i1) {
    // Sized to the whole cache once per thread, so later steps (longer rows) allocate nothing.
    thread_local std::vector<float> scores;
    if (static_cast<int64_t>(scores.size()) < L) scores.resize(static_cast<size_t>(L));
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / H, h = i % H, kvh = h / G;
      attn::Item it;
      it.q = qp + (t * H + h) * D;
      it.k = k.data + kvh * head_bytes;
      it.v = v.data + kvh * head_bytes;
      it.cache = cache;
      it.rows = pp[t] + 1;
      it.d = D;
      it.scale = scale;
      it.scores = scores.data();
      it.out = y + (t * H + h) * D;
      attn::attend(it);
    }
  };
  parallel_rows(c, T * H, work, min_rows_per_chunk(2 * rows_max * D));
  return Status::Ok();
}

}  // namespace

void register_attention_kernels(KernelTable& t) { t.add(OpKind::attention, KernelKind::plain, attention); }

}  // namespace tessera::cpu
