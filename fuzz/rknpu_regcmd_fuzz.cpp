// libFuzzer target for the rknpu device model: its register-stream decoder and executor.
// The input rewrites the stream of a valid task that the compiler emits (a 3x3 conv, a
// depthwise conv, an element-wise add or a max pool over 8x8x16 feature maps, an fp16
// matmul 8x64x32 with and without its fp32 bias, an int8 x int8 -> int32 matmul 8x64x32,
// the second K segment of a K-split int8 and fp16 matmul, the lookup-table tasks of a
// LOGISTIC and a SiLU, a conv with its SiLU table fused, and a channel copy), so that the mutations start
// from streams that reach every block and the int8, int8 -> int32 and fp16/fp32 paths. Whatever the stream, submit() must
// return a Status: no crash, no access outside the buffer objects, no unbounded work
// (scripts/fuzz.sh runs it).
//
// Input: byte 0 picks the task; then records of 7 bytes (op, entry index u16, value u32):
//   op % 5 == 0  the entry's 32-bit value
//   op % 5 == 1  the entry's register offset (low 16 bits of value)
//   op % 5 == 2  the entry's target (low 16 bits of value)
//   op % 5 == 3  a new entry appended: target op >> 2, offset index, value
//   op % 5 == 4  a precision field (CNA IN/PROC, CORE PROC, DPU IN/PROC/OUT, DPU_RDMA IN/PROC;
//                chosen by index) set to value & 7, in the entry that writes its register
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/tiling.h"
#include "backend/rknpu/transport.h"
#include "tessera/graph.h"

namespace {

using namespace tessera;

TensorId feature(Graph& g, const char* name, int64_t c) {
  Tensor t;
  t.name = name;
  t.shape = {1, 8, 8, c};
  t.dtype = DType::u8;
  t.quant = {{0.02f}, {120}};
  t.role = Role::input;
  return g.add_tensor(t);
}

TensorId constant(Graph& g, const char* name, Shape s, DType dt, QuantParams q, uint32_t seed) {
  Tensor t;
  t.name = name;
  t.shape = s;
  t.dtype = dt;
  t.quant = q;
  t.role = Role::weight;
  std::vector<uint8_t> bytes(static_cast<size_t>(t.elements() * (dt == DType::i32 ? 4 : 1)));
  for (auto& b : bytes) b = static_cast<uint8_t>((seed = seed * 1103515245u + 12345u) >> 16);
  if (dt == DType::i32)
    for (size_t i = 0; i < bytes.size(); i += 4) bytes[i + 2] = bytes[i + 3] = 0;  // small biases
  t.data = ConstData::from_vector(std::move(bytes));
  return g.add_tensor(t);
}

struct Baseline {
  std::vector<uint64_t> entries;  // one task, chained (no next task)
};

struct World {
  std::unique_ptr<rknpu::Transport> t = rknpu::make_model_transport(rknpu::kAddressSpace);
  std::vector<rknpu::BoInfo> maps;      // input, second operand, output feature maps
  std::vector<std::vector<uint8_t>> initial;
  rknpu::BoInfo regcmd;
  std::vector<uint32_t> handles;
  std::vector<Baseline> tasks;

  World() {
    for (int i = 0; i < 3; ++i) {
      maps.push_back(*t->create_bo(4 * 8 * 8 * 16));  // room for two K segments' partial results
      std::vector<uint8_t> bytes(static_cast<size_t>(maps.back().size));
      for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = static_cast<uint8_t>(k * 37 + i);
      std::memcpy(maps.back().cpu, bytes.data(), bytes.size());
      initial.push_back(std::move(bytes));
      handles.push_back(maps.back().handle);
    }
    regcmd = *t->create_bo(64 * 1024);
    handles.push_back(regcmd.handle);
    QuantParams wq{{0.005f}, {128}}, bq{{0.0001f}, {0}}, yq{{0.05f}, {100}};
    const AttrMap conv_attrs = {{"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}},
                                                         {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}},
                                                         {"activation", std::string("relu6")}};
    {  // conv 3x3 16 -> 16
      Graph g;
      TensorId x = feature(g, "x", 16);
      TensorId w = constant(g, "w", {16, 3, 3, 16}, DType::u8, wq, 1);
      TensorId b = constant(g, "b", {16}, DType::i32, bq, 2);
      add(g, g.add_op(OpKind::conv2d, {x, w, b}, conv_attrs, "conv", DType::u8, yq));
    }
    {  // depthwise 3x3
      Graph g;
      TensorId x = feature(g, "x", 16);
      TensorId w = constant(g, "w", {1, 3, 3, 16}, DType::u8, wq, 3);
      TensorId b = constant(g, "b", {16}, DType::i32, bq, 4);
      auto attrs = conv_attrs;
      attrs["depth_multiplier"] = int64_t{1};
      add(g, g.add_op(OpKind::depthwise_conv2d, {x, w, b}, attrs, "dw", DType::u8, yq));
    }
    {  // element-wise add
      Graph g;
      TensorId a = feature(g, "a", 16), b = feature(g, "b", 16);
      add(g, g.add_op(OpKind::add, {a, b}, {}, "add", DType::u8, yq));
    }
    {  // max pool 2x2 stride 2
      Graph g;
      TensorId x = feature(g, "x", 16);
      add(g, g.add_op(OpKind::max_pool2d, {x},
                      {{"filter_h", int64_t{2}}, {"filter_w", int64_t{2}}, {"stride_h", int64_t{2}}, {"stride_w", int64_t{2}}},
                      "pool", DType::u8, QuantParams{{0.02f}, {120}}));
    }
    {  // lookup tables: LOGISTIC, SiLU (LOGISTIC + MUL, node 1), and a conv with its SiLU table fused
      Graph g;
      TensorId x = feature(g, "x", 16);
      auto s = g.add_op(OpKind::logistic, {x}, {}, "sig", DType::u8, QuantParams{{1.0f / 256}, {0}});
      if (s.ok()) {
        add(g, s);
        add(g, g.add_op(OpKind::mul, {x, *s}, {}, "silu", DType::u8, yq), {}, false, 1);
      }
    }
    {
      Graph g;
      TensorId x = feature(g, "x", 16);
      TensorId w = constant(g, "w", {16, 3, 3, 16}, DType::u8, wq, 10);
      TensorId b = constant(g, "b", {16}, DType::i32, bq, 11);
      AttrMap attrs = conv_attrs;
      attrs["activation"] = std::string("none");
      auto y = g.add_op(OpKind::conv2d, {x, w, b}, attrs, "conv", DType::u8, yq);
      auto s = y.ok() ? g.add_op(OpKind::logistic, {*y}, {}, "sig", DType::u8, QuantParams{{1.0f / 256}, {0}}) : y;
      auto m = s.ok() ? g.add_op(OpKind::mul, {*y, *s}, {}, "silu", DType::u8, yq) : s;
      if (m.ok()) {
        auto conv = rknpu::lower_node(g, g.nodes()[0]);
        auto table = rknpu::lower_node(g, g.nodes()[2]);
        if (conv.ok() && table.ok() && rknpu::fuse_lut(*table, *conv).ok()) add_op(*conv);
      }
    }
    {  // channel copies: the second 16 channels of 32, and a concat's first part
      Graph g;
      TensorId x = feature(g, "x", 32);
      add(g, g.add_op(OpKind::strided_slice, {x},
                      {{"begin", std::vector<int64_t>{0, 0, 0, 16}}, {"end", std::vector<int64_t>{1, 8, 8, 32}},
                       {"strides", std::vector<int64_t>{1, 1, 1, 1}}, {"shrink_axes", std::vector<int64_t>{}}},
                      "slice", DType::u8, g.tensor(x).quant));
    }
    {  // flat tensors (flat.h): the second part of a concatenation along rows, a PPU row copy
      Graph g;
      Tensor x;
      x.name = "x";
      x.shape = {1, 8, 32};
      x.dtype = DType::i8;
      x.quant = QuantParams{{0.05f}, {-3}};
      x.role = Role::input;
      const TensorId xi = g.add_tensor(x);
      g.inputs = {xi};
      auto y = g.add_op(OpKind::concat, {xi, xi}, {{"axis", int64_t{2}}}, "rows", DType::i8, x.quant);
      auto parts = y.ok() ? rknpu::lower_concat_parts(g, g.nodes()[0]) : Result<std::vector<rknpu::NpuOp>>(y.status());
      if (parts.ok() && parts->size() == 2) add_op((*parts)[1]);
    }
    add_matmul(false, 5);
    add_matmul(true, 6);
    rknpu::LowerOptions int8;
    int8.weights = rknpu::WeightPolicy::int8;
    add_matmul(false, 7, int8);
    add_matmul(true, 8, int8, true);
    add_matmul(true, 9, {}, true);
  }

  // fp16 matmul: A f32 [8, 64] (fp16 NC1HWC2 in the input BO: 8 surfaces of 8 rows, 1 KiB),
  // F16 weights [32, 64], C fp32 [8, 32] (8 surfaces of 8 rows: the output BO's 1 KiB).
  // `ksplit`: the task of K segment 1 when K is cut into two segments of 32 (the stream a
  // K > 11264 matmul's second segment has: A from surface 32 / C2, the weights' second
  // segment, the second partial result).
  void add_matmul(bool bias, uint32_t seed, const rknpu::LowerOptions& lo = {}, bool ksplit = false) {
    Graph g;
    Tensor x;
    x.name = "x";
    x.shape = {8, 64};
    x.dtype = DType::f32;
    x.role = Role::input;
    TensorId xi = g.add_tensor(x);
    std::vector<uint8_t> wb(32 * 64 * 2);
    for (size_t i = 0; i < wb.size(); i += 2) {
      seed = seed * 1103515245u + 12345u;
      const uint16_t h = static_cast<uint16_t>(0x3000 | ((seed >> 16) & 0x0FFF) | ((seed >> 4) & 0x8000));  // |w| in [2^-3, 2^-1)
      std::memcpy(wb.data() + i, &h, 2);
    }
    Tensor w;
    w.name = "w";
    w.shape = {32, 64};
    w.dtype = DType::f16;
    w.role = Role::weight;
    w.data = ConstData::from_vector(std::move(wb));
    std::vector<TensorId> ins{xi, g.add_tensor(w)};
    if (bias) {
      std::vector<uint8_t> bb(32 * 4);
      for (size_t i = 0; i < 32; ++i) {
        const float v = 0.25f * float(i) - 4.0f;
        std::memcpy(bb.data() + 4 * i, &v, 4);
      }
      Tensor b;
      b.name = "b";
      b.shape = {32};
      b.dtype = DType::f32;
      b.role = Role::weight;
      b.data = ConstData::from_vector(std::move(bb));
      ins.push_back(g.add_tensor(b));
    }
    add(g, g.add_op(OpKind::fully_connected, ins, {}, "mm"), lo, ksplit);
  }

  // Compiles node 0 of `g` (output `y`) for the first tile, addresses on the world's BOs.
  void add(Graph& g, Result<TensorId> y, const rknpu::LowerOptions& lo = {}, bool ksplit = false, int node = 0) {
    if (!y.ok()) return;
    auto op = rknpu::lower_node(g, g.nodes()[node], lo);
    if (!op.ok()) return;
    add_op(*op, ksplit);
  }

  void add_op(rknpu::NpuOp op_value, bool ksplit = false) {
    rknpu::NpuOp* op = &op_value;
    auto tiling = rknpu::plan_tiling(*op, rknpu::SchedulePolicy::tessera);
    if (!tiling.ok() || tiling->tiles.empty()) return;
    if (ksplit) {
      // Two K segments of 32: segment 1's task reads its blocks from the second half of the
      // packed [N, 64] weights (valid bytes, not the values a real split would pack there).
      tiling->k_segments = 2;
      tiling->k_chunk = 32;
      tiling->tiles[0].k0 = 32;
      tiling->tiles[0].kn = 32;
      tiling->tiles[0].kseg = 1;
    }
    rknpu::OpAddresses a{maps[0].dma_address, maps[2].dma_address, maps[1].dma_address, 0, 0};
    if (!op->weights.empty()) a.weights = upload(op->weights);
    if (!op->bs_table.empty()) a.bs = upload(op->bs_table);
    auto e = rknpu::emit_task(*op, *tiling, tiling->tiles[0], a, false);
    if (!e.ok() || !rknpu::append_chain(*e, 0, 0).ok()) return;
    tasks.push_back({std::move(*e)});
  }

  uint32_t upload(const std::vector<uint8_t>& bytes) {
    rknpu::BoInfo bo = *t->create_bo(static_cast<int64_t>(bytes.size()));
    std::memcpy(bo.cpu, bytes.data(), bytes.size());
    handles.push_back(bo.handle);
    return bo.dma_address;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World w;
  if (w.tasks.empty() || size < 1) return 0;
  std::vector<uint64_t> e = w.tasks[data[0] % w.tasks.size()].entries;
  for (size_t p = 1; p + 7 <= size && e.size() < 4096; p += 7) {
    const uint8_t op = data[p];
    const uint16_t index = static_cast<uint16_t>(data[p + 1] | data[p + 2] << 8);
    uint32_t value;
    std::memcpy(&value, data + p + 3, 4);
    uint64_t& x = e[index % e.size()];
    switch (op % 5) {
      case 0: x = (x & ~(uint64_t{0xFFFFFFFF} << 16)) | uint64_t{value} << 16; break;
      case 1: x = (x & ~uint64_t{0xFFFF}) | (value & 0xFFFF); break;
      case 2: x = (x & ~(uint64_t{0xFFFF} << 48)) | uint64_t{value & 0xFFFF} << 48; break;
      case 3: e.push_back(uint64_t{static_cast<uint8_t>(op >> 2)} << 48 | uint64_t{value} << 16 | index); break;
      default: {
        namespace R = rknpu::regs;
        static const R::Field kPrecision[] = {
            R::CNA::CONV_CON1__IN_PRECISION,   R::CNA::CONV_CON1__PROC_PRECISION,
            R::CORE::MISC_CFG__PROC_PRECISION, R::DPU::DATA_FORMAT__IN_PRECISION,
            R::DPU::DATA_FORMAT__PROC_PRECISION, R::DPU::DATA_FORMAT__OUT_PRECISION,
            R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__IN_PRECISION, R::DPU_RDMA::RDMA_FEATURE_MODE_CFG__PROC_PRECISION};
        const R::Field& f = kPrecision[index % (sizeof(kPrecision) / sizeof(kPrecision[0]))];
        for (uint64_t& entry : e)
          if ((entry & 0xFFFF) == f.reg) {
            uint32_t v = static_cast<uint32_t>(entry >> 16);
            const uint32_t mask = static_cast<uint32_t>(f.max()) << f.low;
            v = (v & ~mask) | ((value & 7u & static_cast<uint32_t>(f.max())) << f.low);
            entry = (entry & ~(uint64_t{0xFFFFFFFF} << 16)) | uint64_t{v} << 16;
          }
        break;
      }
    }
  }
  for (size_t i = 0; i < w.maps.size(); ++i) std::memcpy(w.maps[i].cpu, w.initial[i].data(), w.initial[i].size());
  std::memcpy(w.regcmd.cpu, e.data(), e.size() * 8);
  rknpu::JobDesc job;
  job.tasks.push_back({w.regcmd.dma_address, static_cast<uint32_t>(e.size())});
  job.in_bos = w.handles;
  (void)w.t->submit(0, {job});
  return 0;
}
