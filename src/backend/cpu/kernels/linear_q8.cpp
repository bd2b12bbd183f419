// The portable 8-bit-activation and F16 kernels (see linear_q8.h), their run-time dispatch,
// and the cpu fully_connected kernel that chooses between them and the reference.
#include "backend/cpu/kernels/linear_q8.h"
#include "backend/cpu/kernels/hsum8.h"
#include "backend/cpu/kernels/linear_kq.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "backend/cpu/kernels/hybrid.h"
#include "backend/cpu/kernels/kernel_util.h"
#include "convert/gguf_kquants.h"
#include "convert/simd.h"

namespace tessera::cpu {

Status fully_connected_reference(KernelContext& c);  // linear.cpp

namespace q8 {

namespace {


// Weight block b of a row as 32 signed values (w of linear_q8.h) and its scale; q4_1 / q5_1
// also their min in *mw.
float weight_block(DType wt, const uint8_t* row, int64_t b, int8_t* out, float* mw = nullptr) {
  const uint8_t* blk = row + b * dtype_block_bytes(wt);
  uint16_t dh;
  std::memcpy(&dh, blk, 2);
  if (wt == DType::q4_1 || wt == DType::q5_1) {
    // d, m, (q5_1: 32 fifth bits,) 16 bytes of nibbles (value j: low nibble of byte j, value
    // j + 16: high nibble); w = code.
    const bool q5 = wt == DType::q5_1;
    uint16_t mh;
    std::memcpy(&mh, blk + 2, 2);
    *mw = f16_to_f32(mh);
    uint32_t qh = 0;
    if (q5) std::memcpy(&qh, blk + 4, 4);
    const uint8_t* qs = blk + (q5 ? 8 : 4);
    for (int j = 0; j < kBlock / 2; ++j) {
      out[j] = static_cast<int8_t>((qs[j] & 0x0f) | ((qh >> j) & 1) << 4);
      out[j + kBlock / 2] = static_cast<int8_t>((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
    }
  } else if (wt == DType::q8_0) {
    std::memcpy(out, blk + 2, kBlock);
  } else if (wt == DType::iq4_nl) {
    for (int j = 0; j < kBlock / 2; ++j) {
      out[j] = convert::kIQ4Values[blk[2 + j] & 15];
      out[j + kBlock / 2] = convert::kIQ4Values[blk[2 + j] >> 4];
    }
  } else if (wt == DType::q5_0) {
    // d, 32 high bits (bit j: value j), 16 bytes of low nibbles (j and j + 16); q - 16.
    uint32_t qh;
    std::memcpy(&qh, blk + 2, 4);
    for (int j = 0; j < kBlock / 2; ++j) {
      out[j] = static_cast<int8_t>(((blk[6 + j] & 0x0f) | ((qh >> j) & 1) << 4) - 16);
      out[j + kBlock / 2] = static_cast<int8_t>(((blk[6 + j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16);
    }
  } else {
    for (int j = 0; j < kBlock / 2; ++j) {
      out[j] = static_cast<int8_t>((blk[2 + j] & 0x0f) - 8);
      out[j + kBlock / 2] = static_cast<int8_t>((blk[2 + j] >> 4) - 8);
    }
  }
  return f16_to_f32(dh);
}

}  // namespace

namespace scalar {

void quantize_row(const float* x, int64_t n, int8_t* q, float* d) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* xb = x + b * kBlock;
    float amax = 0;
    for (int i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(xb[i]));
    d[b] = f16_to_f32(f32_to_f16(amax / 127.0f));  // stored as binary16, as llama.cpp's q8_0 blocks are
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    // nearbyint rounds half to even in the default rounding mode, as the vector round does.
    for (int i = 0; i < kBlock; ++i) q[b * kBlock + i] = static_cast<int8_t>(std::nearbyint(xb[i] * id));
  }
}

void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1) {
  const int64_t blocks = g.x.k / kBlock;
  int8_t w[kBlock];
  for (int64_t o = o0; o < o1; ++o) {
    const uint8_t* row = g.w + o * g.w_row_bytes;
    for (int64_t m = 0; m < g.x.m; ++m) {
      float acc = 0;
      const int8_t* xq = g.x.q + m * g.x.k;
      for (int64_t b = 0; b < blocks; ++b) {
        float mw = 0;
        const float dw = weight_block(g.wt, row, b, w, &mw);
        int32_t s = 0;
        for (int i = 0; i < kBlock; ++i) s += int32_t{w[i]} * xq[b * kBlock + i];
        acc = std::fma(dw * g.x.d[m * blocks + b], static_cast<float>(s), acc);
        if (g.wt == DType::q4_1 || g.wt == DType::q5_1) acc = std::fma(mw, g.x.s1[m * blocks + b], acc);
      }
      g.y[m * g.ldy + o] = acc;
    }
  }
}

void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1) {
  const float* table = f16_table();
  const int64_t k8 = g.k / 8 * 8;
  if (g.m >= kF16SeqMinRows) {  // one chain per output (linear_q8.h)
    for (int64_t o = o0; o < o1; ++o) {
      const uint16_t* w = g.w + o * g.k;
      for (int64_t m = 0; m < g.m; ++m) {
        const float* x = g.x + m * g.k;
        float acc = 0;
        for (int64_t j = 0; j < g.k; ++j)
          acc = std::fma(table[w[j]], g.round_x ? table[f32_to_f16(x[j])] : x[j], acc);
        g.y[m * g.ldy + o] = acc;
      }
    }
    return;
  }
  for (int64_t o = o0; o < o1; ++o) {
    const uint16_t* w = g.w + o * g.k;
    for (int64_t m = 0; m < g.m; ++m) {
      const float* x = g.x + m * g.k;
      // With round_x each activation rounded to binary16 (linear_q8.h).
      auto xr = [&](int64_t j) { return g.round_x ? table[f32_to_f16(x[j])] : x[j]; };
      float acc[4][8] = {};  // chain (j / 8) % 4, lane l (linear_q8.h)
      for (int64_t j = 0; j < k8; j += 8)
        for (int l = 0; l < 8; ++l) acc[(j / 8) % 4][l] = std::fma(table[w[j + l]], xr(j + l), acc[(j / 8) % 4][l]);
      float s[8];
      for (int l = 0; l < 8; ++l) s[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
      float t = 0;
      for (int64_t j = k8; j < g.k; ++j) t = std::fma(table[w[j]], xr(j), t);
      g.y[m * g.ldy + o] = hsum8(s) + t;
    }
  }
}

}  // namespace scalar

void block_sums(const int8_t* q, int64_t n, int32_t* s) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    int32_t t = 0;
    for (int i = 0; i < kBlock; ++i) t += q[b * kBlock + i];
    s[b] = t;
  }
}

void offset_sums(const float* x, int64_t n, const int32_t* s, float* s1) {
  for (int64_t b = 0; b < n / kBlock; ++b) {
    float amax = 0;
    for (int i = 0; i < kBlock; ++i) amax = std::max(amax, std::fabs(x[b * kBlock + i]));
    s1[b] = f16_to_f32(f32_to_f16(amax / 127.0f * static_cast<float>(s[b])));
  }
}

bool quant_supported(DType wt) {
  return wt == DType::q8_0 || wt == DType::q4_0 || wt == DType::q5_0 || wt == DType::q4_1 || wt == DType::q5_1 ||
         wt == DType::iq4_nl;
}

#if defined(__x86_64__)
void quantize_row(const float* x, int64_t n, int8_t* q, float* d) {
  convert::use_avx2() ? avx2::quantize_row(x, n, q, d) : scalar::quantize_row(x, n, q, d);
}
void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1) {
  convert::use_avx2() ? avx2::gemm_quant(g, o0, o1) : scalar::gemm_quant(g, o0, o1);
}
void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1) {
  convert::use_avx2() ? avx2::gemm_f16(g, o0, o1) : scalar::gemm_f16(g, o0, o1);
}
bool f16_shared_shape(const F16Gemm& g, int64_t oc, F16Shared& s) {
  if (!convert::use_avx2() || g.m < kF16SeqMinRows) return false;
  avx2::f16_shared_shape(g, oc, s);
  return true;
}
void gemm_f16_shared(const F16Gemm& g, const F16Shared& s) { avx2::gemm_f16_shared(g, s); }
#elif defined(__aarch64__)
void quantize_row(const float* x, int64_t n, int8_t* q, float* d) {
  convert::use_neon() ? neon::quantize_row(x, n, q, d) : scalar::quantize_row(x, n, q, d);
}
void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1) {
  static const bool dotprod = neon_dot::available();
  if (convert::use_neon() && dotprod) return neon_dot::gemm_quant(g, o0, o1);
  convert::use_neon() && (g.wt == DType::q8_0 || g.wt == DType::q4_0) ? neon::gemm_quant(g, o0, o1)
                                                                       : scalar::gemm_quant(g, o0, o1);
}
void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1) {
  convert::use_neon() ? neon::gemm_f16(g, o0, o1) : scalar::gemm_f16(g, o0, o1);
}
bool f16_shared_shape(const F16Gemm&, int64_t, F16Shared&) { return false; }
void gemm_f16_shared(const F16Gemm&, const F16Shared&) {}  // never called: f16_shared_shape says no
#else
void quantize_row(const float* x, int64_t n, int8_t* q, float* d) { scalar::quantize_row(x, n, q, d); }
void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1) { scalar::gemm_quant(g, o0, o1); }
void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1) { scalar::gemm_f16(g, o0, o1); }
bool f16_shared_shape(const F16Gemm&, int64_t, F16Shared&) { return false; }
void gemm_f16_shared(const F16Gemm&, const F16Shared&) {}  // never called: f16_shared_shape says no
#endif

}  // namespace q8

namespace {

// Which fast path a fully_connected node takes, if any.
enum class FcPath { reference, quant, kquant, f16 };

FcPath fc_path(const KernelContext& c) {
  const DType wt = c.in[1].dtype();
  const int64_t ic = c.in[1].shape()[1];
  if (c.in[0].dtype() != DType::f32 || c.out[0].dtype() != DType::f32) return FcPath::reference;
  if (c.in.size() > 2 && c.in[2] && c.in[2].dtype() != DType::f32) return FcPath::reference;
  if (wt == DType::f16) return FcPath::f16;
  // 8-bit activations change the result (within the bound of linear_q8.h), so a graph asks
  // for them per node: attribute input_rounding = "q8_0".
  if (q8::quant_supported(wt) && ic % q8::kBlock == 0 && c.n.get(attr::input_rounding) == "q8_0")
    return FcPath::quant;
  // K-quant weights under the same request: Q8_K activation super-blocks (linear_kq.h).
  if (kq::supported(wt) && ic % kq::kSuper == 0 && c.n.get(attr::input_rounding) == "q8_0") return FcPath::kquant;
  return FcPath::reference;
}

// Runs fn(o0, o1) over the output rows [0, n) on the pool: each thread first takes its own
// contiguous three quarters of an even share (one sequential stream of weights, as the
// static split reads them), then the rest in small pieces through an atomic counter, so that
// a thread the host slows down takes fewer of them instead of the other waiting for it at
// the end (perf: 20% of a two-thread decode step was that wait). Pieces are whole groups of
// `align` rows (the kernels' eight-row groups). Every output row is computed by one call, so
// the bits do not depend on who takes it.
template <typename F>
void parallel_rows_guided(const KernelContext& c, int64_t n, int64_t align, int64_t min_rows, F&& fn) {
  const int threads = c.pool ? c.pool->threads() : 1;
  const int64_t units = (n + align - 1) / align;
  if (threads <= 1 || n < 2 * std::max<int64_t>(min_rows, align) || units < 4 * threads) {
    parallel_rows(c, n, fn, min_rows);
    return;
  }
  const int64_t per = units * 3 / 4 / threads;  // each thread's own units
  const int64_t item = std::max<int64_t>(1, (units - per * threads) / (4 * threads));
  std::atomic<int64_t> next{per * threads};
  c.pool->parallel_for(threads, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      fn(std::min(n, t * per * align), std::min(n, (t + 1) * per * align));
      for (int64_t u = next.fetch_add(item, std::memory_order_relaxed); u < units;
           u = next.fetch_add(item, std::memory_order_relaxed))
        fn(u * align, std::min(n, (u + item) * align));
    }
  }, 1);
}

// Per-thread scratch for the rounded activations; grows to the largest layer once, so a
// steady decode loop allocates nothing here.
struct ActScratch {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<int32_t> s;
  std::vector<float> s1;       // q4_1 / q5_1 weights: q8::offset_sums
  std::vector<int16_t> bsums;  // Q8_K rows (kquant path)
};
ActScratch& act_scratch() {
  thread_local ActScratch s;
  return s;
}

// The shared state of a prompt's f16 product on several threads (q8::F16Shared), kept by
// the calling thread and grown to the largest layer once.
struct F16SharedScratch {
  std::vector<uint16_t> panels;
  std::unique_ptr<std::atomic<int32_t>[]> ready;
  std::unique_ptr<std::atomic<int64_t>[]> next;
  int64_t ready_n = 0, next_n = 0;

  // Points s at buffers of its shape, the counters and flags zeroed.
  void bind(q8::F16Shared& s) {
    const size_t need = static_cast<size_t>(s.panel_values) + 16;  // + 32-byte alignment
    if (panels.size() < need) panels.resize(need);
    s.panels = panels.data() + ((32 - reinterpret_cast<uintptr_t>(panels.data()) % 32) % 32) / 2;
    if (ready_n < s.npanels) ready.reset(new std::atomic<int32_t>[static_cast<size_t>(ready_n = s.npanels)]);
    if (next_n < s.nchunks) next.reset(new std::atomic<int64_t>[static_cast<size_t>(next_n = s.nchunks)]);
    for (int64_t p = 0; p < s.npanels; ++p) ready[p].store(0, std::memory_order_relaxed);
    for (int64_t i = 0; i < s.nchunks; ++i) next[i].store(0, std::memory_order_relaxed);
    s.ready = ready.get();
    s.next = next.get();
  }
};

// y [M, OC] = act(x [M, IC] * w[OC, IC]^T + bias [OC]), through the fast kernels.
Status fully_connected(KernelContext& c) {
  if (hybrid_weights(c)) return hybrid_fully_connected(c);
  const FcPath path = fc_path(c);
  if (path == FcPath::reference) return fully_connected_reference(c);
  const TensorRef &x = c.in[0], &w = c.in[1];
  const TensorRef bias = c.in.size() > 2 ? c.in[2] : TensorRef{};
  const int64_t oc_n = w.shape()[0], ic = w.shape()[1];
  const int64_t m_n = x.elements() / ic;
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const float* bp = bias ? bias.as<float>() : nullptr;
  float* y = c.out[0].as<float>();
  auto finish = [&](int64_t o0, int64_t o1) {
    if (!bp && act == Activation::none) return;
    for (int64_t m = 0; m < m_n; ++m)
      for (int64_t o = o0; o < o1; ++o) y[m * oc_n + o] = activate(y[m * oc_n + o] + (bp ? bp[o] : 0.0f), act);
  };
  if (path == FcPath::f16) {
    // The graph's request for llama.cpp's input rounding (input_rounding = "q8_0", see
    // fc_path) rounds the activations to binary16 against f16 weights, as llama.cpp does.
    const bool round_x = c.n.get(attr::input_rounding) == "q8_0";
    q8::F16Gemm g{w.as<uint16_t>(), x.as<float>(), m_n, ic, y, oc_n, round_x};
    q8::F16Shared sh;
    const int threads = c.pool ? c.pool->threads() : 1;
    if (threads > 1 && q8::f16_shared_shape(g, oc_n, sh)) {
      // A prompt on several threads: panels taken at run time (linear_q8.h), one call per thread.
      thread_local F16SharedScratch scratch;
      scratch.bind(sh);
      parallel_rows(c, threads, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) q8::gemm_f16_shared(g, sh);
      }, 1);
      finish(0, oc_n);
      return Status::Ok();
    }
    parallel_rows_guided(c, oc_n, 8, min_rows_per_chunk(m_n * ic),
                         [&](int64_t o0, int64_t o1) { q8::gemm_f16(g, o0, o1), finish(o0, o1); });
    return Status::Ok();
  }
  ActScratch& s = act_scratch();
  if (path == FcPath::kquant) {
    const size_t nq = static_cast<size_t>(m_n * ic);
    if (s.q.size() < nq) s.q.resize(nq);
    if (s.d.size() < nq / kq::kSuper) s.d.resize(nq / kq::kSuper);
    if (s.bsums.size() < nq / kq::kGroup) s.bsums.resize(nq / kq::kGroup);
    const float* xp = x.as<float>();
    int8_t* qp = s.q.data();
    float* dp = s.d.data();
    int16_t* bp16 = s.bsums.data();
    parallel_rows(c, m_n, [&](int64_t m0, int64_t m1) {
      for (int64_t m = m0; m < m1; ++m)
        kq::quantize_row_q8k(xp + m * ic, ic, qp + m * ic, dp + m * (ic / kq::kSuper), bp16 + m * (ic / kq::kGroup));
    }, min_rows_per_chunk(4 * ic));
    kq::KQuantGemm g{w.dtype(), w.data, row_bytes(w.dtype(), ic), {qp, dp, bp16, m_n, ic}, y, oc_n};
    parallel_rows_guided(c, oc_n, 8, min_rows_per_chunk(m_n * ic),
                         [&](int64_t o0, int64_t o1) { kq::gemm_kquant(g, o0, o1), finish(o0, o1); });
    return Status::Ok();
  }
  const size_t nq = static_cast<size_t>(m_n * ic), nd = static_cast<size_t>(m_n * ic / q8::kBlock);
  if (s.q.size() < nq) s.q.resize(nq);
  if (s.d.size() < nd) s.d.resize(nd);
  if (s.s.size() < nd) s.s.resize(nd);
  const float* xp = x.as<float>();
  int8_t* qp = s.q.data();
  float* dp = s.d.data();
  int32_t* sp = s.s.data();
  const bool mins = w.dtype() == DType::q4_1 || w.dtype() == DType::q5_1;
  if (mins && s.s1.size() < nd) s.s1.resize(nd);
  float* s1p = mins ? s.s1.data() : nullptr;
  parallel_rows(c, m_n, [&](int64_t m0, int64_t m1) {
    for (int64_t m = m0; m < m1; ++m) {
      const int64_t b0 = m * (ic / q8::kBlock);
      q8::quantize_row(xp + m * ic, ic, qp + m * ic, dp + b0);
      q8::block_sums(qp + m * ic, ic, sp + b0);
      if (mins) q8::offset_sums(xp + m * ic, ic, sp + b0, s1p + b0);
    }
  }, min_rows_per_chunk(4 * ic));
  q8::QuantGemm g{w.dtype(), w.data, row_bytes(w.dtype(), ic), {qp, dp, sp, s1p, m_n, ic}, y, oc_n};
  parallel_rows_guided(c, oc_n, 8, min_rows_per_chunk(m_n * ic),
                       [&](int64_t o0, int64_t o1) { q8::gemm_quant(g, o0, o1), finish(o0, o1); });
  return Status::Ok();
}

}  // namespace

void register_fast_linear_kernels(KernelTable& t) { t.add(OpKind::fully_connected, KernelKind::plain, fully_connected); }

}  // namespace tessera::cpu
