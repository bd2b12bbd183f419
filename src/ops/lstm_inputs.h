// Where lstm (ops.def) finds each of its inputs: shared by its shape inference, the cpu
// kernels and the TFLite importer. The input gate's tensors come last because they are
// optional (CIFG LSTMs have no input gate).
#pragma once

#include <cstddef>

namespace tessera::lstm {

enum Gate { kInputGate = 0, kForgetGate = 1, kCellGate = 2, kOutputGate = 3 };
inline constexpr const char* kGateName[4] = {"input", "forget", "cell", "output"};

inline constexpr size_t kX = 0;       // x [B, T, I] or [T, B, I]
inline constexpr size_t kHidden = 10; // h [B, C] (Role::state)
inline constexpr size_t kCell = 11;   // c [B, C] (Role::state)
inline constexpr size_t kNumInputs = 15;

// Gate g's input weights [C, I], recurrent weights [C, C] and bias [C].
constexpr size_t weights(int g) { return g == kInputGate ? 12 : static_cast<size_t>(g); }
constexpr size_t recurrent(int g) { return g == kInputGate ? 13 : static_cast<size_t>(3 + g); }
constexpr size_t bias(int g) { return g == kInputGate ? 14 : static_cast<size_t>(6 + g); }

}  // namespace tessera::lstm
