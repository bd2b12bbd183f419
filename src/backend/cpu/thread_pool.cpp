#include "backend/cpu/thread_pool.h"

#include <algorithm>

namespace tessera::cpu {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

static void run_chunk(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int chunks, int c) {
  int64_t b = n * c / chunks, e = n * (c + 1) / chunks;
  if (b < e) fn(b, e);
}

void ThreadPool::parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk) {
  int chunks = static_cast<int>(std::min<int64_t>(threads(), std::max<int64_t>(n / std::max<int64_t>(min_chunk, 1), 1)));
  if (chunks <= 1 || workers_.empty()) {
    if (n > 0) fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    job_n_ = n;
    chunks_ = chunks;
    pending_ = chunks - 1;
    ++generation_;
  }
  cv_.notify_all();
  run_chunk(fn, n, chunks, 0);
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int chunks;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      job = job_;
      n = job_n_;
      chunks = chunks_;
    }
    if (index < chunks) {
      run_chunk(*job, n, chunks, index);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }
}

}  // namespace tessera::cpu
