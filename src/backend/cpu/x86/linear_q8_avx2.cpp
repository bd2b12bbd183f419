// AVX2 + FMA + F16C kernels of linear_q8.h; bit-identical to the scalar ones there.
//
// 32-value blocks (q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl): eight weight rows per pass, their
// blocks interleaved in registers so each 32-bit lane is one row (see interleave_block):
// one broadcast of four activation bytes feeds eight rows, maddubs (or vpdpbusd) multiplies,
// the lanes end as the eight exact block sums S_b, and one fma per block adds
// dw * dx * S_b for the eight rows (q4_1 / q5_1: a second adds mw * sx). A prompt (several
// activation rows) packs each group of eight rows once into a small scratch and runs tiles
// of 2 activation rows over it. F16: the activations rounded to binary16 once per call
// (linear_q8.h); decode and batches below kF16SeqMinRows rows read each weight row start
// to end (one sequential stream, prefetched ahead) into four fma chains per output, two
// activation rows at a time; prompts run outer-product tiles of 6 x 16 over panels of 16
// weight rows (one fma chain per output). Tiling changes nothing in the arithmetic of an
// element.
#if defined(__x86_64__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/kernels/linear_q8.h"
#include "backend/cpu/x86/dpbusd.h"
#include "backend/cpu/x86/hsum8_avx2.h"
#include "convert/dtype.h"
#include "convert/gguf_kquants.h"
#include "convert/simd.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace tessera::cpu::q8::avx2 {

namespace {

using x86::hsum8;

// ---- q8_0 / q4_0 weights: eight output rows per pass ----
//
// The eight rows' block b is interleaved in registers: W[j] (j = 0..7) holds in its 32-bit
// lane r the values 4j..4j+3 of row r (q4_0: unsigned nibbles 0..15, value = nibble - 8;
// q8_0: the int8 values), so one broadcast of the activation's bytes 4j..4j+3 serves all
// eight rows, and the lanes end as the eight rows' block sums S_b (linear_q8.h).
constexpr int kRows = 8;

inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Transposes four 16-byte pieces of eight rows (A[k] = piece of row k | piece of row k + 4)
// so that out[j] holds dword j of every row in lane order 0..7.
inline void transpose4(const __m256i A[4], __m256i out[4]) {
  const __m256i t0 = _mm256_unpacklo_epi32(A[0], A[1]), t1 = _mm256_unpackhi_epi32(A[0], A[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(A[2], A[3]), t3 = _mm256_unpackhi_epi32(A[2], A[3]);
  out[0] = _mm256_unpacklo_epi64(t0, t2), out[1] = _mm256_unpackhi_epi64(t0, t2);
  out[2] = _mm256_unpacklo_epi64(t1, t3), out[3] = _mm256_unpackhi_epi64(t1, t3);
}

inline __m256i load_pair(const uint8_t* lo, const uint8_t* hi) {
  return _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(hi)),
                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(lo)));
}

// The 32-value block types of this kernel. Signed: the values are int8 (q8_0, iq4_nl's
// table values) and maddubs takes them by the sign trick; else unsigned codes of kBits
// bits, with value = code - kOffset (q4_0, q5_0) or value = d code + m (q4_1, q5_1: kMin).
enum class WKind { q8_0, q4_0, q5_0, q4_1, q5_1, iq4_nl };

template <WKind K> struct Kind;
template <> struct Kind<WKind::q8_0> { static constexpr bool kSigned = true, kMin = false; static constexpr int kBits = 8, kOffset = 0, kQs = 2, kQh = 0; static constexpr int64_t kBytes = kQ8_0BlockBytes; };
template <> struct Kind<WKind::iq4_nl> { static constexpr bool kSigned = true, kMin = false; static constexpr int kBits = 4, kOffset = 0, kQs = 2, kQh = 0; static constexpr int64_t kBytes = kIQ4_NLBlockBytes; };
template <> struct Kind<WKind::q4_0> { static constexpr bool kSigned = false, kMin = false; static constexpr int kBits = 4, kOffset = 8, kQs = 2, kQh = 0; static constexpr int64_t kBytes = kQ4_0BlockBytes; };
template <> struct Kind<WKind::q5_0> { static constexpr bool kSigned = false, kMin = false; static constexpr int kBits = 5, kOffset = 16, kQs = 6, kQh = 2; static constexpr int64_t kBytes = kQ5_0BlockBytes; };
template <> struct Kind<WKind::q4_1> { static constexpr bool kSigned = false, kMin = true; static constexpr int kBits = 4, kOffset = 0, kQs = 4, kQh = 0; static constexpr int64_t kBytes = kQ4_1BlockBytes; };
template <> struct Kind<WKind::q5_1> { static constexpr bool kSigned = false, kMin = true; static constexpr int kBits = 5, kOffset = 0, kQs = 8, kQh = 4; static constexpr int64_t kBytes = kQ5_1BlockBytes; };

// Bit 4 of the codes in W[j] (values 4j .. 4j + 3) from the eight rows' 32 fifth bits, H
// (lane r: row r's bits, bit v for value v): value 4j + t is bit 4 (j % 2) + t of byte j / 2.
inline __m256i fifth_bits(__m256i H, int j) {
  const int byte = j / 2;
  const __m256i idx = _mm256_setr_epi8(byte, byte, byte, byte, 4 + byte, 4 + byte, 4 + byte, 4 + byte, 8 + byte, 8 + byte,
                                       8 + byte, 8 + byte, 12 + byte, 12 + byte, 12 + byte, 12 + byte, byte, byte, byte, byte,
                                       4 + byte, 4 + byte, 4 + byte, 4 + byte, 8 + byte, 8 + byte, 8 + byte, 8 + byte, 12 + byte,
                                       12 + byte, 12 + byte, 12 + byte);
  const int sh = 4 * (j % 2);
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(0x08040201u << sh));
  const __m256i on = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(H, idx), mask), mask);
  return _mm256_and_si256(on, _mm256_set1_epi8(16));
}

// Block b of rows[0..8) interleaved into W[8]; returns the eight scales d (and the eight
// mins in *mw for q4_1 / q5_1).
template <WKind K>
inline __m256 interleave_block(const uint8_t* const rows[kRows], int64_t b, __m256i W[8], __m256* mw = nullptr) {
  using T = Kind<K>;
  constexpr int64_t kBytes = T::kBytes;
  alignas(16) uint16_t dh[kRows];
  for (int r = 0; r < kRows; ++r) std::memcpy(&dh[r], rows[r] + b * kBytes, 2);
  __m256i A[4];
  if constexpr (K == WKind::q8_0) {
    for (int h = 0; h < 2; ++h) {  // values 0..15, then 16..31
      for (int k = 0; k < 4; ++k)
        A[k] = load_pair(rows[k] + b * kBytes + 2 + 16 * h, rows[k + 4] + b * kBytes + 2 + 16 * h);
      transpose4(A, W + 4 * h);
    }
  } else {
    // Byte i of the 16 holds value i (low nibble) and value i + 16 (high nibble).
    for (int k = 0; k < 4; ++k) A[k] = load_pair(rows[k] + b * kBytes + T::kQs, rows[k + 4] + b * kBytes + T::kQs);
    __m256i D[4];
    transpose4(A, D);
    const __m256i lo4 = _mm256_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      W[j] = _mm256_and_si256(D[j], lo4);
      W[j + 4] = _mm256_and_si256(_mm256_srli_epi16(D[j], 4), lo4);
    }
    if constexpr (K == WKind::iq4_nl) {
      const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(convert::kIQ4Values)));
      for (int j = 0; j < 8; ++j) W[j] = _mm256_shuffle_epi8(table, W[j]);
    }
    if constexpr (T::kBits == 5) {
      alignas(32) int32_t qh[kRows];
      for (int r = 0; r < kRows; ++r) std::memcpy(&qh[r], rows[r] + b * kBytes + T::kQh, 4);
      const __m256i H = _mm256_load_si256(reinterpret_cast<const __m256i*>(qh));
      for (int j = 0; j < 8; ++j) W[j] = _mm256_or_si256(W[j], fifth_bits(H, j));
    }
  }
  if constexpr (T::kMin) {
    alignas(16) uint16_t mh[kRows];
    for (int r = 0; r < kRows; ++r) std::memcpy(&mh[r], rows[r] + b * kBytes + 2, 2);
    *mw = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(mh)));
  }
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(dh)));
}

// The eight block sums S_b of one activation block xq (its sum sx) against W (AW = |W| for
// q8_0). Exact: q4_0's nibble x products are at most 15 * 127, so the eight 16-bit pair sums
// of a lane stay within 8 * 2 * 15 * 127 = 30480 < 32767 before madd widens them; q8_0 takes
// the sign trick, maddubs(|w|, sign(x, w)) with |w| <= 128 unsigned, pairs <= 2 * 128 * 127 =
// 32512, widened per group.
//
// With VNNI (Dot::vnni_*) one vpdpbusd per four bytes adds the same u8 x s8 products into
// the int32 lanes directly: the same sums (neither form saturates on these operands).
using x86::Dot;
using x86::dpbusd;

template <WKind K, Dot kDot = Dot::madd>
inline __m256i block_dot(const __m256i* W, const __m256i* AW, const int8_t* xq, int32_t sx) {
  using T = Kind<K>;
  // sum (code - offset) x = sum code x - offset sum x
  const __m256i off = _mm256_set1_epi32(T::kOffset * sx);
  if constexpr (kDot != Dot::madd) {
    __m256i acc = _mm256_setzero_si256();
    for (int j = 0; j < 8; ++j)
      acc = T::kSigned ? dpbusd<kDot>(acc, AW[j], _mm256_sign_epi8(bcast4(xq + 4 * j), W[j]))
                       : dpbusd<kDot>(acc, W[j], bcast4(xq + 4 * j));
    return T::kOffset ? _mm256_sub_epi32(acc, off) : acc;
  }
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i p[8];
  if constexpr (!T::kSigned) {
    for (int j = 0; j < 8; ++j) p[j] = _mm256_maddubs_epi16(W[j], bcast4(xq + 4 * j));
    const __m256i s0 = _mm256_add_epi16(_mm256_add_epi16(p[0], p[1]), _mm256_add_epi16(p[2], p[3]));
    const __m256i s1 = _mm256_add_epi16(_mm256_add_epi16(p[4], p[5]), _mm256_add_epi16(p[6], p[7]));
    // 4-bit codes: eight pair sums <= 8 * 2 * 15 * 127 = 30480 fit int16; 5-bit codes: four
    // (4 * 2 * 31 * 127 = 31496), so each half is widened on its own.
    const __m256i s = T::kBits == 4 ? _mm256_madd_epi16(_mm256_add_epi16(s0, s1), ones)
                                    : _mm256_add_epi32(_mm256_madd_epi16(s0, ones), _mm256_madd_epi16(s1, ones));
    return T::kOffset ? _mm256_sub_epi32(s, off) : s;
  } else {
    for (int j = 0; j < 8; ++j)
      p[j] = _mm256_madd_epi16(_mm256_maddubs_epi16(AW[j], _mm256_sign_epi8(bcast4(xq + 4 * j), W[j])), ones);
    return _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(p[0], p[1]), _mm256_add_epi32(p[2], p[3])),
                            _mm256_add_epi32(_mm256_add_epi32(p[4], p[5]), _mm256_add_epi32(p[6], p[7])));
  }
}

inline void store_rows(float* y, __m256 v, int n) {
  if (n == kRows) return _mm256_storeu_ps(y, v);
  alignas(32) float t[kRows];
  _mm256_store_ps(t, v);
  std::memcpy(y, t, static_cast<size_t>(n) * 4);
}

// Rows o .. o + n (n <= 8) of weights; missing rows repeat the last one (computed, not stored).
inline void group_rows(const QuantGemm& g, int64_t o, int n, const uint8_t* rows[kRows]) {
  for (int r = 0; r < kRows; ++r) rows[r] = g.w + (o + std::min(r, n - 1)) * g.w_row_bytes;
}

// Decode reads every weight once from memory: the hardware prefetchers do not follow eight
// interleaved row streams far enough ahead, so each block step asks for its share of the
// weight bytes some groups ahead. On the Zen 3 VM of earlier sessions one group ahead
// doubled the weight bytes read per second (llm_matmul_bench, m = 1: about 5.5 -> 12 GB/s)
// and 2, 4 and 8 measured slower there (8: decode 110 against 135 tokens/s on the Q4_0
// model); on the Zen 5 (AVX-512) machines now, two groups ahead decode about 10% faster on
// one thread than one (Q4_0 238-251 -> 269-275 tokens/s, Q8_0 142-144 -> 153-165, alternating
// runs), four no faster than two.
constexpr int64_t kPrefetchGroups = 2;

// One activation row (decode): interleaves in registers, no scratch. [pf, pf_end) are the
// bytes to prefetch over this group's blocks.
template <WKind K, Dot kDot>
void gemv_group(const QuantGemm& g, int64_t o, int n, const uint8_t* pf, const uint8_t* pf_end) {
  using T = Kind<K>;
  const int64_t blocks = g.x.k / kBlock;
  const uint8_t* rows[kRows];
  group_rows(g, o, n, rows);
  const int64_t pf_step = ((pf_end - pf) / blocks + 63) / 64 * 64;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    for (const uint8_t* p = pf + b * pf_step, *e = std::min(pf_end, p + pf_step); p < e; p += 64)
      _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
    __m256i W[8], AW[8];
    __m256 mw;
    const __m256 dw = interleave_block<K>(rows, b, W, &mw);
    if constexpr (T::kSigned)
      for (int j = 0; j < 8; ++j) AW[j] = _mm256_sign_epi8(W[j], W[j]);
    const __m256i S = block_dot<K, kDot>(W, AW, g.x.q + b * kBlock, T::kOffset ? g.x.s[b] : 0);
    acc = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(g.x.d[b])), _mm256_cvtepi32_ps(S), acc);
    if constexpr (T::kMin) acc = _mm256_fmadd_ps(mw, _mm256_set1_ps(g.x.s1[b]), acc);
  }
  store_rows(g.y + o, acc, n);
}

// Several activation rows (prompt): a group's interleaved blocks are written once to a
// scratch (per block: W[8], for signed kinds then |W|[8]; scales and mins apart) and serve
// every row of a chunk of activation rows.
struct GroupScratch {
  std::vector<uint8_t> bytes;  // the interleaved blocks (32-byte aligned inside) and the scales
};

// The packed group: per block kRegs registers, then blocks x 8 scales, then blocks x 8
// mins. Plain pointers, taken once per call: reaching a thread_local through a reference
// inside the loops made the compiler call __tls_get_addr on every block.
struct Packed {
  __m256i* w;
  float* d;
  float* m;
};

template <WKind K> constexpr int kRegsOf = Kind<K>::kSigned ? 16 : 8;

template <WKind K>
Packed group_buffer(int64_t blocks) {
  constexpr int kRegs = kRegsOf<K>;
  thread_local GroupScratch s;
  const size_t need = static_cast<size_t>(blocks) * (kRegs * sizeof(__m256i) + 2 * kRows * sizeof(float)) + 32;
  if (s.bytes.size() < need) s.bytes.resize(need);
  const uintptr_t p = reinterpret_cast<uintptr_t>(s.bytes.data());
  auto* w = reinterpret_cast<__m256i*>(s.bytes.data() + ((32 - p % 32) % 32));
  float* d = reinterpret_cast<float*>(w + blocks * kRegs);
  return {w, d, d + blocks * kRows};
}

template <WKind K>
void pack_group(const QuantGemm& g, int64_t o, int n, Packed pk) {
  constexpr int kRegs = kRegsOf<K>;
  const int64_t blocks = g.x.k / kBlock;
  const uint8_t* rows[kRows];
  group_rows(g, o, n, rows);
  for (int64_t b = 0; b < blocks; ++b) {
    __m256i* W = pk.w + b * kRegs;
    __m256 mw;
    _mm256_storeu_ps(pk.d + b * kRows, interleave_block<K>(rows, b, W, &mw));
    if constexpr (Kind<K>::kMin) _mm256_storeu_ps(pk.m + b * kRows, mw);
    if constexpr (Kind<K>::kSigned)
      for (int j = 0; j < 8; ++j) W[8 + j] = _mm256_sign_epi8(W[j], W[j]);
  }
}

template <WKind K, int MR, Dot kDot>
void gemm_tile(const QuantGemm& g, Packed pk, int64_t m0, int64_t o, int n) {
  constexpr int kRegs = kRegsOf<K>;
  const int64_t blocks = g.x.k / kBlock;
  __m256 acc[MR];
  for (int m = 0; m < MR; ++m) acc[m] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const __m256i* W = pk.w + b * kRegs;
    const __m256 dw = _mm256_loadu_ps(pk.d + b * kRows);
    for (int m = 0; m < MR; ++m) {
      const int64_t r = (m0 + m) * blocks + b;
      const __m256i S = block_dot<K, kDot>(W, W + 8, g.x.q + r * kBlock, Kind<K>::kOffset ? g.x.s[r] : 0);
      acc[m] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(g.x.d[r])), _mm256_cvtepi32_ps(S), acc[m]);
      if constexpr (Kind<K>::kMin) acc[m] = _mm256_fmadd_ps(_mm256_loadu_ps(pk.m + b * kRows), _mm256_set1_ps(g.x.s1[r]), acc[m]);
    }
  }
  for (int m = 0; m < MR; ++m) store_rows(g.y + (m0 + m) * g.ldy + o, acc[m], n);
}

// Activation rows per pass over the weights: 64 rows of 2048 int8 values (128 KiB) stay
// in L2 while the weight groups stream past them.
constexpr int64_t kRowChunk = 64;
// Activation rows per tile: 2 measured best on Zen 3 for both weight types (4 and 6 spill
// the q8_0 tile's registers; 1 reloads each packed block twice as often).
constexpr int kTileRows = 2;

template <WKind K, Dot kDot>
void gemm_quant_t(const QuantGemm& g, int64_t o0, int64_t o1) {
  if (g.x.m == 1) {
    const uint8_t* end = g.w + o1 * g.w_row_bytes;
    const int64_t group_bytes = kRows * g.w_row_bytes;
    for (int64_t o = o0; o < o1; o += kRows) {
      const uint8_t* pf = std::min(end, g.w + o * g.w_row_bytes + kPrefetchGroups * group_bytes);
      gemv_group<K, kDot>(g, o, static_cast<int>(std::min<int64_t>(kRows, o1 - o)), pf, std::min(end, pf + group_bytes));
    }
    return;
  }
  const Packed pk = group_buffer<K>(g.x.k / kBlock);
  for (int64_t mc = 0; mc < g.x.m; mc += kRowChunk) {
    const int64_t mend = std::min(g.x.m, mc + kRowChunk);
    for (int64_t o = o0; o < o1; o += kRows) {
      const int n = static_cast<int>(std::min<int64_t>(kRows, o1 - o));
      pack_group<K>(g, o, n, pk);
      int64_t m = mc;
      for (; m + kTileRows <= mend; m += kTileRows) gemm_tile<K, kTileRows, kDot>(g, pk, m, o, n);
      for (; m < mend; ++m) gemm_tile<K, 1, kDot>(g, pk, m, o, n);
    }
  }
}

template <Dot kDot>
void gemm_quant_kind(const QuantGemm& g, int64_t o0, int64_t o1) {
  switch (g.wt) {
    case DType::q4_0: return gemm_quant_t<WKind::q4_0, kDot>(g, o0, o1);
    case DType::q5_0: return gemm_quant_t<WKind::q5_0, kDot>(g, o0, o1);
    case DType::q4_1: return gemm_quant_t<WKind::q4_1, kDot>(g, o0, o1);
    case DType::q5_1: return gemm_quant_t<WKind::q5_1, kDot>(g, o0, o1);
    case DType::iq4_nl: return gemm_quant_t<WKind::iq4_nl, kDot>(g, o0, o1);
    default: return gemm_quant_t<WKind::q8_0, kDot>(g, o0, o1);
  }
}

// ---- f16 weights, decode and short batches: four chains per output (linear_q8.h) ----

// The activations as the chains read them: f32, rounded to binary16 with round_x (through
// the project's row converters, the rounding the scalar kernel applies per value, into a
// per-thread scratch), or the rows as given.
const float* f16_rounded_rows(const F16Gemm& g) {
  if (!g.round_x) return g.x;
  thread_local std::vector<uint16_t> h;
  thread_local std::vector<float> s;
  const size_t n = static_cast<size_t>(g.m * g.k);
  if (s.size() < n) s.resize(n), h.resize(n);
  convert::f32_to_f16_n(g.x, h.data(), static_cast<int64_t>(n));
  convert::f16_to_f32_n(h.data(), s.data(), static_cast<int64_t>(n));
  return s.data();
}

// Weight values asked for ahead of the one being read. A call's rows lie one after another,
// so this is one sequential stream (running into the next row at a row's end, and past the
// last row of the weights, which a prefetch may: it never faults). 1 KiB: in
// alternating `tessera bench -p 0 -n 96 -t 1` runs on the development VM, 512 B, 2 KiB and
// 4 KiB ahead decoded 8-17% slower (docs/performance.md).
constexpr int64_t kF16AheadValues = 512;

// Weight row o against activation rows m0 .. m0 + MR: per row four chains of eight lanes
// (linear_q8.h), 32 weight values converted per step and shared by the MR rows.
template <int MR>
void f16_rows4(const F16Gemm& g, const float* x, int64_t m0, int64_t o) {
  const uint16_t* w = g.w + o * g.k;
  const int64_t k8 = g.k / 8 * 8, k32 = g.k / 32 * 32;
  const float* xm[MR];
  for (int m = 0; m < MR; ++m) xm[m] = x + (m0 + m) * g.k;
  __m256 acc[MR][4];
  for (int m = 0; m < MR; ++m)
    for (int q = 0; q < 4; ++q) acc[m][q] = _mm256_setzero_ps();
  auto wv = [&](int64_t j) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + j))); };
  int64_t j = 0;
  for (; j < k32; j += 32) {
    _mm_prefetch(reinterpret_cast<const char*>(w + j + kF16AheadValues), _MM_HINT_T0);
    const __m256 w0 = wv(j), w1 = wv(j + 8), w2 = wv(j + 16), w3 = wv(j + 24);
    for (int m = 0; m < MR; ++m) {
      acc[m][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xm[m] + j), acc[m][0]);
      acc[m][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(xm[m] + j + 8), acc[m][1]);
      acc[m][2] = _mm256_fmadd_ps(w2, _mm256_loadu_ps(xm[m] + j + 16), acc[m][2]);
      acc[m][3] = _mm256_fmadd_ps(w3, _mm256_loadu_ps(xm[m] + j + 24), acc[m][3]);
    }
  }
  for (; j < k8; j += 8) {  // at most three steps, chains 0, 1, 2
    const __m256 w0 = wv(j);
    const int q = static_cast<int>((j / 8) % 4);
    for (int m = 0; m < MR; ++m) acc[m][q] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(xm[m] + j), acc[m][q]);
  }
  for (int m = 0; m < MR; ++m) {
    float t = 0;
    for (int64_t e = k8; e < g.k; ++e) t = std::fma(_cvtsh_ss(w[e]), xm[m][e], t);
    const __m256 sum = _mm256_add_ps(_mm256_add_ps(acc[m][0], acc[m][1]), _mm256_add_ps(acc[m][2], acc[m][3]));
    g.y[(m0 + m) * g.ldy + o] = hsum8(sum) + t;
  }
}

// Fewer than kF16SeqMinRows activation rows: each weight row once, start to end, against
// the activation rows two at a time (a short batch reads the row again from L1).
void gemm_f16_few(const F16Gemm& g, int64_t o0, int64_t o1) {
  const float* x = f16_rounded_rows(g);
  for (int64_t o = o0; o < o1; ++o) {
    int64_t m = 0;
    for (; m + 2 <= g.m; m += 2) f16_rows4<2>(g, x, m, o);
    if (m < g.m) f16_rows4<1>(g, x, m, o);
  }
}

}  // namespace

void quantize_row(const float* x, int64_t n, int8_t* q, float* d) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int64_t b = 0; b < n / kBlock; ++b) {
    const float* xb = x + b * kBlock;
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
    __m256 mx = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                              _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    d[b] = _cvtsh_ss(_cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT));
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i i32[4];
    for (int i = 0; i < 4; ++i)
      i32[i] = _mm256_cvtps_epi32(
          _mm256_round_ps(_mm256_mul_ps(v[i], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i32[0], i32[1]), _mm256_packs_epi32(i32[2], i32[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock), _mm256_permutevar8x32_epi32(p, perm));
  }
}

void gemm_quant(const QuantGemm& g, int64_t o0, int64_t o1) {
  // VNNI where the CPU has it (convert::cpu_vnni(); TESSERA_SIMD=avx2 keeps maddubs): the
  // same integers, so the tests that compare this function with the scalar kernels check
  // whichever form the CPU runs.
  static const convert::Vnni vnni = convert::cpu_vnni();
  switch (vnni) {
    case convert::Vnni::vex: return gemm_quant_kind<Dot::vnni_vex>(g, o0, o1);
    case convert::Vnni::evex: return gemm_quant_kind<Dot::vnni_evex>(g, o0, o1);
    default: return gemm_quant_kind<Dot::madd>(g, o0, o1);
  }
}

namespace {

// ---- f16 weights, prompts: one fma chain per output (linear_q8.h, m >= kF16SeqMinRows) ----

// Outer-product tiles: 6 activation rows x 16 weight rows, every k step one broadcast per
// activation row and two loads (F16C conversions) of the panel, 12 accumulators of eight
// outputs each, no horizontal sums. The panel holds 16 weight rows' binary16 bits, k-major
// ([k][16]), transposed once per call. Binary16 panels measured 9% faster prompts on one
// thread than f32 panels and about 4% on two (seven alternating pairs): the panels are
// read again from L3 for every chunk of activation rows, and half the bytes outweigh the
// two conversions per step.
constexpr int kSeqPanel = 16;
constexpr int kSeqTileRows = 6;
constexpr int64_t kSeqSteps = 2048;  // k steps per block (64 KiB of panel)

// 8 x 8 transpose of r[0..7] in place.
inline void transpose8(__m256* r) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)), u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)), u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0)), u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0)), u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

// Weight rows o .. o + nr (nr <= 16) into panel[k][16] as f32; lanes >= nr are zero.
// 8 x 8 transpose of 16-bit values in place.
inline void transpose8x16(__m128i* r) {
  const __m128i t0 = _mm_unpacklo_epi16(r[0], r[1]), t1 = _mm_unpackhi_epi16(r[0], r[1]);
  const __m128i t2 = _mm_unpacklo_epi16(r[2], r[3]), t3 = _mm_unpackhi_epi16(r[2], r[3]);
  const __m128i t4 = _mm_unpacklo_epi16(r[4], r[5]), t5 = _mm_unpackhi_epi16(r[4], r[5]);
  const __m128i t6 = _mm_unpacklo_epi16(r[6], r[7]), t7 = _mm_unpackhi_epi16(r[6], r[7]);
  const __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2);
  const __m128i u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3);
  const __m128i u4 = _mm_unpacklo_epi32(t4, t6), u5 = _mm_unpackhi_epi32(t4, t6);
  const __m128i u6 = _mm_unpacklo_epi32(t5, t7), u7 = _mm_unpackhi_epi32(t5, t7);
  r[0] = _mm_unpacklo_epi64(u0, u4);
  r[1] = _mm_unpackhi_epi64(u0, u4);
  r[2] = _mm_unpacklo_epi64(u1, u5);
  r[3] = _mm_unpackhi_epi64(u1, u5);
  r[4] = _mm_unpacklo_epi64(u2, u6);
  r[5] = _mm_unpackhi_epi64(u2, u6);
  r[6] = _mm_unpacklo_epi64(u3, u7);
  r[7] = _mm_unpackhi_epi64(u3, u7);
}

// Weight rows o .. o + nr (nr <= 16) into panel[k][16] as their binary16 bits (half the
// bytes of f32 panels: the panels are read again for every chunk of activation rows);
// lanes >= nr are zero.
void seq_pack_panel(const F16Gemm& g, int64_t o, int nr, uint16_t* panel) {
  const int64_t k8 = g.k / 8 * 8;
  for (int half = 0; half < 2; ++half) {
    const uint16_t* rows[8];
    const int n0 = half * 8;
    for (int n = 0; n < 8; ++n) rows[n] = n0 + n < nr ? g.w + (o + n0 + n) * g.k : nullptr;
    for (int64_t j = 0; j < k8; j += 8) {
      __m128i r[8];
      for (int n = 0; n < 8; ++n)
        r[n] = rows[n] ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[n] + j)) : _mm_setzero_si128();
      transpose8x16(r);
      for (int i = 0; i < 8; ++i) _mm_store_si128(reinterpret_cast<__m128i*>(panel + (j + i) * kSeqPanel + n0), r[i]);
    }
    for (int64_t j = k8; j < g.k; ++j)
      for (int n = 0; n < 8; ++n) panel[j * kSeqPanel + n0 + n] = rows[n] ? rows[n][j] : 0;
  }
}

// Steps j0 .. j1 of the chains of a 6 x 16 tile: xp holds the tile's activations packed
// step-major (xp[j * 6 + m]), the panel its weights ([j][16]), acc the tile's 6 x 16 partial
// sums between blocks of steps (exact: a chain split over blocks of steps is the same
// chain): from zero when j0 == 0, else continuing from acc; written back to acc, or on the
// last block (y != nullptr) stored to y. Rows >= mr and outputs >= nr are computed on
// padding and not stored.
void seq_tile(const float* xp, int64_t j0, int64_t j1, const uint16_t* panel, float* acc_buf, float* y, int64_t ldy,
              int mr, int nr) {
  __m256 acc[kSeqTileRows][2];
#pragma GCC unroll 6
  for (int m = 0; m < kSeqTileRows; ++m) {
    acc[m][0] = j0 != 0 ? _mm256_load_ps(acc_buf + m * kSeqPanel) : _mm256_setzero_ps();
    acc[m][1] = j0 != 0 ? _mm256_load_ps(acc_buf + m * kSeqPanel + 8) : _mm256_setzero_ps();
  }
  const float* xj = xp + j0 * kSeqTileRows;
  const uint16_t* wj = panel + j0 * kSeqPanel;
  for (int64_t j = j0; j < j1; ++j, xj += kSeqTileRows, wj += kSeqPanel) {
    const __m256 w0 = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(wj)));
    const __m256 w1 = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(wj + 8)));
#pragma GCC unroll 6
    for (int m = 0; m < kSeqTileRows; ++m) {
      const __m256 xb = _mm256_broadcast_ss(xj + m);
      acc[m][0] = _mm256_fmadd_ps(w0, xb, acc[m][0]);
      acc[m][1] = _mm256_fmadd_ps(w1, xb, acc[m][1]);
    }
  }
#pragma GCC unroll 6
  for (int m = 0; m < kSeqTileRows; ++m) {
    _mm256_store_ps(acc_buf + m * kSeqPanel, acc[m][0]);
    _mm256_store_ps(acc_buf + m * kSeqPanel + 8, acc[m][1]);
  }
  if (y == nullptr) return;
  if (nr == kSeqPanel) {  // a constant size: the copies inline
    for (int m = 0; m < mr; ++m) std::memcpy(y + m * ldy, acc_buf + m * kSeqPanel, kSeqPanel * 4);
  } else {
    for (int m = 0; m < mr; ++m) std::memcpy(y + m * ldy, acc_buf + m * kSeqPanel, static_cast<size_t>(nr) * 4);
  }
}

// Activation rows m0 .. m1 packed per tile of 6 rows, step-major (rows past m1 zero), as
// the values the chains read: rounded to binary16 and back with round_x (linear_q8.h).
void seq_pack_rows(const F16Gemm& g, int64_t m0, int64_t m1, float* xp) {
  const int64_t k8 = g.k / 8 * 8;
  const auto rnd = [&](__m256 v) {
    return g.round_x ? _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)) : v;
  };
  for (int64_t mt = m0; mt < m1; mt += kSeqTileRows, xp += kSeqTileRows * g.k) {
    const int mr = static_cast<int>(std::min<int64_t>(kSeqTileRows, m1 - mt));
    const float* rows[kSeqTileRows];
    for (int m = 0; m < kSeqTileRows; ++m) rows[m] = m < mr ? g.x + (mt + m) * g.k : nullptr;
    // Eight steps at a time: the rows' eight values transposed, each step's six values
    // stored with two lanes of spill that the next store (or the buffer's slack) takes.
    for (int64_t j = 0; j < k8; j += 8) {
      __m256 r[8];
      for (int m = 0; m < 8; ++m) r[m] = m < kSeqTileRows && rows[m] ? rnd(_mm256_loadu_ps(rows[m] + j)) : _mm256_setzero_ps();
      transpose8(r);
      for (int i = 0; i < 8; ++i) _mm256_storeu_ps(xp + (j + i) * kSeqTileRows, r[i]);
    }
    for (int64_t j = k8; j < g.k; ++j)
      for (int m = 0; m < kSeqTileRows; ++m)
        xp[j * kSeqTileRows + m] =
            !rows[m]     ? 0.0f
            : g.round_x ? _cvtsh_ss(_cvtss_sh(rows[m][j], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
                        : rows[m][j];
  }
}

float* aligned32(std::vector<float>& v, size_t n) {
  if (v.size() < n + 8) v.resize(n + 8);
  return v.data() + ((32 - reinterpret_cast<uintptr_t>(v.data()) % 32) % 32) / 4;
}

// Chunks of activation rows of about 192 KiB packed per tile (they stay in L2 while every
// panel passes over them), a multiple of the tile, of about equal length.
void seq_chunks(const F16Gemm& g, int64_t& chunk, int64_t& nchunks) {
  const int64_t cap = std::clamp<int64_t>((int64_t{192} << 10) / (4 * std::max<int64_t>(g.k, 1)), kSeqTileRows, 240) /
                      kSeqTileRows * kSeqTileRows;
  nchunks = (g.m + cap - 1) / cap;
  chunk = ((g.m + nchunks - 1) / nchunks + kSeqTileRows - 1) / kSeqTileRows * kSeqTileRows;
  nchunks = (g.m + chunk - 1) / chunk;
}

// GCC 12 reports the undefined pass-through operand of its own AVX-512 intrinsics
// (_mm512_undefined_ps) as uninitialized.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
// Two full tiles (rows m .. m + 11) on 512-bit vectors, where the CPU has AVX-512: the
// panel's 16 outputs are one vector, so 12 accumulators (each tile's six rows) take one
// conversion, 12 broadcasts and 12 fma per step, twice seq_tile's multiply-adds per
// instruction; every output's chain is the same fma per k in order (the same bits).
__attribute__((target("avx2,fma,f16c,avx512f"))) void seq_tile2_zmm(const float* xa, const float* xb, int64_t j0,
                                                                    int64_t j1, const uint16_t* panel, float* acc_buf,
                                                                    float* y, int64_t ldy, int nr) {
  __m512 acc[2 * kSeqTileRows];
#pragma GCC unroll 12
  for (int m = 0; m < 2 * kSeqTileRows; ++m)
    acc[m] = j0 != 0 ? _mm512_loadu_ps(acc_buf + m * kSeqPanel) : _mm512_setzero_ps();
  const float* pa = xa + j0 * kSeqTileRows;
  const float* pb = xb + j0 * kSeqTileRows;
  const uint16_t* wj = panel + j0 * kSeqPanel;
  for (int64_t j = j0; j < j1; ++j, pa += kSeqTileRows, pb += kSeqTileRows, wj += kSeqPanel) {
    const __m512 w = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wj)));
#pragma GCC unroll 6
    for (int m = 0; m < kSeqTileRows; ++m) {
      acc[m] = _mm512_fmadd_ps(w, _mm512_set1_ps(pa[m]), acc[m]);
      acc[kSeqTileRows + m] = _mm512_fmadd_ps(w, _mm512_set1_ps(pb[m]), acc[kSeqTileRows + m]);
    }
  }
#pragma GCC unroll 12
  for (int m = 0; m < 2 * kSeqTileRows; ++m) _mm512_storeu_ps(acc_buf + m * kSeqPanel, acc[m]);
  if (y == nullptr) return;
  for (int m = 0; m < 2 * kSeqTileRows; ++m)
    std::memcpy(y + m * ldy, acc_buf + m * kSeqPanel, static_cast<size_t>(nr) * 4);
}

// One panel's tiles over activation rows mc .. mend (packed in xp), outputs o .. o + nr.
void seq_panel_tiles(const F16Gemm& g, const float* xp, int64_t mc, int64_t mend, const uint16_t* panel, float* acc,
                     int64_t o, int nr) {
  // Blocks of kSeqSteps steps (the model shapes here in one block: blocks of 256 and 512
  // steps, whose panel part stays in L1, measured no faster, best of five alternations
  // of llm_matmul_bench); a wider K's chains wait in acc (a few KiB) between blocks.
  for (int64_t j0 = 0; j0 < g.k; j0 += kSeqSteps) {
    const int64_t j1 = std::min(g.k, j0 + kSeqSteps);
    static const bool zmm = convert::cpu_avx512();
    int64_t m = mc;
    if (zmm)
      for (; m + 2 * kSeqTileRows <= mend; m += 2 * kSeqTileRows)
        seq_tile2_zmm(xp + (m - mc) * g.k, xp + (m + kSeqTileRows - mc) * g.k, j0, j1, panel, acc + (m - mc) * kSeqPanel,
                      j1 == g.k ? g.y + m * g.ldy + o : nullptr, g.ldy, nr);
    for (; m < mend; m += kSeqTileRows)
      seq_tile(xp + (m - mc) * g.k, j0, j1, panel, acc + (m - mc) * kSeqPanel, j1 == g.k ? g.y + m * g.ldy + o : nullptr,
               g.ldy, static_cast<int>(std::min<int64_t>(kSeqTileRows, mend - m)), nr);
  }
}

// A thread's packed activation chunk and its tiles' partial sums, shared by the static and
// the run-time-shared prompt paths (grown once to the largest layer).
struct SeqScratch {
  std::vector<float> x, acc;
};
SeqScratch& seq_scratch() {
  thread_local SeqScratch s;
  return s;
}

void gemm_f16_seq(const F16Gemm& g, int64_t o0, int64_t o1) {
  // The call's weight rows as panels, transposed once (they are read again from L3 for
  // every chunk of activation rows).
  thread_local std::vector<uint16_t> wbuf;
  const int64_t npanel = (o1 - o0 + kSeqPanel - 1) / kSeqPanel;
  const size_t wneed = static_cast<size_t>(npanel * kSeqPanel * g.k) + 16;
  if (wbuf.size() < wneed) wbuf.resize(wneed);
  uint16_t* panels = wbuf.data() + ((32 - reinterpret_cast<uintptr_t>(wbuf.data()) % 32) % 32) / 2;
  for (int64_t p = 0; p < npanel; ++p)
    seq_pack_panel(g, o0 + p * kSeqPanel, static_cast<int>(std::min<int64_t>(kSeqPanel, o1 - o0 - p * kSeqPanel)),
                   panels + p * kSeqPanel * g.k);
  int64_t chunk = 0, nchunks = 0;
  seq_chunks(g, chunk, nchunks);
  SeqScratch& sc = seq_scratch();
  float* xp = aligned32(sc.x, static_cast<size_t>(chunk * g.k) + 8);  // + the packing's spill
  float* acc = aligned32(sc.acc, static_cast<size_t>(chunk * kSeqPanel));
  for (int64_t mc = 0; mc < g.m; mc += chunk) {
    const int64_t mend = std::min(g.m, mc + chunk);
    seq_pack_rows(g, mc, mend, xp);
    for (int64_t p = 0; p < npanel; ++p) {
      const int64_t o = o0 + p * kSeqPanel;
      seq_panel_tiles(g, xp, mc, mend, panels + p * kSeqPanel * g.k, acc, o,
                      static_cast<int>(std::min<int64_t>(kSeqPanel, o1 - o)));
    }
  }
}

}  // namespace

void gemm_f16(const F16Gemm& g, int64_t o0, int64_t o1) {
  if (g.m >= kF16SeqMinRows) return gemm_f16_seq(g, o0, o1);
  gemm_f16_few(g, o0, o1);
}

void f16_shared_shape(const F16Gemm& g, int64_t oc, F16Shared& s) {
  s.oc = oc;
  s.npanels = (oc + kSeqPanel - 1) / kSeqPanel;
  s.panel_values = s.npanels * kSeqPanel * g.k;
  seq_chunks(g, s.chunk, s.nchunks);
}

void gemm_f16_shared(const F16Gemm& g, const F16Shared& s) {
  SeqScratch& sc = seq_scratch();
  float* xp = aligned32(sc.x, static_cast<size_t>(s.chunk * g.k) + 8);  // + the packing's spill
  float* acc = aligned32(sc.acc, static_cast<size_t>(s.chunk * kSeqPanel));
  for (int64_t c = 0; c < s.nchunks; ++c) {
    const int64_t mc = c * s.chunk, mend = std::min(g.m, mc + s.chunk);
    bool rows_packed = false;
    for (;;) {
      const int64_t p = s.next[c].fetch_add(1, std::memory_order_relaxed);
      if (p >= s.npanels) break;
      if (!rows_packed) seq_pack_rows(g, mc, mend, xp), rows_packed = true;
      const int64_t o = p * kSeqPanel;
      const int nr = static_cast<int>(std::min<int64_t>(kSeqPanel, s.oc - o));
      uint16_t* panel = s.panels + p * kSeqPanel * g.k;
      if (c == 0) {  // the one thread that takes panel p in the first chunk transposes it
        seq_pack_panel(g, o, nr, panel);
        s.ready[p].store(1, std::memory_order_release);
      } else {
        while (s.ready[p].load(std::memory_order_acquire) == 0) _mm_pause();
      }
      seq_panel_tiles(g, xp, mc, mend, panel, acc, o, nr);
    }
  }
}

}  // namespace tessera::cpu::q8::avx2

#pragma GCC pop_options

#endif  // __x86_64__
