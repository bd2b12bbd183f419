// The device interface: what every backend (cpu, tile, rknpu, ...) implements.
//
// Public methods are non-virtual: they check arguments, keep counters and add the device
// name to errors, then call the protected do_* hooks a backend overrides. A device never
// exposes a host pointer for its memory: allocations are opaque handles, and data moves
// only through write()/read(), which convert between a host format and the device's own
// format through src/convert/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/format.h"
#include "tessera/graph.h"
#include "tessera/options.h"
#include "tessera/backend/region.h"

namespace tessera {

struct TESSERA_API DeviceProperties {
  std::string name;                  // registry name plus preset: "cpu", "tile:wormhole_n150"
  std::string description;           // one line for `tessera devices`
  bool is_model = false;             // a device model: its device times are modelled
  int64_t capacity_bytes = 0;        // total memory for tensors
  int64_t max_allocation_bytes = 0;  // largest single allocation
  int64_t alignment_bytes = 1;       // alignment of allocations and of offsets inside them
  bool sub_allocation = false;       // one allocation may hold several tensors at offsets
  int cores = 1;                     // cores / queues work can be spread over
  // A device model whose sessions share one modelled clock over its cores: it fills
  // Counters::modelled_clock_seconds, modelled_core_seconds and modelled_dram_bytes.
  bool shared_clock = false;
  uint32_t regions = kRegionWhole;   // RegionSupport bits accepted by write()/read()
  // Compiled programs pack and hold the constants they read (the rknpu's weight blocks and
  // DPU tables): the plan allocates and uploads no copy of a constant all of whose readers
  // run on this device, and Program::device_bytes() counts what the program holds.
  bool program_owns_constants = false;
  // (optional) The device reads a constant's bytes in place, from the Graph's ConstData
  // (which the graph keeps alive: a GGUF file's mapping, a TFLite buffer), when its native
  // format is its host format and its address is a multiple of this many bytes: the plan
  // allocates and uploads no copy, so the weights are resident once. 0 (default): never.
  // A kernel that repacks such a constant at compile owns its packed copy; the original's
  // pages are then never touched again (clean file-backed pages the OS can drop).
  int64_t constants_in_place_alignment = 0;
  // (optional) A device model of an accelerator on a board: the name of the board's cpu core
  // model (tessera/cpu_model.h, e.g. "rk3588-a76"). A session with such a device models what
  // the board's cpu would spend on the nodes of other devices, the transfers and the input and
  // output conversions (RunProfile::Item::board_seconds). Empty (default): none.
  std::string board_cpu;
  std::vector<std::pair<std::string, std::string>> extra;  // device-specific facts to print
  // Relative error bound of one product term of matmul / fully_connected / conv2d /
  // depthwise_conv2d from the device's arithmetic itself (operand truncation by math
  // fidelity), beyond the rounding of the storage formats; 0 when products are exact.
  double matrix_product_error = 0;
};

// An opaque handle to device memory. No host address is implied.
struct TESSERA_API Allocation {
  uint64_t handle = 0;  // 0 = none
  int64_t bytes = 0;
  bool valid() const { return handle != 0; }
};

// Where a tensor lives on a device: an allocation, a byte offset inside it (always 0 on a
// device without sub-allocation), and the tensor's format there.
struct TESSERA_API Placement {
  Allocation alloc;
  int64_t offset = 0;
  Format format;
};

// The answer to "can you run this node, and at what cost?".
struct TESSERA_API Support {
  bool ok = false;
  double cost = 0;     // estimated seconds (modelled or measured-like), comparable across devices
  std::string reason;  // why not (shown by `inspect`), or a note on how it runs
  static Support yes(double cost, std::string note = {}) { return {true, cost, std::move(note)}; }
  static Support no(std::string why) { return {false, 0, std::move(why)}; }
};

// A tensor a device can keep inside another tensor's storage, with no copy: `view` is the
// bytes [offset, offset + its format's bytes) of `source`'s (both in their planned formats).
// A channel slice of an NC1HWC2 map is a run of its surfaces; so is each input of a
// concatenation along channels inside the output (Device::views).
struct TESSERA_API TensorView {
  TensorId view = kNoTensor;
  TensorId source = kNoTensor;
  int64_t offset = 0;
};

// A run of consecutive nodes assigned to one device, with the formats the planner chose.
struct TESSERA_API Segment {
  const Graph* graph = nullptr;
  std::vector<int> nodes;                // indices into graph->nodes(), in execution order
  std::map<TensorId, Format> formats;    // format of every tensor the nodes touch
  // Tensors the nodes touch that the plan stores inside another tensor's allocation
  // (Device::views it adopted, and reshape views): id -> (the tensor owning the allocation,
  // byte offset in it). A tensor not listed owns its storage. The bindings agree: such a
  // tensor is bound to its owner's allocation at the owner's offset plus this one.
  std::map<TensorId, std::pair<TensorId, int64_t>> views;
};

// What compile() returns; owned by the caller, executed any number of times.
class TESSERA_API Program {
 public:
  virtual ~Program() = default;
  virtual std::string describe() const { return {}; }
  // Device memory the program itself holds (packed constants), beyond the plan's allocations.
  virtual int64_t device_bytes() const { return 0; }
};

// Placements of every tensor a program reads or writes.
struct TESSERA_API Bindings {
  std::map<TensorId, Placement> placements;
};

// Per-node timing from the last execute().
struct TESSERA_API NodeTime {
  int node = -1;            // index into the graph's nodes
  double host_seconds = 0;  // measured on this machine
  double modelled_seconds = -1;  // modelled device time; < 0 when not modelled
};

struct TESSERA_API Counters {
  double host_seconds = 0;       // measured time spent in execute()
  double modelled_seconds = 0;   // device models only: modelled device time of execute()
  double modelled_transfer_seconds = 0;  // device models: host<->device transfer time
  int64_t bytes_written = 0;     // host -> device through write()
  int64_t bytes_read = 0;        // device -> host through read()
  int64_t bytes_converted = 0;   // bytes that went through a non-identity conversion
  int64_t allocated_bytes = 0;   // currently allocated
  int64_t peak_allocated_bytes = 0;
  int64_t allocations = 0;       // currently live allocations
  int64_t executes = 0;
  std::vector<NodeTime> last_nodes;  // per node, from the last execute()
  std::vector<double> modelled_core_seconds;  // shared-clock device models: busy time per core, all executes
  double modelled_clock_seconds = 0;  // device models whose sessions share one modelled clock: when its last work ends
  int64_t modelled_dram_bytes = 0;     // device models: DRAM traffic of all executes, as modelled
};

// What one execute() did, returned to the caller that ran it (counters() is shared by every
// session on the device).
struct TESSERA_API ExecuteStats {
  std::vector<NodeTime> nodes;   // per node of the program
  double modelled_seconds = 0;   // device models: modelled device time of this execute
};

// DeviceOptions (key=value strings a device is created with): tessera/options.h.

// Threads: one Device may be shared by sessions running on different threads. Every public
// method below takes the device's lock, so calls on one device are serialized (a device
// runs one program at a time, as a single queue would); counters() is a snapshot only while
// no other thread uses the device: concurrent callers take their numbers from
// execute()'s ExecuteStats. Distinct devices share nothing.
class TESSERA_API Device {
 public:
  virtual ~Device() = default;

  const DeviceProperties& properties() const { return props_; }
  const std::string& name() const { return props_.name; }

  // The format this device wants for tensor `id` of `g` (its role and consumers decide),
  // or nullopt if the device cannot hold it.
  std::optional<Format> native_format(const Graph& g, TensorId id) const;
  // Whether the device can run node `n` of `g`, with a cost estimate or a reason.
  Support supports(const Graph& g, const Node& n) const;
  // Tensors that node `node` of `g`, placed on this device, reads beyond its own inputs: a
  // device that runs the node inside an earlier node's pass reads that node's inputs when
  // the later node runs. The memory plan keeps them alive up to `node`. Default: none.
  std::vector<TensorId> extra_reads(const Graph& g, int node) const;
  // Views node `node` of `g`, placed on this device, allows (TensorView): a concatenation's
  // inputs inside its output, a slice's output inside its input, given the formats the plan
  // chose (`format_of`). The plan adopts a view only when the tensor that moves into another's
  // storage is an activation made and read by this device's nodes alone (no graph input or
  // output, no transfer) and the view agrees with those adopted before (plan_memory.cpp);
  // compile() learns which from Segment::views and leaves out the copies they make needless.
  // Default: none.
  std::vector<TensorView> views(const Graph& g, int node, const std::function<Format(TensorId)>& format_of) const;

  // Bytes one allocation holding a whole tensor in format `f` occupies on this device,
  // page padding and bank rounding included; the planner sizes allocations and checks
  // capacity with it. Default: f.byte_size() rounded up to alignment_bytes.
  Result<int64_t> allocation_bytes(const Format& f) const;
  // Allocates `bytes` (already rounded by the planner); `what` names it for errors.
  Result<Allocation> allocate(int64_t bytes, const std::string& what);
  Status free(Allocation a);

  // Host -> device: `src` holds the region's values in a host format; the device
  // converts to placement.format through src/convert/.
  Status write(const Placement& dst, const Region& region, const ConstHostView& src);
  // Device -> host, converting placement.format to dst.format (row-major, region extent).
  Status read(const Placement& src, const Region& region, const HostView& dst);

  // Prepares a segment once (kernel selection, command streams, constant folding).
  Result<std::unique_ptr<Program>> compile(const Segment& seg);
  // Runs a compiled program on tensors placed as `b` says; `stats` (optional) receives
  // this run's per-node times and modelled time.
  Status execute(Program& p, const Bindings& b, ExecuteStats* stats = nullptr);

  const Counters& counters() const { return counters_; }
  void reset_counters();

 protected:
  explicit Device(DeviceProperties props) : props_(std::move(props)) {}

  virtual std::optional<Format> do_native_format(const Graph& g, TensorId id) const = 0;
  virtual Support do_supports(const Graph& g, const Node& n) const = 0;
  // (optional) see extra_reads(); the default reads nothing more.
  virtual std::vector<TensorId> do_extra_reads(const Graph& g, int node) const;
  // (optional) see views(); the default offers none.
  virtual std::vector<TensorView> do_views(const Graph& g, int node, const std::function<Format(TensorId)>& format_of) const;
  // (optional) see allocation_bytes(); the default is described there.
  virtual Result<int64_t> do_allocation_bytes(const Format& f) const;
  virtual Result<Allocation> do_allocate(int64_t bytes) = 0;
  virtual Status do_free(Allocation a) = 0;
  virtual Status do_write(const Placement& dst, const Region& region, const ConstHostView& src) = 0;
  virtual Status do_read(const Placement& src, const Region& region, const HostView& dst) = 0;
  virtual Result<std::unique_ptr<Program>> do_compile(const Segment& seg) = 0;
  virtual Status do_execute(Program& p, const Bindings& b) = 0;

  DeviceProperties props_;
  Counters counters_;

  // The lock every public method holds, for what a device releases outside those methods
  // (a compiled program's destructor freeing the buffers it owns).
  std::recursive_mutex& device_mutex() const { return mu_; }

 private:
  mutable std::recursive_mutex mu_;  // held by every public method (see the class comment)
};

// ---- registry (src/runtime/device_registry.cpp) ----

// One option a device takes (DeviceOptions, the CLI's --device-opt KEY=VALUE). create_device
// checks every given option against the device's list before the device sees it: an
// unknown key is an error listing the valid ones, a value outside the declared ones too.
struct TESSERA_API DeviceOption {
  enum class Kind { choice, integer, text };
  std::string key;
  Kind kind = Kind::choice;
  std::vector<std::string> values;  // choice: the accepted values (first: the default)
  int64_t min = 0, max = 0;         // integer: the accepted range
  std::string default_value;        // as the device applies it when the option is absent
  std::string meaning;              // one line

  static DeviceOption choice(std::string key, std::vector<std::string> values, std::string meaning);
  static DeviceOption integer(std::string key, int64_t min, int64_t max, int64_t default_value, std::string meaning);
  static DeviceOption text(std::string key, std::string default_value, std::string meaning);
};
// Every device takes `threads` (1..256): the cpu device's pool, and for another device the
// pool of the cpu device that runs what it does not (the session passes it on).
TESSERA_API DeviceOption threads_option(int64_t default_value = 1);

struct TESSERA_API DeviceInfo {
  std::string name;                  // "cpu", "tile", "rknpu"
  std::string summary;               // one line
  std::vector<std::string> presets;  // first is the default; empty if none
  std::vector<DeviceOption> options; // every option the device takes (checked by create_device)
  std::function<Result<std::unique_ptr<Device>>(const std::string& preset, const DeviceOptions&)> create;
  // Place in device_registry(): ascending, then by name. The built-in devices: cpu 0, tile 1,
  // rknpu 2 (the order `tessera devices` lists them and `tessera demo` runs them).
  int order = 0;
};

// Adds a device to the registry. Each device registers itself from its own folder
// (src/backend/NAME/NAME_register.cpp, run at static initialization; docs/adding-a-device.md).
// False, and the registry unchanged, when a device of that name is already registered.
// Not safe while another thread reads the registry: register before any thread uses it.
TESSERA_API bool register_device(DeviceInfo info);
// Every registered device, ordered by DeviceInfo::order (cpu first). A program that links
// the umbrella library (tessera, Tessera::tessera, tessera.pc) has every device built.
TESSERA_API const std::vector<DeviceInfo>& device_registry();
// Creates "name" or "name:preset"; errors name the unknown device or preset and list the valid ones.
Result<std::unique_ptr<Device>> create_device(const std::string& spec, const DeviceOptions& opts = {});

}  // namespace tessera
