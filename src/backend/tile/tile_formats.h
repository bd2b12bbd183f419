// Which format the tile device keeps each tensor in (docs/tile-device.md "Formats").
//
//  - activations, inputs, outputs and state (KV caches): tile32 in the activation
//    encoding, float32 by default or bfloat16 (option activations=bf16);
//  - weights read as the B operand of matmul / fully_connected: tile32 in the weight
//    encoding of the policy (option weights=bf16|bfp8_b|bfp4_b|auto; auto keeps GGUF
//    Q8_0 as bfp8_b and Q4_0 as bfp4_b, converted directly, and stores float weights as bf16);
//  - embedding tables read only by get_rows: float tables row-major in the activation
//    encoding (a page is one row, so a lookup reads one page per token), GGUF block
//    tables tile32 in the weight encoding;
//  - convolution weights [OC, KH, KW, IC]: row-major bfloat16 (tiling would pad each
//    KH row's [KW, IC] slice to 32x32 tiles: 10x the bytes for a 3x3 kernel);
//  - other float weights (norm scales, biases): tile32 in the activation encoding;
//  - int32 index tensors (token ids, positions): row-major int32;
//  - u8/i8 tensors with quantization parameters: tile32 codes for activations, row-major
//    codes for weights (quantized=float, the default); none with quantized=cpu;
//  - anything else (i64, bool, unquantized integers): none; nodes touching them run on the cpu.
#pragma once

#include <optional>
#include <string>

#include "tessera/backend/device.h"
#include "tessera/graph.h"

namespace tessera::tile {

enum class WeightPolicy : uint8_t { automatic, bf16, bfp8_b, bfp4_b };

struct FormatPolicy {
  Encoding activations = Encoding::f32;  // f32 or bf16
  WeightPolicy weights = WeightPolicy::automatic;
  // Option quantized=float (default): u8/i8 tensors with quantization parameters are held
  // as their codes (tile32 activations, row-major weights) and converted to real values at
  // the kernel boundary (docs/tile-device.md "Quantized models"); quantized=cpu leaves
  // their nodes to the cpu's TFLite-exact kernels.
  bool quantized_float = true;
};

// Reads options "weights" and "activations"; errors name the bad value and the valid ones.
Result<FormatPolicy> parse_format_policy(const DeviceOptions& opts);
const char* weight_policy_name(WeightPolicy w);
// The encoding a matmul weight of logical dtype `t` gets under the policy.
Encoding weight_encoding(const FormatPolicy& p, DType t);
// The format for tensor `id` of `g`, or nullopt if the device cannot hold it.
std::optional<Format> tile_native_format(const Graph& g, TensorId id, const FormatPolicy& p);

}  // namespace tessera::tile
