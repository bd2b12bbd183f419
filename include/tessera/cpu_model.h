// A cost model of one core of a board's application cpu: the time a node that runs on the
// cpu, or a transfer between formats, would take there, when Tessera runs on another host
// (the rknpu device model runs on x86; its board's cpu is an RK3588 Cortex-A76).
//
// Per node: seconds = max(compute, memory) + a fixed cost, where
//   compute = MACs / (peak MACs per cycle of the dtype x matrix_efficiency) / clock  (conv, fc, matmul, attention)
//           + elements x cycles per element of the op's class / clock              (everything else)
//   memory  = (bytes read + bytes written) / dram_bytes_per_s
// Every parameter is a named field below with its source; docs/rknpu.md "Frame time" lists them
// with the published figures the model is checked against (tests/runtime/cpu_model_test.cpp).
// An op kind the model has no rule for is costed by the generic rule (one element per cycle
// over inputs and outputs, plus its memory traffic) and says so (CpuNodeCost::rule).
#pragma once

#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/format.h"
#include "tessera/graph.h"

namespace tessera {

struct Plan;  // tessera/backend/plan.h

struct TESSERA_API CpuCoreModel {
  std::string name;                  // "rk3588-a76": the name DeviceProperties::board_cpu gives
  std::string description;           // one line for reports
  double clock_hz = 0;               // core clock
  // Peak multiply-accumulates per cycle of the NEON pipes, by operand type, and the share
  // of it conv / fully-connected / matmul kernels reach.
  double int8_macs_per_cycle = 0;    // 8-bit operands (sdot), also GGUF block types
  double int16_macs_per_cycle = 0;   // 16-bit operands (smlal)
  double f16_macs_per_cycle = 0;     // fp16 fmla
  double f32_macs_per_cycle = 0;     // fp32 fmla
  double matrix_efficiency = 0;      // achieved / peak in matrix kernels (depthwise: of the int16 rate for 8-bit)
  double vector_bytes_per_cycle = 0; // NEON bytes processed per cycle by elementwise ops (pipes x 16 B)
  double dram_bytes_per_s = 0;       // one core's streaming DRAM traffic, bytes read + written
  double node_fixed_seconds = 0;     // per node: call, loop set-up, first cache misses
};

// The RK3588's Cortex-A76 at 2.4 GHz (parameters and sources in cpu_model.cpp).
TESSERA_API const CpuCoreModel& rk3588_cortex_a76();
// A model by name ("rk3588-a76"), or null.
TESSERA_API const CpuCoreModel* find_cpu_core_model(const std::string& name);

struct TESSERA_API CpuNodeCost {
  double seconds = 0;          // max(compute, memory) + fixed
  double compute_seconds = 0;
  double memory_seconds = 0;
  double macs = 0;             // multiply-accumulates counted (matrix ops)
  double bytes = 0;            // bytes read + written
  // How it was costed: "matrix", "depthwise", "elementwise", "quantized elementwise",
  // "table lookup", "transcendental", "reduction", "pooling", "data movement", "resize",
  // "layout conversion", or "generic" (an op kind the model has no rule for).
  const char* rule = "generic";
  bool known() const;          // false for the generic rule
};

// The node's time on one core of `m`, from its op kind, dtypes and shapes in `g`. A reshape
// the planner made a view still reads and writes nothing: pass `view` = true.
TESSERA_API CpuNodeCost cpu_node_cost(const CpuCoreModel& m, const Graph& g, const Node& n, bool view = false);
// One pass converting (or copying) a tensor from format `from` to format `to` of the same
// logical shape: a read of `from`'s bytes and a write of `to`'s. A session's transfer node is
// two passes (device format -> host layout, host layout -> the other device's format);
// set_input and read_output are one each.
TESSERA_API CpuNodeCost cpu_conversion_cost(const CpuCoreModel& m, const Format& from, const Format& to);

// Per node of `plan.graph`, what one core of `m` spends when the device `board_device` (an
// index into plan.devices) is the board's accelerator: its own nodes are not priced
// (seconds < 0, rule "device"); every other node is (a reshape the planner made a view
// counts as one), and a transfer is two conversion passes (its source format to the host
// layout, the host layout to its destination format). Sessions and `tessera inspect` use it.
TESSERA_API std::vector<CpuNodeCost> plan_cpu_costs(const CpuCoreModel& m, const Plan& plan, int board_device);

}  // namespace tessera
