// Where lstm (ops.def) finds each of its inputs: shared by its shape inference, the cpu
// kernels and the TFLite importer. The optional tensors come after the required ones: the
// input gate's (absent in CIFG LSTMs), the peephole weights, the projection and the
// layer-norm coefficients.
#pragma once

#include <cstddef>

namespace tessera::lstm {

enum Gate { kInputGate = 0, kForgetGate = 1, kCellGate = 2, kOutputGate = 3 };
inline constexpr const char* kGateName[4] = {"input", "forget", "cell", "output"};

inline constexpr size_t kX = 0;       // x [B, T, I] or [T, B, I]
inline constexpr size_t kHidden = 10; // h [B, P] (Role::state; P = C without projection)
inline constexpr size_t kCell = 11;   // c [B, C] (Role::state)
inline constexpr size_t kProjectionWeights = 18;  // [P, C] (optional)
inline constexpr size_t kProjectionBias = 19;     // [P] (optional, only with the weights)
inline constexpr size_t kNumInputs = 24;

// Gate g's input weights [C, I], recurrent weights [C, P] and bias [C].
constexpr size_t weights(int g) { return g == kInputGate ? 12 : static_cast<size_t>(g); }
constexpr size_t recurrent(int g) { return g == kInputGate ? 13 : static_cast<size_t>(3 + g); }
constexpr size_t bias(int g) { return g == kInputGate ? 14 : static_cast<size_t>(6 + g); }
// Gate g's peephole (cell-to-gate) weights [C], optional; the cell gate has none.
constexpr size_t peephole(int g) { return g == kInputGate ? 15 : g == kForgetGate ? 16 : 17; }
// Gate g's layer-norm coefficients [C], optional.
constexpr size_t layer_norm(int g) { return static_cast<size_t>(20 + g); }

}  // namespace tessera::lstm
