#include "backend/rknpu/rocket_transport.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>

namespace tessera::rknpu {

namespace uapi {
unsigned long ioctl_create_bo() { return _IOWR(kDrmIoctlType, kDrmCommandBase + kRocketCreateBoNr, CreateBo); }
unsigned long ioctl_submit() { return _IOW(kDrmIoctlType, kDrmCommandBase + kRocketSubmitNr, Submit); }
unsigned long ioctl_prep_bo() { return _IOW(kDrmIoctlType, kDrmCommandBase + kRocketPrepBoNr, PrepBo); }
unsigned long ioctl_fini_bo() { return _IOW(kDrmIoctlType, kDrmCommandBase + kRocketFiniBoNr, FiniBo); }
unsigned long ioctl_gem_close() { return _IOW(kDrmIoctlType, kDrmGemCloseNr, GemClose); }
}  // namespace uapi

namespace {

class SystemKernel : public KernelInterface {
 public:
  std::vector<std::string> accel_nodes() override {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/dev/accel", ec)) {
      std::string name = e.path().filename().string();
      if (name.rfind("accel", 0) == 0) out.push_back(e.path().string());
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  int open(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
  }
  int close(int fd) override { return ::close(fd); }
  int ioctl(int fd, unsigned long request, void* arg) override {
    int r;
    do {
      r = ::ioctl(fd, request, arg);
    } while (r < 0 && (errno == EINTR || errno == EAGAIN));
    return r < 0 ? -errno : 0;
  }
  void* mmap(size_t length, int fd, off_t offset) override {
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
    return p == MAP_FAILED ? nullptr : p;
  }
  int munmap(void* addr, size_t length) override { return ::munmap(addr, length); }
};

Status sys_error(const char* what, int err, const std::string& node) {
  return error(StatusCode::io_error, "rocket ", what, " on ", node, " failed: ", std::strerror(-err));
}

class RocketTransport : public Transport {
 public:
  RocketTransport(std::shared_ptr<KernelInterface> k, int fd, std::string node) : k_(std::move(k)), fd_(fd), node_(std::move(node)) {}
  ~RocketTransport() override {
    std::vector<uint32_t> handles;
    for (const auto& [h, bo] : bos_) handles.push_back(h);
    for (uint32_t h : handles) (void)destroy_bo(h);
    k_->close(fd_);
  }
  std::string name() const override { return "rocket (" + node_ + ")"; }
  bool modelled() const override { return false; }

  Result<BoInfo> create_bo(int64_t size) override {
    if (size <= 0 || size > UINT32_MAX) return error(StatusCode::invalid_argument, "rocket: buffer object of ", size, " bytes");
    uapi::CreateBo req{};
    req.size = static_cast<uint32_t>(size);
    if (int r = k_->ioctl(fd_, uapi::ioctl_create_bo(), &req); r < 0) return sys_error("CREATE_BO", r, node_);
    if (req.dma_address == 0 || req.dma_address > UINT32_MAX)
      return error(StatusCode::io_error, "rocket: CREATE_BO returned NPU address 0x", std::hex, req.dma_address,
                   ", not a nonzero 32-bit address");
    void* p = k_->mmap(req.size, fd_, static_cast<off_t>(req.offset));
    if (!p) {
      uapi::GemClose c{req.handle, 0};
      (void)k_->ioctl(fd_, uapi::ioctl_gem_close(), &c);
      return error(StatusCode::io_error, "rocket: mmap of buffer object ", req.handle, " failed");
    }
    BoInfo bo{req.handle, static_cast<uint32_t>(req.dma_address), size, static_cast<uint8_t*>(p)};
    bos_[bo.handle] = bo;
    return bo;
  }

  Status destroy_bo(uint32_t h) override {
    auto it = bos_.find(h);
    if (it == bos_.end()) return error(StatusCode::invalid_argument, "rocket: unknown buffer object ", h);
    k_->munmap(it->second.cpu, static_cast<size_t>(it->second.size));
    uapi::GemClose c{h, 0};
    int r = k_->ioctl(fd_, uapi::ioctl_gem_close(), &c);
    bos_.erase(it);
    return r < 0 ? sys_error("GEM_CLOSE", r, node_) : Status::Ok();
  }

  Status prep_bo(uint32_t h) override {
    uapi::PrepBo req{h, 0, kRocketWaitNs};
    int r = k_->ioctl(fd_, uapi::ioctl_prep_bo(), &req);
    if (r == -ETIMEDOUT) return error(StatusCode::io_error, "rocket: the NPU did not finish with buffer object ", h, " within 500 ms");
    return r < 0 ? sys_error("PREP_BO", r, node_) : Status::Ok();
  }

  Status fini_bo(uint32_t h) override {
    uapi::FiniBo req{h, 0};
    int r = k_->ioctl(fd_, uapi::ioctl_fini_bo(), &req);
    return r < 0 ? sys_error("FINI_BO", r, node_) : Status::Ok();
  }

  // One open file: one scheduler entity, so every session's jobs run one at a time.
  // Opening a file per entity would need the BOs shared between files (PRIME), not done.
  int open_entity() override { return 0; }

  Result<SubmitTiming> submit(int entity, const std::vector<JobDesc>& jobs) override {
    if (entity != 0) return error(StatusCode::invalid_argument, "rocket: unknown scheduler entity ", entity);
    // The kernel reads these arrays during the ioctl; they live until it returns.
    std::vector<std::vector<uapi::Task>> tasks(jobs.size());
    std::vector<uapi::Job> js(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) {
      for (const auto& t : jobs[j].tasks) tasks[j].push_back({t.regcmd, t.regcmd_count});
      js[j].tasks = reinterpret_cast<uint64_t>(tasks[j].data());
      js[j].task_count = static_cast<uint32_t>(tasks[j].size());
      js[j].task_struct_size = sizeof(uapi::Task);
      js[j].in_bo_handles = reinterpret_cast<uint64_t>(jobs[j].in_bos.data());
      js[j].in_bo_handle_count = static_cast<uint32_t>(jobs[j].in_bos.size());
      js[j].out_bo_handles = reinterpret_cast<uint64_t>(jobs[j].out_bos.data());
      js[j].out_bo_handle_count = static_cast<uint32_t>(jobs[j].out_bos.size());
    }
    uapi::Submit s{};
    s.jobs = reinterpret_cast<uint64_t>(js.data());
    s.job_count = static_cast<uint32_t>(js.size());
    s.job_struct_size = sizeof(uapi::Job);
    auto t0 = std::chrono::steady_clock::now();
    if (int r = k_->ioctl(fd_, uapi::ioctl_submit(), &s); r < 0) return sys_error("SUBMIT", r, node_);
    // Wait for the fences: PREP_BO on every written BO waits for the jobs writing it.
    for (const auto& j : jobs)
      for (uint32_t h : j.out_bos) {
        TS_RETURN_IF_ERROR(prep_bo(h));
        TS_RETURN_IF_ERROR(fini_bo(h));
      }
    SubmitTiming st;
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }

 private:
  std::shared_ptr<KernelInterface> k_;
  int fd_;
  std::string node_;
  std::map<uint32_t, BoInfo> bos_;
};

}  // namespace

std::shared_ptr<KernelInterface> system_kernel() { return std::make_shared<SystemKernel>(); }

Result<std::unique_ptr<Transport>> open_rocket_transport(const std::string& node, std::shared_ptr<KernelInterface> kernel) {
  std::string path = node;
  if (path.empty()) {
    auto nodes = kernel->accel_nodes();
    if (nodes.empty())
      return error(StatusCode::not_found,
                   "rknpu: transport 'rocket' needs an NPU at /dev/accel/accel* (Linux 6.18+ with the rocket driver on an "
                   "RK3588 board); none found on this machine. Use transport=model for the device model");
    path = nodes.front();
  }
  int fd = kernel->open(path);
  if (fd < 0) return error(StatusCode::io_error, "rknpu: cannot open ", path, ": ", std::strerror(-fd));
  return std::unique_ptr<Transport>(new RocketTransport(std::move(kernel), fd, path));
}

}  // namespace tessera::rknpu
