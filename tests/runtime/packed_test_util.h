// Helpers of the cpu's packed-kernel tests (cpu_packed_test.cpp: the quantized conv path;
// cpu_conv_float_test.cpp: the float and hybrid conv fast paths): running a graph on the cpu
// with its packed or reference kernels, seeded codes, and restoring the SIMD level.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "convert/simd.h"
#include "subgraph.h"
#include "tessera/session.h"

namespace tessera::packed_test {

using Bytes = std::vector<uint8_t>;

// The cpu device with its packed or reference kernels on `threads` threads.
inline SessionOptions cpu_options(const std::string& kernels, int threads) {
  SessionOptions o;
  o.device = "cpu";
  o.device_options = {{"kernels", kernels}, {"threads", std::to_string(threads)}};
  return o;
}

// n random bytes: codes of a u8 or i8 tensor (seeded, never all zero).
inline Bytes random_codes(std::mt19937& rng, int64_t n) {
  std::uniform_int_distribution<int> d(0, 255);
  Bytes v(static_cast<size_t>(n));
  for (auto& b : v) b = static_cast<uint8_t>(d(rng));
  return v;
}

// Runs `g` (one input, one output) on `input` with the session options `o`.
inline Bytes run_one(const Graph& g, const Bytes& input, const SessionOptions& o) {
  auto out = testing::run_graph(g, {{g.inputs[0], input}}, o);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? (*out)[0] : Bytes{};
}

// Restores the SIMD level a test changed.
struct SimdGuard {
  convert::SimdLevel saved = convert::simd_level();
  ~SimdGuard() { convert::set_simd_level(saved); }
};

}  // namespace tessera::packed_test
