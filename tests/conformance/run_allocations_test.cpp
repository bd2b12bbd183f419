// Every op's conformance cases on the cpu device, counted for heap allocations once the
// session has run (alloc_counter.h): a run allocates nothing, whichever kernel the op
// takes, fast or reference, plain or quantized.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "../alloc_counter.h"
#include "backend/cpu/kernel.h"
#include "conformance.h"

namespace tessera::conformance {
namespace {

// Runs every input set of the case once (warm-up: thread_local scratch grows on first
// use), then the last input set twice more, counting; the allocations of those two runs.
int64_t steady_allocations(const Case& c, const char* threads, std::string& err) {
  SessionOptions opts;
  opts.device = "cpu";
  opts.device_options["threads"] = threads;
  auto s = Session::create(c.g, opts);
  if (!s.ok()) {
    err = s.status().to_string();
    return -1;
  }
  auto feed = [&](const std::vector<std::vector<uint8_t>>& run) {
    for (size_t i = 0; i < run.size(); ++i) {
      Status in = (*s)->set_input(i, run[i].data(), static_cast<int64_t>(run[i].size()));
      if (!in.ok()) return in;
    }
    return Status::Ok();
  };
  for (const auto& run : c.runs) {
    Status st = feed(run);
    if (st.ok()) st = (*s)->run();
    if (!st.ok()) {
      err = st.to_string();
      return -1;
    }
  }
  if (Status st = feed(c.runs.back()); !st.ok()) {
    err = st.to_string();
    return -1;
  }
  testing::g_allocations = 0;
  testing::g_counting = true;
  Status st = (*s)->run();
  if (st.ok()) st = (*s)->run();
  testing::g_counting = false;
  if (!st.ok()) {
    err = st.to_string();
    return -1;
  }
  return testing::g_allocations.load();
}

TEST(CpuRunAllocations, NoOpAllocatesWhenItRuns) {
  std::set<std::string> allocating;
  int cases = 0;
  for (const auto& [op, builders] : case_registry()) {
    for (size_t b = 0; b < builders.size(); ++b) {
      Rng rng(static_cast<uint32_t>(1000 * static_cast<int>(op) + b + 1));
      for (const Case& c : builders[b](rng)) {
        if (c.g.outputs.empty() || c.runs.empty()) continue;
        if (c.quantized && !cpu::kernel_table().find(op, cpu::KernelKind::quant)) continue;
        for (const char* threads : {"1", "2"}) {
          std::string err;
          const int64_t n = steady_allocations(c, threads, err);
          ASSERT_GE(n, 0) << c.label << ": " << err;
          if (n > 0) allocating.insert(std::string(op_name(op)) + " (" + c.label + ", " + threads + " threads: " +
                                       std::to_string(n) + " in 2 runs)");
        }
        ++cases;
      }
    }
  }
  std::string list;
  for (const auto& a : allocating) list += "\n  " + a;
  EXPECT_TRUE(allocating.empty()) << allocating.size() << " cases allocate (TESSERA_ALLOC_TRACE=1 prints where):"
                                  << list;
  EXPECT_GT(cases, 100);
}

}  // namespace
}  // namespace tessera::conformance
