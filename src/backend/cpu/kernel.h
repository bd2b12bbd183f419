// The CPU kernel interface: how the cpu device finds and calls a kernel for a node.
//
// Every op has reference kernels here: plain, obviously correct code that is the oracle
// for every other device. A kernel receives the node and dense row-major buffers of its
// inputs and outputs in their logical dtypes (GGUF blocks as stored).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "tessera/graph.h"

namespace tessera::cpu {

class ThreadPool;

struct TensorRef {
  const Tensor* t = nullptr;  // shape, dtype, quant, name
  uint8_t* data = nullptr;    // row-major values of t->dtype; nullptr for an absent optional input

  template <typename T> T* as() const { return reinterpret_cast<T*>(data); }
  int64_t elements() const { return num_elements(t->shape); }
  const Shape& shape() const { return t->shape; }
  DType dtype() const { return t->dtype; }
  explicit operator bool() const { return data != nullptr; }
};

// What a kernel works out once per node at compile time (weights packed for its
// micro-kernels, requantization multipliers, scratch sizes) and reads on every run.
// Constant inputs are in Graph::tensor(id).data at compile time.
struct PreparedKernel {
  virtual ~PreparedKernel() = default;
  // An input this prepared kernel never reads, its values implied by another input (a SiLU
  // MUL's LOGISTIC operand: the product is a byte table of x alone); -1: it reads them all.
  // The cpu program does not run a node whose every output only such kernels read.
  int unread_input = -1;
};

struct KernelContext {
  const Graph& g;
  const Node& n;
  std::span<const TensorRef> in;   // per node input (absent optional inputs: a null TensorRef)
  std::span<const TensorRef> out;
  ThreadPool* pool = nullptr;  // for kernels that split work over threads
  const PreparedKernel* prepared = nullptr;  // what the kernel's PrepareFn made; nullptr if none
};

using KernelFn = Status (*)(KernelContext&);
// (optional) Runs once per node when the cpu compiles a segment; returns nullptr when the
// node takes no prepared path (the kernel then works from its inputs alone). An error
// fails the compile with the node named.
using PrepareFn = Result<std::unique_ptr<PreparedKernel>> (*)(const Graph&, const Node&);

// Which numeric path a node takes: `quant` when its first input is a u8/i8/i16 tensor with
// quantization parameters (TFLite semantics), `plain` otherwise.
enum class KernelKind : uint8_t { plain, quant };
KernelKind kernel_kind(const Graph& g, const Node& n);

// op x kind -> kernel. Filled by the register_* functions of the kernel family files.
class KernelTable {
 public:
  void add(OpKind op, KernelKind kind, KernelFn fn, PrepareFn prepare = nullptr) {
    fns_[index(op, kind)] = fn;
    prepares_[index(op, kind)] = prepare;
  }
  KernelFn find(OpKind op, KernelKind kind) const { return fns_[index(op, kind)]; }
  PrepareFn find_prepare(OpKind op, KernelKind kind) const { return prepares_[index(op, kind)]; }

 private:
  static size_t index(OpKind op, KernelKind kind) { return static_cast<size_t>(op) * 2 + static_cast<size_t>(kind); }
  std::vector<KernelFn> fns_ = std::vector<KernelFn>(kNumOps * 2, nullptr);
  std::vector<PrepareFn> prepares_ = std::vector<PrepareFn>(kNumOps * 2, nullptr);
};

// The table with every CPU kernel, built once.
const KernelTable& kernel_table();

// Registration functions, one per family file (kernels/*.cpp).
void register_plain_kernels(KernelTable& t);  // float / integer reference kernels
void register_quant_kernels(KernelTable& t);  // TFLite-exact quantized kernels

// Error helper: "[conv2d] 'name': msg".
Status kernel_error(const Node& n, const std::string& msg);

}  // namespace tessera::cpu
