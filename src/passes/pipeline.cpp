// The planner pipeline: the passes in order. TESSERA_DUMP=<pass> (or "all") prints the
// graph with placements and formats after that pass.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "passes/passes.h"

namespace tessera {

namespace {
using PassFn = Status (*)(passes::PassContext&);
struct PassEntry {
  const char* name;
  PassFn fn;
};
constexpr PassEntry kPipeline[] = {
    {"canonicalize", passes::canonicalize},
    {"fuse", passes::fuse},
    {"partition", passes::partition},
    {"group", passes::group},
    {"formats", passes::choose_formats},
    {"transfers", passes::insert_transfers},
    {"memory", passes::plan_memory},
};

void maybe_dump(const char* pass, const Plan& plan) {
  const char* want = std::getenv("TESSERA_DUMP");
  if (!want || (std::strcmp(want, pass) != 0 && std::strcmp(want, "all") != 0)) return;
  std::fprintf(stderr, "=== TESSERA_DUMP after pass '%s' ===\n%s", pass, plan.graph.dump().c_str());
  if (!plan.nodes.empty() || !plan.tensors.empty()) std::fprintf(stderr, "%s", plan.report(true).c_str());
}
}  // namespace

Result<Plan> plan_graph(Graph g, const std::vector<Device*>& devices, const PlanOptions& opts) {
  if (devices.empty()) return error(StatusCode::invalid_argument, "plan: no devices");
  Plan plan;
  plan.graph = std::move(g);
  plan.devices = devices;
  if (opts.allow_fallback && passes::cpu_index(plan) < 0)
    return error(StatusCode::invalid_argument, "plan: CPU fallback needs a cpu device in the device list");
  passes::PassContext ctx{plan, opts};
  for (const auto& p : kPipeline) {
    TS_RETURN_IF_ERROR(p.fn(ctx).with_context(std::string("pass '") + p.name + "'"));
    maybe_dump(p.name, plan);
  }
  return plan;
}

namespace passes {
bool reads_in_place(const Device& d, const Tensor& t, const Format& format) {
  const int64_t align = d.properties().constants_in_place_alignment;
  if (align <= 0 || t.role != Role::weight || !t.data || !t.data->data || !(format == t.host_format())) return false;
  auto hb = t.host_bytes();
  return hb.ok() && t.data->size >= *hb && reinterpret_cast<uintptr_t>(t.data->data) % static_cast<uintptr_t>(align) == 0;
}

int cpu_index(const Plan& p) {
  for (size_t i = 0; i < p.devices.size(); ++i)
    if (p.devices[i]->name() == "cpu") return static_cast<int>(i);
  return -1;
}
}  // namespace passes

}  // namespace tessera
