// The float conv2d fast path (conv_fast.h): packing at compile time, the run, and the
// portable-vector rows (SSE2 on x86-64 without AVX2, NEON on aarch64, the compiler's
// lowering elsewhere). Compiled with -ffp-contract=off (cmake/components.cmake).
#include "backend/cpu/kernels/conv_fast.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/kernels/conv_fast_impl.h"
#include "convert/simd.h"

namespace tessera::cpu {

namespace fconv {

namespace {

// 8 channels x 4 pixels.
void rows4(const Args& a, int64_t r0, int64_t r1, const Scratch& s) { rows<VecOf<4>::type, 4, 4, 2>(a, r0, r1, s); }

// The rows of this CPU's widest vectors (all give the same bits).
RowsFn pick_rows() {
#if defined(__x86_64__)
  if (convert::use_avx2()) return convert::cpu_avx512() ? rows_avx512() : rows_avx2();
#endif
  return rows_generic();
}

struct Packed : PreparedKernel {
  std::vector<float> wp;     // [depth][ocpad]
  std::vector<float> zeros;  // IC zeros: a 1x1 window's padding tap
  int64_t OC = 0, KH = 0, KW = 0, IC = 0, ocpad = 0;
  RowsFn fn = nullptr;
};

// Input pixels gathered per chunk: their rows (depth floats each) about 64 KB, at most 64.
int64_t chunk_pixels(int64_t depth) {
  return std::clamp<int64_t>(16384 / std::max<int64_t>(depth, 1) / 4 * 4, 4, 64);
}

}  // namespace

RowsFn rows_generic() { return rows4; }

}  // namespace fconv

Result<std::unique_ptr<PreparedKernel>> prepare_float_conv2d(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2) return std::unique_ptr<PreparedKernel>();
  const Tensor& x = g.tensor(n.inputs[0]);
  const Tensor& w = g.tensor(n.inputs[1]);
  if (x.dtype != DType::f32 || w.dtype != DType::f32 || !w.data || w.shape.size() != 4 || x.shape.size() != 4)
    return std::unique_ptr<PreparedKernel>();
  if (n.inputs.size() > 2 && n.inputs[2] != kNoTensor && g.tensor(n.inputs[2]).dtype != DType::f32)
    return std::unique_ptr<PreparedKernel>();
  const int64_t OC = w.shape[0], KH = w.shape[1], KW = w.shape[2], IC = w.shape[3];
  if (x.shape[3] != IC || OC <= 0 || IC <= 0 || KH <= 0 || KW <= 0) return std::unique_ptr<PreparedKernel>();  // grouped
  const int64_t depth = KH * KW * IC;
  if (w.data->size != OC * depth * 4) return std::unique_ptr<PreparedKernel>();
  auto pk = std::make_unique<fconv::Packed>();
  pk->OC = OC, pk->KH = KH, pk->KW = KW, pk->IC = IC;
  pk->ocpad = (OC + fconv::kOcAlign - 1) / fconv::kOcAlign * fconv::kOcAlign;
  pk->wp.assign(static_cast<size_t>(depth * pk->ocpad), 0.0f);
  const uint8_t* src = w.data->data;
  for (int64_t o = 0; o < OC; ++o)
    for (int64_t k = 0; k < depth; ++k) {
      float v;
      std::memcpy(&v, src + (o * depth + k) * 4, 4);
      if (!std::isfinite(v)) return std::unique_ptr<PreparedKernel>();  // 0 * v would be NaN
      pk->wp[static_cast<size_t>(k * pk->ocpad + o)] = v;
    }
  pk->zeros.assign(static_cast<size_t>(IC), 0.0f);
  pk->fn = fconv::pick_rows();
  return std::unique_ptr<PreparedKernel>(std::move(pk));
}

Status run_float_conv2d(KernelContext& c) {
  const auto& pk = static_cast<const fconv::Packed&>(*c.prepared);
  const Shape &xs = c.in[0].shape(), &ys = c.out[0].shape();
  if (xs.size() != 4 || ys.size() != 4 || xs[3] != pk.IC || ys[3] != pk.OC)
    return kernel_error(c.n, "shapes differ from the compiled filter's");
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  fconv::Args a;
  a.x = c.in[0].as<float>();
  a.wp = pk.wp.data();
  a.bias = c.in.size() > 2 && c.in[2] ? c.in[2].as<float>() : nullptr;
  a.y = c.out[0].as<float>();
  a.H = xs[1], a.W = xs[2], a.C = xs[3], a.OH = ys[1], a.OW = ys[2], a.OC = pk.OC, a.ocpad = pk.ocpad;
  a.KH = pk.KH, a.KW = pk.KW;
  a.win = window_of(c.n, pk.KH, pk.KW);
  a.depth = pk.KH * pk.KW * pk.IC;
  a.pixels = xs[0] * a.OH * a.OW;
  a.blocks = GemmDepthBlocks(a.depth);
  a.act = act;
  a.zeros = pk.zeros.data();
  const int64_t chunk = fconv::chunk_pixels(a.depth);
  const bool pointwise = pk.KH == 1 && pk.KW == 1;
  // Per-thread scratch, grown by a thread's first run of its largest layer (later runs
  // allocate nothing).
  auto work = [&](int64_t r0, int64_t r1) {
    thread_local std::vector<float> cols;
    thread_local std::vector<const float*> rows;
    if (!pointwise && static_cast<int64_t>(cols.size()) < chunk * a.depth) cols.resize(static_cast<size_t>(chunk * a.depth));
    if (static_cast<int64_t>(rows.size()) < chunk) rows.resize(static_cast<size_t>(chunk));
    fconv::Scratch s{rows.data(), cols.data(), chunk};
    pk.fn(a, r0, r1, s);
  };
  parallel_rows(c, xs[0] * a.OH, work, min_rows_per_chunk(a.OW * a.OC * a.depth));
  return Status::Ok();
}

}  // namespace tessera::cpu
