// The rocket transport: buffer objects and job submission through the mainline Linux
// `rocket` accel driver (/dev/accel/accel*, Linux 6.18+). UNTESTED ON HARDWARE: it is
// written from the published UAPI (include/uapi/drm/rocket_accel.h) and exercised only
// against a fake kernel interface in tests/backend/rknpu/rocket_transport_test.cpp.
//
// The UAPI structures below are Tessera's own definitions of the published layout; the
// ioctl numbers are computed with the kernel's _IOW/_IOWR encoding from their sizes.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/rknpu/transport.h"

namespace tessera::rknpu {

namespace uapi {
// drm.h: DRM ioctls use type 'd'; driver ioctls start at DRM_COMMAND_BASE.
constexpr unsigned kDrmIoctlType = 'd';
constexpr unsigned kDrmCommandBase = 0x40;
constexpr unsigned kDrmGemCloseNr = 0x09;  // DRM_IOCTL_GEM_CLOSE
// rocket_accel.h command numbers.
constexpr unsigned kRocketCreateBoNr = 0x00;
constexpr unsigned kRocketSubmitNr = 0x01;
constexpr unsigned kRocketPrepBoNr = 0x02;
constexpr unsigned kRocketFiniBoNr = 0x03;

struct CreateBo {        // in: size; out: handle, NPU address, mmap offset
  uint32_t size;
  uint32_t handle;
  uint64_t dma_address;
  uint64_t offset;
};
struct PrepBo {          // wait for the NPU, then make the BO coherent for the CPU
  uint32_t handle;
  uint32_t reserved;
  int64_t timeout_ns;
};
struct FiniBo {          // hand the BO back to the NPU
  uint32_t handle;
  uint32_t reserved;
};
struct Task {            // one register command buffer
  uint32_t regcmd;
  uint32_t regcmd_count;
};
struct Job {             // tasks run in order on one core; BO handles for fences
  uint64_t tasks;
  uint64_t in_bo_handles;
  uint64_t out_bo_handles;
  uint32_t task_count;
  uint32_t task_struct_size;
  uint32_t in_bo_handle_count;
  uint32_t out_bo_handle_count;
};
struct Submit {
  uint64_t jobs;
  uint32_t job_count;
  uint32_t job_struct_size;
  uint64_t reserved;
};
struct GemClose {
  uint32_t handle;
  uint32_t pad;
};
static_assert(sizeof(CreateBo) == 24 && sizeof(PrepBo) == 16 && sizeof(FiniBo) == 8 && sizeof(Task) == 8 &&
              sizeof(Job) == 40 && sizeof(Submit) == 24 && sizeof(GemClose) == 8);

unsigned long ioctl_create_bo();
unsigned long ioctl_submit();
unsigned long ioctl_prep_bo();
unsigned long ioctl_fini_bo();
unsigned long ioctl_gem_close();
}  // namespace uapi

// The system calls the transport makes; tests inject a fake.
class KernelInterface {
 public:
  virtual ~KernelInterface() = default;
  virtual std::vector<std::string> accel_nodes() = 0;  // "/dev/accel/accel0", ...
  virtual int open(const std::string& path) = 0;       // fd or -errno
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void* arg) = 0;  // 0 or -errno
  virtual void* mmap(size_t length, int fd, off_t offset) = 0;      // nullptr on failure
  virtual int munmap(void* addr, size_t length) = 0;
};
std::shared_ptr<KernelInterface> system_kernel();

// Time the transport waits for a job (rknpu.md: the kernel's job timeout is 500 ms).
constexpr int64_t kRocketWaitNs = 500'000'000;

// Opens `node` (or the first /dev/accel/accel* when empty). Errors clearly when there is
// no such device (e.g. not an RK3588 board, or a kernel without the rocket driver).
Result<std::unique_ptr<Transport>> open_rocket_transport(const std::string& node,
                                                         std::shared_ptr<KernelInterface> kernel = system_kernel());

}  // namespace tessera::rknpu
