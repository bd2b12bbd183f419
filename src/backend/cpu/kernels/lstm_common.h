// What the cpu's two lstm kernels (lstm.cpp: f32, lstm_integer.cpp: integer 8x8_16) share:
// the node's sizes and layout, which optional parts it has, and the in-place state.
#pragma once

#include <cstring>
#include <string>

#include "backend/cpu/kernels/kernel_util.h"
#include "ops/lstm_inputs.h"

namespace tessera::cpu::lstm_kernel {

using lstm::bias;
using lstm::layer_norm;
using lstm::peephole;
using lstm::recurrent;
using lstm::weights;
using lstm::kX;
constexpr size_t kH = lstm::kHidden, kC = lstm::kCell;
enum Gate { kInput = lstm::kInputGate, kForget = lstm::kForgetGate, kCell = lstm::kCellGate, kOutput = lstm::kOutputGate };

inline bool present(const Node& n, size_t k) { return k < n.inputs.size() && n.inputs[k] != kNoTensor; }

struct Dims {
  int64_t batch = 0, steps = 0, features = 0, cells = 0;
  int64_t outputs = 0;    // P: the hidden state's width (the projection's rows, else cells)
  bool time_major = false;
  bool reverse = false;   // steps from the last to the first
  bool cifg = false;      // no input gate: i = 1 - f
  bool peephole = false;  // cell-to-gate weights
  bool projection = false;
  bool layer_norm = false;
  // The step taken s-th.
  int64_t step(int64_t s) const { return reverse ? steps - 1 - s : s; }
  // Row of x / y holding (batch row b, step t).
  int64_t row(int64_t b, int64_t t) const { return time_major ? t * batch + b : b * steps + t; }
};

inline Dims dims_of(const Graph& g, const Node& n) {
  const Shape& xs = g.tensor(n.inputs[kX]).shape;
  Dims d;
  d.time_major = n.get(attr::time_major) != 0;
  d.reverse = n.get(attr::reverse) != 0;
  d.batch = d.time_major ? xs[1] : xs[0];
  d.steps = d.time_major ? xs[0] : xs[1];
  d.features = xs[2];
  d.cells = g.tensor(n.inputs[weights(kOutput)]).shape[0];
  d.cifg = !present(n, weights(kInput));
  d.peephole = present(n, peephole(kForget));
  d.projection = present(n, lstm::kProjectionWeights);
  d.layer_norm = present(n, layer_norm(kForget));
  d.outputs = d.projection ? g.tensor(n.inputs[lstm::kProjectionWeights]).shape[0] : d.cells;
  return d;
}

// The state outputs share the state inputs' storage; copies in case a caller bound them apart.
inline Status state_in_place(KernelContext& c) {
  if (c.out.size() != 3)
    return kernel_error(c.n, "needs 3 outputs (the sequence and the updated state), has " +
                                 std::to_string(c.out.size()));
  for (size_t k = 0; k < 2; ++k) {
    const TensorRef &in = c.in[kH + k], &out = c.out[1 + k];
    if (out.data != in.data) std::memcpy(out.data, in.data, static_cast<size_t>(in.elements() * dtype_size(in.dtype())));
  }
  return Status::Ok();
}

// The integer 8x8_16 kernel and its preparation (lstm_integer.cpp).
Status lstm_integer(KernelContext& c);
Result<std::unique_ptr<PreparedKernel>> prepare_lstm_integer(const Graph& g, const Node& n);

}  // namespace tessera::cpu::lstm_kernel
