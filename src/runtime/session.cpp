// Session: plan, compile and upload once; then bind inputs, run segments, read outputs.
#include "tessera/session.h"
#include "tessera/cpu_model.h"
#include "tessera/backend/device.h"
#include "tessera/backend/plan.h"
#include "tessera/backend/region.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

namespace tessera {

struct SharedResidency {
  std::vector<std::unique_ptr<Device>> owned;
  std::vector<Device*> devices;
  // Resident tensors (weights, state) by "name|device|format".
  std::map<std::string, Placement> resident;

  ~SharedResidency() {
    for (auto& [key, p] : resident) {
      for (auto* d : devices)
        if (key.find("|" + d->name() + "|") != std::string::npos) (void)d->free(p.alloc);
    }
  }
};

namespace {
std::string resident_key(const Tensor& t, const Device& d, const Format& f) {
  return t.name + "|" + d.name() + "|" + f.to_string();
}
}  // namespace

// Everything a session holds; Session forwards to it.
struct Session::Impl {
  ~Impl();
  Status prepare(const Session* share);
  Status model_board_cpu();
  std::vector<std::string> program_summaries() const;
  Status set_input(size_t index, const void* data, int64_t bytes);
  Status run();
  Result<std::vector<uint8_t>> output(size_t index) const;
  Status read_output(size_t index, void* dst, int64_t bytes) const;
  Result<std::vector<uint8_t>> read_tensor(TensorId id) const;
  Status read_state(const std::string& name, const Region& region, void* dst, int64_t bytes) const;
  const RunProfile& profile() const;

  SessionOptions opts_;
  Plan plan_;
  std::shared_ptr<SharedResidency> shared_;
  std::vector<std::unique_ptr<Program>> programs_;  // per segment (nullptr for transfers)
  struct Step {
    int device = -1;
    std::vector<int> nodes;
    bool transfer = false;
    Bindings bindings;  // placements of what the step's program reads and writes (not transfers)
  };
  std::vector<Step> steps_;
  std::vector<std::vector<Allocation>> arenas_;      // per device, per arena
  std::vector<Placement> placements_;               // per tensor of plan_.graph
  // The last run's measurements, kept as numbers; profile() turns them into a RunProfile.
  struct Timing {
    int node = -1;
    int device = -1;
    double host_seconds = 0;
    double modelled_seconds = -1;
  };
  std::vector<Timing> timings_;
  ExecuteStats stats_;  // reused by every execute of run()
  double host_seconds_ = 0, modelled_seconds_ = 0;
  int64_t transfer_bytes_ = 0;
  mutable RunProfile profile_;
  mutable bool profile_ready_ = false;
  std::vector<uint8_t> staging_;  // host bytes a transfer passes through; sized in prepare()
  // Host views (row-major formats) of the graph's inputs and outputs and of every
  // transfer's staging, made once: run(), set_input() and read_output() only set their
  // data pointers, so they copy no Format (whose shape is a vector) and allocate nothing.
  std::vector<ConstHostView> input_views_;
  mutable std::vector<HostView> output_views_;
  std::vector<int64_t> input_bytes_, output_bytes_;
  std::vector<HostView> transfer_in_;        // per node index; only transfers' are set
  std::vector<ConstHostView> transfer_out_;  // the same staging bytes, as written
  // The board cpu's modelled time per node (< 0: not modelled) and of the inputs' and
  // outputs' conversions, when a device names its board's cpu (DeviceProperties::board_cpu).
  std::string board_cpu_;
  std::vector<double> board_seconds_;
  double board_io_seconds_ = 0;
};

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

const Plan& Session::plan() const { return impl_->plan_; }
const Graph& Session::graph() const { return impl_->plan_.graph; }
const std::vector<Device*>& Session::devices() const { return impl_->plan_.devices; }
std::vector<std::string> Session::program_summaries() const { return impl_->program_summaries(); }
Status Session::set_input(size_t index, const void* data, int64_t bytes) { return impl_->set_input(index, data, bytes); }
Status Session::run() { return impl_->run(); }
Result<std::vector<uint8_t>> Session::output(size_t index) const { return impl_->output(index); }
Status Session::read_output(size_t index, void* dst, int64_t bytes) const { return impl_->read_output(index, dst, bytes); }
Result<std::vector<float>> Session::output_values(size_t index) const {
  TS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, output(index));
  const Tensor& t = graph().tensor(graph().outputs[index]);
  const int64_t n = t.elements();
  const int64_t width = t.dtype == DType::f32 || t.dtype == DType::i32 ? 4 : t.dtype == DType::i64 ? 8 : 1;
  if (n < 0 || static_cast<int64_t>(bytes.size()) < n * width)
    return error(StatusCode::internal, "output '", t.name, "' holds ", bytes.size(), " bytes for ", n, " values");
  std::vector<float> out(static_cast<size_t>(n));
  const float scale = t.quant.empty() ? 1.0f : t.quant.scale[0];
  const float zp = t.quant.empty() ? 0.0f : static_cast<float>(t.quant.zero_point_at(0));
  for (int64_t i = 0; i < n; ++i) {
    float v = 0;
    switch (t.dtype) {
      case DType::f32: std::memcpy(&v, &bytes[i * 4], 4); break;
      case DType::u8: v = scale * (static_cast<float>(bytes[i]) - zp); break;
      case DType::i8: v = scale * (static_cast<float>(static_cast<int8_t>(bytes[i])) - zp); break;
      case DType::i32: {
        int32_t x;
        std::memcpy(&x, &bytes[i * 4], 4);
        v = static_cast<float>(x);
        break;
      }
      case DType::i64: {
        int64_t x;
        std::memcpy(&x, &bytes[i * 8], 8);
        v = static_cast<float>(x);
        break;
      }
      default:
        return error(StatusCode::unsupported, "output '", t.name, "' has dtype ", dtype_name(t.dtype),
                     ", which output_values does not read");
    }
    out[static_cast<size_t>(i)] = v;
  }
  return out;
}
Result<std::vector<uint8_t>> Session::read_tensor(TensorId id) const { return impl_->read_tensor(id); }
Status Session::read_state(const std::string& name, const Region& region, void* dst, int64_t bytes) const {
  return impl_->read_state(name, region, dst, bytes);
}
const RunProfile& Session::profile() const { return impl_->profile(); }

Session::Impl::~Impl() {
  for (size_t d = 0; d < arenas_.size(); ++d)
    for (auto& a : arenas_[d]) (void)plan_.devices[d]->free(a);
}

Result<std::unique_ptr<Session>> Session::create(Graph g, const SessionOptions& opts, const Session* share) {
  std::unique_ptr<Session> session(new Session(std::make_unique<Impl>()));
  Impl* s = session->impl_.get();
  s->opts_ = opts;
  if (share) {
    s->shared_ = share->impl_->shared_;
  } else {
    s->shared_ = std::make_shared<SharedResidency>();
    TS_ASSIGN_OR_RETURN(auto dev, create_device(opts.device, opts.device_options));
    bool is_cpu = dev->name() == "cpu";
    s->shared_->devices.push_back(dev.get());
    s->shared_->owned.push_back(std::move(dev));
    if (!is_cpu) {
      DeviceOptions cpu_opts;
      if (auto it = opts.device_options.find("threads"); it != opts.device_options.end()) cpu_opts["threads"] = it->second;
      TS_ASSIGN_OR_RETURN(auto cpu, create_device("cpu", cpu_opts));
      s->shared_->devices.push_back(cpu.get());
      s->shared_->owned.push_back(std::move(cpu));
    }
  }
  TS_ASSIGN_OR_RETURN(s->plan_, plan_graph(std::move(g), s->shared_->devices, opts.plan));
  TS_RETURN_IF_ERROR(s->prepare(share));
  s->opts_.progress = nullptr;  // the caller's callback may not outlive create()
  return session;
}

Status Session::Impl::prepare(const Session* share) {
  const Graph& g = plan_.graph;
  // Arenas.
  arenas_.resize(plan_.devices.size());
  for (size_t d = 0; d < plan_.devices.size(); ++d) {
    for (size_t a = 0; a < plan_.memory[d].arena_bytes.size(); ++a) {
      TS_ASSIGN_OR_RETURN(Allocation al, plan_.devices[d]->allocate(plan_.memory[d].arena_bytes[a],
                                                                    "activation arena " + std::to_string(a)));
      arenas_[d].push_back(al);
    }
  }
  // Progress (SessionOptions::progress) counts the bytes of the weights uploaded here and,
  // for each program compiled, the bytes of the constants it packs plus a nominal 64 KiB.
  const ProgressPart progress(&opts_.progress, 0.0, 1.0);
  constexpr double kCompileUnit = 65536;
  double total = 0, done = 0;
  auto step_units = [&](const std::vector<int>& nodes) {
    double u = kCompileUnit;
    for (int i : nodes)
      for (TensorId id : g.nodes()[i].inputs)
        if (id != kNoTensor && plan_.tensors[id].in_program && g.tensor(id).role == Role::weight)
          u += static_cast<double>(plan_.tensors[id].bytes);
    return u;
  };
  if (progress.active()) {
    for (const Tensor& t : g.tensors()) {
      const TensorPlacement& tp = plan_.tensors[t.id];
      if (tp.device < 0 || tp.alias != kNoTensor || tp.in_program || !tp.resident || t.role != Role::weight) continue;
      if (!shared_->resident.count(resident_key(t, *plan_.devices[tp.device], tp.format)))
        total += static_cast<double>(tp.bytes);
    }
  }
  TS_RETURN_IF_ERROR(progress.report(0.0, "session"));
  // Placements; resident tensors are allocated (or shared) and filled.
  placements_.resize(g.tensors().size());
  for (const Tensor& t : g.tensors()) {
    const TensorPlacement& tp = plan_.tensors[t.id];
    if (tp.device < 0 || tp.alias != kNoTensor || tp.in_program) continue;
    Device* dev = plan_.devices[tp.device];
    Placement pl;
    pl.format = tp.format;
    if (tp.resident) {
      std::string key = resident_key(t, *dev, tp.format);
      auto it = shared_->resident.find(key);
      if (it != shared_->resident.end()) {
        placements_[t.id] = it->second;
        continue;
      }
      if (tp.bytes == 0) continue;
      TS_ASSIGN_OR_RETURN(pl.alloc, dev->allocate(tp.bytes, std::string(role_name(t.role)) + " '" + t.name + "'"));
      if (t.role == Role::weight) {
        TS_RETURN_IF_ERROR(dev->write(pl, Region::whole(), ConstHostView{t.data->data, t.host_format()})
                               .with_context("uploading weight '" + t.name + "'"));
        done += static_cast<double>(tp.bytes);
        TS_RETURN_IF_ERROR(progress.report(total > 0 ? done / total : 0.0, "uploading weight '" + t.name + "'"));
      } else {
        TS_ASSIGN_OR_RETURN(int64_t hb, t.host_bytes());
        std::vector<uint8_t> zeros(hb, 0);
        // State starts at real 0: for a quantized 8-bit state that is its zero point's code
        // (TFLite resets int8 variable tensors to their zero point, e.g. an LSTM's hidden state).
        if ((t.dtype == DType::i8 || t.dtype == DType::u8) && t.quant.scale.size() == 1)
          std::fill(zeros.begin(), zeros.end(), static_cast<uint8_t>(t.quant.zero_point_at(0)));
        TS_RETURN_IF_ERROR(dev->write(pl, Region::whole(), ConstHostView{zeros.data(), t.host_format()})
                               .with_context("clearing state '" + t.name + "'"));
      }
      shared_->resident[key] = pl;
      placements_[t.id] = pl;
    } else if (tp.arena >= 0) {
      pl.alloc = arenas_[tp.device][tp.arena];
      pl.offset = tp.offset;
      placements_[t.id] = pl;
    }
  }
  for (const Tensor& t : g.tensors())
    if (plan_.tensors[t.id].alias != kNoTensor) {
      placements_[t.id] = placements_[plan_.tensors[t.id].alias];
      placements_[t.id].offset += plan_.tensors[t.id].alias_offset;  // a device view: its bytes inside the alias's
      placements_[t.id].format = plan_.tensors[t.id].format;  // a view keeps its own shape
    }
  // Steps: runs of consecutive nodes on one device; transfers on their own.
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    bool tr = g.nodes()[i].op == OpKind::transfer;
    int dev = plan_.nodes[i].device;
    if (steps_.empty() || steps_.back().transfer != tr || steps_.back().device != dev) steps_.push_back({dev, {}, tr});
    steps_.back().nodes.push_back(static_cast<int>(i));
  }
  if (progress.active())
    for (const Step& st : steps_)
      if (!st.transfer) total += step_units(st.nodes);
  for (const Step& st : steps_) {
    if (st.transfer) {
      // Transfers stage through one host buffer, sized here so that run() allocates nothing.
      for (int i : st.nodes) {
        TS_ASSIGN_OR_RETURN(int64_t hb, g.tensor(g.nodes()[i].inputs[0]).host_bytes());
        if (static_cast<size_t>(hb) > staging_.size()) staging_.resize(static_cast<size_t>(hb));
      }
      programs_.push_back(nullptr);
      continue;
    }
    Segment seg;
    seg.graph = &plan_.graph;
    seg.nodes = st.nodes;
    for (int i : st.nodes) {
      for (TensorId id : g.nodes()[i].inputs)
        if (id != kNoTensor) seg.formats[id] = plan_.tensors[id].format;
      for (TensorId id : g.nodes()[i].outputs) seg.formats[id] = plan_.tensors[id].format;
    }
    for (const auto& [id, f] : seg.formats)
      if (plan_.tensors[id].alias != kNoTensor) seg.views[id] = {plan_.tensors[id].alias, plan_.tensors[id].alias_offset};
    TS_ASSIGN_OR_RETURN(auto prog, plan_.devices[st.device]->compile(seg));
    programs_.push_back(std::move(prog));
    if (progress.active()) {
      done += step_units(st.nodes);
      TS_RETURN_IF_ERROR(progress.report(done / total, "compiling for " + plan_.devices[st.device]->name()));
    }
  }
  // Each step's bindings and a profile slot per node are fixed here, so that run() only
  // executes: no maps built, no strings made, nothing allocated.
  size_t node_slots = 0;
  for (Step& st : steps_) {
    node_slots += st.nodes.size();
    if (st.transfer) continue;
    for (int i : st.nodes) {
      for (TensorId id : g.nodes()[i].inputs)
        if (id != kNoTensor && !plan_.tensors[id].in_program) st.bindings.placements[id] = placements_[id];
      for (TensorId id : g.nodes()[i].outputs) st.bindings.placements[id] = placements_[id];
    }
  }
  for (TensorId id : g.inputs) {
    input_views_.push_back(ConstHostView{nullptr, g.tensor(id).host_format()});
    TS_ASSIGN_OR_RETURN(int64_t hb, g.tensor(id).host_bytes());
    input_bytes_.push_back(hb);
  }
  for (TensorId id : g.outputs) {
    output_views_.push_back(HostView{nullptr, g.tensor(id).host_format()});
    TS_ASSIGN_OR_RETURN(int64_t hb, g.tensor(id).host_bytes());
    output_bytes_.push_back(hb);
  }
  transfer_in_.resize(g.nodes().size());
  transfer_out_.resize(g.nodes().size());
  for (const Step& st : steps_)
    if (st.transfer)
      for (int i : st.nodes) {
        const Format hf = g.tensor(g.nodes()[i].inputs[0]).host_format();
        transfer_in_[i] = HostView{staging_.data(), hf};
        transfer_out_[i] = ConstHostView{staging_.data(), hf};
      }
  timings_.reserve(node_slots);
  stats_.nodes.reserve(node_slots);
  (void)share;
  TS_RETURN_IF_ERROR(model_board_cpu());
  return progress.report(1.0, "session");
}

// The board cpu's share, modelled once per plan: the nodes on devices other than the one
// that names the board, each transfer (device format -> host layout -> the other format),
// and the conversions set_input and read_output make.
Status Session::Impl::model_board_cpu() {
  const Graph& g = plan_.graph;
  board_seconds_.assign(g.nodes().size(), -1);
  int board_dev = -1;
  for (size_t d = 0; d < plan_.devices.size() && board_dev < 0; ++d)
    if (!plan_.devices[d]->properties().board_cpu.empty()) board_dev = static_cast<int>(d);
  if (board_dev < 0) return Status::Ok();
  const std::string& name = plan_.devices[board_dev]->properties().board_cpu;
  const CpuCoreModel* m = find_cpu_core_model(name);
  if (!m)
    return error(StatusCode::invalid_argument, "device '", plan_.devices[board_dev]->name(), "' names board cpu '", name,
                 "', which has no cpu core model (tessera/cpu_model.h)");
  board_cpu_ = m->name;
  const std::vector<CpuNodeCost> costs = plan_cpu_costs(*m, plan_, board_dev);
  for (size_t i = 0; i < costs.size(); ++i) board_seconds_[i] = costs[i].seconds;
  board_io_seconds_ = 0;
  for (const std::vector<TensorId>* ids : {&g.inputs, &g.outputs})
    for (TensorId id : *ids) {
      const TensorPlacement& tp = plan_.tensors[id];
      if (tp.device < 0 || !placements_[id].alloc.valid()) continue;
      const Format host = g.tensor(id).host_format();
      board_io_seconds_ += ids == &g.inputs ? cpu_conversion_cost(*m, host, tp.format).seconds
                                            : cpu_conversion_cost(*m, tp.format, host).seconds;
    }
  return Status::Ok();
}

std::vector<std::string> Session::Impl::program_summaries() const {
  std::vector<std::string> lines;
  for (size_t s = 0; s < steps_.size() && s < programs_.size(); ++s) {
    if (!programs_[s]) continue;
    const std::string d = programs_[s]->describe();
    if (d.empty()) continue;
    const Step& st = steps_[s];
    std::string line = plan_.devices[st.device]->name() + " nodes #" + std::to_string(st.nodes.front()) + "..#" +
                       std::to_string(st.nodes.back()) + ": " + d;
    if (const int64_t held = programs_[s]->device_bytes(); held > 0)
      line += held >= (int64_t{1} << 20) ? fmt::format("; holds {:.2f} MiB of packed constants", held / 1048576.0)
                                         : fmt::format("; holds {:.1f} KiB of packed constants", held / 1024.0);
    lines.push_back(line);
  }
  return lines;
}

Status Session::Impl::set_input(size_t index, const void* data, int64_t bytes) {
  const Graph& g = plan_.graph;
  if (index >= g.inputs.size())
    return error(StatusCode::out_of_range, "input ", index, " does not exist (the model has ", g.inputs.size(), ")");
  const Tensor& t = g.tensor(g.inputs[index]);
  const int64_t want = input_bytes_[index];
  if (bytes != want)
    return error(StatusCode::invalid_argument, "input ", index, " '", t.name, "' ", dtype_name(t.dtype),
                 shape_str(t.shape), " takes ", want, " bytes, got ", bytes);
  const TensorPlacement& tp = plan_.tensors[t.id];
  if (!placements_[t.id].alloc.valid()) return Status::Ok();  // unused input
  input_views_[index].data = data;
  Status s = plan_.devices[tp.device]->write(placements_[t.id], Region::whole(), input_views_[index]);
  return s.ok() ? s : s.with_context("input '" + t.name + "'");
}

Status Session::Impl::read_output(size_t index, void* dst, int64_t bytes) const {
  const Graph& g = plan_.graph;
  if (index >= g.outputs.size())
    return error(StatusCode::out_of_range, "output ", index, " does not exist (the model has ", g.outputs.size(), ")");
  const TensorId id = g.outputs[index];
  if (bytes != output_bytes_[index])
    return error(StatusCode::invalid_argument, "output ", index, " '", g.tensor(id).name, "' has ", output_bytes_[index],
                 " bytes, got a buffer of ", bytes);
  const TensorPlacement& tp = plan_.tensors[id];
  if (tp.device < 0 || !placements_[id].alloc.valid())
    return error(StatusCode::not_found, "output '", g.tensor(id).name, "' has no storage in this plan");
  output_views_[index].data = dst;
  Status s = plan_.devices[tp.device]->read(placements_[id], Region::whole(), output_views_[index]);
  return s.ok() ? s : s.with_context("reading '" + g.tensor(id).name + "'");
}

Result<std::vector<uint8_t>> Session::Impl::read_tensor(TensorId id) const {
  const Tensor& t = plan_.graph.tensor(id);
  TS_ASSIGN_OR_RETURN(int64_t hb, t.host_bytes());
  std::vector<uint8_t> out(hb);
  const TensorPlacement& tp = plan_.tensors[id];
  if (tp.in_place) {  // read in place by its device: the graph's bytes are the tensor
    std::memcpy(out.data(), t.data->data, static_cast<size_t>(hb));
    return out;
  }
  if (tp.device < 0 || !placements_[id].alloc.valid())
    return error(StatusCode::not_found, "tensor '", t.name, "' has no storage in this plan");
  TS_RETURN_IF_ERROR(plan_.devices[tp.device]->read(placements_[id], Region::whole(), HostView{out.data(), t.host_format()})
                         .with_context("reading '" + t.name + "'"));
  return out;
}

Result<std::vector<uint8_t>> Session::Impl::output(size_t index) const {
  if (index >= plan_.graph.outputs.size())
    return error(StatusCode::out_of_range, "output ", index, " does not exist (the model has ",
                 plan_.graph.outputs.size(), ")");
  return read_tensor(plan_.graph.outputs[index]);
}

Status Session::Impl::read_state(const std::string& name, const Region& region, void* dst, int64_t bytes) const {
  auto id = plan_.graph.find_tensor(name);
  if (!id) return error(StatusCode::not_found, "no state tensor '", name, "'");
  const Tensor& t = plan_.graph.tensor(*id);
  Format host = Format::row_major(t.dtype, region.extent(t.shape));
  TS_ASSIGN_OR_RETURN(int64_t want, host.byte_size());
  if (want != bytes) return error(StatusCode::invalid_argument, "state region needs ", want, " bytes, got ", bytes);
  return plan_.devices[plan_.tensors[*id].device]->read(placements_[*id], region, HostView{dst, host});
}

Status Session::Impl::run() {
  const Graph& g = plan_.graph;
  timings_.clear();
  modelled_seconds_ = 0;
  transfer_bytes_ = 0;
  profile_ready_ = false;
  auto t_run = std::chrono::steady_clock::now();
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    if (st.transfer) {
      for (int i : st.nodes) {
        const Node& n = g.nodes()[i];
        auto t0 = std::chrono::steady_clock::now();
        TensorId src = n.inputs[0], dst = n.outputs[0];
        const Tensor& t = g.tensor(src);
        TS_ASSIGN_OR_RETURN(int64_t hb, t.host_bytes());
        Device* sd = plan_.devices[plan_.tensors[src].device];
        Device* dd = plan_.devices[plan_.tensors[dst].device];
        if (Status rs = sd->read(placements_[src], Region::whole(), transfer_in_[i]); !rs.ok())
          return rs.with_context("[transfer] " + n.name);
        if (Status ws = dd->write(placements_[dst], Region::whole(), transfer_out_[i]); !ws.ok())
          return ws.with_context("[transfer] " + n.name);
        transfer_bytes_ += hb;
        double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        timings_.push_back({i, plan_.tensors[dst].device, dt, -1});
      }
      continue;
    }
    Device* dev = plan_.devices[st.device];
    TS_RETURN_IF_ERROR(dev->execute(*programs_[s], st.bindings, &stats_));
    modelled_seconds_ += stats_.modelled_seconds;
    for (const NodeTime& nt : stats_.nodes) timings_.push_back({nt.node, st.device, nt.host_seconds, nt.modelled_seconds});
  }
  host_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_run).count();
  return Status::Ok();
}

const RunProfile& Session::Impl::profile() const {
  if (!profile_ready_) {
    profile_ = RunProfile{};
    for (const Timing& t : timings_)
      profile_.nodes.push_back({plan_.graph.nodes()[t.node].label(), plan_.devices[t.device]->name(), t.host_seconds,
                                t.modelled_seconds, board_seconds_[t.node]});
    profile_.host_seconds = host_seconds_;
    profile_.modelled_seconds = modelled_seconds_;
    profile_.transfer_bytes = transfer_bytes_;
    profile_.board_cpu = board_cpu_;
    profile_.board_io_seconds = board_io_seconds_;
    profile_ready_ = true;
  }
  return profile_;
}

}  // namespace tessera
