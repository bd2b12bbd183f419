// Logical tensor types: shapes, dtypes, quantization parameters and roles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

// Logical element types. q8_0 ... iq4_xs are GGUF block types (32 values per block for the
// _0 / _1 types and iq4_nl, 256 per super-block for the K-quants and iq4_xs); their "element size" is
// fractional, so use dtype_row_bytes() for sizes. Block layouts: src/convert/gguf_blocks.h
// and src/convert/gguf_kquants.h.
enum class DType : uint8_t {
  f32, f16, bf16, i8, u8, i16, i32, i64, boolean,
  q8_0, q4_0, q4_1, q5_0, q5_1,        // GGUF blocks of 32 values
  q2_k, q3_k, q4_k, q5_k, q6_k,        // GGUF K-quant super-blocks of 256 values
  iq4_nl, iq4_xs,                      // GGUF non-linear 4-bit codes: blocks of 32, super-blocks of 256
};

constexpr int kNumDTypes = 21;
constexpr int64_t kQBlock = 32;    // values per q8_0 / q4_0 / q4_1 / q5_0 / q5_1 block (GGUF)
constexpr int64_t kQKBlock = 256;  // values per K-quant super-block (GGUF QK_K)
constexpr int64_t kQ8_0BlockBytes = 34;  // f16 scale + 32 x int8 (GGUF block_q8_0)
constexpr int64_t kQ4_0BlockBytes = 18;  // f16 scale + 16 bytes of nibbles (GGUF block_q4_0)
constexpr int64_t kQ4_1BlockBytes = 20;  // f16 scale, f16 min + 16 bytes of nibbles (block_q4_1)
constexpr int64_t kQ5_0BlockBytes = 22;  // f16 scale, 4 bytes of 5th bits, 16 bytes of nibbles
constexpr int64_t kQ5_1BlockBytes = 24;  // f16 scale, f16 min, 4 + 16 bytes (block_q5_1)
constexpr int64_t kQ2_KBlockBytes = 84;   // 16 scale/min bytes, 64 bytes of 2-bit codes, f16 d, dmin
constexpr int64_t kQ3_KBlockBytes = 110;  // 32 hmask, 64 bytes of 2-bit codes, 12 scale bytes, f16 d
constexpr int64_t kQ4_KBlockBytes = 144;  // f16 d, dmin, 12 scale bytes, 128 bytes of nibbles
constexpr int64_t kQ5_KBlockBytes = 176;  // f16 d, dmin, 12 scale bytes, 32 high-bit bytes, 128 nibbles
constexpr int64_t kQ6_KBlockBytes = 210;  // 128 low-nibble bytes, 64 high-bit bytes, 16 int8 scales, f16 d
constexpr int64_t kIQ4_NLBlockBytes = 18;   // f16 d + 16 bytes of 4-bit codes into a 16-value table
constexpr int64_t kIQ4_XSBlockBytes = 136;  // f16 d, u16 high scale bits, 4 low scale bytes, 128 code bytes

TESSERA_API const char* dtype_name(DType t);
TESSERA_API std::optional<DType> dtype_from_name(const std::string& name);
TESSERA_API bool dtype_is_block(DType t);          // q8_0 ... iq4_xs (GGUF block types)
// Values per block (32 or 256) of a block dtype; 1 for element dtypes.
TESSERA_API int64_t dtype_block_values(DType t);
// Bytes per block of a block dtype; dtype_size() for element dtypes.
TESSERA_API int64_t dtype_block_bytes(DType t);
TESSERA_API bool dtype_is_float(DType t);          // f32, f16, bf16
TESSERA_API bool dtype_is_quantized_int(DType t);  // i8, u8, i16 (used with QuantParams)
// Bytes of one element; 0 for block types.
TESSERA_API int dtype_size(DType t);
// Bytes of `n` consecutive elements along the innermost dim (block types need n to be a
// multiple of dtype_block_values(); an overflowing size is an error).
TESSERA_API Result<int64_t> dtype_row_bytes(DType t, int64_t n);

// A shape; dims are non-negative. Rank 0 is a scalar with one element.
using Shape = std::vector<int64_t>;
// Unchecked product: only for shapes already checked (Graph::validate, core/checked.h).
TESSERA_API int64_t num_elements(const Shape& s);
TESSERA_API std::string shape_str(const Shape& s);  // "[1,224,224,3]"
// Row-major strides in elements.
TESSERA_API std::vector<int64_t> row_major_strides(const Shape& s);
// Numpy-style broadcast of two shapes; error if incompatible.
TESSERA_API Result<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// Affine quantization, real = scale * (q - zero_point). Per tensor when scale has one
// entry; per axis (per channel) along `axis` otherwise.
struct TESSERA_API QuantParams {
  std::vector<float> scale;
  std::vector<int64_t> zero_point;
  int axis = -1;  // -1: per tensor

  bool empty() const { return scale.empty(); }
  bool per_axis() const { return scale.size() > 1 || axis >= 0; }
  float scale_at(int64_t c) const { return scale.size() == 1 ? scale[0] : scale[c]; }
  int64_t zero_point_at(int64_t c) const {
    return zero_point.empty() ? 0 : (zero_point.size() == 1 ? zero_point[0] : zero_point[c]);
  }
  bool operator==(const QuantParams&) const = default;
};
TESSERA_API std::string quant_str(const QuantParams& q);

// What a tensor is for; decides where it lives and how long.
enum class Role : uint8_t {
  weight,      // constant data, uploaded once at prepare time
  input,       // bound by the caller before each run
  output,      // read by the caller after each run
  activation,  // intermediate; lives in the planner's memory plan
  state,       // persistent across runs (KV cache); updated with region writes
};
TESSERA_API const char* role_name(Role r);

}  // namespace tessera
