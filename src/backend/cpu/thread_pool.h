// A small fixed thread pool with a blocking parallel_for, for CPU kernels.
#pragma once

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
  void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk = 1);

 private:
  void worker(int index);
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t job_n_ = 0;
  int chunks_ = 0;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace tessera::cpu
