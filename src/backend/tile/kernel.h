// The tile device's kernel interface.
//
// A kernel reads its input tiles from the simulated DRAM unpacked to float32 values
// (through src/convert, never a conversion loop here), computes with the device's
// numerics (numerics.h), and hands float32 values back to be packed into the output's
// native format (bf16 rounding, bfp packing happen in that conversion). Each kernel
// declares which inputs may be integer indices or GGUF block weights; every other input
// and output must be a float tensor, and anything else runs on the cpu.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/tile/numerics.h"
#include "tessera/graph.h"

namespace tessera::tile {

// Access to the node's tensors in DRAM, given to a kernel by the executor.
class KernelIo {
 public:
  virtual ~KernelIo() = default;
  // Input i's logical values, float32 row-major (shape = the tensor's shape). A u8/i8
  // quantized input arrives as real values scale * (code - zero_point).
  virtual Result<std::vector<float>> load(int input) = 0;
  // Input i of an integer-path kernel (a quantized conv / fully connected), float32
  // row-major: a u8/i8 tensor's codes minus its zero point (per tensor or per channel),
  // or the i32 bias's codes; integers of at most 9 bits (bias: 24) that bf16 / the source
  // registers hold exactly.
  virtual Result<std::vector<float>> load_centred(int input) = 0;
  // Input i's values as int32 (index tensors: ids, positions).
  virtual Result<std::vector<int32_t>> load_i32(int input) = 0;
  // Rows [r0, r1) along axis 0 of input i, float32 row-major; reads only their pages.
  virtual Result<std::vector<float>> load_rows(int input, int64_t r0, int64_t r1) = 0;
  // Output o from float32 row-major values, packed into its native format.
  // A quantized output is requantized clamp(round(value / scale) + zero_point).
  virtual Status store(int output, const std::vector<float>& values) = 0;
  // Quantized output o from codes the kernel has already requantized and clamped.
  virtual Status store_codes(int output, const std::vector<float>& codes) = 0;
  // Rows [r0, r1) along `axis` of output o from float32 values of the region's extent: a
  // row-region write that touches only those pages (KV cache updates).
  virtual Status store_rows(int output, int axis, int64_t r0, int64_t r1, const std::vector<float>& values) = 0;
};

struct KernelContext {
  const Graph& g;
  const Node& n;
  MatrixNumerics matrix;
  KernelIo& io;

  const Tensor& in(int i) const { return g.tensor(n.inputs[i]); }
  const Tensor& out(int o) const { return g.tensor(n.outputs[o]); }
  bool has_in(int i) const { return i < static_cast<int>(n.inputs.size()) && n.inputs[i] != kNoTensor; }
};

// The work a node gives the cost model, beyond its DRAM traffic.
struct KernelWork {
  double matrix_flops = 0;  // multiply-adds x 2 on the matrix engine, on tile-padded dims
  double vector_tiles = 0;  // 32x32 tiles passing through the vector engine
};

struct TileKernel {
  OpKind op{};
  uint32_t index_inputs = 0;  // bit i: input i holds int32 indices (row-major)
  uint32_t block_inputs = 0;  // bit i: input i may be a weight in q8_0 / q4_0 (or bfp)
  // Node-specific limits (attributes, ranks); "" if the node is fine, else the reason.
  std::string (*check)(const Graph& g, const Node& n) = nullptr;
  Status (*run)(KernelContext& c) = nullptr;
  KernelWork (*work)(const Graph& g, const Node& n) = nullptr;
  // Has a float path for u8/i8 quantized tensors (option quantized=float): inputs arrive
  // as real values and quantized outputs are requantized when stored.
  bool quantized = false;
};

// The kernel for `op`, or nullptr.
const TileKernel* find_kernel(OpKind op);

// Registration, one per family file (kernels/*.cpp).
void add_matrix_kernels(std::vector<TileKernel>& k);   // matmul, fully_connected, conv2d, depthwise_conv2d
void add_eltwise_kernels(std::vector<TileKernel>& k);  // binary and unary elementwise
void add_norm_kernels(std::vector<TileKernel>& k);     // softmax, rms_norm, layer_norm, rope
void add_data_kernels(std::vector<TileKernel>& k);     // get_rows, transpose, concat, reshape, reductions, scatter_rows

// Helpers shared by kernel files.
// A u8 / i8 tensor with quantization parameters (held on the device as its codes).
inline bool is_quantized(const Tensor& t) {
  return (t.dtype == DType::u8 || t.dtype == DType::i8) && !t.quant.empty();
}
Status tile_kernel_error(const Node& n, const std::string& msg);  // "[op] 'name': msg"
int64_t tiles_of(const Shape& s);                                  // 32x32 tiles of a tile32 tensor of shape s
float apply_activation(float v, const std::string& act);           // none | relu | relu6 | relu_n1_to_1
std::string check_activation(const Node& n);                       // "" or the reason

}  // namespace tessera::tile
