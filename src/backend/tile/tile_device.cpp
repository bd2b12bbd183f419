// The tile device: a Tenstorrent-style tile machine on a device model.
//
// Memory is the DRAM model (dram.h): every tensor is its own page-interleaved buffer, and
// write/read/kernels move whole pages between the banks and src/convert. Kernels
// (kernels/*.cpp) compute with the device's numerics; the cost model (cost_model.h)
// gives every node and transfer a modelled device time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "backend/tile/cost_model.h"
#include "backend/tile/dram.h"
#include "backend/tile/kernel.h"
#include "backend/tile/pages.h"
#include "backend/tile/tile_formats.h"
#include "backend/tile/tile_preset.h"
#include "tessera/backend/convert.h"
#include "tessera/backend/device.h"

namespace tessera {
namespace tile {
namespace {

struct TileOptions {
  FormatPolicy formats;
  MatrixNumerics matrix;
};

Result<TileOptions> parse_options(const DeviceOptions& opts) {
  TileOptions o;  // keys and values already checked against tile_device_info().options
  TS_ASSIGN_OR_RETURN(o.formats, parse_format_policy(opts));
  if (auto it = opts.find("fidelity"); it != opts.end()) {
    auto f = fidelity_from_name(it->second);
    if (!f) return error(StatusCode::invalid_argument, "tile: fidelity must be LoFi, HiFi2, HiFi3 or HiFi4, got '", it->second, "'");
    o.matrix.fidelity = *f;
  }
  if (auto it = opts.find("accumulate"); it != opts.end()) {
    auto a = accumulate_from_name(it->second);
    if (!a) return error(StatusCode::invalid_argument, "tile: accumulate must be fp32 or bf16, got '", it->second, "'");
    o.matrix.accumulate = *a;
  }
  return o;
}

std::string gib(int64_t b) { return fmt::format("{:.1f} GiB", b / double(int64_t{1} << 30)); }

// Input 2 (i32 bias) of a conv / fully connected whose input and weights are quantized:
// its real value is code x input scale x weight scale (TFLite's bias convention).
bool quantized_bias(const Graph& g, const Node& n, size_t i) {
  bool conv = n.op == OpKind::conv2d || n.op == OpKind::depthwise_conv2d || n.op == OpKind::fully_connected;
  return conv && i == 2 && n.inputs.size() > 2 && n.inputs[2] != kNoTensor &&
         g.tensor(n.inputs[2]).dtype == DType::i32 && is_quantized(g.tensor(n.inputs[0])) &&
         is_quantized(g.tensor(n.inputs[1]));
}

// Scale and zero point of element i of `t` (per tensor, or per channel along quant.axis).
struct Affine {
  const QuantParams& q;
  std::vector<int64_t> strides;
  int64_t dim = 1;
  Affine(const Tensor& t) : q(t.quant) {
    if (q.per_axis() && q.axis >= 0 && q.axis < static_cast<int>(t.shape.size())) {
      strides = row_major_strides(t.shape);
      dim = t.shape[q.axis];
    }
  }
  int64_t channel(int64_t i) const { return strides.empty() ? 0 : (i / strides[q.axis]) % dim; }
};

// Codes (as float values) -> real values, in place.
void dequantize_codes(const Graph& g, const Node& n, int input, std::vector<float>& v) {
  const Tensor& t = g.tensor(n.inputs[input]);
  if (quantized_bias(g, n, static_cast<size_t>(input))) {
    const Tensor& x = g.tensor(n.inputs[0]);
    const Tensor& w = g.tensor(n.inputs[1]);
    const int64_t c = static_cast<int64_t>(v.size());
    for (int64_t i = 0; i < c; ++i) {
      // Per-channel weight scales follow the output channel (the bias index).
      float ws = w.quant.scale.size() == 1 ? w.quant.scale[0] : w.quant.scale[static_cast<size_t>(i) % w.quant.scale.size()];
      v[i] = v[i] * x.quant.scale_at(0) * ws;
    }
    return;
  }
  if (!is_quantized(t)) return;
  Affine a(t);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t c = a.channel(static_cast<int64_t>(i));
    v[i] = a.q.scale_at(c) * (v[i] - static_cast<float>(a.q.zero_point_at(c)));
  }
}

// Real values -> codes (round half away from zero, clamp to the dtype), as TFLite quantizes.
std::vector<float> quantize_values(const Tensor& t, const std::vector<float>& v) {
  Affine a(t);
  const float lo = t.dtype == DType::u8 ? 0.0f : -128.0f, hi = t.dtype == DType::u8 ? 255.0f : 127.0f;
  std::vector<float> q(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t c = a.channel(static_cast<int64_t>(i));
    float code = std::round(v[i] / a.q.scale_at(c)) + static_cast<float>(a.q.zero_point_at(c));
    q[i] = std::min(std::max(code, lo), hi);
  }
  return q;
}

struct TileProgram : Program {
  const Graph* graph = nullptr;
  std::vector<int> nodes;
  std::vector<const TileKernel*> kernels;
  std::vector<KernelWork> work;
  std::string describe() const override { return std::to_string(nodes.size()) + (nodes.size() == 1 ? " tile kernel" : " tile kernels"); }
};

class TileDevice;

// A node's view of its tensors in DRAM (KernelIo), counting the page bytes it moves.
class NodeIo : public KernelIo {
 public:
  NodeIo(TileDevice& d, const Graph& g, const Node& n, const Bindings& b) : d_(d), g_(g), n_(n), b_(b) {}
  Result<std::vector<float>> load(int input) override;
  Result<std::vector<float>> load_centred(int input) override;
  Result<std::vector<int32_t>> load_i32(int input) override;
  Result<std::vector<float>> load_rows(int input, int64_t r0, int64_t r1) override;
  Status store(int output, const std::vector<float>& values) override;
  Status store_codes(int output, const std::vector<float>& codes) override;
  Status store_rows(int output, int axis, int64_t r0, int64_t r1, const std::vector<float>& values) override;
  int64_t dram_bytes = 0;

 private:
  Result<const Placement*> placement(TensorId id) const;
  Result<std::vector<float>> load_stored(int input);  // the stored values (codes), as float32
  Status pack(int output, const std::vector<float>& values);
  TileDevice& d_;
  const Graph& g_;
  const Node& n_;
  const Bindings& b_;
};

class TileDevice : public Device {
 public:
  TileDevice(const TilePreset& preset, const TileOptions& opts)
      : Device(make_props(preset, opts)),
        preset_(preset),
        opts_(opts),
        dram_(preset.dram_banks, preset.bank_bytes, preset.dram_alignment) {}

  static DeviceProperties make_props(const TilePreset& p, const TileOptions& o) {
    DeviceProperties d;
    d.name = "tile:" + p.name;
    d.description = p.summary;
    d.is_model = true;
    d.capacity_bytes = p.capacity_bytes();
    d.max_allocation_bytes = p.capacity_bytes();  // one buffer may span every bank
    d.alignment_bytes = p.dram_alignment;
    d.sub_allocation = false;  // buffers are whole allocations, never offsets
    d.cores = p.cores;
    d.regions = kRegionWhole | kRegionRows;
    d.matrix_product_error = product_error_bound(o.matrix.fidelity);
    d.extra = {
        {"dram", fmt::format("{} banks x {}, pages interleaved round-robin (page = one tile, or one row when row-major)",
                             p.dram_banks, gib(p.bank_bytes))},
        {"dram alignment", fmt::format("{} B per page; L1 alignment {} B", p.dram_alignment, p.l1_alignment)},
        {"cores", fmt::format("{} Tensix cores ({}x{} grid), {} KiB L1 each, {:.2f} GHz", p.cores, p.grid_x, p.grid_y,
                              p.l1_bytes / 1024, p.clock_hz / 1e9)},
        {"bandwidth", fmt::format("DRAM {:.0f} GB/s, PCIe {:.1f} GB/s", p.dram_bytes_per_s / 1e9, p.pcie_bytes_per_s / 1e9)},
        {"formats", fmt::format("activations {}/tile32; weights {} (auto: q4_0->bfp4_b, other GGUF blocks->bfp8_b, float->bf16)",
                                encoding_name(o.formats.activations), weight_policy_name(o.formats.weights))},
        {"math", fmt::format("fidelity {}, {} accumulation", fidelity_name(o.matrix.fidelity),
                             accumulate_name(o.matrix.accumulate))},
        {"quantized tensors", o.formats.quantized_float
                                  ? "on the device (quantized=float): conv / depthwise / fully connected on the codes with TFLite's requantization, other ops on real values converted at the kernel boundary"
                                  : "on the cpu's TFLite-exact kernels (option quantized=cpu)"},
    };
    return d;
  }

  Dram& dram() { return dram_; }
  const TilePreset& preset() const { return preset_; }

  // Checks a placement: tile32 or row-major, and no byte offset.
  Status check_placement(const Placement& p, const std::string& what) const {
    if (p.offset != 0)
      return error(StatusCode::invalid_argument, what, " is placed at byte offset ", p.offset,
                   " inside allocation ", p.alloc.handle, "; tile buffers are whole allocations without byte offsets");
    if (p.format.layout != Layout::tile32 && p.format.layout != Layout::row_major)
      return error(StatusCode::unsupported, what, ": format ", p.format.to_string(), " is not a tile-device format");
    return Status::Ok();
  }

  // The tensor's bytes in its format, with `pages` filled from the banks.
  Result<std::vector<uint8_t>> gather(const Placement& p, const std::vector<int64_t>& pages, int64_t* moved) {
    TS_ASSIGN_OR_RETURN(int64_t bytes, p.format.byte_size());
    std::vector<uint8_t> image(static_cast<size_t>(std::max<int64_t>(bytes, 1)), 0);
    TS_RETURN_IF_ERROR(dram_.gather(p.alloc.handle, p.format.page_size(), pages, image.data()));
    if (moved) *moved += static_cast<int64_t>(pages.size()) * p.format.page_size();
    return image;
  }
  Status scatter(const Placement& p, const std::vector<int64_t>& pages, const std::vector<uint8_t>& image,
                 int64_t* moved) {
    TS_RETURN_IF_ERROR(dram_.scatter(p.alloc.handle, p.format.page_size(), pages, image.data()));
    if (moved) *moved += static_cast<int64_t>(pages.size()) * p.format.page_size();
    return Status::Ok();
  }
  void count_conversion(const convert::Stats& st) {
    if (!st.identity) counters_.bytes_converted += st.bytes_in;
  }

 protected:
  std::optional<Format> do_native_format(const Graph& g, TensorId id) const override {
    return tile_native_format(g, id, opts_.formats);
  }

  Support do_supports(const Graph& g, const Node& n) const override {
    const TileKernel* k = find_kernel(n.op);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == kNoTensor) continue;
      const Tensor& t = g.tensor(n.inputs[i]);
      std::string who = fmt::format("input {} '{}' ({})", i, t.name, dtype_name(t.dtype));
      if (dtype_is_quantized_int(t.dtype) || quantized_bias(g, n, i)) {
        if (!opts_.formats.quantized_float)
          return Support::no(who + " is an integer-quantized tensor; the tile device has no integer "
                                   "arithmetic, so the cpu runs it with TFLite-exact kernels");
        if (!k || !k->quantized)
          return Support::no(who + " is quantized and " + op_name(n.op) + " has no float path for quantized tensors");
        if (t.dtype == DType::i16 || (t.quant.empty() && !quantized_bias(g, n, i)))
          return Support::no(who + ": only u8/i8 tensors with quantization parameters are converted to real values");
        continue;
      }
      if (!k) continue;
      if (k->index_inputs & (1u << i)) {
        if (t.dtype != DType::i32) return Support::no(who + ": indices must be i32");
        continue;
      }
      if (dtype_is_block(t.dtype)) {
        if (!(k->block_inputs & (1u << i)) || t.role != Role::weight)
          return Support::no(who + ": GGUF blocks are accepted only as weights of matmul, fully_connected, get_rows");
        continue;
      }
      if (!dtype_is_float(t.dtype)) return Support::no(who + ": the tile kernels take float tensors");
    }
    if (!k) return Support::no(std::string("no tile kernel for ") + op_name(n.op));
    for (TensorId o : n.outputs)
      if (!dtype_is_float(g.tensor(o).dtype) && n.op != OpKind::scatter_rows &&
          !(opts_.formats.quantized_float && k->quantized && is_quantized(g.tensor(o))))
        return Support::no(fmt::format("output '{}' is {}: the tile kernels produce float tensors", g.tensor(o).name,
                                       dtype_name(g.tensor(o).dtype)));
    if (k->check) {
      std::string why = k->check(g, n);
      if (!why.empty()) return Support::no(why);
    }
    // Estimate: the cost model on the native formats' bytes.
    double bytes = 0;
    for (TensorId id : n.inputs)
      if (id != kNoTensor)
        if (auto f = do_native_format(g, id)) bytes += static_cast<double>(f->byte_size().ok() ? *f->byte_size() : 0);
    for (TensorId id : n.outputs)
      if (auto f = do_native_format(g, id)) bytes += static_cast<double>(f->byte_size().ok() ? *f->byte_size() : 0);
    KernelWork w = k->work ? k->work(g, n) : KernelWork{};
    NodeCost c = node_cost(preset_, opts_.matrix.fidelity, w, bytes);
    return Support::yes(c.total_seconds, fmt::format("modelled {:.1f} us", c.total_seconds * 1e6));
  }

  Result<int64_t> do_allocation_bytes(const Format& f) const override {
    TS_ASSIGN_OR_RETURN(int64_t pages, page_count(f));
    return dram_.footprint(pages, f.page_size());
  }

  Result<Allocation> do_allocate(int64_t bytes) override {
    TS_ASSIGN_OR_RETURN(uint64_t id, dram_.allocate(bytes));
    TS_ASSIGN_OR_RETURN(int64_t reserved, dram_.reserved_bytes(id));
    return Allocation{id, reserved};
  }

  Status do_free(Allocation a) override { return dram_.free(a.handle); }

  Status do_write(const Placement& dst, const Region& region, const ConstHostView& src) override {
    TS_RETURN_IF_ERROR(check_placement(dst, "write"));
    TS_ASSIGN_OR_RETURN(std::vector<int64_t> pages, touched_pages(dst.format, region));
    convert::Stats st;
    int64_t moved = 0;
    std::vector<uint8_t> image;
    if (region.is_whole()) {
      TS_ASSIGN_OR_RETURN(int64_t bytes, dst.format.byte_size());
      image.assign(static_cast<size_t>(std::max<int64_t>(bytes, 1)), 0);
      TS_RETURN_IF_ERROR(convert::convert(src.format, src.data, dst.format, image.data(), &st));
    } else {
      // Partly covered pages are read back, modified by convert, and written whole.
      TS_ASSIGN_OR_RETURN(image, gather(dst, pages, nullptr));
      TS_RETURN_IF_ERROR(convert::write_region(dst.format, image.data(), region, src.format, src.data, &st));
    }
    TS_RETURN_IF_ERROR(scatter(dst, pages, image, &moved));
    count_conversion(st);
    counters_.modelled_transfer_seconds += transfer_seconds(preset_, static_cast<double>(moved));
    return Status::Ok();
  }

  Status do_read(const Placement& src, const Region& region, const HostView& dst) override {
    TS_RETURN_IF_ERROR(check_placement(src, "read"));
    TS_ASSIGN_OR_RETURN(std::vector<int64_t> pages, touched_pages(src.format, region));
    int64_t moved = 0;
    TS_ASSIGN_OR_RETURN(std::vector<uint8_t> image, gather(src, pages, &moved));
    convert::Stats st;
    if (region.is_whole()) TS_RETURN_IF_ERROR(convert::convert(src.format, image.data(), dst.format, dst.data, &st));
    else TS_RETURN_IF_ERROR(convert::read_region(src.format, image.data(), region, dst.format, dst.data, &st));
    count_conversion(st);
    counters_.modelled_transfer_seconds += transfer_seconds(preset_, static_cast<double>(moved));
    return Status::Ok();
  }

  Result<std::unique_ptr<Program>> do_compile(const Segment& seg) override {
    auto prog = std::make_unique<TileProgram>();
    prog->graph = seg.graph;
    const Graph& g = *seg.graph;
    for (int i : seg.nodes) {
      const Node& n = g.nodes()[i];
      Support s = do_supports(g, n);
      if (!s.ok) return error(StatusCode::unsupported, "[", op_name(n.op), "] ", n.label(), ": ", s.reason);
      for (const auto& [id, f] : seg.formats)
        if (f.layout != Layout::tile32 && f.layout != Layout::row_major)
          return error(StatusCode::unsupported, "[", op_name(n.op), "] tensor '", g.tensor(id).name, "' in format ",
                       f.to_string(), " is not a tile-device format");
      const TileKernel* k = find_kernel(n.op);
      prog->nodes.push_back(i);
      prog->kernels.push_back(k);
      prog->work.push_back(k->work ? k->work(g, n) : KernelWork{});
    }
    return std::unique_ptr<Program>(std::move(prog));
  }

  Status do_execute(Program& p, const Bindings& b) override {
    auto& prog = static_cast<TileProgram&>(p);
    const Graph& g = *prog.graph;
    for (size_t k = 0; k < prog.nodes.size(); ++k) {
      const Node& n = g.nodes()[prog.nodes[k]];
      NodeIo io(*this, g, n, b);
      KernelContext ctx{g, n, opts_.matrix, io};
      auto t0 = std::chrono::steady_clock::now();
      TS_RETURN_IF_ERROR(prog.kernels[k]->run(ctx));
      double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      NodeCost c = node_cost(preset_, opts_.matrix.fidelity, prog.work[k], static_cast<double>(io.dram_bytes));
      counters_.modelled_seconds += c.total_seconds;
      counters_.last_nodes.push_back({prog.nodes[k], dt, c.total_seconds});
    }
    return Status::Ok();
  }

 private:
  TilePreset preset_;
  TileOptions opts_;
  Dram dram_;
};

Result<const Placement*> NodeIo::placement(TensorId id) const {
  auto it = b_.placements.find(id);
  if (it == b_.placements.end())
    return error(StatusCode::internal, "[", op_name(n_.op), "] tensor '", g_.tensor(id).name, "' has no placement");
  TS_RETURN_IF_ERROR(d_.check_placement(it->second, "tensor '" + g_.tensor(id).name + "'"));
  return &it->second;
}

Result<std::vector<float>> NodeIo::load(int input) {
  TS_ASSIGN_OR_RETURN(std::vector<float> values, load_stored(input));
  dequantize_codes(g_, n_, input, values);  // quantized tensors: codes -> real values
  return values;
}

Result<std::vector<float>> NodeIo::load_centred(int input) {
  const Tensor& t = g_.tensor(n_.inputs.at(input));
  const bool bias = quantized_bias(g_, n_, static_cast<size_t>(input));
  if (!bias && !is_quantized(t))
    return error(StatusCode::internal, "[", op_name(n_.op), "] input ", input, " '", t.name,
                 "' is not quantized: it has no codes to centre");
  TS_ASSIGN_OR_RETURN(std::vector<float> values, load_stored(input));
  if (bias) return values;  // the i32 codes (exact below 2^24)
  Affine a(t);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] -= static_cast<float>(a.q.zero_point_at(a.channel(static_cast<int64_t>(i))));  // exact: |code - zp| <= 255
  return values;
}

Result<std::vector<float>> NodeIo::load_stored(int input) {
  TensorId id = n_.inputs.at(input);
  TS_ASSIGN_OR_RETURN(const Placement* p, placement(id));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> pages, touched_pages(p->format, Region::whole()));
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> image, d_.gather(*p, pages, &dram_bytes));
  std::vector<float> values(static_cast<size_t>(num_elements(p->format.shape)));
  convert::Stats st;
  TS_RETURN_IF_ERROR(convert::convert(p->format, image.data(), Format::row_major(DType::f32, p->format.shape),
                                      values.data(), &st));
  return values;
}

Result<std::vector<int32_t>> NodeIo::load_i32(int input) {
  TensorId id = n_.inputs.at(input);
  TS_ASSIGN_OR_RETURN(const Placement* p, placement(id));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> pages, touched_pages(p->format, Region::whole()));
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> image, d_.gather(*p, pages, &dram_bytes));
  std::vector<int32_t> values(static_cast<size_t>(num_elements(p->format.shape)));
  TS_RETURN_IF_ERROR(
      convert::convert(p->format, image.data(), Format::row_major(DType::i32, p->format.shape), values.data()));
  return values;
}

Result<std::vector<float>> NodeIo::load_rows(int input, int64_t r0, int64_t r1) {
  TensorId id = n_.inputs.at(input);
  TS_ASSIGN_OR_RETURN(const Placement* p, placement(id));
  Region r = Region::rows(p->format.shape, 0, r0, r1);
  TS_RETURN_IF_ERROR(r.validate(p->format.shape));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> pages, touched_pages(p->format, r));
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> image, d_.gather(*p, pages, &dram_bytes));
  Shape ext = r.extent(p->format.shape);
  std::vector<float> values(static_cast<size_t>(num_elements(ext)));
  TS_RETURN_IF_ERROR(
      convert::read_region(p->format, image.data(), r, Format::row_major(DType::f32, ext), values.data()));
  if (is_quantized(g_.tensor(id)))
    return error(StatusCode::unsupported, "[", op_name(n_.op), "] row reads of quantized '", g_.tensor(id).name, "'");
  return values;
}

Status NodeIo::store(int output, const std::vector<float>& values) {
  const Tensor& t = g_.tensor(n_.outputs.at(output));
  // A quantized output is requantized to its codes (exact integers, so the cast is exact).
  return pack(output, is_quantized(t) ? quantize_values(t, values) : values);
}

Status NodeIo::store_codes(int output, const std::vector<float>& codes) {
  const Tensor& t = g_.tensor(n_.outputs.at(output));
  if (!is_quantized(t))
    return error(StatusCode::internal, "[", op_name(n_.op), "] output '", t.name, "' is not quantized: codes have no meaning");
  return pack(output, codes);
}

Status NodeIo::pack(int output, const std::vector<float>& out) {
  TensorId id = n_.outputs.at(output);
  TS_ASSIGN_OR_RETURN(const Placement* p, placement(id));
  if (static_cast<int64_t>(out.size()) != num_elements(p->format.shape))
    return error(StatusCode::internal, "[", op_name(n_.op), "] output '", g_.tensor(id).name, "' got ", out.size(),
                 " values for shape ", shape_str(p->format.shape));
  TS_ASSIGN_OR_RETURN(int64_t bytes, p->format.byte_size());
  std::vector<uint8_t> image(static_cast<size_t>(std::max<int64_t>(bytes, 1)), 0);
  convert::Stats st;
  TS_RETURN_IF_ERROR(
      convert::convert(Format::row_major(DType::f32, p->format.shape), out.data(), p->format, image.data(), &st)
          .with_context("[" + std::string(op_name(n_.op)) + "] packing output '" + g_.tensor(id).name + "'"));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> pages, touched_pages(p->format, Region::whole()));
  return d_.scatter(*p, pages, image, &dram_bytes);
}

Status NodeIo::store_rows(int output, int axis, int64_t r0, int64_t r1, const std::vector<float>& values) {
  TensorId id = n_.outputs.at(output);
  TS_ASSIGN_OR_RETURN(const Placement* p, placement(id));
  Region r = Region::rows(p->format.shape, axis, r0, r1);
  TS_RETURN_IF_ERROR(r.validate(p->format.shape).with_context("[" + std::string(op_name(n_.op)) + "] '" +
                                                              g_.tensor(id).name + "'"));
  Shape ext = r.extent(p->format.shape);
  if (static_cast<int64_t>(values.size()) != num_elements(ext))
    return error(StatusCode::internal, "[", op_name(n_.op), "] row write of ", values.size(), " values into ",
                 shape_str(ext));
  TS_ASSIGN_OR_RETURN(std::vector<int64_t> pages, touched_pages(p->format, r));
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> image, d_.gather(*p, pages, &dram_bytes));
  TS_RETURN_IF_ERROR(
      convert::write_region(p->format, image.data(), r, Format::row_major(DType::f32, ext), values.data()));
  return d_.scatter(*p, pages, image, &dram_bytes);
}

}  // namespace
}  // namespace tile

DeviceInfo tile_device_info() {
  DeviceInfo info;
  info.name = "tile";
  info.summary = "Tenstorrent-style tile machine (32x32 tiles, bfp8_b/bfp4_b, interleaved DRAM) on a device model";
  for (const tile::TilePreset& p : tile::tile_presets()) info.presets.push_back(p.name);
  info.options = {
      DeviceOption::choice("weights", {"auto", "bf16", "bfp8_b", "bfp4_b", "bfp8", "bfp4"},
                           "weight encoding (auto: q4_0 as bfp4_b, other GGUF blocks as bfp8_b, the rest bf16)"),
      DeviceOption::choice("activations", {"f32", "bf16"}, "activation tiles' encoding"),
      DeviceOption::choice("fidelity", {"HiFi4", "HiFi3", "HiFi2", "LoFi"}, "matrix unit passes per product"),
      DeviceOption::choice("accumulate", {"fp32", "bf16"}, "matrix accumulator precision"),
      DeviceOption::choice("quantized", {"float", "cpu"},
                           "u8/i8 nodes: float (converted at the kernel boundary) or left to the cpu"),
      threads_option(),
  };
  info.create = [](const std::string& preset, const DeviceOptions& opts) -> Result<std::unique_ptr<Device>> {
    TS_ASSIGN_OR_RETURN(tile::TilePreset p, tile::find_tile_preset(preset.empty() ? "wormhole_n150" : preset));
    TS_ASSIGN_OR_RETURN(tile::TileOptions o, tile::parse_options(opts));
    return std::unique_ptr<Device>(new tile::TileDevice(p, o));
  };
  return info;
}

}  // namespace tessera
