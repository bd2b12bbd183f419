// Plan: the result of the pass pipeline (src/passes/pipeline.cpp).
//
// A plan says, for a graph: which device runs every node (and why the others could not),
// the format of every tensor, the transfers inserted between formats or devices, and the
// memory plan per device in the formats' real bytes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/backend/device.h"
#include "tessera/graph.h"
#include "tessera/options.h"  // PlanOptions

namespace tessera {

// Where a tensor lives and in what form.
struct TESSERA_API TensorPlacement {
  int device = -1;       // index into Plan::devices
  Format format;
  int arena = -1;        // index into the device's arenas; -1 for weights/state/own allocation
  int64_t offset = 0;    // byte offset inside the arena (0 without sub-allocation)
  int64_t bytes = 0;     // format bytes, aligned up
  int first_use = -1;    // node index of the producer (-1: live from the start)
  int last_use = -1;     // last node index reading it (INT_MAX for outputs/state)
  TensorId alias = kNoTensor;  // shares the storage of this tensor (scatter_rows output, views)
  int64_t alias_offset = 0;    // a view (Device::views): where its bytes start in the alias's
  bool resident = false;       // weight or state: allocated once, outside the arenas
  bool in_program = false;     // a constant the device's compiled program holds: no allocation
  bool in_place = false;       // (with in_program) read in place from the graph's constant bytes
};

struct TESSERA_API DeviceMemoryPlan {
  std::vector<int64_t> arena_bytes;  // one allocation each
  int64_t weight_bytes = 0;          // resident weights, in native format bytes
  int64_t state_bytes = 0;           // resident state (KV caches)
  int64_t activation_peak = 0;       // peak of live activations (sum of arenas)
  int64_t logical_activation_bytes = 0;  // the same tensors' host bytes, for comparison
  int64_t allocations = 0;           // number of allocations the plan makes
  int64_t program_constants = 0;     // constants left to the device's compiled programs
  int64_t in_place_constants = 0;    // of those, constants the device reads in place from the model's bytes
  int64_t in_place_bytes = 0;        // their bytes (host memory the model file holds, not a device copy)
  int64_t peak_bytes() const { return weight_bytes + state_bytes + activation_peak; }
};

struct TESSERA_API NodePlacement {
  int device = -1;
  double cost = 0;
  std::string note;                 // how it runs, or why it fell back
  std::vector<std::string> rejected;  // "<device>: <reason>" for devices that said no
};

struct TESSERA_API Plan {
  Graph graph;                          // after the passes, with transfer nodes
  std::vector<Device*> devices;         // index 0 is the preferred device; cpu is always present
  std::vector<NodePlacement> nodes;     // per node of `graph`
  std::vector<TensorPlacement> tensors; // per tensor of `graph`
  std::vector<DeviceMemoryPlan> memory; // per device
  int transfers = 0;

  // A readable report of placement, formats, transfers and memory (`tessera inspect`).
  std::string report(bool per_tensor) const;
};

// Runs the pass pipeline. `devices` lists the devices the plan may use; the first is the
// preferred one, and a cpu device must be among them when fallback is allowed.
Result<Plan> plan_graph(Graph g, const std::vector<Device*>& devices, const PlanOptions& opts = {});

}  // namespace tessera
