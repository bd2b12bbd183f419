// Session: prepare once (plan, compile, upload weights), then bind inputs and run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/device.h"
#include "tessera/graph.h"
#include "tessera/plan.h"
#include "tessera/progress.h"

namespace tessera {

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
  };
  std::vector<Item> nodes;
  double host_seconds = 0;          // whole run, measured
  double modelled_seconds = 0;      // sum of modelled device time (device models only)
  int64_t transfer_bytes = 0;       // bytes moved between devices / formats
};

class TESSERA_API Session {
 public:
  // Plans and compiles `g` for the device in `opts`, uploads weights. With `share`, uses
  // its devices and reuses its resident weights and state by tensor name.
  static Result<std::unique_ptr<Session>> create(Graph g, const SessionOptions& opts,
                                                 const Session* share = nullptr);
  ~Session();

  const Plan& plan() const { return plan_; }
  const Graph& graph() const { return plan_.graph; }
  const std::vector<Device*>& devices() const { return plan_.devices; }

  // Inputs and outputs are raw host tensors in the model's dtype, row-major.
  Status set_input(size_t index, const void* data, int64_t bytes);
  Status run();
  Result<std::vector<uint8_t>> output(size_t index) const;
  // Reads output `index` into `dst` (exactly its host bytes); allocates nothing, so a
  // token loop can read its logits into a buffer it keeps. Like set_input and run, one
  // caller at a time per session (output() may be called concurrently).
  Status read_output(size_t index, void* dst, int64_t bytes) const;
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
  Session() = default;
  Status prepare(const Session* share);

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
};

}  // namespace tessera
