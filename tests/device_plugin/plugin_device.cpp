// The plugin device: a test device living outside src/ (docs/adding-a-device.md), built
// from this folder alone. It holds f32 tensors in its own layout, colpad4
// (colpad4_format.h), every other tensor row-major, and runs a few ops by converting its
// operands to row-major and calling the cpu's reference kernels: what it checks is the
// plumbing (registration, its format's size and conversion rules, transfers to and from
// the cpu), not new arithmetic.
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <vector>

#include "backend/cpu/kernel.h"
#include "backend/cpu/thread_pool.h"
#include "device_plugin/colpad4_format.h"
#include "tessera/backend/convert.h"
#include "tessera/backend/device.h"

namespace tessera::plugin {

namespace {

// The ops it runs (f32, plain kernels); the rest fall back to the cpu.
const std::set<OpKind>& ops() {
  static const std::set<OpKind> s = {OpKind::add, OpKind::mul, OpKind::sub, OpKind::relu, OpKind::softmax,
                                     OpKind::fully_connected, OpKind::matmul};
  return s;
}

struct PluginProgram : Program {
  const Graph* graph = nullptr;
  std::vector<int> nodes;
  std::vector<cpu::KernelFn> kernels;
  std::string describe() const override { return std::to_string(nodes.size()) + " plugin node(s)"; }
};

class PluginDevice : public Device {
 public:
  PluginDevice() : Device(make_props()), pool_(1) {}

  static DeviceProperties make_props() {
    DeviceProperties p;
    p.name = "plugin";
    p.description = "test device (tests/device_plugin): cpu kernels over its own layout colpad4";
    p.capacity_bytes = int64_t{1} << 32;
    p.max_allocation_bytes = p.capacity_bytes;
    p.alignment_bytes = 16;
    p.regions = kRegionWhole;
    p.extra = {{"formats", "f32/colpad4, others row-major"}};
    return p;
  }

 protected:
  std::optional<Format> do_native_format(const Graph& g, TensorId id) const override {
    const Tensor& t = g.tensor(id);
    if (t.dtype == DType::f32) return Format{Encoding::f32, colpad4(), t.shape};
    return t.host_format();
  }

  Support do_supports(const Graph& g, const Node& n) const override {
    if (!ops().count(n.op)) return Support::no(std::string("the plugin device runs no ") + op_name(n.op));
    for (const auto* ids : {&n.inputs, &n.outputs})
      for (TensorId id : *ids)
        if (id != kNoTensor && g.tensor(id).dtype != DType::f32) return Support::no("the plugin device runs f32 only");
    if (!cpu::kernel_table().find(n.op, cpu::KernelKind::plain)) return Support::no("no cpu kernel to wrap");
    double elems = 0;
    for (TensorId o : n.outputs) elems += static_cast<double>(g.tensor(o).elements());
    return Support::yes(elems * 0.5e-9);  // cheaper than the cpu, so that the planner places the node here
  }

  Result<Allocation> do_allocate(int64_t bytes) override {
    const uint64_t h = next_++;
    buffers_[h].assign(static_cast<size_t>(bytes), 0);
    return Allocation{h, bytes};
  }

  Status do_free(Allocation a) override {
    if (!buffers_.erase(a.handle)) return error(StatusCode::invalid_argument, "free of unknown allocation ", a.handle);
    return Status::Ok();
  }

  Result<uint8_t*> base(const Placement& p) {
    auto it = buffers_.find(p.alloc.handle);
    if (it == buffers_.end()) return error(StatusCode::invalid_argument, "unknown allocation ", p.alloc.handle);
    return it->second.data() + p.offset;
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
    auto prog = std::make_unique<PluginProgram>();
    prog->graph = seg.graph;
    for (int i : seg.nodes) {
      const Node& n = seg.graph->nodes()[i];
      if (n.op == OpKind::transfer) continue;
      cpu::KernelFn fn = cpu::kernel_table().find(n.op, cpu::KernelKind::plain);
      if (!fn || !ops().count(n.op))
        return error(StatusCode::unsupported, "[", op_name(n.op), "] ", n.label(), ": not a plugin device op");
      prog->nodes.push_back(i);
      prog->kernels.push_back(fn);
    }
    return std::unique_ptr<Program>(std::move(prog));
  }

  // Each node: its operands converted to row-major staging buffers, the cpu kernel, its
  // results converted back into their placements' formats.
  Status do_execute(Program& p, const Bindings& b) override {
    auto& prog = static_cast<PluginProgram&>(p);
    const Graph& g = *prog.graph;
    for (size_t k = 0; k < prog.nodes.size(); ++k) {
      const Node& n = g.nodes()[prog.nodes[k]];
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::vector<uint8_t>> staging;
      staging.reserve(n.inputs.size() + n.outputs.size());
      std::vector<cpu::TensorRef> refs;
      for (const auto* ids : {&n.inputs, &n.outputs}) {
        const bool is_input = ids == &n.inputs;
        for (TensorId id : *ids) {
          if (id == kNoTensor) {
            refs.push_back({});
            continue;
          }
          const Tensor& t = g.tensor(id);
          const Format host = t.host_format();
          TS_ASSIGN_OR_RETURN(int64_t bytes, host.byte_size());
          staging.emplace_back(static_cast<size_t>(bytes));
          if (is_input) {
            auto it = b.placements.find(id);
            if (it == b.placements.end()) return error(StatusCode::internal, "tensor '", t.name, "' has no placement");
            TS_ASSIGN_OR_RETURN(uint8_t * src, base(it->second));
            TS_RETURN_IF_ERROR(convert::convert(it->second.format, src, host, staging.back().data()));
          }
          refs.push_back({&t, staging.back().data()});
        }
      }
      const std::span<const cpu::TensorRef> in(refs.data(), n.inputs.size()),
          out(refs.data() + n.inputs.size(), n.outputs.size());
      cpu::KernelContext ctx{g, n, in, out, &pool_, nullptr};
      TS_RETURN_IF_ERROR(prog.kernels[k](ctx));
      for (size_t o = 0; o < n.outputs.size(); ++o) {
        const TensorId id = n.outputs[o];
        auto it = b.placements.find(id);
        if (it == b.placements.end())
          return error(StatusCode::internal, "tensor '", g.tensor(id).name, "' has no placement");
        TS_ASSIGN_OR_RETURN(uint8_t * dst, base(it->second));
        TS_RETURN_IF_ERROR(convert::convert(g.tensor(id).host_format(), out[o].data, it->second.format, dst));
      }
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      counters_.last_nodes.push_back({prog.nodes[k], dt, -1});
    }
    return Status::Ok();
  }

 private:
  cpu::ThreadPool pool_;
  std::map<uint64_t, std::vector<uint8_t>> buffers_;
  uint64_t next_ = 1;
};

}  // namespace

DeviceInfo plugin_device_info() {
  DeviceInfo info;
  info.name = "plugin";
  info.summary = "test device: cpu kernels over its own layout colpad4 (tests/device_plugin)";
  info.create = [](const std::string&, const DeviceOptions&) -> Result<std::unique_ptr<Device>> {
    return std::unique_ptr<Device>(new PluginDevice());
  };
  return info;
}

}  // namespace tessera::plugin
