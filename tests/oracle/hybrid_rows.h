// Test helper: seeded f32 inputs for hybrid operators (float activations, int8 weights),
// shared by the hybrid oracle tests (FULLY_CONNECTED, BATCH_MATMUL, SVDF).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "fixtures.h"

namespace tessera::oracle {

// rows x cols seeded values, row-major, in four kinds of rows so that TFLite's asymmetric
// on-the-fly quantization takes every form: row r % 4 == 0 mixed signs (zero point inside
// the range), 1 all positive (rmin = 0: zero point -128), 2 all negative (rmax = 0: zero
// point 127), 3 mostly positive with a small negative tail. Row `zero_row` (when >= 0) is
// all zeros (scale 1, codes 0).
inline std::vector<float> patterned_rows(int64_t rows, int64_t cols, uint32_t seed, int64_t zero_row = -1) {
  std::vector<float> x = testing::random_floats(static_cast<size_t>(rows * cols), seed, -1.0f, 1.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k) {
      float& v = x[static_cast<size_t>(r * cols + k)];
      switch (r % 4) {
        case 1: v = 0.1f + 2.0f * std::fabs(v); break;
        case 2: v = -0.05f - 1.5f * std::fabs(v); break;
        case 3: v = v < -0.8f ? v * 0.1f : 3.0f * v + 0.2f; break;
        default: break;
      }
      if (r == zero_row) v = 0.0f;
    }
  return x;
}

}  // namespace tessera::oracle
