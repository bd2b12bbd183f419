// attention: causal attention of queries over the KV cache rows in use (ops.def). Work
// items are tiles of up to attn::kTile queries reading one KV head; rows past pos[t] are
// never read, so a step costs what the filled part of the cache holds, not its length.
// Compiled with -ffp-contract=off (cmake/components.cmake): every fma is written out.
#include "backend/cpu/kernels/attention.h"
#include "backend/cpu/kernels/hsum8.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "convert/dtype.h"
#include "convert/gguf_blocks.h"
#include "convert/simd.h"

namespace tessera::cpu {

namespace attn {

using ops::exp_approx;

namespace {
// The max over the lanes in the hsum8 tree, each step as x > y ? x : y.
float hmax8(const float* a) {
  auto mx = [](float x, float y) { return x > y ? x : y; };
  float s4[4];
  for (int i = 0; i < 4; ++i) s4[i] = mx(a[i], a[i + 4]);
  return mx(mx(s4[0], s4[2]), mx(s4[1], s4[3]));
}
}  // namespace

void rows_to_f32(Cache c, const uint8_t* rows, int64_t n, float* out) {
  if (c == Cache::f16) convert::f16_to_f32_n(reinterpret_cast<const uint16_t*>(rows), out, n);
  else if (c == Cache::q8_0) convert::dequant_q8_0_n(rows, out, n / kQBlock);
  else std::memcpy(out, rows, static_cast<size_t>(n) * 4);
}

namespace scalar {

namespace {
void attend_one(const Tile& tl, const Query& qy) {
  const int64_t d = tl.d, d8 = d / 8 * 8, rows = qy.rows;
  const float* table = f16_table();
  const int64_t rb = row_bytes(tl.cache, d);
  auto value = [&](const uint8_t* base, int64_t j, int64_t i) {
    const uint8_t* row = base + j * rb;
    if (tl.cache == Cache::f16) {
      uint16_t h;
      std::memcpy(&h, row + i * 2, 2);
      return table[h];
    }
    if (tl.cache == Cache::q8_0) {
      const uint8_t* block = row + (i / kQBlock) * kQ8_0BlockBytes;
      uint16_t h;
      std::memcpy(&h, block, 2);
      return table[h] * static_cast<float>(static_cast<int8_t>(block[2 + i % kQBlock]));
    }
    float f;
    std::memcpy(&f, row + i * 4, 4);
    return f;
  };
  float* s = tl.scratch;
  float m8[8];
  for (float& x : m8) x = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < rows; ++j) {
    float acc[8] = {};
    for (int64_t i = 0; i < d8; i += 8)
      for (int l = 0; l < 8; ++l) acc[l] = std::fma(qy.q[i + l], value(tl.k, j, i + l), acc[l]);
    float t = 0;
    for (int64_t i = d8; i < d; ++i) t = std::fma(qy.q[i], value(tl.k, j, i), t);
    s[j] = (hsum8(acc) + t) * tl.scale;
  }
  if (tl.softcap > 0) cap_scores(s, rows, tl.softcap);
  for (int64_t j = 0; j < rows; ++j) {
    float& ml = m8[j % 8];
    ml = s[j] > ml ? s[j] : ml;
  }
  const float m = hmax8(m8);
  float sum8[8] = {};
  for (int64_t j = 0; j < rows; ++j) {
    s[j] = exp_approx(s[j] - m);
    sum8[j % 8] += s[j];
  }
  const float sum = hsum8(sum8);
  for (int64_t i = 0; i < d; ++i) qy.out[i] = 0;
  for (int64_t j = 0; j < rows; ++j)
    for (int64_t i = 0; i < d; ++i) qy.out[i] = std::fma(s[j], value(tl.v, j, i), qy.out[i]);
  for (int64_t i = 0; i < d; ++i) qy.out[i] = qy.out[i] / sum;
}
}  // namespace

void attend(const Tile& t) {
  for (int q = 0; q < t.nq; ++q) attend_one(t, t.query[q]);
}

}  // namespace scalar

void attend(const Tile& t) {
#if defined(__x86_64__)
  if (convert::use_avx2()) return avx2::attend(t);
#elif defined(__aarch64__)
  if (convert::use_neon()) return neon::attend(t);
#endif
  scalar::attend(t);
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
  const float scale = static_cast<float>(c.n.get(attr::scale));
  const float softcap = static_cast<float>(c.n.get(attr::softcap));
  const int64_t window = c.n.get(attr::window);  // 0: every row up to the query's own
  const attn::Cache cache = k.dtype() == DType::f16    ? attn::Cache::f16
                            : k.dtype() == DType::q8_0 ? attn::Cache::q8_0
                                                       : attn::Cache::f32;
  if (cache == attn::Cache::q8_0 && D % kQBlock != 0)
    return kernel_error(c.n, "a q8_0 cache needs a head size that is a multiple of 32, got " + std::to_string(D));
  const float* qp = q.as<float>();
  float* y = c.out[0].as<float>();
  // A prompt (several tokens) runs tiles of kTile queries over an f16 or q8_0 cache with
  // the rows in use converted to f32 once per step (exact, so the same bits): a tile's
  // pass over f32 rows is about twice as fast as converting them, once per tile or once
  // per query. A decode step (one token) runs each query alone straight from the cache:
  // nothing to convert for one pass, and no buffer that grows with the context (the
  // step allocates nothing); grouped heads then read their KV head once per query.
  // Under a sliding window each query starts at its own row (max(0, pos - window + 1)), so
  // it runs alone in its tile with the tile's rows offset to that start.
  const int64_t per_head = T * G, tile_q = T > 1 && window == 0 ? attn::kTile : 1;
  const int64_t ntile = (per_head + tile_q - 1) / tile_q;
  const uint8_t* kb = k.data;
  const uint8_t* vb = v.data;
  int64_t head_rows = L;
  attn::Cache tile_cache = cache;
  if (cache != attn::Cache::f32 && T > 1) {
    thread_local std::vector<float> rows_f32;
    const size_t need = static_cast<size_t>(2 * Hkv * rows_max * D);
    if (rows_f32.size() < need) rows_f32.resize(need);
    float* kf = rows_f32.data();
    float* vf = kf + Hkv * rows_max * D;
    const int64_t src_head = L * attn::row_bytes(cache, D);
    parallel_rows(c, 2 * Hkv, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t h = i % Hkv;
        const uint8_t* src = (i < Hkv ? k.data : v.data) + h * src_head;
        float* dst = (i < Hkv ? kf : vf) + h * rows_max * D;
        attn::rows_to_f32(cache, src, rows_max * D, dst);
      }
    }, min_rows_per_chunk(rows_max * D));
    kb = reinterpret_cast<const uint8_t*>(kf);
    vb = reinterpret_cast<const uint8_t*>(vf);
    head_rows = rows_max;
    tile_cache = attn::Cache::f32;
  }
  const int64_t head_bytes = head_rows * attn::row_bytes(tile_cache, D);
  // The queries of one KV head, u = t * G + g, in tiles of tile_q consecutive u. Work item
  // w is (KV head w / ntile, tile rank w % ntile): one head's tiles one after another, so
  // its rows stay in L2 while they pass (head-minor order read every head's rows from L3
  // for each rank). Ranks alternate between the first and the last tiles (0, n-1, 1,
  // n-2, ...), so any contiguous run of a head's items, and so each of the pool's
  // contiguous chunks, gets about its share of a causal prompt, whose later tokens attend
  // more rows.
  auto work = [&](int64_t w0, int64_t w1) {
    // Sized to the whole cache once per thread, so later steps (longer rows) allocate nothing.
    thread_local std::vector<float> scratch;
    const int64_t need = attn::scratch_floats(L);
    if (static_cast<int64_t>(scratch.size()) < need) scratch.resize(static_cast<size_t>(need));
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t kvh = w / ntile, rank = w % ntile;
      const int64_t tile = rank % 2 == 0 ? rank / 2 : ntile - 1 - rank / 2;
      attn::Tile tl;
      tl.k = kb + kvh * head_bytes;
      tl.v = vb + kvh * head_bytes;
      tl.cache = tile_cache;
      tl.d = D;
      tl.scale = scale;
      tl.softcap = softcap;
      tl.scratch = scratch.data();
      for (int64_t u = tile * tile_q; u < std::min(per_head, (tile + 1) * tile_q); ++u) {
        const int64_t t = u / G, h = kvh * G + u % G;
        int64_t rows = pp[t] + 1;
        if (window > 0 && rows > window) {  // tile_q is 1 here: this query alone
          const int64_t skip = (rows - window) * attn::row_bytes(tile_cache, D);
          tl.k += skip;
          tl.v += skip;
          rows = window;
        }
        tl.query[tl.nq++] = attn::Query{qp + (t * H + h) * D, rows, y + (t * H + h) * D};
      }
      attn::attend(tl);
    }
  };
  parallel_rows(c, Hkv * ntile, work, min_rows_per_chunk(2 * tile_q * rows_max * D));
  return Status::Ok();
}

}  // namespace

void register_attention_kernels(KernelTable& t) { t.add(OpKind::attention, KernelKind::plain, attention); }

}  // namespace tessera::cpu
