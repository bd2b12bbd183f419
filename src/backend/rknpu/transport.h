// Transports: how the rknpu device reaches buffer objects and runs jobs.
//
// The interface mirrors the mainline `rocket` kernel driver (rknpu.md "Kernel interface"):
// buffer objects with a handle, a 32-bit NPU address and a CPU mapping; prep/fini around
// CPU access; a submit of jobs, each a list of tasks (register command buffer address and
// entry count) that run in order on one core, with the BOs it reads and writes. Two
// implementations: the device model (model.cpp), which decodes and executes the register
// streams here, and the rocket transport (rocket_transport.cpp) for real boards.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/status.h"

namespace tessera::rknpu {

struct BoInfo {
  uint32_t handle = 0;
  uint32_t dma_address = 0;  // NPU address (32-bit, page aligned, never 0)
  int64_t size = 0;
  uint8_t* cpu = nullptr;    // CPU mapping
};

struct TaskDesc {
  uint32_t regcmd = 0;        // NPU address of the task's register command buffer
  uint32_t regcmd_count = 0;  // number of 64-bit entries
};

struct JobDesc {
  std::vector<TaskDesc> tasks;    // run in order on one core
  std::vector<uint32_t> in_bos;   // handles read (fences)
  std::vector<uint32_t> out_bos;  // handles written (fences)
};

// Modelled timing of one task and one job (device model only).
struct TaskTiming {
  double seconds = 0;
  double mac_seconds = 0;
  double dram_seconds = 0;
  int64_t dram_bytes = 0;
  int64_t hw_macs = 0;  // MACs the array performs, padding included
  bool weight_stream = false;  // a matmul task: its DRAM traffic is a long sequential stream
};
struct JobTiming {
  int core = -1;
  double start = 0, end = 0;  // seconds from the submit's start
  std::vector<TaskTiming> tasks;
};
struct SubmitTiming {
  double seconds = 0;                // from issue to the last job's end (rocket: measured)
  double start = 0, end = 0;         // device model: on its clock, shared by all entities
  std::vector<JobTiming> jobs;
  std::vector<double> core_busy;     // per core, this submit
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string name() const = 0;
  virtual Result<BoInfo> create_bo(int64_t size) = 0;
  virtual Status destroy_bo(uint32_t handle) = 0;
  // CPU ownership: prep before the CPU reads or writes, fini before the NPU uses it again.
  virtual Status prep_bo(uint32_t handle) = 0;
  virtual Status fini_bo(uint32_t handle) = 0;
  // Scheduler entities: the kernel gives each open file of the device one, and runs an
  // entity's jobs in submission order, one at a time, on one core (the entity moves to the
  // least loaded core only when idle). Jobs of different entities run at once on different
  // cores. Entity 0 is the transport's own; open_entity() adds one (the rocket transport
  // has one open file, so it returns 0: see docs/rknpu.md).
  virtual int open_entity() = 0;
  // Runs the jobs on `entity`, each after the jobs that wrote a BO it reads or writes
  // (the kernel's implicit fences), and waits for them to finish.
  virtual Result<SubmitTiming> submit(int entity, const std::vector<JobDesc>& jobs) = 0;
  // Issues one submit per entity at once (lanes[i] on entities[i]: an op split across the
  // cores) and waits for all of them; afterwards every one of the entities is ready when
  // the last lane ends. The default submits the lanes one after another.
  virtual Result<std::vector<SubmitTiming>> submit_lanes(const std::vector<int>& entities,
                                                         const std::vector<std::vector<JobDesc>>& lanes) {
    std::vector<SubmitTiming> out;
    for (size_t i = 0; i < lanes.size() && i < entities.size(); ++i) {
      TS_ASSIGN_OR_RETURN(SubmitTiming st, submit(entities[i], lanes[i]));
      out.push_back(std::move(st));
    }
    return out;
  }
  // Whether submit() reports modelled time.
  virtual bool modelled() const = 0;
};

// The device model: simulated BOs in a 32-bit address space, register streams executed.
std::unique_ptr<Transport> make_model_transport(uint64_t address_space_bytes);

}  // namespace tessera::rknpu
