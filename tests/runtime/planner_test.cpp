// Planner tests: memory plans on devices with and without sub-allocation (peak figures
// computed by hand), maximum-allocation splits, out-of-memory errors, and bad graphs.
#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "tessera/backend/plan.h"
#include "tessera/session.h"

namespace tessera {
namespace {

// A device for planning only: properties set by the test, every tensor in its host
// format, and a set of ops it accepts. plan_graph never allocates or runs, so the memory
// hooks only record what they are asked.
class PlanOnlyDevice : public Device {
 public:
  PlanOnlyDevice(DeviceProperties p, std::set<OpKind> ops) : Device(std::move(p)), ops_(std::move(ops)) {}

 protected:
  std::optional<Format> do_native_format(const Graph& g, TensorId id) const override { return g.tensor(id).host_format(); }
  Support do_supports(const Graph& g, const Node& n) const override {
    if (ops_.count(n.op)) return Support::yes(1e-9);
    return Support::no(std::string("the test device has no ") + op_name(n.op));
  }
  Result<Allocation> do_allocate(int64_t bytes) override { return Allocation{++next_, bytes}; }
  Status do_free(Allocation) override { return Status::Ok(); }
  Status do_write(const Placement&, const Region&, const ConstHostView&) override { return Status::Ok(); }
  Status do_read(const Placement&, const Region&, const HostView&) override { return Status::Ok(); }
  Result<std::unique_ptr<Program>> do_compile(const Segment&) override { return std::make_unique<Program>(); }
  Status do_execute(Program&, const Bindings&) override { return Status::Ok(); }

 private:
  std::set<OpKind> ops_;
  uint64_t next_ = 0;
};

constexpr int64_t kAlign = 16;  // the test device's alignment

DeviceProperties props(bool sub_allocation, int64_t max_alloc, int64_t capacity) {
  DeviceProperties p;
  p.name = "plan_only";
  p.capacity_bytes = capacity;
  p.max_allocation_bytes = max_alloc;
  p.alignment_bytes = kAlign;
  p.sub_allocation = sub_allocation;
  return p;
}

const std::set<OpKind> kAllOps = {OpKind::pad, OpKind::slice, OpKind::relu, OpKind::add};

// x [1,10] -pad-> h1 [1,20] -pad-> h2 [1,30] -slice-> y [1,5] (output), all f32.
// Bytes 40, 80, 120, 20; aligned to 16: 48, 80, 128, 32.
// Live ranges (node indices): x [-1, 0], h1 [0, 1], h2 [1, 2], y [2, end].
Graph pad_pad_slice() {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, 10};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  g.inputs = {xi};
  TensorId h1 = *g.add_op(OpKind::pad, {xi}, {{"paddings", std::vector<int64_t>{0, 0, 0, 10}}}, "h1");
  TensorId h2 = *g.add_op(OpKind::pad, {h1}, {{"paddings", std::vector<int64_t>{0, 0, 0, 10}}}, "h2");
  TensorId y = *g.add_op(OpKind::slice, {h2}, {{"begin", std::vector<int64_t>{0, 0}}, {"size", std::vector<int64_t>{1, 5}}}, "y");
  g.tensor(y).role = Role::output;
  g.outputs = {y};
  return g;
}

struct Planned {
  std::unique_ptr<Device> cpu;
  std::unique_ptr<PlanOnlyDevice> dev;
  Result<Plan> plan = Status(StatusCode::internal, "not planned");
};

Planned plan_on(Graph g, DeviceProperties p, PlanOptions opts = {}, std::set<OpKind> ops = kAllOps) {
  Planned r;
  r.cpu = std::move(create_device("cpu")).value();
  r.dev = std::make_unique<PlanOnlyDevice>(std::move(p), std::move(ops));
  r.plan = plan_graph(std::move(g), {r.dev.get(), r.cpu.get()}, opts);
  return r;
}

const TensorPlacement& placement(const Plan& p, const std::string& name) {
  return p.tensors.at(*p.graph.find_tensor(name));
}

TEST(PlanMemory, NoSubAllocationGivesEveryTensorItsOwnAllocation) {
  auto r = plan_on(pad_pad_slice(), props(false, 1 << 20, 1 << 20));
  ASSERT_TRUE(r.plan.ok()) << r.plan.status().to_string();
  const DeviceMemoryPlan& m = r.plan->memory[0];
  // Four sizes that differ: nothing can be reused, four allocations of 48 + 80 + 128 + 32.
  EXPECT_EQ(m.allocations, 4);
  EXPECT_EQ(m.arena_bytes, (std::vector<int64_t>{48, 80, 128, 32}));
  EXPECT_EQ(m.activation_peak, 288);
  EXPECT_EQ(m.peak_bytes(), 288);
  EXPECT_EQ(m.logical_activation_bytes, 40 + 80 + 120 + 20);
  std::set<int> arenas;
  for (const char* name : {"x", "h1", "h2", "y"}) {
    const TensorPlacement& tp = placement(*r.plan, name);
    EXPECT_EQ(tp.offset, 0) << name;
    arenas.insert(tp.arena);
  }
  EXPECT_EQ(arenas.size(), 4u);
  EXPECT_EQ(r.plan->memory[1].allocations, 0) << "nothing falls back to the cpu";
}

// x -> relu -> relu -> relu (output): four tensors of 48 bytes. Without sub-allocation a
// dead tensor's allocation passes to a later tensor of the same size:
// x [-1,0] and r2 [1,2] share one, r1 [0,1] and r3 [2,end] the other.
TEST(PlanMemory, NoSubAllocationReusesDeadAllocationsOfTheSameSize) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, 10};
  x.role = Role::input;
  TensorId t = g.add_tensor(x);
  g.inputs = {t};
  for (const char* name : {"r1", "r2", "r3"}) t = *g.add_op(OpKind::relu, {t}, {}, name);
  g.tensor(t).role = Role::output;
  g.outputs = {t};
  auto r = plan_on(std::move(g), props(false, 1 << 20, 1 << 20));
  ASSERT_TRUE(r.plan.ok()) << r.plan.status().to_string();
  const DeviceMemoryPlan& m = r.plan->memory[0];
  EXPECT_EQ(m.allocations, 2);
  EXPECT_EQ(m.activation_peak, 96);
  EXPECT_EQ(placement(*r.plan, "x").arena, placement(*r.plan, "r2").arena);
  EXPECT_EQ(placement(*r.plan, "r1").arena, placement(*r.plan, "r3").arena);
  EXPECT_NE(placement(*r.plan, "x").arena, placement(*r.plan, "r1").arena);
}

// With sub-allocation, one arena (largest first): h2 @0 [0,128); h1 overlaps h2 -> @128
// [128,208); x is dead before h2 is born -> @0; y overlaps h2 only -> @128. Arena 208 bytes.
TEST(PlanMemory, SubAllocationPacksOneArenaByLiveness) {
  auto r = plan_on(pad_pad_slice(), props(true, 1 << 20, 1 << 20));
  ASSERT_TRUE(r.plan.ok()) << r.plan.status().to_string();
  const DeviceMemoryPlan& m = r.plan->memory[0];
  EXPECT_EQ(m.arena_bytes, (std::vector<int64_t>{208}));
  EXPECT_EQ(m.allocations, 1);
  EXPECT_EQ(m.peak_bytes(), 208);
  EXPECT_EQ(placement(*r.plan, "h2").offset, 0);
  EXPECT_EQ(placement(*r.plan, "h1").offset, 128);
  EXPECT_EQ(placement(*r.plan, "x").offset, 0);
  EXPECT_EQ(placement(*r.plan, "y").offset, 128);
}

// A 200-byte maximum allocation splits the arena: h1 no longer fits beside h2 (128 + 80 >
// 200) and opens arena 1; x and y still fit in arena 0, which ends at y (128 + 32 = 160).
TEST(PlanMemory, MaximumAllocationSplitsArenas) {
  auto r = plan_on(pad_pad_slice(), props(true, 200, 1 << 20));
  ASSERT_TRUE(r.plan.ok()) << r.plan.status().to_string();
  const DeviceMemoryPlan& m = r.plan->memory[0];
  EXPECT_EQ(m.arena_bytes, (std::vector<int64_t>{160, 80}));
  EXPECT_EQ(m.allocations, 2);
  EXPECT_EQ(m.activation_peak, 240);
  EXPECT_EQ(placement(*r.plan, "h1").arena, 1);
  EXPECT_EQ(placement(*r.plan, "y").arena, 0);
  for (int64_t b : m.arena_bytes) EXPECT_LE(b, 200);
}

TEST(PlanMemory, WeightsAreResidentAndCounted) {
  Graph g = pad_pad_slice();
  Tensor w;
  w.name = "w";
  w.shape = {5};
  w.role = Role::weight;
  w.data = ConstData::from_vector(std::vector<uint8_t>(20, 1));
  TensorId wi = g.add_tensor(w);
  TensorId z = *g.add_op(OpKind::add, {g.outputs[0], wi}, {}, "z");
  g.tensor(g.outputs[0]).role = Role::activation;
  g.tensor(z).role = Role::output;
  g.outputs = {z};
  auto r = plan_on(std::move(g), props(false, 1 << 20, 1 << 20));
  ASSERT_TRUE(r.plan.ok()) << r.plan.status().to_string();
  const DeviceMemoryPlan& m = r.plan->memory[0];
  EXPECT_EQ(m.weight_bytes, 32);  // 20 bytes aligned to 16
  EXPECT_TRUE(placement(*r.plan, "w").resident);
  // x 48, h1 80, h2 128, y 32 [2,3], z 32 [3,end]: z cannot take y's allocation (y is read
  // by z's own node), nor x's (48 bytes): five allocations plus the weight.
  EXPECT_EQ(m.activation_peak, 48 + 80 + 128 + 32 + 32);
  EXPECT_EQ(m.allocations, 6);
  EXPECT_EQ(m.peak_bytes(), 32 + 320);
}

TEST(PlanMemory, TensorAboveMaximumAllocationIsOutOfMemory) {
  auto r = plan_on(pad_pad_slice(), props(true, 100, 1 << 20));
  ASSERT_FALSE(r.plan.ok());
  const Status& s = r.plan.status();
  EXPECT_EQ(s.code(), StatusCode::out_of_memory);
  EXPECT_NE(s.message().find("'h2'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("plan_only"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("maximum single allocation of 100"), std::string::npos) << s.message();
}

TEST(PlanMemory, PlanAboveCapacityIsOutOfMemory) {
  auto r = plan_on(pad_pad_slice(), props(true, 1 << 20, 200));
  ASSERT_FALSE(r.plan.ok());
  const Status& s = r.plan.status();
  EXPECT_EQ(s.code(), StatusCode::out_of_memory);
  EXPECT_NE(s.message().find("'plan_only' needs 208 bytes"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("capacity of 200"), std::string::npos) << s.message();
}

// ---- bad graphs ----

TEST(BadGraph, UnknownOpIdIsRejected) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {2};
  x.role = Role::input;
  TensorId xi = g.add_tensor(x);
  Node n;
  n.op = static_cast<OpKind>(kNumOps + 7);
  n.inputs = {xi};
  n.outputs = {g.add_tensor(Tensor{})};
  Status s = g.add_node(n);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_NE(s.message().find("unknown op"), std::string::npos) << s.message();
  auto r = g.add_op(static_cast<OpKind>(kNumOps), {xi});
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown op"), std::string::npos) << r.status().message();
}

TEST(BadGraph, MismatchedShapesAreRejectedByAddOp) {
  Graph g;
  Tensor a, b;
  a.name = "a";
  a.shape = {2, 3};
  b.name = "b";
  b.shape = {4};
  a.role = b.role = Role::input;
  TensorId ai = g.add_tensor(a), bi = g.add_tensor(b);
  auto r = g.add_op(OpKind::add, {ai, bi});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(r.status().message().find("[add]"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("'a'"), std::string::npos) << r.status().message();
  EXPECT_EQ(g.nodes().size(), 0u);
  EXPECT_EQ(g.tensors().size(), 2u) << "a failed add_op leaves no tensor behind";
}

TEST(BadGraph, MismatchedDtypesAreRejectedByAddOp) {
  Graph g;
  Tensor a, b;
  a.name = "a";
  a.shape = {3};
  b.name = "b";
  b.shape = {3};
  b.dtype = DType::i32;
  TensorId ai = g.add_tensor(a), bi = g.add_tensor(b);
  auto r = g.add_op(OpKind::mul, {ai, bi});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("[mul]"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("i32"), std::string::npos) << r.status().message();
}

TEST(BadGraph, InputIdOutOfRangeIsRejected) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {2};
  TensorId xi = g.add_tensor(x);
  Node n;
  n.op = OpKind::add;
  n.name = "bad add";
  n.inputs = {xi, 57};
  n.outputs = {g.add_tensor(Tensor{})};
  Status s = g.add_node(n);
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_NE(s.message().find("tensor 57 which does not exist"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bad add"), std::string::npos) << s.message();
  n.inputs = {xi, -3};
  EXPECT_FALSE(g.add_node(n).ok());
}

TEST(BadGraph, UnsupportedOpWithoutFallbackNamesOpAndDevice) {
  PlanOptions opts;
  opts.allow_fallback = false;
  auto r = plan_on(pad_pad_slice(), props(true, 1 << 20, 1 << 20), opts, {OpKind::pad});
  ASSERT_FALSE(r.plan.ok());
  const Status& s = r.plan.status();
  EXPECT_EQ(s.code(), StatusCode::unsupported);
  EXPECT_NE(s.message().find("[slice]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'plan_only' cannot run it"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("the test device has no slice"), std::string::npos) << s.message();
}

TEST(BadGraph, UnsupportedOpFallsBackToTheCpuWhenAllowed) {
  auto r = plan_on(pad_pad_slice(), props(true, 1 << 20, 1 << 20), {}, {OpKind::pad});
  ASSERT_TRUE(r.plan.ok()) << r.plan.status().to_string();
  int on_cpu = 0, transfers = 0;
  for (size_t i = 0; i < r.plan->graph.nodes().size(); ++i) {
    if (r.plan->graph.nodes()[i].op == OpKind::transfer) ++transfers;
    else if (r.plan->devices[r.plan->nodes[i].device]->name() == "cpu") {
      ++on_cpu;
      EXPECT_EQ(r.plan->graph.nodes()[i].op, OpKind::slice);
      EXPECT_NE(r.plan->nodes[i].note.find("fallback"), std::string::npos);
    }
  }
  EXPECT_EQ(on_cpu, 1);
  EXPECT_EQ(transfers, 1) << "h2 moves from the test device to the cpu";
  EXPECT_EQ(r.plan->transfers, 1);
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// The group pass (src/passes/group.cpp): nodes in an order that stays on one device while
// the data dependencies allow. Listed as dev, cpu, dev, cpu, dev, dev (slices run on the
// cpu), they run as cpu, cpu, dev, dev, dev, dev: one device switch instead of four, every
// node after the producers of its inputs. a and c feed only the test device, which runs
// again later (e waits for the cpu's d), so they wait for that run instead of making one of
// their own; the cpu's b and d, which the test device waits for, go first.
TEST(GroupPass, NodesStayOnOneDeviceWhileTheDependenciesAllow) {
  Graph g;
  Tensor x;
  x.name = "x";
  x.shape = {1, 10};
  x.role = Role::input;
  const TensorId xi = g.add_tensor(x);
  g.inputs = {xi};
  const AttrMap half = {{"begin", std::vector<int64_t>{0, 0}}, {"size", std::vector<int64_t>{1, 5}}};
  const TensorId a = *g.add_op(OpKind::relu, {xi}, {}, "a");
  const TensorId b = *g.add_op(OpKind::slice, {xi}, half, "b");
  const TensorId c = *g.add_op(OpKind::relu, {a}, {}, "c");
  const TensorId d = *g.add_op(OpKind::slice, {b}, half, "d");
  const TensorId e = *g.add_op(OpKind::pad, {d}, {{"paddings", std::vector<int64_t>{0, 0, 0, 5}}}, "e");
  const TensorId y = *g.add_op(OpKind::add, {c, e}, {}, "y");
  g.tensor(y).role = Role::output;
  g.outputs = {y};
  auto r = plan_on(std::move(g), props(true, 1 << 20, 1 << 20), {}, {OpKind::relu, OpKind::add, OpKind::pad});
  ASSERT_TRUE(r.plan.ok()) << r.plan.status().to_string();
  const Plan& p = *r.plan;
  std::vector<std::string> order, devices;
  std::set<TensorId> made = {p.graph.inputs[0]};
  for (size_t i = 0; i < p.graph.nodes().size(); ++i) {
    const Node& n = p.graph.nodes()[i];
    for (TensorId in : n.inputs) {
      if (in == kNoTensor || p.graph.tensor(in).data) continue;
      EXPECT_TRUE(made.count(in)) << n.label() << " before its input";
    }
    for (TensorId o : n.outputs) made.insert(o);
    if (n.op == OpKind::transfer) continue;
    order.push_back(p.graph.tensor(n.outputs[0]).name);
    devices.push_back(p.devices[p.nodes[i].device]->name());
  }
  EXPECT_EQ(order, (std::vector<std::string>{"b", "d", "a", "c", "e", "y"}));
  EXPECT_EQ(devices, (std::vector<std::string>{"cpu", "cpu", "plan_only", "plan_only", "plan_only", "plan_only"}));
  EXPECT_EQ(p.transfers, 2) << "x to the cpu's slices, d back to the test device";
}

// On one device the order is the file's.
TEST(GroupPass, OneDeviceKeepsTheOrder) {
  auto r = plan_on(pad_pad_slice(), props(true, 1 << 20, 1 << 20));
  ASSERT_TRUE(r.plan.ok()) << r.plan.status().to_string();
  std::vector<std::string> order;
  for (const Node& n : r.plan->graph.nodes()) order.push_back(r.plan->graph.tensor(n.outputs[0]).name);
  EXPECT_EQ(order, (std::vector<std::string>{"h1", "h2", "y"}));
}

}  // namespace
}  // namespace tessera
