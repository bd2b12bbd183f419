// Graph: logical tensors and the ops between them, as frontends build them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tessera/export.h"
#include "tessera/attrs.h"
#include "tessera/format.h"
#include "tessera/types.h"

namespace tessera {

// OpKind, derived from the single list of ops, tessera/ops.def (src/ops/ops.def, copied
// beside the public headers by the build and installed with them).
enum class OpKind : uint16_t {
#define OP(name, min_in, max_in, summary) name,
#include "tessera/ops.def"
#undef OP
};
constexpr int kNumOps = 0
#define OP(name, min_in, max_in, summary) +1
#include "tessera/ops.def"
#undef OP
    ;
TESSERA_API const char* op_name(OpKind k);
TESSERA_API std::optional<OpKind> op_from_name(const std::string& name);
TESSERA_API int op_min_inputs(OpKind k);
TESSERA_API int op_max_inputs(OpKind k);
TESSERA_API const char* op_summary(OpKind k);
// The input whose storage output `output` of op `k` shares: ops that update a state tensor
// in place (scatter_rows out 0 -> in 0; lstm out 1, 2 -> in 10, 11; svdf out 1 -> in 3). -1 for
// other outputs.
TESSERA_API int op_aliased_input(OpKind k, size_t output);

using TensorId = int32_t;
constexpr TensorId kNoTensor = -1;

// Constant bytes owned elsewhere (a vector, a memory-mapped file); keeps its owner alive.
struct TESSERA_API ConstData {
  const uint8_t* data = nullptr;
  int64_t size = 0;
  std::shared_ptr<const void> owner;

  static ConstData from_vector(std::vector<uint8_t> bytes);
  std::span<const uint8_t> span() const { return {data, static_cast<size_t>(size)}; }
};

struct TESSERA_API Tensor {
  TensorId id = kNoTensor;
  std::string name;
  Shape shape;
  DType dtype = DType::f32;
  QuantParams quant;
  Role role = Role::activation;
  // Weights only: the values in row-major logical layout of `dtype` (GGUF blocks as stored).
  std::optional<ConstData> data;

  int64_t elements() const { return num_elements(shape); }
  // Bytes of the row-major logical layout (what a host buffer for this tensor holds).
  Result<int64_t> host_bytes() const;
  Format host_format() const { return Format::row_major(dtype, shape); }
};

// A node's attributes by key name (tessera/attrs.h has the typed keys). The transparent
// comparator lets a lookup take a string_view: kernels read attributes on the run path
// without allocating.
using AttrMap = std::map<std::string, AttrValue, std::less<>>;

struct TESSERA_API Node {
  OpKind op{};
  std::string name;               // e.g. the frontend's op location "op 12 (CONV_2D)"
  std::vector<TensorId> inputs;   // kNoTensor for an absent optional input
  std::vector<TensorId> outputs;
  AttrMap attrs;

  // The attribute's value, or the op's declared default when the node does not set it
  // (ops.def). Reading a key the op does not declare, or one declared `optional` or
  // `required` and not set, is a bug (TS_CHECK).
  template <attr::Type T>
  typename attr::Traits<T>::Get get(attr::Key<T> key) const;
  // The value when the node sets it (for attributes declared `optional`).
  template <attr::Type T>
  std::optional<typename attr::Traits<T>::Value> find(attr::Key<T> key) const;
  template <attr::Type T>
  bool has(attr::Key<T> key) const { return attrs.find(std::string_view(key.name)) != attrs.end(); }
  template <attr::Type T>
  void set(attr::Key<T> key, typename attr::Traits<T>::Value v) { attrs[key.name] = std::move(v); }
  // "conv2d 'op 12 (CONV_2D)'" for error messages.
  std::string label() const;
};

template <attr::Type T>
typename attr::Traits<T>::Get Node::get(attr::Key<T> key) const {
  using V = typename attr::Traits<T>::Value;
  auto it = attrs.find(std::string_view(key.name));
  const AttrValue& v = it != attrs.end() ? it->second : attr::default_of(op, key.id, name);
  if (const V* p = std::get_if<V>(&v)) return *p;
  attr::wrong_type(op, key.id, name);
}

template <attr::Type T>
std::optional<typename attr::Traits<T>::Value> Node::find(attr::Key<T> key) const {
  using V = typename attr::Traits<T>::Value;
  auto it = attrs.find(std::string_view(key.name));
  if (it == attrs.end()) return std::nullopt;
  if (const V* p = std::get_if<V>(&it->second)) return *p;
  attr::wrong_type(op, key.id, name);
}

class TESSERA_API Graph {
 public:
  TensorId add_tensor(Tensor t);  // assigns t.id
  // Adds a node after checking its input count and attributes against ops.def (an integer
  // given for a float attribute is stored as a float, ...) and that every id exists.
  Status add_node(Node n);
  // Adds a node and infers its output shape/dtype (activation role) by shape inference;
  // returns the new output id. The convenient way to build graphs by hand.
  Result<TensorId> add_op(OpKind op, std::vector<TensorId> inputs,
                          AttrMap attrs = {}, std::string name = {},
                          std::optional<DType> out_dtype = std::nullopt,
                          QuantParams out_quant = {});

  const Tensor& tensor(TensorId id) const { return tensors_.at(static_cast<size_t>(id)); }
  Tensor& tensor(TensorId id) { return tensors_.at(static_cast<size_t>(id)); }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& nodes() { return nodes_; }
  std::optional<TensorId> find_tensor(const std::string& name) const;

  // The model's inputs and outputs in order (their tensors have Role::input / output).
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;

  // Checks every node: input counts, tensor ids, attributes (ops.def) and shapes/dtypes by
  // shape inference.
  Status validate() const;
  // Human-readable listing (TESSERA_DUMP uses it).
  std::string dump() const;

 private:
  std::vector<Tensor> tensors_;
  std::vector<Node> nodes_;
};

// Shape inference for one node: computes the output shapes (and dtype where it follows
// from the inputs) and checks input shapes and dtypes. Errors name the op and tensor.
struct TESSERA_API InferredOutput {
  Shape shape;
  DType dtype;
};
TESSERA_API Result<std::vector<InferredOutput>> infer_outputs(const Graph& g, const Node& n);

}  // namespace tessera
