// The conformance harness: every op in ops.def, on every registered device, against a
// reference computed in double inside the test.
//
// Each op family file registers case builders (seeded random shapes and values) with
// TESSERA_CONFORMANCE_CASES(op). conformance_test.cpp runs each op's cases on every device
// in device_registry() (default preset) through a Session, where ops a device does not
// support fall back to the cpu, and compares output 0 within tolerance(): a bound derived
// from the formats the plan gave the op's tensors on that device.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "tessera/graph.h"
#include "tessera/session.h"

namespace tessera::conformance {

using Rng = std::mt19937;

// One test graph with its inputs and the expected values of graph output 0.
struct Case {
  std::string label;  // "add broadcast [2,3] x [3]"
  Graph g;
  // Per run, the host bytes of every graph input (runs share state tensors).
  std::vector<std::vector<std::vector<uint8_t>>> runs;
  // Output 0 after the last run, row-major: real values for float outputs, stored codes
  // (or integers) for integer outputs.
  std::vector<double> expected;
  // Per output element, the scale of the computation (e.g. sum |x_k w_k| for a dot
  // product); empty means |expected|. Tolerances are relative to it.
  std::vector<double> magnitude;
  int64_t accum = 1;          // longest chain of float additions behind one output
  double code_tolerance = 0;  // integer outputs: allowed difference (quantized arithmetic: 1)
  bool quantized = false;     // needs the quantized cpu kernel of the op (skipped when absent)
};

using CaseBuilder = std::function<std::vector<Case>(Rng& rng)>;

// op -> builders (filled at static initialisation by the family files).
std::map<OpKind, std::vector<CaseBuilder>>& case_registry();
struct CaseRegistrar {
  CaseRegistrar(OpKind op, CaseBuilder b) { case_registry()[op].push_back(std::move(b)); }
};
#define TESSERA_CONFORMANCE_CONCAT2(a, b) a##b
#define TESSERA_CONFORMANCE_CONCAT(a, b) TESSERA_CONFORMANCE_CONCAT2(a, b)
// TESSERA_CONFORMANCE_CASES(add) { ...return cases; }  (rng is the seeded generator)
#define TESSERA_CONFORMANCE_CASES(op)                                                             \
  static std::vector<::tessera::conformance::Case> TESSERA_CONFORMANCE_CONCAT(cases_, op)(        \
      ::tessera::conformance::Rng & rng);                                                         \
  static ::tessera::conformance::CaseRegistrar TESSERA_CONFORMANCE_CONCAT(registrar_, op)(        \
      ::tessera::OpKind::op, TESSERA_CONFORMANCE_CONCAT(cases_, op));                             \
  static std::vector<::tessera::conformance::Case> TESSERA_CONFORMANCE_CONCAT(cases_, op)(        \
      ::tessera::conformance::Rng & rng)

// The tolerance rule, in one place. `encodings` are the formats the plan gave the op's
// inputs and output on the device under test, where they differ from the tensors' own
// dtypes (a conversion that rounds); `elem` is an output element's magnitude and
// `row_max` the largest magnitude in its row (block-float formats share one exponent per
// row of 16 values, so their error scales with the row); `accum` the summation length.
//   f32 2^-24 per rounding, f16 2^-11, bf16 2^-8, bfp8_b 2^-6 and bfp4_b 2^-2 of the
//   row max; integer and GGUF block encodings hold the test's values exactly.
// `product_error` is the device's own relative error per product term of a matrix op
// (DeviceProperties::matrix_product_error, e.g. a tile device's math fidelity); it scales
// the sum of |terms| (`elem` for dot products).
double tolerance(const std::vector<Encoding>& encodings, double elem, double row_max, int64_t accum,
                 double product_error = 0);

// ---- building cases ----

// Random helpers (uniform, never all zero).
std::vector<float> uniform(Rng& rng, int64_t n, float lo = -1.0f, float hi = 1.0f);
int64_t pick(Rng& rng, int64_t lo, int64_t hi);  // uniform integer in [lo, hi]
Shape random_shape(Rng& rng, int rank, int64_t lo, int64_t hi);

// Encodes f32 values into a dtype's host bytes (f16 / bf16 round to nearest even; q8_0 and
// q4_0 quantize per 32-value block along the last dim) and decodes them back to the exact
// values the encoded bytes represent.
std::vector<uint8_t> encode(DType t, const std::vector<float>& v);
std::vector<double> decode(DType t, const std::vector<uint8_t>& bytes, int64_t n);
// Raw host bytes of a vector of trivially copyable values.
template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Builds a case graph. Inputs are bound per run; weights are constant data.
class CaseGraph {
 public:
  TensorId input(const std::string& name, Shape s, DType t, std::vector<uint8_t> bytes, QuantParams q = {});
  TensorId input_f32(const std::string& name, Shape s, const std::vector<float>& v) {
    return input(name, std::move(s), DType::f32, bytes_of(v));
  }
  TensorId weight(const std::string& name, Shape s, DType t, std::vector<uint8_t> bytes, QuantParams q = {});
  TensorId state(const std::string& name, Shape s, DType t);
  // Adds the op under test and makes its result the graph output; builds the Case.
  Case finish(std::string label, OpKind op, std::vector<TensorId> in, AttrMap attrs,
              std::optional<DType> out_dtype = std::nullopt, QuantParams out_quant = {});
  Graph& graph() { return g_; }

 private:
  Graph g_;
  std::vector<std::vector<uint8_t>> inputs_;
};

// Quantization helpers for quantized cases: parameters covering [lo, hi] in u8 or i8, and
// TFLite-style quantize of real values.
QuantParams quant_for_range(double lo, double hi, DType t);
std::vector<uint8_t> quantize_values(const std::vector<double>& real, DType t, const QuantParams& q);
std::vector<double> dequantize_codes(const std::vector<uint8_t>& codes, DType t, const QuantParams& q);
// Expected codes of real results under output parameters q (round half away from zero, clamp).
std::vector<double> expected_codes(const std::vector<double>& real, DType t, const QuantParams& q);

// Number of elements of the graph's output 0 (for sizing expectations).
inline int64_t out_elements(const Case& c) { return c.g.tensor(c.g.outputs[0]).elements(); }

}  // namespace tessera::conformance
