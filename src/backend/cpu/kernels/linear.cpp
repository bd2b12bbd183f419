// Reference kernels: fully_connected and matmul.
//
// Activations are f32. Weights (fully_connected w, matmul b) are read as stored, in f32,
// f16, bf16, q8_0 or q4_0: each dot product walks the weight row 32 values at a time,
// decoding one chunk (one GGUF block) into a small scratch buffer, so no f32 copy of a
// weight is ever made. Work is split over output rows / channels; every output element is
// summed by one thread in a fixed order, so results do not depend on the thread count.
#include "backend/cpu/kernels/hybrid.h"
#include "backend/cpu/kernels/kernel_util.h"

namespace tessera::cpu {

namespace {

// Yields 32-value chunks of one weight row: a pointer into the row for f32, a decoded
// scratch chunk otherwise.
class ChunkReader {
 public:
  ChunkReader(DType t, int64_t len) : t_(t), len_(len) {}
  int64_t chunks() const { return (len_ + kQBlock - 1) / kQBlock; }
  int64_t chunk_len(int64_t b) const { return std::min<int64_t>(kQBlock, len_ - b * kQBlock); }
  const float* get(const uint8_t* row, int64_t b) {
    if (t_ == DType::f32) return reinterpret_cast<const float*>(row) + b * kQBlock;
    load_chunk(t_, row, b, chunk_len(b), scratch_);
    return scratch_;
  }

 private:
  DType t_;
  int64_t len_;
  float scratch_[kQBlock];
};

Status check_weight(const KernelContext& c, int idx, int64_t row_len) {
  DType t = c.in[idx].dtype();
  if (!is_row_dtype(t))
    return kernel_error(c.n, "weights '" + c.in[idx].t->name + "' are " + dtype_name(t) +
                                 "; the plain kernel reads f32, f16, bf16, q8_0 or q4_0");
  if (row_len % dtype_block_values(t) != 0)
    return kernel_error(c.n, "weights '" + c.in[idx].t->name + "' in " + dtype_name(t) + " need rows of a multiple of " +
                                 std::to_string(dtype_block_values(t)) + " values, got " + std::to_string(row_len));
  return Status::Ok();
}

}  // namespace

// y [M, OC] = act(x [M, IC] * w[OC, IC]^T + bias [OC]). The oracle of the fast kernels of
// linear_q8.cpp, which call it for every case they do not take.
Status fully_connected_reference(KernelContext& c) {
  const TensorRef &x = c.in[0], &w = c.in[1];
  const TensorRef bias = c.in.size() > 2 ? c.in[2] : TensorRef{};
  if (x.dtype() != DType::f32 || c.out[0].dtype() != DType::f32)
    return kernel_error(c.n, std::string("plain kernel takes f32 activations, got ") + dtype_name(x.dtype()));
  if (bias && bias.dtype() != DType::f32) return kernel_error(c.n, "bias must be f32");
  const int64_t oc_n = w.shape()[0], ic = w.shape()[1];
  const int64_t m_n = x.elements() / ic;
  TS_RETURN_IF_ERROR(check_weight(c, 1, ic));
  TS_ASSIGN_OR_RETURN(Activation act, activation_of(c.n));
  const float* xp = x.as<float>();
  const float* bp = bias ? bias.as<float>() : nullptr;
  float* y = c.out[0].as<float>();
  const int64_t rb = row_bytes(w.dtype(), ic);
  auto work = [&](int64_t oc0, int64_t oc1) {
    ChunkReader rd(w.dtype(), ic);
    thread_local std::vector<float> acc;  // [m_n]; keeps its size, so decode steps allocate nothing
    if (static_cast<int64_t>(acc.size()) < m_n) acc.resize(static_cast<size_t>(m_n));
    for (int64_t oc = oc0; oc < oc1; ++oc) {
      const uint8_t* row = w.data + oc * rb;
      std::fill(acc.begin(), acc.begin() + m_n, 0.0f);
      for (int64_t b = 0; b < rd.chunks(); ++b) {
        const float* wv = rd.get(row, b);
        const int64_t len = rd.chunk_len(b);
        for (int64_t m = 0; m < m_n; ++m) {
          const float* xv = xp + m * ic + b * kQBlock;
          float s = 0;
          for (int64_t i = 0; i < len; ++i) s += wv[i] * xv[i];
          acc[m] += s;
        }
      }
      for (int64_t m = 0; m < m_n; ++m) y[m * oc_n + oc] = activate(acc[m] + (bp ? bp[oc] : 0.0f), act);
    }
  };
  parallel_rows(c, oc_n, work, min_rows_per_chunk(m_n * ic));
  return Status::Ok();
}

namespace {

// y [..., M, N] = a [..., M, K] x b [..., K, N] (or b [..., N, K] with transpose_b=1);
// batch dims broadcast.
Status matmul(KernelContext& c) {
  if (hybrid_weights(c)) return hybrid_matmul(c);
  const TensorRef &a = c.in[0], &b = c.in[1];
  if (a.dtype() != DType::f32 || c.out[0].dtype() != DType::f32)
    return kernel_error(c.n, std::string("plain kernel takes an f32 left operand, got ") + dtype_name(a.dtype()));
  const bool tb = c.n.get(attr::transpose_b) != 0;
  const Shape &as = a.shape(), &bs = b.shape(), &ys = c.out[0].shape();
  const int64_t m_n = as[as.size() - 2], k_n = as.back();
  const int64_t n_n = ys.back();
  const int64_t b_row_len = tb ? k_n : n_n;  // values per stored row of b
  const int64_t b_rows = tb ? n_n : k_n;
  TS_RETURN_IF_ERROR(check_weight(c, 1, b_row_len));
  // Batch broadcasting: map an output batch index to a batch of a and of b.
  const std::span<const int64_t> batch(ys.data(), ys.size() - 2);
  const DimList a_st = broadcast_strides(batch, std::span<const int64_t>(as.data(), as.size() - 2));
  const DimList b_st = broadcast_strides(batch, std::span<const int64_t>(bs.data(), bs.size() - 2));
  auto batch_offsets = [&](int64_t bi, int64_t& ai, int64_t& bj) {
    ai = bj = 0;
    for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
      int64_t i = bi % batch[d];
      bi /= batch[d];
      ai += i * a_st[d];
      bj += i * b_st[d];
    }
  };
  const int64_t rb = row_bytes(b.dtype(), b_row_len);
  const float* ap = a.as<float>();
  float* y = c.out[0].as<float>();
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  // Work items are output rows (batch, m).
  auto work = [&](int64_t r0, int64_t r1) {
    ChunkReader rd(b.dtype(), b_row_len);
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t bi = r / m_n, m = r % m_n;
      int64_t ai, bj;
      batch_offsets(bi, ai, bj);
      const float* arow = ap + (ai * m_n + m) * k_n;
      const uint8_t* bmat = b.data + bj * b_rows * rb;
      float* yrow = y + r * n_n;
      if (tb) {
        for (int64_t n = 0; n < n_n; ++n) {
          const uint8_t* brow = bmat + n * rb;
          float acc = 0;
          for (int64_t ch = 0; ch < rd.chunks(); ++ch) {
            const float* bv = rd.get(brow, ch);
            const float* av = arow + ch * kQBlock;
            float s = 0;
            for (int64_t i = 0, len = rd.chunk_len(ch); i < len; ++i) s += av[i] * bv[i];
            acc += s;
          }
          yrow[n] = acc;
        }
      } else {
        std::fill(yrow, yrow + n_n, 0.0f);
        for (int64_t k = 0; k < k_n; ++k) {
          const uint8_t* brow = bmat + k * rb;
          const float av = arow[k];
          for (int64_t ch = 0; ch < rd.chunks(); ++ch) {
            const float* bv = rd.get(brow, ch);
            float* yv = yrow + ch * kQBlock;
            for (int64_t i = 0, len = rd.chunk_len(ch); i < len; ++i) yv[i] += av * bv[i];
          }
        }
      }
    }
  };
  parallel_rows(c, batches * m_n, work, min_rows_per_chunk(n_n * k_n));
  return Status::Ok();
}

}  // namespace

void register_fast_linear_kernels(KernelTable& t);  // linear_q8.cpp: fully_connected

void register_linear_kernels(KernelTable& t) {
  register_fast_linear_kernels(t);
  t.add(OpKind::matmul, KernelKind::plain, matmul);
}

}  // namespace tessera::cpu
