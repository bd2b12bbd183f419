// The rocket transport against a fake kernel interface: the ioctl numbers and structures
// the transport sends, BO creation and mapping, prep/fini around CPU access, job
// submission (task and handle arrays), fence waits, and error paths. The transport is
// untested on hardware; this checks it speaks the published UAPI.
#include <gtest/gtest.h>

#include <asm-generic/ioctl.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "backend/rknpu/rknpu_test_util.h"
#include "backend/rknpu/rocket_transport.h"

namespace tessera::rknpu {
namespace {

// A fake /dev/accel/accel0: BOs are host buffers, submits are recorded.
class FakeKernel : public KernelInterface {
 public:
  std::vector<std::string> nodes = {"/dev/accel/accel0"};
  std::map<uint32_t, std::vector<uint8_t>> bos;
  std::vector<std::string> calls;
  struct SubmittedJob {
    std::vector<uapi::Task> tasks;
    std::vector<uint32_t> in, out;
  };
  std::vector<SubmittedJob> submitted;
  int fail_next = 0;  // -errno for the next ioctl
  uint32_t next_handle = 7;

  std::vector<std::string> accel_nodes() override { return nodes; }
  int open(const std::string& path) override { return path == "/dev/accel/accel0" ? 42 : -ENOENT; }
  int close(int) override { return 0; }
  int ioctl(int fd, unsigned long req, void* arg) override {
    if (fd != 42) return -EBADF;
    if (fail_next) {
      int r = fail_next;
      fail_next = 0;
      return r;
    }
    if (req == uapi::ioctl_create_bo()) {
      auto* c = static_cast<uapi::CreateBo*>(arg);
      c->handle = next_handle++;
      bos[c->handle].assign(c->size, 0);
      c->dma_address = 0x10000000u + c->handle * 0x100000u;
      c->offset = uint64_t{c->handle} << 12;
      calls.push_back("create " + std::to_string(c->size));
    } else if (req == uapi::ioctl_prep_bo()) {
      auto* p = static_cast<uapi::PrepBo*>(arg);
      if (!bos.count(p->handle)) return -ENOENT;
      calls.push_back("prep " + std::to_string(p->handle) + " timeout " + std::to_string(p->timeout_ns));
    } else if (req == uapi::ioctl_fini_bo()) {
      auto* f = static_cast<uapi::FiniBo*>(arg);
      if (!bos.count(f->handle)) return -ENOENT;
      calls.push_back("fini " + std::to_string(f->handle));
    } else if (req == uapi::ioctl_submit()) {
      auto* s = static_cast<uapi::Submit*>(arg);
      if (s->job_struct_size != sizeof(uapi::Job) || s->reserved != 0) return -EINVAL;
      auto* jobs = reinterpret_cast<const uapi::Job*>(s->jobs);
      for (uint32_t j = 0; j < s->job_count; ++j) {
        if (jobs[j].task_struct_size != sizeof(uapi::Task)) return -EINVAL;
        SubmittedJob sj;
        auto* t = reinterpret_cast<const uapi::Task*>(jobs[j].tasks);
        sj.tasks.assign(t, t + jobs[j].task_count);
        auto* in = reinterpret_cast<const uint32_t*>(jobs[j].in_bo_handles);
        sj.in.assign(in, in + jobs[j].in_bo_handle_count);
        auto* out = reinterpret_cast<const uint32_t*>(jobs[j].out_bo_handles);
        sj.out.assign(out, out + jobs[j].out_bo_handle_count);
        submitted.push_back(sj);
      }
      calls.push_back("submit " + std::to_string(s->job_count));
    } else if (req == uapi::ioctl_gem_close()) {
      auto* c = static_cast<uapi::GemClose*>(arg);
      bos.erase(c->handle);
      calls.push_back("close " + std::to_string(c->handle));
    } else {
      return -ENOTTY;
    }
    return 0;
  }
  void* mmap(size_t length, int fd, off_t offset) override {
    uint32_t h = static_cast<uint32_t>(offset >> 12);
    if (fd != 42 || !bos.count(h) || bos[h].size() != length) return nullptr;
    return bos[h].data();
  }
  int munmap(void*, size_t) override { return 0; }
};

TEST(RocketTransport, IoctlNumbersFollowTheDrmEncoding) {
  // DRM_IOWR('d', 0x40 + 0x00, 24 bytes) and DRM_IOW('d', 0x40 + n, size).
  EXPECT_EQ(uapi::ioctl_create_bo(), (3ul << 30) | (24ul << 16) | ('d' << 8) | 0x40);
  EXPECT_EQ(uapi::ioctl_submit(), (1ul << 30) | (24ul << 16) | ('d' << 8) | 0x41);
  EXPECT_EQ(uapi::ioctl_prep_bo(), (1ul << 30) | (16ul << 16) | ('d' << 8) | 0x42);
  EXPECT_EQ(uapi::ioctl_fini_bo(), (1ul << 30) | (8ul << 16) | ('d' << 8) | 0x43);
  EXPECT_EQ(_IOC_NR(uapi::ioctl_gem_close()), 0x09u);
}

TEST(RocketTransport, WithoutADeviceTheErrorSaysSo) {
  auto k = std::make_shared<FakeKernel>();
  k->nodes.clear();
  auto t = open_rocket_transport("", k);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::not_found);
  EXPECT_NE(t.status().message().find("/dev/accel/accel*"), std::string::npos) << t.status().message();
  EXPECT_NE(t.status().message().find("transport=model"), std::string::npos);
  auto t2 = open_rocket_transport("/dev/accel/accel9", k);
  ASSERT_FALSE(t2.ok());
  EXPECT_EQ(t2.status().code(), StatusCode::io_error);
}

TEST(RocketTransport, ChoosingItOnThisMachineIsAClearError) {
  if (!system_kernel()->accel_nodes().empty()) GTEST_SKIP() << "this machine has an accel device";
  auto d = create_device("rknpu", {{"transport", "rocket"}});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("none found on this machine"), std::string::npos) << d.status().message();
}

TEST(RocketTransport, BuffersPrepFiniSubmitAndWait) {
  auto k = std::make_shared<FakeKernel>();
  auto t = open_rocket_transport("", k);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_FALSE((*t)->modelled());
  auto a = (*t)->create_bo(5000);
  auto b = (*t)->create_bo(64);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->dma_address, 0u);
  EXPECT_EQ(a->cpu, k->bos[a->handle].data()) << "the CPU mapping is the kernel's mmap";
  ASSERT_TRUE((*t)->prep_bo(a->handle).ok());
  std::memset(a->cpu, 0x5a, 16);
  ASSERT_TRUE((*t)->fini_bo(a->handle).ok());
  EXPECT_EQ(k->bos[a->handle][15], 0x5a);
  JobDesc job;
  job.tasks = {{a->dma_address, 40}, {a->dma_address + 384, 48}};
  job.in_bos = {a->handle};
  job.out_bos = {b->handle};
  auto st = (*t)->submit(0, {job, job});
  ASSERT_TRUE(st.ok()) << st.status().to_string();
  ASSERT_EQ(k->submitted.size(), 2u);
  EXPECT_EQ(k->submitted[0].tasks.size(), 2u);
  EXPECT_EQ(k->submitted[0].tasks[1].regcmd, a->dma_address + 384);
  EXPECT_EQ(k->submitted[0].tasks[1].regcmd_count, 48u);
  EXPECT_EQ(k->submitted[1].in, std::vector<uint32_t>{a->handle});
  EXPECT_EQ(k->submitted[1].out, std::vector<uint32_t>{b->handle});
  // After the submit the transport waits on each written BO (PREP_BO with the job timeout).
  auto it = std::find(k->calls.begin(), k->calls.end(), "submit 2");
  ASSERT_NE(it, k->calls.end());
  ASSERT_NE(it + 1, k->calls.end());
  EXPECT_EQ(*(it + 1), "prep " + std::to_string(b->handle) + " timeout 500000000");
  // Errors from the kernel come back with the call's name; a timeout says what it waited for.
  k->fail_next = -EINVAL;
  auto bad = (*t)->submit(0, {job});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("SUBMIT"), std::string::npos) << bad.status().message();
  // One open file is one scheduler entity: opening another gives the same, and any other
  // entity is an error, not a silent submit.
  EXPECT_EQ((*t)->open_entity(), 0);
  auto other = (*t)->submit(1, {job});
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("unknown scheduler entity 1"), std::string::npos) << other.status().message();
  k->fail_next = -ETIMEDOUT;
  Status late = (*t)->prep_bo(b->handle);
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.message().find("within 500 ms"), std::string::npos) << late.message();
  ASSERT_TRUE((*t)->destroy_bo(a->handle).ok());
  EXPECT_EQ(k->bos.count(a->handle), 0u);
}

TEST(RocketTransport, RejectsAnAddressAbove32Bits) {
  struct WideKernel : FakeKernel {
    int ioctl(int fd, unsigned long req, void* arg) override {
      int r = FakeKernel::ioctl(fd, req, arg);
      if (req == uapi::ioctl_create_bo()) static_cast<uapi::CreateBo*>(arg)->dma_address = uint64_t{1} << 33;
      return r;
    }
  };
  auto t = open_rocket_transport("", std::make_shared<WideKernel>());
  ASSERT_TRUE(t.ok());
  auto bo = (*t)->create_bo(4096);
  ASSERT_FALSE(bo.ok());
  EXPECT_NE(bo.status().message().find("32-bit"), std::string::npos);
}

}  // namespace
}  // namespace tessera::rknpu
