// The cpu device: host memory, the reference kernels, the oracle for every other device.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>

#include "backend/cpu/kernel.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cpu/ukernels/qconv.h"
#include "tessera/backend/convert.h"
#include "tessera/backend/device.h"

namespace tessera {
namespace cpu {

KernelKind kernel_kind(const Graph& g, const Node& n) {
  if (n.inputs.empty() || n.inputs[0] == kNoTensor) return KernelKind::plain;
  const Tensor& t = g.tensor(n.inputs[0]);
  if (dtype_is_quantized_int(t.dtype) && !t.quant.empty()) return KernelKind::quant;
  // quantize of a float input produces quantized output: plain path handles it.
  return KernelKind::plain;
}

const KernelTable& kernel_table() {
  static const KernelTable table = [] {
    KernelTable t;
    register_plain_kernels(t);
    register_quant_kernels(t);
    return t;
  }();
  return table;
}

Status kernel_error(const Node& n, const std::string& msg) {
  return error(StatusCode::unsupported, "[", op_name(n.op), "] ", n.name.empty() ? "" : "'" + n.name + "': ", msg);
}

namespace {

// What `tessera devices` says of the packed path: its micro-kernels' instruction set.
std::string packed_kernels_text() {
  std::string s = "packed (weights packed at compile, ";
  s += uk::qconv_kernels().isa;
  s += " micro-kernels; same bytes as the reference)";
  return s;
}

constexpr int64_t kCpuAlignment = 64;  // cache line; also satisfies every SIMD load
// Constants are read in place when their bytes start on a multiple of this: the largest
// scalar element the kernels load is 8 bytes and every SIMD load is unaligned (loadu), so
// 16 admits GGUF data (aligned to 32 by default) and TFLite buffers (16).
constexpr int64_t kInPlaceAlignment = 16;

int64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<int64_t>(pages) * size : (int64_t{16} << 30);
}

struct CpuProgram : Program {
  const Graph* graph = nullptr;
  std::vector<int> nodes;
  std::vector<KernelFn> kernels;
  std::vector<std::unique_ptr<PreparedKernel>> prepared;  // per node; nullptr where none
  std::vector<bool> skip;  // per node: its outputs are read by no one (do_compile), not run
  std::vector<TensorRef> refs;  // every node's inputs then outputs, resolved on each execute
  std::string describe() const override {
    const auto skipped = std::count(skip.begin(), skip.end(), true);
    return std::to_string(nodes.size()) + (nodes.size() == 1 ? " cpu kernel" : " cpu kernels") +
           (skipped ? " (" + std::to_string(skipped) + " not run: their outputs are read by no kernel)" : "");
  }
};

class CpuDevice : public Device {
 public:
  CpuDevice(int threads, bool packed)
      : Device(make_props(threads, packed)), pool_(threads), packed_(packed) {}

  static DeviceProperties make_props(int threads, bool packed) {
    DeviceProperties p;
    p.name = "cpu";
    p.description = "host CPU, reference kernels (the oracle for every other device)";
    p.capacity_bytes = physical_memory();
    p.max_allocation_bytes = p.capacity_bytes;
    p.alignment_bytes = kCpuAlignment;
    p.sub_allocation = true;
    p.constants_in_place_alignment = kInPlaceAlignment;
    p.cores = threads;
    p.regions = kRegionWhole | kRegionRows | kRegionBox;
    p.extra = {{"threads", std::to_string(threads)},
               {"kernels", packed ? packed_kernels_text() : std::string("reference")},
               {"formats", "row-major, every logical dtype"}};
    return p;
  }

 protected:
  std::optional<Format> do_native_format(const Graph& g, TensorId id) const override {
    return g.tensor(id).host_format();
  }

  Support do_supports(const Graph& g, const Node& n) const override {
    if (n.op == OpKind::transfer) return Support::yes(0);
    KernelKind kind = kernel_kind(g, n);
    if (!kernel_table().find(n.op, kind))
      return Support::no(std::string("no ") + (kind == KernelKind::quant ? "quantized" : "plain") + " cpu kernel for " +
                         op_name(n.op) + " with input dtype " + dtype_name(g.tensor(n.inputs[0]).dtype));
    // Rough cost: one nanosecond per output element; devices compare relative costs.
    double elems = 0;
    for (TensorId o : n.outputs) elems += static_cast<double>(g.tensor(o).elements());
    return Support::yes(elems * 1e-9);
  }

  Result<Allocation> do_allocate(int64_t bytes) override {
    int64_t rounded = (bytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* p = std::aligned_alloc(kCpuAlignment, rounded);
    if (!p) return error(StatusCode::out_of_memory, "host allocation of ", bytes, " bytes failed");
    std::memset(p, 0, rounded);
    uint64_t h = next_handle_++;
    buffers_[h] = static_cast<uint8_t*>(p);
    return Allocation{h, bytes};
  }

  Status do_free(Allocation a) override {
    auto it = buffers_.find(a.handle);
    if (it == buffers_.end()) return error(StatusCode::invalid_argument, "free of unknown allocation ", a.handle);
    std::free(it->second);
    buffers_.erase(it);
    return Status::Ok();
  }

  Result<uint8_t*> base(const Placement& p) const {
    auto it = buffers_.find(p.alloc.handle);
    if (it == buffers_.end()) return error(StatusCode::invalid_argument, "unknown allocation ", p.alloc.handle);
    return it->second + p.offset;
  }

  Status do_write(const Placement& dst, const Region& region, const ConstHostView& src) override {
    TS_ASSIGN_OR_RETURN(uint8_t * d, base(dst));
    convert::Stats st;
    TS_RETURN_IF_ERROR(convert::write_region(dst.format, d, region, src.format, src.data, &st));
    if (!st.identity) counters_.bytes_converted += st.bytes_in;
    return Status::Ok();
  }

  Status do_read(const Placement& src, const Region& region, const HostView& dst) override {
    TS_ASSIGN_OR_RETURN(uint8_t * s, base(src));
    convert::Stats st;
    TS_RETURN_IF_ERROR(convert::read_region(src.format, s, region, dst.format, dst.data, &st));
    if (!st.identity) counters_.bytes_converted += st.bytes_in;
    return Status::Ok();
  }

  Result<std::unique_ptr<Program>> do_compile(const Segment& seg) override {
    auto prog = std::make_unique<CpuProgram>();
    for (int i : seg.nodes) {
      const Node& n = seg.graph->nodes()[i];
      for (TensorId id : n.inputs) {
        if (id == kNoTensor) continue;
        auto f = seg.formats.find(id);
        if (f != seg.formats.end() && !f->second.is_host_layout())
          return error(StatusCode::unsupported, "[", op_name(n.op), "] input '", seg.graph->tensor(id).name,
                       "' is in format ", f->second.to_string(), ", the cpu reads only row-major");
      }
      KernelFn fn = kernel_table().find(n.op, kernel_kind(*seg.graph, n));
      if (!fn)
        return error(StatusCode::unsupported, "[", op_name(n.op), "] ", n.label(), ": no cpu kernel for input dtype ",
                     dtype_name(seg.graph->tensor(n.inputs[0]).dtype));
      std::unique_ptr<PreparedKernel> prep;
      PrepareFn pf = packed_ ? kernel_table().find_prepare(n.op, kernel_kind(*seg.graph, n)) : nullptr;
      if (pf) {
        auto r = pf(*seg.graph, n);
        if (!r.ok()) {
          std::string where = "[";
          where.append(op_name(n.op)).append("] ").append(n.label());
          return r.status().with_context(where);
        }
        prep = std::move(r).value();
      }
      prog->nodes.push_back(i);
      prog->kernels.push_back(fn);
      prog->prepared.push_back(std::move(prep));
    }
    prog->graph = seg.graph;
    // A node whose every output is read only by kernels of this program that never read it
    // (PreparedKernel::unread_input: a LOGISTIC whose one reader is its SiLU MUL's byte
    // table) is not run; nothing else in the graph (another program, a transfer, the
    // caller) reads what it would write.
    const Graph& g = *seg.graph;
    std::vector<int> readers(g.tensors().size(), 0), unread(g.tensors().size(), 0);
    for (const Node& n : g.nodes())
      for (TensorId in : n.inputs)
        if (in != kNoTensor) ++readers[in];
    for (TensorId o : g.outputs) ++readers[o];
    for (size_t k = 0; k < prog->nodes.size(); ++k) {
      const PreparedKernel* pk = prog->prepared[k].get();
      const Node& n = g.nodes()[prog->nodes[k]];
      if (pk && pk->unread_input >= 0 && pk->unread_input < static_cast<int>(n.inputs.size()) &&
          n.inputs[pk->unread_input] != kNoTensor)
        ++unread[n.inputs[pk->unread_input]];
    }
    prog->skip.assign(prog->nodes.size(), false);
    for (size_t k = 0; k < prog->nodes.size(); ++k) {
      const Node& n = g.nodes()[prog->nodes[k]];
      bool skip = !n.outputs.empty();
      for (TensorId o : n.outputs) skip = skip && readers[o] > 0 && readers[o] == unread[o];
      prog->skip[k] = skip;
    }
    return std::unique_ptr<Program>(std::move(prog));
  }

  Status do_execute(Program& p, const Bindings& b) override {
    auto& prog = static_cast<CpuProgram&>(p);
    const Graph& g = *prog.graph;
    auto ref = [&](TensorId id) -> Result<TensorRef> {
      if (id == kNoTensor) return TensorRef{};
      auto it = b.placements.find(id);
      if (it == b.placements.end()) {
        // A constant the plan left in place (constants_in_place_alignment): its bytes are
        // the graph's, kept alive by the graph; kernels only read their inputs.
        const Tensor& t = g.tensor(id);
        if (t.role == Role::weight && t.data && t.data->data) return TensorRef{&t, const_cast<uint8_t*>(t.data->data)};
        return error(StatusCode::internal, "tensor '", t.name, "' has no placement");
      }
      TS_ASSIGN_OR_RETURN(uint8_t * d, base(it->second));
      return TensorRef{&g.tensor(id), d};
    };
    prog.refs.clear();  // keeps its capacity: no allocation after the first run
    for (size_t k = 0; k < prog.nodes.size(); ++k) {
      const Node& n = g.nodes()[prog.nodes[k]];
      for (const auto* ids : {&n.inputs, &n.outputs})
        for (TensorId id : *ids) {
          TS_ASSIGN_OR_RETURN(TensorRef r, ref(id));
          prog.refs.push_back(r);
        }
    }
    const TensorRef* next = prog.refs.data();
    for (size_t k = 0; k < prog.nodes.size(); ++k) {
      const Node& n = g.nodes()[prog.nodes[k]];
      const std::span<const TensorRef> in(next, n.inputs.size()), out(next + n.inputs.size(), n.outputs.size());
      next += n.inputs.size() + n.outputs.size();
      if (prog.skip[k]) {
        counters_.last_nodes.push_back({prog.nodes[k], 0.0, -1});
        continue;
      }
      KernelContext ctx{g, n, in, out, &pool_, prog.prepared[k].get()};
      auto t0 = std::chrono::steady_clock::now();
      TS_RETURN_IF_ERROR(prog.kernels[k](ctx));
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      counters_.last_nodes.push_back({prog.nodes[k], dt, -1});
    }
    return Status::Ok();
  }

 private:
  ThreadPool pool_;
  bool packed_ = true;  // run the kernels' prepared (packed) paths; false: reference kernels only
  std::map<uint64_t, uint8_t*> buffers_;
  uint64_t next_handle_ = 1;
};

}  // namespace
}  // namespace cpu

DeviceInfo cpu_device_info() {
  DeviceInfo info;
  info.name = "cpu";
  info.summary = "host CPU with the reference kernels";
  info.options = {
      DeviceOption::choice("kernels", {"packed", "reference"},
                           "packed: the fast kernels (byte-identical); reference: the reference kernels only"),
      threads_option(),
  };
  info.create = [](const std::string&, const DeviceOptions& opts) -> Result<std::unique_ptr<Device>> {
    // Keys and values already checked against info.options by create_device.
    int threads = 1;
    bool packed = true;
    if (auto it = opts.find("kernels"); it != opts.end()) packed = it->second == "packed";
    if (auto it = opts.find("threads"); it != opts.end()) threads = std::stoi(it->second);
    return std::unique_ptr<Device>(new cpu::CpuDevice(threads, packed));
  };
  return info;
}

}  // namespace tessera
