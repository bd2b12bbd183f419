// The planner's passes, each a free function in its own file, run in the order listed in
// pipeline.cpp. Each reads and updates the Plan under construction.
#pragma once

#include "tessera/backend/plan.h"

namespace tessera::passes {

struct PassContext {
  Plan& plan;
  const PlanOptions& opts;
};

// Removes nodes whose outputs nobody uses; checks the graph.
Status canonicalize(PassContext& c);
// Folds a spatial PAD into the conv2d / depthwise_conv2d that alone reads it (when it fills
// with what the conv's padding means), and a following relu/relu6 into conv2d /
// depthwise_conv2d / fully_connected / add.
Status fuse(PassContext& c);
// Chooses a device for every node: the pinned or preferred device when it supports the
// node, otherwise the cpu (recording each refusal's reason).
Status partition(PassContext& c);
// Orders the nodes to run as many as it can on one device before switching (a topological
// order of the data dependencies; graphs with in-place state or on one device keep theirs).
Status group(PassContext& c);
// Gives every tensor a home device and asks that device for its native format.
Status choose_formats(PassContext& c);
// Where a consumer runs on another device than its input's home, adds a transfer node
// (activations) or a per-device copy (weights).
Status insert_transfers(PassContext& c);
// Liveness, arenas or per-tensor allocations, alignment, maximum-allocation splits.
Status plan_memory(PassContext& c);

// Index of the cpu device in plan.devices, or -1.
int cpu_index(const Plan& p);

// Whether device `d` reads weight `t` in place from its constant bytes in `format`
// (DeviceProperties::constants_in_place_alignment): no allocation, no upload.
bool reads_in_place(const Device& d, const Tensor& t, const Format& format);

}  // namespace tessera::passes
