// The non-virtual half of the device interface: argument checks, counters, error context.
#include "tessera/backend/device.h"

#include <algorithm>
#include <chrono>

namespace tessera {

namespace {
Status ctx(const Status& s, const std::string& device) {
  return s.ok() ? s : s.with_context("device '" + device + "'");
}
}  // namespace

std::optional<Format> Device::native_format(const Graph& g, TensorId id) const { return do_native_format(g, id); }

Support Device::supports(const Graph& g, const Node& n) const { return do_supports(g, n); }

std::vector<TensorId> Device::extra_reads(const Graph& g, int node) const {
  if (node < 0 || node >= static_cast<int>(g.nodes().size())) return {};
  return do_extra_reads(g, node);
}

std::vector<TensorId> Device::do_extra_reads(const Graph&, int) const { return {}; }

std::vector<TensorView> Device::views(const Graph& g, int node, const std::function<Format(TensorId)>& format_of) const {
  if (node < 0 || node >= static_cast<int>(g.nodes().size())) return {};
  return do_views(g, node, format_of);
}

std::vector<TensorView> Device::do_views(const Graph&, int, const std::function<Format(TensorId)>&) const { return {}; }

Result<int64_t> Device::allocation_bytes(const Format& f) const {
  auto b = do_allocation_bytes(f);
  if (!b.ok()) return ctx(b.status(), name());
  return b;
}

Result<int64_t> Device::do_allocation_bytes(const Format& f) const {
  TS_ASSIGN_OR_RETURN(int64_t bytes, f.byte_size());
  int64_t a = std::max<int64_t>(props_.alignment_bytes, 1);
  return (std::max<int64_t>(bytes, 1) + a - 1) / a * a;
}

Result<Allocation> Device::allocate(int64_t bytes, const std::string& what) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (bytes <= 0) return error(StatusCode::invalid_argument, "device '", name(), "': allocation of ", bytes, " bytes for ", what);
  if (bytes > props_.max_allocation_bytes)
    return error(StatusCode::out_of_memory, "device '", name(), "': ", what, " needs one allocation of ", bytes,
                 " bytes, above the maximum single allocation of ", props_.max_allocation_bytes, " bytes");
  if (counters_.allocated_bytes + bytes > props_.capacity_bytes)
    return error(StatusCode::out_of_memory, "device '", name(), "': ", what, " needs ", bytes, " bytes but only ",
                 props_.capacity_bytes - counters_.allocated_bytes, " of ", props_.capacity_bytes, " remain");
  auto a = do_allocate(bytes);
  if (!a.ok()) return ctx(a.status().with_context(what), name());
  counters_.allocated_bytes += a->bytes;
  counters_.allocations++;
  counters_.peak_allocated_bytes = std::max(counters_.peak_allocated_bytes, counters_.allocated_bytes);
  return a;
}

Status Device::free(Allocation a) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (!a.valid()) return Status::Ok();
  TS_RETURN_IF_ERROR(ctx(do_free(a), name()));
  counters_.allocated_bytes -= a.bytes;
  counters_.allocations--;
  return Status::Ok();
}

static Status check_access(const Device& d, const Placement& p, const Region& r, const Format& host) {
  TS_RETURN_IF_ERROR(r.validate(p.format.shape));
  if (!p.alloc.valid()) return error(StatusCode::invalid_argument, "no allocation");
  TS_ASSIGN_OR_RETURN(int64_t bytes, p.format.byte_size());
  if (p.offset < 0 || p.offset + bytes > p.alloc.bytes)
    return error(StatusCode::out_of_range, "tensor of ", bytes, " bytes at offset ", p.offset,
                 " does not fit its allocation of ", p.alloc.bytes, " bytes");
  // (a whole region's extent is the tensor's shape: compared without building one)
  if (r.is_whole() ? host.shape != p.format.shape : host.shape != r.extent(p.format.shape))
    return error(StatusCode::invalid_argument, "host data shape ", shape_str(host.shape), " does not match the region ",
                 shape_str(r.extent(p.format.shape)));
  int axis = r.partial_axis(p.format.shape);
  uint32_t need = axis == -1 ? kRegionWhole : axis >= 0 ? kRegionRows : kRegionBox;
  if (!(d.properties().regions & need) && !(need == kRegionRows && (d.properties().regions & kRegionBox)))
    return error(StatusCode::unsupported, "partial regions of this granularity are not accepted");
  return Status::Ok();
}

Status Device::write(const Placement& dst, const Region& region, const ConstHostView& src) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  TS_RETURN_IF_ERROR(ctx(check_access(*this, dst, region, src.format), name()));
  TS_RETURN_IF_ERROR(ctx(do_write(dst, region, src), name()));
  auto b = src.format.byte_size();
  counters_.bytes_written += b.ok() ? *b : 0;
  return Status::Ok();
}

Status Device::read(const Placement& src, const Region& region, const HostView& dst) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  TS_RETURN_IF_ERROR(ctx(check_access(*this, src, region, dst.format), name()));
  TS_RETURN_IF_ERROR(ctx(do_read(src, region, dst), name()));
  auto b = dst.format.byte_size();
  counters_.bytes_read += b.ok() ? *b : 0;
  return Status::Ok();
}

Result<std::unique_ptr<Program>> Device::compile(const Segment& seg) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (!seg.graph) return error(StatusCode::invalid_argument, "device '", name(), "': segment without graph");
  auto p = do_compile(seg);
  if (!p.ok()) return ctx(p.status(), name());
  return p;
}

Status Device::execute(Program& p, const Bindings& b, ExecuteStats* stats) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto t0 = std::chrono::steady_clock::now();
  counters_.last_nodes.clear();
  const double modelled_before = counters_.modelled_seconds;
  Status s = ctx(do_execute(p, b), name());
  counters_.host_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  counters_.executes++;
  if (stats) {
    stats->nodes = counters_.last_nodes;
    stats->modelled_seconds = counters_.modelled_seconds - modelled_before;
  }
  return s;
}

void Device::reset_counters() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  int64_t alloc = counters_.allocated_bytes, n = counters_.allocations;
  counters_ = Counters{};
  counters_.allocated_bytes = alloc;
  counters_.peak_allocated_bytes = alloc;
  counters_.allocations = n;
}

}  // namespace tessera
