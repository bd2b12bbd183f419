// The device model's scheduling, as the mainline kernel schedules (rknpu.md "Kernel
// interface"; transport.h): each open file is one scheduler entity whose jobs run in order,
// one at a time, on one core; entities run at once on different cores; a job waits for the
// last job writing a buffer object it reads or writes. Tasks here are real compiled convs
// (lower, tile, emit) executed by the model, so durations are the model's own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "backend/rknpu/emit.h"
#include "backend/rknpu/hw.h"
#include "backend/rknpu/lower.h"
#include "backend/rknpu/program.h"
#include "backend/rknpu/regcmd.h"
#include "backend/rknpu/rknpu_test_util.h"
#include "backend/rknpu/tiling.h"
#include "backend/rknpu/transport.h"
#include "tessera/backend/plan.h"

namespace tessera::rknpu_test {
namespace {

using rknpu::BoInfo;
using rknpu::JobDesc;
using rknpu::SubmitTiming;
using rknpu::Transport;

Result<BoInfo> upload(Transport& t, const std::vector<uint8_t>& bytes) {
  TS_ASSIGN_OR_RETURN(BoInfo bo, t.create_bo(static_cast<int64_t>(bytes.size())));
  std::memcpy(bo.cpu, bytes.data(), bytes.size());
  return bo;
}

// A 3x3 conv 8x8x16 -> 8x8x16 compiled once; job() emits it between any two feature-map BOs.
class TinyConv {
 public:
  explicit TinyConv(Transport& t, int64_t channels = 16) : t_(t), channels_(channels) {
    ConvSpec s;
    s.ic = s.oc = channels;
    std::vector<uint8_t> input;
    g_ = build_conv(s, input);
    auto op = rknpu::lower_node(g_, g_.nodes()[0]);
    EXPECT_TRUE(op.ok()) << op.status().to_string();
    op_ = *op;
    auto tiling = rknpu::plan_tiling(op_, rknpu::SchedulePolicy::tessera);
    EXPECT_TRUE(tiling.ok()) << tiling.status().to_string();
    tiling_ = *tiling;
    weights_ = *upload(t, op_.weights);
    bs_ = *upload(t, op_.bs_table);
  }
  int64_t map_bytes() const { return (channels_ + 15) / 16 * 16 * 8 * 8; }  // NC1HWC2 [C1][8][8][16]
  BoInfo feature_map() { return *upload(t_, std::vector<uint8_t>(static_cast<size_t>(map_bytes()), 0x21)); }

  // One job reading `in` and writing `out`, its tasks chained in a fresh command buffer BO;
  // `patch` may rewrite each task's entries first.
  JobDesc job(const BoInfo& in, const BoInfo& out, void (*patch)(std::vector<uint64_t>&) = nullptr) {
    rknpu::OpAddresses a{in.dma_address, out.dma_address, 0, weights_.dma_address, bs_.dma_address};
    std::vector<std::vector<uint64_t>> tasks;
    size_t total = 0;
    for (size_t k = 0; k < tiling_.tiles.size(); ++k) {
      auto e = rknpu::emit_task(op_, tiling_, tiling_.tiles[k], a, k > 0);
      EXPECT_TRUE(e.ok()) << e.status().to_string();
      if (patch) patch(*e);
      total += rknpu::chained_size(e->size());
      tasks.push_back(*e);
    }
    BoInfo cmd = *t_.create_bo(static_cast<int64_t>(total * 8));
    JobDesc jd;
    size_t pos = 0;
    for (size_t k = 0; k < tasks.size(); ++k) {
      const size_t size = rknpu::chained_size(tasks[k].size());
      const bool last = k + 1 == tasks.size();
      EXPECT_TRUE(rknpu::append_chain(tasks[k], last ? 0 : cmd.dma_address + static_cast<uint32_t>((pos + size) * 8),
                                      last ? 0 : static_cast<uint32_t>(rknpu::chained_size(tasks[k + 1].size())))
                      .ok());
      std::memcpy(cmd.cpu + pos * 8, tasks[k].data(), tasks[k].size() * 8);
      jd.tasks.push_back({cmd.dma_address + static_cast<uint32_t>(pos * 8), static_cast<uint32_t>(tasks[k].size())});
      pos += tasks[k].size();
    }
    jd.in_bos = {in.handle, weights_.handle, bs_.handle, cmd.handle};
    jd.out_bos = {out.handle};
    return jd;
  }

 private:
  Transport& t_;
  int64_t channels_;
  Graph g_;
  rknpu::NpuOp op_;
  rknpu::Tiling tiling_;
  BoInfo weights_, bs_;
};

double job_seconds(const SubmitTiming& st, size_t j) { return st.jobs[j].end - st.jobs[j].start; }

TEST(RknpuScheduling, OneEntityRunsItsJobsInOrderOnOneCore) {
  auto t = rknpu::make_model_transport(rknpu::kAddressSpace);
  TinyConv conv(*t);
  BoInfo x = conv.feature_map(), y = conv.feature_map(), w = conv.feature_map(), z = conv.feature_map();
  // Two independent jobs in one submit still run one after the other on one core.
  auto st = t->submit(0, {conv.job(x, y), conv.job(w, z)});
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  ASSERT_EQ(st->jobs.size(), 2u);
  EXPECT_GT(job_seconds(*st, 0), rknpu::kJobOverheadSeconds);
  EXPECT_EQ(st->jobs[0].core, 0);
  EXPECT_EQ(st->jobs[1].core, 0);
  EXPECT_DOUBLE_EQ(st->jobs[0].start, 0.0);
  EXPECT_DOUBLE_EQ(st->jobs[1].start, st->jobs[0].end);
  EXPECT_DOUBLE_EQ(st->seconds, job_seconds(*st, 0) + job_seconds(*st, 1));
  EXPECT_DOUBLE_EQ(st->core_busy[1] + st->core_busy[2], 0.0);
  // The next submit of the entity starts when the previous ended, on the first idle core.
  auto again = t->submit(0, {conv.job(x, y)});
  ASSERT_TRUE(again.ok());
  EXPECT_DOUBLE_EQ(again->start, st->end);
  EXPECT_EQ(again->jobs[0].core, 0);
}

TEST(RknpuScheduling, EntitiesRunAtOnceAndFencesOrderThem) {
  auto t = rknpu::make_model_transport(rknpu::kAddressSpace);
  TinyConv conv(*t);
  const int e1 = t->open_entity(), e2 = t->open_entity(), e3 = t->open_entity();
  EXPECT_EQ(e1, 1);
  BoInfo x = conv.feature_map(), y = conv.feature_map(), w = conv.feature_map(), z = conv.feature_map(),
         v = conv.feature_map(), u = conv.feature_map();
  auto a = t->submit(0, {conv.job(x, y)});
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  // Independent of the first: starts at once on the next core.
  auto b = t->submit(e1, {conv.job(w, z)});
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->jobs[0].core, 1);
  EXPECT_DOUBLE_EQ(b->start + b->jobs[0].start, 0.0);
  // Reads y, which the first job writes: its implicit fence holds it until that job ends.
  auto c = t->submit(e2, {conv.job(y, v)});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->jobs[0].core, 2);
  EXPECT_DOUBLE_EQ(c->start + c->jobs[0].start, a->end);
  // Writes x, which the first job reads: readers attach no fence, so nothing holds it (the
  // kernel leaves write-after-read to userspace); but all three cores are busy, so it takes
  // the one free earliest.
  auto d = t->submit(e3, {conv.job(u, x)});
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_DOUBLE_EQ(d->start + d->jobs[0].start, std::min(a->end, b->end));
  EXPECT_EQ(d->jobs[0].core, a->end <= b->end ? 0 : 1);
  EXPECT_DOUBLE_EQ(d->seconds, d->end - d->start);
}

// Streams that would make the model alias surfaces or read weights past WEIGHT_BYTES are
// errors before any work is done (a small BO must not stand for a huge cube); the fuzzer
// (fuzz/rknpu_regcmd_fuzz.cpp) covers the rest of the decoder and executor.

// The DPU's scale-and-round for any shift its fields hold (OUT_CVT has 12 bits): rounding
// half away from zero, and 0 once the shift passes the product's 63 bits.
TEST(RknpuModel, ScaleRoundForEveryShift) {
  EXPECT_EQ(rknpu::scale_round(5, 3, 1), 8);     // 15 / 2 = 7.5 -> 8
  EXPECT_EQ(rknpu::scale_round(-5, 3, 1), -8);   // away from zero
  EXPECT_EQ(rknpu::scale_round(-5, 3, 2), -4);   // -3.75
  EXPECT_EQ(rknpu::scale_round(INT32_MIN, INT32_MIN, 62), 1);  // 2^62 / 2^62
  EXPECT_EQ(rknpu::scale_round(INT32_MIN, INT32_MIN, 63), 1);  // exactly one half: rounds up
  EXPECT_EQ(rknpu::scale_round(INT32_MIN, INT32_MIN, 64), 0);
  EXPECT_EQ(rknpu::scale_round(INT32_MAX, 32767, 4095), 0);
  EXPECT_EQ(rknpu::scale_round(INT32_MAX, 2, 0), INT32_MAX);  // saturated
}

TEST(RknpuModel, RejectsAliasingStridesAndShortWeights) {
  auto t = rknpu::make_model_transport(rknpu::kAddressSpace);
  TinyConv conv(*t, 48);  // three surfaces
  BoInfo x = conv.feature_map(), y = conv.feature_map();
  ASSERT_TRUE(t->submit(0, {conv.job(x, y)}).ok());
  auto surf0 = t->submit(0, {conv.job(x, y, [](std::vector<uint64_t>& e) {
                           set_field(e, rknpu::regs::DPU::DST_SURF_STRIDE__DST_SURF_STRIDE, 0);
                         })});
  ASSERT_FALSE(surf0.ok());
  EXPECT_NE(surf0.status().message().find("DPU destination: line stride 128 / surface stride 0 overlap a 48x8x8 cube"),
            std::string::npos)
      << surf0.status().message();
  auto short_w = t->submit(0, {conv.job(x, y, [](std::vector<uint64_t>& e) {
                             set_field(e, rknpu::regs::CNA::WEIGHT_SIZE0__WEIGHT_BYTES, 100);
                           })});
  ASSERT_FALSE(short_w.ok());
  EXPECT_NE(short_w.status().message().find("WEIGHT_BYTES 100 hold fewer than the 48x3x3x48 weights"), std::string::npos)
      << short_w.status().message();
}

// DRAM: a core's DMA gets kDramBytesPerSecond, but three busy cores share the SoC's
// kSocDramBytesPerSecond.
TEST(RknpuScheduling, ThreeBusyCoresShareTheSocDram) {
  auto t = rknpu::make_model_transport(rknpu::kAddressSpace);
  TinyConv conv(*t);
  const int e1 = t->open_entity(), e2 = t->open_entity();
  std::vector<SubmitTiming> st;
  for (int e : {0, e1, e2}) {
    BoInfo x = conv.feature_map(), y = conv.feature_map();
    auto r = t->submit(e, {conv.job(x, y)});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    st.push_back(*r);
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(st[i].jobs[0].core, i);
    EXPECT_DOUBLE_EQ(st[i].start + st[i].jobs[0].start, 0.0) << "all three start at once";
    const auto& task = st[i].jobs[0].tasks[0];
    ASSERT_GT(task.dram_bytes, 0);
    const double bandwidth = i < 2 ? rknpu::kDramBytesPerSecond : rknpu::kSocDramBytesPerSecond / 3;
    EXPECT_DOUBLE_EQ(task.dram_seconds, double(task.dram_bytes) / bandwidth) << "entity " << i;
    EXPECT_DOUBLE_EQ(task.seconds, rknpu::kTaskOverheadSeconds + std::max(task.mac_seconds, task.dram_seconds));
  }
}

TEST(RknpuScheduling, BadSubmitsAreErrors) {
  auto t = rknpu::make_model_transport(rknpu::kAddressSpace);
  TinyConv conv(*t);
  BoInfo x = conv.feature_map(), y = conv.feature_map();
  auto unknown = t->submit(7, {conv.job(x, y)});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown scheduler entity 7"), std::string::npos) << unknown.status().message();
  JobDesc empty;
  empty.out_bos = {y.handle};
  auto none = t->submit(0, {empty});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("job 0 has no tasks"), std::string::npos) << none.status().message();
}

// Through sessions: each session is one entity, so sessions sharing the device run on
// different cores, and one session's runs follow each other.
TEST(RknpuScheduling, SessionsSharingTheDeviceRunOnOtherCores) {
  ConvSpec s;
  s.h = s.w = 16, s.ic = s.oc = 32;
  std::vector<uint8_t> input;
  Graph g = build_conv(s, input);
  SessionOptions so;
  so.device = "rknpu";
  auto first = Session::create(g, so);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  auto second = Session::create(g, so, first->get());
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  const int npu = device_index((*first)->plan(), "rknpu");
  ASSERT_GE(npu, 0);
  Device* d = (*first)->devices()[npu];
  const auto& shared = (*second)->devices();
  ASSERT_NE(std::find(shared.begin(), shared.end(), d), shared.end()) << "shared device";
  for (auto* sess : {first->get(), second->get()}) ASSERT_TRUE(sess->set_input(0, input.data(), int64_t(input.size())).ok());
  ASSERT_TRUE((*first)->run().ok());
  const double latency = (*first)->profile().modelled_seconds;
  ASSERT_GT(latency, 0);
  EXPECT_DOUBLE_EQ(d->counters().modelled_clock_seconds, latency);
  ASSERT_TRUE((*second)->run().ok());  // its own entity: core 1, from the clock's start
  EXPECT_DOUBLE_EQ((*second)->profile().modelled_seconds, latency);
  EXPECT_DOUBLE_EQ(d->counters().modelled_clock_seconds, latency);
  ASSERT_TRUE((*first)->run().ok());  // after its previous run, on the first idle core
  EXPECT_DOUBLE_EQ(d->counters().modelled_clock_seconds, 2 * latency);
  const auto& busy = d->counters().modelled_core_seconds;
  ASSERT_EQ(busy.size(), 3u);
  EXPECT_DOUBLE_EQ(busy[0], 2 * latency);
  EXPECT_DOUBLE_EQ(busy[1], latency);
  EXPECT_DOUBLE_EQ(busy[2], 0.0);
  // Both sessions compute the same thing.
  EXPECT_EQ(*(*first)->output(0), *(*second)->output(0));
}

// Tessera's schedule puts a segment in one job, but starts another before the estimated
// time passes a fifth of the kernel's 500 ms job timeout (compile only: nothing runs).
TEST(RknpuScheduling, JobsSplitBeforeAFifthOfTheKernelTimeout) {
  // Four 3x3 convs 224x224x256 -> 256, int8 MACs: 29.6 G MACs, about 29 ms each.
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, 224, 224, 256};
  x.dtype = DType::u8;
  x.quant = {{0.02f}, {128}};
  x.role = Role::input;
  TensorId cur = g.add_tensor(x);
  g.inputs = {cur};
  std::mt19937 rng(9);
  for (int i = 0; i < 4; ++i) {
    TensorId w = add_const(g, "w" + std::to_string(i), {256, 3, 3, 256}, DType::u8, {{0.004f}, {128}},
                           random_codes(256 * 9 * 256, rng, 28, 227));  // within +-100: int8 MACs
    std::vector<uint8_t> bias(256 * 4, 0);
    TensorId b = add_const(g, "b" + std::to_string(i), {256}, DType::i32, {{0.02f * 0.004f}, {0}}, bias);
    auto y = g.add_op(OpKind::conv2d, {cur, w, b},
                      {{"stride_h", int64_t{1}}, {"stride_w", int64_t{1}}, {"pad_top", int64_t{1}}, {"pad_bottom", int64_t{1}},
                       {"pad_left", int64_t{1}}, {"pad_right", int64_t{1}}, {"activation", std::string("relu")}},
                      "conv" + std::to_string(i), DType::u8, QuantParams{{0.05f}, {0}});
    ASSERT_TRUE(y.ok()) << y.status().to_string();
    cur = *y;
  }
  g.outputs = {cur};
  Segment seg;
  seg.graph = &g;
  seg.nodes = {0, 1, 2, 3};
  auto t = rknpu::make_model_transport(rknpu::kAddressSpace);
  auto prog = rknpu::compile_segment(seg, t.get(), rknpu::SchedulePolicy::tessera);
  ASSERT_TRUE(prog.ok()) << prog.status().to_string();
  for (const auto& op : (*prog)->ops) ASSERT_FALSE(op.op.int16) << "the test means int8 MACs";
  // Each conv: 29 ms of MACs plus the overheads of its hundreds of tasks (the weights
  // stream in output-channel chunks), about 40 ms: two per job.
  std::printf("[rknpu] 4 convs: %s; tasks per op %zu\n", (*prog)->describe().c_str(), (*prog)->ops[0].tiling.tiles.size());
  ASSERT_EQ((*prog)->jobs.size(), 2u) << (*prog)->describe();
  EXPECT_EQ((*prog)->jobs[0].tasks.front().first, 0);
  EXPECT_EQ((*prog)->jobs[0].tasks.back().first, 1);
  EXPECT_EQ((*prog)->jobs[1].tasks.front().first, 2) << "jobs split between ops";
  EXPECT_EQ((*prog)->jobs[1].tasks.back().first, 3);
  auto mesa = rknpu::compile_segment(seg, t.get(), rknpu::SchedulePolicy::mesa);
  ASSERT_TRUE(mesa.ok()) << mesa.status().to_string();
  EXPECT_EQ((*mesa)->jobs.size(), 4u) << "Mesa: one job per op";
}

}  // namespace
}  // namespace tessera::rknpu_test
