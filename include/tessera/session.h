// Session: prepare once (plan, compile, upload weights), then bind inputs and run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/graph.h"
#include "tessera/options.h"
#include "tessera/progress.h"

namespace tessera {

// The device-author types a session hands out (tessera/backend/device.h, plan.h, region.h:
// include them to use plan(), devices() or read_state()).
class Device;
struct Plan;
struct Region;

struct TESSERA_API SessionOptions {
  std::string device = "cpu";   // preferred device spec ("cpu", "tile:blackhole_p150a", "rknpu")
  DeviceOptions device_options; // passed to create_device (threads, weights, fidelity, ...)
  PlanOptions plan;
  // Called while create() places the weights and compiles the programs (ProgressFn: the
  // fraction done; false cancels with StatusCode::cancelled). Optional.
  ProgressFn progress;
};

// Devices plus the tensors that outlive one plan: weights and state, keyed by tensor name,
// so that several sessions (a prompt graph and a decode graph) share them.
struct SharedResidency;

struct TESSERA_API RunProfile {
  struct Item {
    std::string label;       // node label
    std::string device;
    double host_seconds = 0;
    double modelled_seconds = -1;  // < 0: not modelled
    // The node's time on one core of the board's cpu (tessera/cpu_model.h), for the nodes
    // of the cpu and the transfers of a session on a device model that names its board's
    // cpu (DeviceProperties::board_cpu, e.g. the rknpu's Cortex-A76); < 0: not modelled.
    double board_seconds = -1;
  };
  std::vector<Item> nodes;
  double host_seconds = 0;          // whole run, measured
  double modelled_seconds = 0;      // sum of modelled device time (device models only)
  int64_t transfer_bytes = 0;       // bytes moved between devices / formats
  // With a board cpu model (above): its name ("rk3588-a76", empty without one) and the time
  // its core spends per run converting the inputs to their devices' formats (set_input) and
  // the outputs back (read_output), which no node of the run holds.
  std::string board_cpu;
  double board_io_seconds = 0;
};

class TESSERA_API Session {
 public:
  // Plans and compiles `g` for the device in `opts`, uploads weights. With `share`, uses
  // its devices and reuses its resident weights and state by tensor name.
  static Result<std::unique_ptr<Session>> create(Graph g, const SessionOptions& opts,
                                                 const Session* share = nullptr);
  ~Session();

  const Plan& plan() const;
  const Graph& graph() const;
  const std::vector<Device*>& devices() const;

  // Inputs and outputs are raw host tensors in the model's dtype, row-major.
  Status set_input(size_t index, const void* data, int64_t bytes);
  Status run();
  Result<std::vector<uint8_t>> output(size_t index) const;
  // Reads output `index` into `dst` (exactly its host bytes); allocates nothing, so a
  // token loop can read its logits into a buffer it keeps. Like set_input and run, one
  // caller at a time per session (output() may be called concurrently).
  Status read_output(size_t index, void* dst, int64_t bytes) const;
  // Output `index` as real values: 8-bit codes dequantized with the tensor's per-tensor
  // scale and zero point (its first, for a per-axis tensor), f32 as it is, i32 / i64
  // converted; an error names a dtype it does not read (f16, i16, block formats).
  Result<std::vector<float>> output_values(size_t index) const;
  // Reads any planned tensor (input, output, state) as row-major host bytes of its dtype.
  Result<std::vector<uint8_t>> read_tensor(TensorId id) const;
  // Reads a state tensor's region into host memory (row-major `dtype` values).
  Status read_state(const std::string& name, const Region& region, void* dst, int64_t bytes) const;

  // Per-node times of the last run (labels are made on the first call after a run).
  const RunProfile& profile() const;
  // One line per compiled segment whose program describes itself: device, nodes, summary
  // (rknpu: NPU ops, tasks and jobs). For `tessera inspect`.
  std::vector<std::string> program_summaries() const;

 private:
  // The plan, programs, placements, views and profile (src/runtime/session.cpp): none of
  // it is part of the API, so it may change without changing this header.
  struct Impl;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
