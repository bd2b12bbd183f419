// The options a user passes when making a session: the device's options (key=value) and
// how the planner may place nodes. Device authors find them again in
// tessera/backend/device.h and tessera/backend/plan.h, which include this header.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "tessera/export.h"
#include "tessera/graph.h"

namespace tessera {

// Options a device is created with (`--threads`, `--weights bfp8_b`, `--fidelity HiFi4` ...);
// each device declares the keys it takes (`tessera devices --options`).
using DeviceOptions = std::map<std::string, std::string>;

struct TESSERA_API PlanOptions {
  // Optional: the device index (into the plan's device list) a node should run on, or -1
  // for "let the partitioner choose". Used for layer offload (`--offload N`).
  std::function<int(const Graph&, const Node&, int node_index)> pin;
  // When false, a node that the preferred device cannot run is an error instead of
  // falling back to the CPU.
  bool allow_fallback = true;
};

}  // namespace tessera
