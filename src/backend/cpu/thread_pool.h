// A small fixed thread pool with a blocking parallel_for, for CPU kernels.
//
// Between the parallel regions of one inference the workers spin briefly (up to
// kSpinSeconds) before sleeping on a condition variable: a model calls parallel_for a few
// times per op, and a sleeping thread takes tens of microseconds to wake. The spin is
// bounded so an idle pool never holds a core.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn(begin, end) over [0, n) split into at most threads() contiguous chunks;
  // returns when all chunks are done. Runs inline when n is small or threads() == 1.
  // One caller at a time (the cpu device serializes its executes).
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk = 1);

  static constexpr double kSpinSeconds = 100e-6;

 private:
  void worker(int index);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  // The current job, written before generation_ is advanced (release) and read after it is
  // seen (acquire).
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int chunks_ = 0;
  std::atomic<int> pending_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace tessera::cpu
