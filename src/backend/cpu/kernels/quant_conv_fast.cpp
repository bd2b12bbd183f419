// The packed fast path of the quantized conv2d, depthwise_conv2d and fully_connected
// kernels. Everything that depends only on the node is done once at compile time
// (PrepareFn): weights centred and packed into the micro-kernels' panels, bias and
// requantization parameters per output channel. A run centres the input into int16
// (im2col for windows larger than 1x1), then calls the micro-kernels of ukernels/qconv.h;
// conv2d and fully connected layers mostly take the 8-bit form instead (pack_u8s8), which
// reads the input bytes as they are (pointwise layers in place, windowed ones through a
// byte im2col; u8 input on AVX2, u8 and int8 input with VNNI).
//
// Results are byte-identical to the reference kernels in quant_conv.cpp: the same int32
// sums (every product exact in int32, sums independent of order), then the same
// requantization (conv_quant). Work is split over output rows (and output-channel panels
// when rows are few); each output value is computed by one thread, so results do not
// depend on the thread count.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "backend/cpu/kernels/kernel_util.h"
#include "backend/cpu/kernels/quant_conv.h"
#include "backend/cpu/ukernels/qconv.h"

namespace tessera::cpu {

namespace {

using uk::kPanel;

// Bytes of an A block a GEMM work item keeps hot (centred int16 rows): about L2-resident.
constexpr int64_t kABlockBytes = 64 * 1024;
// The same for the 8-bit form, whose A is the input rows in place: an L1-resident block
// beside one weight panel (16 KB to 48 KB measured alike on Zen 5, 64 KB and more slower).
constexpr int64_t kABlockBytesU8 = 32 * 1024;

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Requantization parameters per output channel, padded with zeros to `padded` channels.
struct RequantArrays {
  std::vector<int32_t> bias, mult, lshift, rshift;
  std::vector<float> fscale, foff_pos, foff_neg;
  uk::Requant rq;

  // `order[i]`: the channel whose parameters go to slot i (-1: padding).
  void fill(const ConvQuant& p, const int32_t* b, const std::vector<int64_t>& order, DType out) {
    const size_t n = order.size();
    bias.assign(n, 0);
    mult.assign(n, 0);
    lshift.assign(n, 0);
    rshift.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      const int64_t o = order[i];
      if (o < 0) {  // padding: never stored; a right shift of 1 lets the vector forms' checks pass
        rshift[i] = 1;
        continue;
      }
      bias[i] = b ? b[o] : 0;
      mult[i] = p.mult[o].multiplier;
      lshift[i] = std::max(p.mult[o].shift, 0);
      rshift[i] = std::max(-p.mult[o].shift, 0);
    }
    rq.bias = bias.data();
    rq.mult = mult.data();
    rq.lshift = lshift.data();
    rq.rshift = rshift.data();
    rq.zp = p.y_zp;
    rq.lo = p.range.lo;
    rq.hi = p.range.hi;
    rq.single_round = p.single_round;
    rq.out_i8 = out == DType::i8;
    // The float form of each channel's requantization, for kernels that read it (exact for
    // every sum where found; uk::float_requant_form).
    if (uk::qconv_kernels().float_requant) {
      fscale.assign(n, 0.0f);
      foff_pos.assign(n, 0.0f);
      foff_neg.assign(n, 0.0f);
      const bool by_sign = !rq.single_round && rq.lo < rq.zp;
      // (one search per distinct multiplier: per-tensor layers have one)
      std::map<std::tuple<int32_t, int32_t, int32_t>, std::optional<uk::FloatRq>> found;
      for (size_t i = 0; i < n; ++i) {
        if (order[i] < 0) {
          fscale[i] = 1.0f;  // padding: never stored
          continue;
        }
        auto [it, fresh] = found.try_emplace({mult[i], lshift[i], rshift[i]});
        if (fresh) {
          uk::FloatRq f;
          if (uk::float_requant_form(mult[i], lshift[i], rshift[i], rq.single_round, rq.zp, rq.lo, rq.hi, by_sign,
                                     uk::float_rq_base(rq.out_i8), f))
            it->second = f;
        }
        if (it->second) fscale[i] = it->second->scale, foff_pos[i] = it->second->off_pos, foff_neg[i] = it->second->off_neg;
      }
      rq.fscale = fscale.data();
      rq.foff_pos = foff_pos.data();
      rq.foff_neg = foff_neg.data();
    }
  }
};

struct PackedConv : PreparedKernel {
  bool depthwise = false;
  // geometry (NHWC input [N, H, W, C], output [N, OH, OW, OC])
  int64_t N = 1, H = 1, W = 1, C = 0, OH = 1, OW = 1, OC = 0;
  // depthwise with a depth multiplier: C (= OC) channels from C / mult input channels,
  // output channel c reading input channel c / mult (the padded copy repeats each one)
  int64_t mult = 1;
  Window win;
  int32_t x_zp = 0;
  bool in_i8 = false;
  RequantArrays rq;
  // conv2d / fully connected: K = KH*KW*C, A rows of lda = 2*kpairs int16
  bool pointwise = false;  // 1x1, stride 1, no padding: A rows are the input pixels
  int64_t K = 0, kpairs = 0, npanels = 0;
  std::vector<int16_t> panels;  // [npanels][kpairs][kPanel][2]
  // The 8-bit form (uk::GemmU8Fn; the weights' fixes few): panels of s8
  // weight parts [npanels][kquads][kPanel][4] and per panel p its fixes
  // fixes[fix_start[p] .. fix_start[p + 1]); rq.bias then holds bias - x_zp * sum_k v_k
  // (int8 input: bias - (x_zp + 128) * sum_k v_k, the input bytes read as x + 128).
  bool u8s8 = false;
  int64_t kquads = 0;
  std::vector<int8_t> panels8;
  std::vector<uk::U8Fix> fixes;
  std::vector<int64_t> fix_start;
  // windowed ops: the centred, zero-bordered input [N][Hp][Wp][cpad] (padded() > 0), made
  // by each run in a scratch buffer that every such op of the calling thread shares, so
  // that a network's copies do not each hold their own memory and cache lines
  int64_t Hp = 0, Wp = 0, cpad = 0;
  std::vector<int64_t> tap_off;  // depthwise: per tap, int16 units from the first padded input row read
  std::vector<int16_t> dw_w;     // [cpad / kPanel][pairs][32]
  int64_t padded() const { return N * Hp * Wp * cpad; }
};

// The calling thread's padded-input scratch, grown to the largest op it has run (the first
// run of a network grows it; later runs allocate nothing).
// It starts on a 64-byte boundary: the depthwise rows' 64-byte loads then cross no cache
// line where the channel stride is a multiple of 32 (MobileNetV2's 32-channel depthwise
// layer 0.100-0.108 -> 0.084-0.087 ms; channel strides rounded up to 32 for the rest, as
// 144 -> 160, gained nothing and slowed the stride-2 rows' input centring).
int16_t* padded_scratch(int64_t elements) {
  thread_local std::vector<int16_t> buf;
  if (static_cast<int64_t>(buf.size()) < elements + 32) buf.resize(static_cast<size_t>(elements + 32));
  const uintptr_t misalign = reinterpret_cast<uintptr_t>(buf.data()) % 64;
  return buf.data() + (misalign ? (64 - misalign) / 2 : 0);
}

// The same for the byte copy of the 8-bit form's windowed ops.
uint8_t* padded_scratch_u8(int64_t elements) {
  thread_local std::vector<uint8_t> buf;
  if (static_cast<int64_t>(buf.size()) < elements) buf.resize(static_cast<size_t>(elements));
  return buf.data();
}

// The zero-bordered, centred input copy of a windowed op: rows and columns enough for every
// tap of every output, channels rounded up to `cpad`.
void size_padded_input(PackedConv& pc, int64_t KH, int64_t KW, int64_t cpad) {
  const Window& wn = pc.win;
  pc.cpad = cpad;
  pc.Hp = std::max(pc.H + wn.pad_top, (pc.OH - 1) * wn.sh + (KH - 1) * wn.dh + 1);
  pc.Wp = std::max(pc.W + wn.pad_left, (pc.OW - 1) * wn.sw + (KW - 1) * wn.dw + 1);
}

const Tensor* bias_of(const Graph& g, const Node& n) {
  return n.inputs.size() > 2 && n.inputs[2] != kNoTensor ? &g.tensor(n.inputs[2]) : nullptr;
}

// Whether the operands the packing reads (weights, bias) are constants; when they are not,
// the prepare functions return nullptr and the reference kernel runs.
bool constant_operands(const Graph& g, const Node& n) {
  if (!g.tensor(n.inputs[1]).data) return false;
  const Tensor* b = bias_of(g, n);
  return !b || b->data;
}

Result<ConvQuant> quant_of(const Graph& g, const Node& n, int64_t oc, bool float_product) {
  return conv_quant(n, g.tensor(n.inputs[0]), g.tensor(n.inputs[1]), bias_of(g, n), g.tensor(n.outputs[0]), oc,
                    float_product);
}

const int32_t* bias_data(const Graph& g, const Node& n) {
  const Tensor* b = bias_of(g, n);
  return b ? reinterpret_cast<const int32_t*>(b->data->data) : nullptr;
}

// Packs centred weights w[o][k] (o < OC, k < K) into panels (pc.npanels, pc.kpairs set).
void pack_panels(PackedConv& pc, const uint8_t* w, DType wt, const ConvQuant& p) {
  pc.panels.assign(static_cast<size_t>(pc.npanels * pc.kpairs * kPanel * 2), 0);
  for (int64_t o = 0; o < pc.OC; ++o) {
    int16_t* panel = pc.panels.data() + (o / kPanel) * pc.kpairs * kPanel * 2;
    const int64_t j = o % kPanel;
    for (int64_t k = 0; k < pc.K; ++k)
      panel[((k / 2) * kPanel + j) * 2 + k % 2] = static_cast<int16_t>(q::load(w, wt, o * pc.K + k) - p.w_zp[o]);
  }
}

// The 8-bit form of a conv2d / fully connected layer (qconv.h: U8Split), where the SIMD kernels have it for
// the input's type and the weights' fixes are few: a fix costs about three scalar
// operations per row of a tile, 18 per tile, where the 8-bit form saves about 12 vector
// operations per k quad of a tile (AVX2: 36 against 48; VNNI: 12 against 24), so up to
// kquads / 2 fixes per panel (on average) still leave it well ahead. Returns false, pc
// unchanged, where the layer keeps the int16 form. Needs pc.npanels, pc.in_i8 and pc.rq
// filled (the zero point's term goes into the bias).
bool pack_u8s8(PackedConv& pc, const uint8_t* w, DType wt, const ConvQuant& p) {
  const uk::QConvKernels& kern = uk::qconv_kernels();
  // Pointwise layers read the input rows in place (k a multiple of 4); windowed ones build
  // byte A rows (im2col) padded to a multiple of 4 with zero weights.
  if (!(pc.in_i8 ? kern.gemm_u8_flip : kern.gemm_u8) || (pc.pointwise && pc.K % 4 != 0)) return false;
  const int64_t k4 = round_up(pc.K, 4);
  std::vector<int16_t> v(static_cast<size_t>(pc.OC * k4), 0);
  for (int64_t o = 0; o < pc.OC; ++o)
    for (int64_t k = 0; k < pc.K; ++k)
      v[o * k4 + k] = static_cast<int16_t>(q::load(w, wt, o * pc.K + k) - p.w_zp[o]);
  uk::U8Panels u8;
  if (!uk::pack_u8_panels(v.data(), pc.OC, k4, pc.npanels * (k4 / 4) / 2, u8, kern.u8_split)) return false;
  pc.u8s8 = true;
  pc.kquads = u8.kquads;
  pc.panels8 = std::move(u8.panels);
  pc.fixes = std::move(u8.fixes);
  pc.fix_start = std::move(u8.fix_start);
  // bias - x_zp * sum_k v_k, as int32 modulo 2^32 (the sums' own arithmetic); int8 input
  // is read as x + 128, its zero point then x_zp + 128
  const int64_t zp = pc.x_zp + (pc.in_i8 ? 128 : 0);
  for (int64_t o = 0; o < pc.OC; ++o)
    pc.rq.bias[o] = static_cast<int32_t>(static_cast<uint32_t>(pc.rq.bias[o]) -
                                         static_cast<uint32_t>(zp * u8.vsum[o]));
  return true;
}

Result<std::unique_ptr<PreparedKernel>> prepare_gemm(const Graph& g, const Node& n, bool fc) {
  if (!constant_operands(g, n)) return std::unique_ptr<PreparedKernel>();
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& w = g.tensor(n.inputs[1]);
  const Tensor& y = g.tensor(n.outputs[0]);
  auto pc = std::make_unique<PackedConv>();
  if (fc) {
    pc->OC = w.shape[0];
    pc->C = w.shape[1];
    pc->K = pc->C;
    pc->N = pc->C > 0 ? x.elements() / pc->C : 0;
    pc->pointwise = true;
  } else {
    if (w.shape[3] != x.shape[3]) return std::unique_ptr<PreparedKernel>();  // grouped: reference reports it
    pc->N = x.shape[0], pc->H = x.shape[1], pc->W = x.shape[2], pc->C = x.shape[3];
    pc->OH = y.shape[1], pc->OW = y.shape[2], pc->OC = w.shape[0];
    pc->win = window_of(n, w.shape[1], w.shape[2]);
    pc->K = w.shape[1] * w.shape[2] * pc->C;
    pc->pointwise = w.shape[1] == 1 && w.shape[2] == 1 && pc->win.sh == 1 && pc->win.sw == 1 && pc->win.pad_top == 0 &&
                    pc->win.pad_left == 0 && pc->OH == pc->H && pc->OW == pc->W;
  }
  // TFLite's fully connected takes the legacy float product for per-tensor weights of both
  // u8 and int8 models; conv2d only for u8 (see quant_conv.cpp).
  TS_ASSIGN_OR_RETURN(ConvQuant p, quant_of(g, n, pc->OC, fc || x.dtype == DType::u8));
  // The micro-kernels' single rounding keeps the low 32 bits where the scalar form
  // saturates; they can differ only for multipliers above 1, which take the reference path.
  if (p.single_round)
    for (const q::Multiplier& m : p.mult)
      if (m.shift > 0) return std::unique_ptr<PreparedKernel>();
  pc->x_zp = p.x_zp;
  pc->in_i8 = x.dtype == DType::i8;
  pc->npanels = (pc->OC + kPanel - 1) / kPanel;
  pc->kpairs = (pc->K + 1) / 2;  // also sizes the row blocks of the 8-bit form
  if (!pc->pointwise && !fc) size_padded_input(*pc, w.shape[1], w.shape[2], pc->C);
  std::vector<int64_t> order(static_cast<size_t>(pc->npanels * kPanel), -1);
  for (int64_t o = 0; o < pc->OC; ++o) order[o] = o;
  pc->rq.fill(p, bias_data(g, n), order, y.dtype);
  // The 8-bit form where the kernels and weights allow it, else the int16 panels.
  if (!pack_u8s8(*pc, w.data->data, w.dtype, p))
    pack_panels(*pc, w.data->data, w.dtype, p);
  return std::unique_ptr<PreparedKernel>(std::move(pc));
}

// memcpy for the short kernel rows of a windowed op (18 bytes for a 3x3 first layer's 3
// channels): two overlapping fixed-size moves where a library call with a variable size
// cost more than the copy, once per kernel row of every output pixel.
inline void copy_row_bytes(void* dst, const void* src, size_t n) {
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  if (n >= 16 && n <= 32) {
    uint8_t head[16], tail[16];
    std::memcpy(head, s, 16);
    std::memcpy(tail, s + n - 16, 16);
    std::memcpy(d, head, 16);
    std::memcpy(d + n - 16, tail, 16);
  } else if (n >= 8 && n < 16) {
    uint64_t head, tail;
    std::memcpy(&head, s, 8);
    std::memcpy(&tail, s + n - 8, 8);
    std::memcpy(d, &head, 8);
    std::memcpy(d + n - 8, &tail, 8);
  } else {
    std::memcpy(d, s, n);
  }
}

// A rows [r0, r0 + rows) of a windowed op from its padded input xp (int16 centred values, or
// the 8-bit form's bytes), lda elements apart: whole kernel rows copied (taps of a row are
// adjacent there when the dilation is 1); the elements past K zero (their weights are zero).
template <typename T>
void im2col_rows(const PackedConv& pc, const T* xp, int64_t r0, int64_t rows, int64_t lda, T* a) {
  const Window& wn = pc.win;
  const int64_t KW = pc.K / pc.C / wn.kh;
  const size_t krow_bytes = static_cast<size_t>(KW * pc.C) * sizeof(T);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = r0 + r;
    const int64_t b = row / (pc.OH * pc.OW), oy = row / pc.OW % pc.OH, ox = row % pc.OW;
    T* ar = a + r * lda;
    for (int64_t ky = 0; ky < wn.kh; ++ky) {
      const T* src = xp + ((b * pc.Hp + oy * wn.sh + ky * wn.dh) * pc.Wp + ox * wn.sw) * pc.C;
      if (wn.dw == 1) {
        copy_row_bytes(ar, src, krow_bytes);
        ar += KW * pc.C;
      } else {
        for (int64_t kx = 0; kx < KW; ++kx, ar += pc.C) std::memcpy(ar, src + kx * wn.dw * pc.C, pc.C * sizeof(T));
      }
    }
    for (int64_t k = pc.K; k < lda; ++k) a[r * lda + k] = 0;
  }
}

// Slack after the 8-bit form's padded input and A rows: im2col_rows_u8 moves 16 bytes for
// a kernel row of up to 16.
constexpr int64_t kU8Slack = 64;

// The 8-bit form's byte A rows [r0, r0 + rows) (lda bytes apart) from its padded input xp.
// Output positions advance without a division per row, and a kernel row of at most 16
// bytes (a first layer's 3x3 taps of 3 channels: 9) goes as one 16-byte move whose tail
// the next move overwrites: a row's bytes past K then hold input bytes, not zero, which
// the sums ignore (their weights are zero and no fix reads them).
void im2col_rows_u8(const PackedConv& pc, const uint8_t* xp, int64_t r0, int64_t rows, int64_t lda, uint8_t* a) {
  const Window& wn = pc.win;
  const int64_t KW = pc.K / pc.C / wn.kh;
  const int64_t krow = KW * pc.C;
  if (wn.dw != 1 || krow > 16) {
    im2col_rows(pc, xp, r0, rows, lda, a);
    return;
  }
  int64_t b = r0 / (pc.OH * pc.OW), oy = r0 / pc.OW % pc.OH, ox = r0 % pc.OW;
  const int64_t ky_step = wn.dh * pc.Wp * pc.C, ox_step = wn.sw * pc.C;
  const uint8_t* src = xp + ((b * pc.Hp + oy * wn.sh) * pc.Wp + ox * wn.sw) * pc.C;
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* ar = a + r * lda;
    const uint8_t* s = src;
    for (int64_t ky = 0; ky < wn.kh; ++ky, s += ky_step, ar += krow) std::memcpy(ar, s, 16);
    if (++ox < pc.OW) {
      src += ox_step;
      continue;
    }
    ox = 0;
    if (++oy == pc.OH) oy = 0, ++b;
    src = xp + ((b * pc.Hp + oy * wn.sh) * pc.Wp) * pc.C;
  }
}

// Centred A rows [r0, r0 + rows) into a (lda = 2 * kpairs int16 per row).
void build_a(const PackedConv& pc, const uk::QConvKernels& uk, const uint8_t* x, const int16_t* xp, int64_t r0,
             int64_t rows, int16_t* a) {
  const int64_t lda = pc.kpairs * 2;
  if (pc.pointwise) {
    if (lda == pc.K) {
      uk.centre(x + r0 * pc.C, rows * pc.C, pc.x_zp, pc.in_i8, a);
      return;
    }
    for (int64_t r = 0; r < rows; ++r) {
      uk.centre(x + (r0 + r) * pc.C, pc.C, pc.x_zp, pc.in_i8, a + r * lda);
      a[r * lda + pc.K] = 0;
    }
    return;
  }
  im2col_rows(pc, xp, r0, rows, lda, a);
}

// One row of the padded input: input row iy of batch b centred into int16, borders and the
// channels beyond C zero (all zero where iy is outside the input).
void fill_line(const PackedConv& pc, const uk::QConvKernels& uk, const uint8_t* x, int64_t b, int64_t iy,
               int16_t* row) {
  const Window& wn = pc.win;
  const int64_t row_len = pc.Wp * pc.cpad;
  if (iy < 0 || iy >= pc.H) {
    std::memset(row, 0, static_cast<size_t>(row_len) * sizeof(int16_t));
    return;
  }
  const int64_t left = wn.pad_left * pc.cpad, interior = pc.W * pc.cpad;
  std::memset(row, 0, static_cast<size_t>(left) * sizeof(int16_t));
  std::memset(row + left + interior, 0, static_cast<size_t>(row_len - left - interior) * sizeof(int16_t));
  int16_t* dst = row + left;
  if (pc.mult > 1) {  // each input channel repeated mult times
    const int64_t ic = pc.C / pc.mult;
    const uint8_t* src = x + (b * pc.H + iy) * pc.W * ic;
    for (int64_t ix = 0; ix < pc.W; ++ix) {
      int16_t* d = dst + ix * pc.cpad;
      for (int64_t ch = 0; ch < pc.C; ++ch) {
        const uint8_t v = src[ix * ic + ch / pc.mult];
        d[ch] = static_cast<int16_t>((pc.in_i8 ? static_cast<int32_t>(static_cast<int8_t>(v)) : v) - pc.x_zp);
      }
      std::memset(d + pc.C, 0, static_cast<size_t>(pc.cpad - pc.C) * sizeof(int16_t));
    }
    return;
  }
  const uint8_t* src = x + (b * pc.H + iy) * pc.W * pc.C;
  if (pc.cpad == pc.C) {
    uk.centre(src, pc.W * pc.C, pc.x_zp, pc.in_i8, dst);
  } else {
    for (int64_t ix = 0; ix < pc.W; ++ix) {
      uk.centre(src + ix * pc.C, pc.C, pc.x_zp, pc.in_i8, dst + ix * pc.cpad);
      std::memset(dst + ix * pc.cpad + pc.C, 0, static_cast<size_t>(pc.cpad - pc.C) * sizeof(int16_t));
    }
  }
}

// The centred, zero-bordered input of a windowed op into xp (pc.padded() elements): every
// padded row is written whole (its borders and channel padding zero), since the scratch
// holds another op's copy from before.
void fill_padded(const KernelContext& c, const PackedConv& pc, const uk::QConvKernels& uk, int16_t* xp) {
  const int64_t row_len = pc.Wp * pc.cpad;
  parallel_rows(c, pc.N * pc.Hp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      fill_line(pc, uk, c.in[0].data, r / pc.Hp, r % pc.Hp - pc.win.pad_top, xp + r * row_len);
  }, min_rows_per_chunk(row_len));
}

// The 8-bit form of a windowed op: the input's bytes with borders of the zero point's byte
// (centred, it is zero), [N][Hp][Wp][C].
void fill_padded_u8(const KernelContext& c, const PackedConv& pc, uint8_t* xp) {
  const Window& wn = pc.win;
  const uint8_t* x = c.in[0].data;
  const uint8_t zb = static_cast<uint8_t>(pc.x_zp);  // int8 zero points as their byte
  const int64_t row_len = pc.Wp * pc.C;
  parallel_rows(c, pc.N * pc.Hp, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / pc.Hp, iy = r % pc.Hp - wn.pad_top;
      uint8_t* row = xp + r * row_len;
      if (iy < 0 || iy >= pc.H) {
        std::memset(row, zb, static_cast<size_t>(row_len));
        continue;
      }
      const int64_t left = wn.pad_left * pc.C, interior = pc.W * pc.C;
      std::memset(row, zb, static_cast<size_t>(left));
      std::memcpy(row + left, x + (b * pc.H + iy) * pc.W * pc.C, static_cast<size_t>(interior));
      std::memset(row + left + interior, zb, static_cast<size_t>(row_len - left - interior));
    }
  }, min_rows_per_chunk(row_len));
}


Status run_gemm(KernelContext& c, const PackedConv& pc) {
  const uk::QConvKernels& uk = uk::qconv_kernels();
  const int64_t P = pc.N * pc.OH * pc.OW;  // output rows
  if (P == 0) return Status::Ok();
  const int64_t lda = pc.kpairs * 2;
  const int threads = c.pool ? c.pool->threads() : 1;
  // Row blocks of at most kABlockBytes of A, as many as a multiple of the thread count, the
  // tiles dealt out evenly (blocks differ by at most one tile), so that every thread gets
  // the same rows give or take a tile: 3 blocks on 2 threads left one idle a third of the op.
  // The 8-bit form: the kernel's own tile height and A as the input bytes (K per row).
  const int64_t tr = pc.u8s8 && uk.gemm_u8 ? uk.u8_tile_rows : uk::kTileRows;
  const int64_t lda8 = pc.kquads * 4;  // the 8-bit form's A rows (pointwise: the input rows)
  const int64_t row_bytes = pc.u8s8 ? lda8 : lda * 2;
  const int64_t block_bytes = pc.u8s8 ? kABlockBytesU8 : kABlockBytes;
  const int64_t T = (P + tr - 1) / tr;  // tiles
  const int64_t mb_max = std::max<int64_t>(tr, block_bytes / row_bytes / tr * tr);
  int64_t mblocks = (P + mb_max - 1) / mb_max;
  if (mblocks > 1) mblocks = std::min(round_up(mblocks, threads), T);
  auto block_rows = [&](int64_t b, int64_t& r0, int64_t& rows) {
    r0 = tr * (T * b / mblocks);
    rows = std::min(P, tr * (T * (b + 1) / mblocks)) - r0;
  };
  // Few rows: when the row blocks would leave a thread more than 1/16 over its share (13
  // rows on 2 threads: 12 + 1), one block and the panels split instead (A rows are then
  // centred by each thread; the block may exceed kABlockBytes).
  if (threads > 1 && mblocks > 1 && mblocks <= 2 * threads && pc.npanels >= 2 * threads) {
    int64_t most = 0;
    for (int t = 0; t < threads; ++t) {
      int64_t rows_t = 0;
      for (int64_t b = mblocks * t / threads; b < mblocks * (t + 1) / threads; ++b) {
        int64_t r0, rows;
        block_rows(b, r0, rows);
        rows_t += rows;
      }
      most = std::max(most, rows_t);
    }
    if (most * threads * 16 > P * 17) mblocks = 1;
  }
  const int64_t mb = tr * ((T + mblocks - 1) / mblocks);  // the longest block
  // Few row blocks: also split the output channels so every thread has work.
  const int64_t nsplit = mblocks >= threads ? 1 : std::min<int64_t>(pc.npanels, (threads + mblocks - 1) / mblocks);
  const uint8_t* x = c.in[0].data;
  uint8_t* y = c.out[0].data;
  // The 8-bit form reads the input rows as they are (no A to build); its scalar definition
  // where the SIMD level changed since the network was compiled.
  const uk::GemmU8Fn gemm_u8 = pc.in_i8 ? (uk.gemm_u8_flip ? uk.gemm_u8_flip : uk::gemm_u8_flip_scalar)
                                        : (uk.gemm_u8 ? uk.gemm_u8 : uk::gemm_u8_scalar);
  const uk::GemmU8PairFn gemm_pair = pc.in_i8 ? uk.gemm_u8_pair_flip : uk.gemm_u8_pair;
  int16_t* xp = !pc.u8s8 && pc.padded() > 0 ? padded_scratch(pc.padded()) : nullptr;
  if (xp) fill_padded(c, pc, uk, xp);
  // The 8-bit form of a windowed op: byte A rows from a padded byte copy of the input.
  const bool a8 = pc.u8s8 && !pc.pointwise;
  uint8_t* xp8 = a8 ? padded_scratch_u8(pc.padded() + kU8Slack) : nullptr;
  if (xp8) fill_padded_u8(c, pc, xp8);
  parallel_rows(c, mblocks * nsplit, [&](int64_t i0, int64_t i1) {
    thread_local std::vector<int16_t> a;
    thread_local std::vector<uint8_t> a_u8;
    if (!pc.u8s8 && static_cast<int64_t>(a.size()) < mb * lda) a.resize(static_cast<size_t>(mb * lda));
    if (a8 && static_cast<int64_t>(a_u8.size()) < mb * lda8 + kU8Slack)
      a_u8.resize(static_cast<size_t>(mb * lda8 + kU8Slack));
    int64_t built = -1;
    for (int64_t it = i0; it < i1; ++it) {
      const int64_t blk = it / nsplit, part = it % nsplit;
      int64_t r0, rows;
      block_rows(blk, r0, rows);
      if (!pc.u8s8 && built != blk) {
        build_a(pc, uk, x, xp, r0, rows, a.data());
        built = blk;
      }
      if (a8 && built != blk) {
        im2col_rows_u8(pc, xp8, r0, rows, lda8, a_u8.data());
        built = blk;
      }
      // the 8-bit form's A block: the input rows in place, or the byte rows just built
      const uint8_t* ab = a8 ? a_u8.data() : x + r0 * pc.C;
      const int64_t ldab = a8 ? lda8 : pc.C;
      const int64_t p0 = pc.npanels * part / nsplit, p1 = pc.npanels * (part + 1) / nsplit;
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t n0 = p * kPanel;
        const int nvalid = static_cast<int>(std::min<int64_t>(kPanel, pc.OC - n0));
        uint8_t* yb = y + r0 * pc.OC + n0;
        if (pc.u8s8 && gemm_pair && p + 1 < p1) {
          const int nvalid1 = static_cast<int>(std::min<int64_t>(kPanel, pc.OC - n0 - kPanel));
          gemm_pair(rows, pc.kquads, ab, ldab, pc.panels8.data() + p * pc.kquads * kPanel * 4,
                    pc.fixes.data() + pc.fix_start[p], pc.fix_start[p + 1] - pc.fix_start[p],
                    pc.fixes.data() + pc.fix_start[p + 1], pc.fix_start[p + 2] - pc.fix_start[p + 1], pc.rq.rq, n0,
                    nvalid1, yb, pc.OC);
          ++p;
        } else if (pc.u8s8)
          gemm_u8(rows, pc.kquads, ab, ldab, pc.panels8.data() + p * pc.kquads * kPanel * 4,
                  pc.fixes.data() + pc.fix_start[p], pc.fix_start[p + 1] - pc.fix_start[p], pc.rq.rq, n0, nvalid, yb,
                  pc.OC);
        else
          uk.gemm_panel(rows, pc.kpairs, a.data(), lda, pc.panels.data() + p * pc.kpairs * kPanel * 2, pc.rq.rq, n0,
                        nvalid, yb, pc.OC);
      }
    }
  }, 1);
  return Status::Ok();
}

Result<std::unique_ptr<PreparedKernel>> prepare_depthwise(const Graph& g, const Node& n) {
  if (!constant_operands(g, n)) return std::unique_ptr<PreparedKernel>();
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& w = g.tensor(n.inputs[1]);
  const Tensor& y = g.tensor(n.outputs[0]);
  // A depth multiplier: output channel c reads input channel c / mult (anything else is
  // left to the reference kernel, which reports it).
  if (x.shape[3] <= 0 || w.shape[3] % x.shape[3] != 0 || y.shape[3] != w.shape[3])
    return std::unique_ptr<PreparedKernel>();
  auto pc = std::make_unique<PackedConv>();
  pc->depthwise = true;
  pc->mult = w.shape[3] / x.shape[3];
  pc->N = x.shape[0], pc->H = x.shape[1], pc->W = x.shape[2], pc->C = w.shape[3];
  pc->OH = y.shape[1], pc->OW = y.shape[2], pc->OC = pc->C;
  const int64_t KH = w.shape[1], KW = w.shape[2];
  pc->win = window_of(n, KH, KW);
  const Window& wn = pc->win;
  TS_ASSIGN_OR_RETURN(ConvQuant p, quant_of(g, n, pc->OC, x.dtype == DType::u8));
  pc->x_zp = p.x_zp;
  pc->in_i8 = x.dtype == DType::i8;
  size_padded_input(*pc, KH, KW, round_up(pc->C, kPanel));
  const int taps = static_cast<int>(KH * KW);
  const int pairs = (taps + 1) / 2;
  for (int64_t ky = 0; ky < KH; ++ky)
    for (int64_t kx = 0; kx < KW; ++kx) pc->tap_off.push_back((ky * wn.dh * pc->Wp + kx * wn.dw) * pc->cpad);
  // Weights [1, KH, KW, C], centred per channel, into the lane order of the row kernel.
  const int64_t groups = pc->cpad / kPanel;
  pc->dw_w.assign(static_cast<size_t>(groups * pairs * 32), 0);
  std::vector<int64_t> order(static_cast<size_t>(pc->cpad), -1);
  for (int64_t gi = 0; gi < groups; ++gi)
    for (int l = 0; l < kPanel; ++l) {
      const int64_t ch = gi * kPanel + uk::dw_lane_channel(l);
      if (ch >= pc->C) continue;
      order[gi * kPanel + l] = ch;
      for (int t = 0; t < taps; ++t)
        pc->dw_w[(gi * pairs + t / 2) * 32 + l * 2 + t % 2] =
            static_cast<int16_t>(q::load(w.data->data, w.dtype, t * pc->C + ch) - p.w_zp[ch]);
    }
  pc->rq.fill(p, bias_data(g, n), order, y.dtype);
  return std::unique_ptr<PreparedKernel>(std::move(pc));
}

// Output rows read their padded input lines from a per-thread ring of consecutive padded
// input rows, each centred once as the thread's rows reach it (a row is shared by the KH
// output rows around it), not from a padded copy of the whole input: that copy of an
// early MobileNet layer (1.2 M elements, 2.4 MB of int16) went to memory and back. The
// ring holds 4 spans of rows; when full, the rows still needed move to its front.
Status run_depthwise(KernelContext& c, const PackedConv& pc) {
  const uk::QConvKernels& uk = uk::qconv_kernels();
  const Window& wn = pc.win;
  const int64_t span = (wn.kh - 1) * wn.dh + 1;  // input rows one output row reads
  const int64_t cap = 4 * span;
  const int64_t line = pc.Wp * pc.cpad;
  const uint8_t* x = c.in[0].data;
  uint8_t* y = c.out[0].data;
  parallel_rows(c, pc.N * pc.OH, [&](int64_t r0, int64_t r1) {
    int16_t* ring = padded_scratch(cap * line);
    int64_t ring_b = -1, first = 0, count = 0;  // ring line i: input row first + i of batch ring_b
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t b = r / pc.OH, oy = r % pc.OH;
      const int64_t lo = oy * wn.sh - wn.pad_top, hi = lo + span - 1;
      if (b != ring_b || lo < first || lo > first + count) {
        ring_b = b, first = lo, count = 0;
      } else if (hi >= first + cap) {
        const int64_t keep = first + count - lo;
        std::memmove(ring, ring + (lo - first) * line, static_cast<size_t>(keep * line) * sizeof(int16_t));
        first = lo, count = keep;
      }
      for (; first + count <= hi; ++count) fill_line(pc, uk, x, b, first + count, ring + count * line);
      uk::DwRow row;
      row.x = ring + (lo - first) * line;
      row.xstep = wn.sw * pc.cpad;
      row.tap_off = pc.tap_off.data();
      row.taps = static_cast<int>(pc.tap_off.size());
      row.ow = pc.OW;
      row.cpad = pc.cpad;
      row.channels = pc.C;
      row.w = pc.dw_w.data();
      row.rq = &pc.rq.rq;
      row.y = y + r * pc.OW * pc.C;
      row.same_op = r > r0;
      uk.dw_row(row);
    }
  }, min_rows_per_chunk(pc.OW * pc.C * static_cast<int64_t>(pc.tap_off.size())));
  return Status::Ok();
}

}  // namespace

// The 16x8 form (int16 input) runs the reference kernels of quant_conv16.cpp.
static bool int16_input(const Graph& g, const Node& n) { return g.tensor(n.inputs[0]).dtype == DType::i16; }

Result<std::unique_ptr<PreparedKernel>> prepare_packed_conv2d(const Graph& g, const Node& n) {
  if (int16_input(g, n)) return std::unique_ptr<PreparedKernel>();
  return prepare_gemm(g, n, false);
}
Result<std::unique_ptr<PreparedKernel>> prepare_packed_fully_connected(const Graph& g, const Node& n) {
  if (int16_input(g, n)) return std::unique_ptr<PreparedKernel>();
  return prepare_gemm(g, n, true);
}
Result<std::unique_ptr<PreparedKernel>> prepare_packed_depthwise(const Graph& g, const Node& n) {
  if (int16_input(g, n)) return std::unique_ptr<PreparedKernel>();
  return prepare_depthwise(g, n);
}

Status run_packed_conv(KernelContext& c) {
  const auto& pc = static_cast<const PackedConv&>(*c.prepared);
  return pc.depthwise ? run_depthwise(c, pc) : run_gemm(c, pc);
}

}  // namespace tessera::cpu
