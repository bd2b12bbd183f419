#include "backend/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tessera::cpu {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until done() or kSpinSeconds pass; true if done() became true.
template <typename F>
bool spin_until(F&& done) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 256 == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > ThreadPool::kSpinSeconds)
      return done();
  }
}

void run_chunk(const std::function<void(int64_t, int64_t)>& fn, int64_t n, int chunks, int c) {
  int64_t b = n * c / chunks, e = n * (c + 1) / chunks;
  if (b < e) fn(b, e);
}

}  // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this, i] { worker(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
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
    pending_.store(chunks - 1, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  run_chunk(fn, n, chunks, 0);
  if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] { return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(ready)) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, ready);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    // A consistent snapshot of the newest job: a worker that is not one of a job's chunks
    // may see the next job's fields being written, so they are read under the lock.
    const std::function<void(int64_t, int64_t)>* job;
    int64_t n;
    int chunks;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen = generation_.load(std::memory_order_acquire);
      job = job_;
      n = job_n_;
      chunks = chunks_;
    }
    if (index < chunks) {
      run_chunk(*job, n, chunks, index);
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        done_cv_.notify_all();
      }
    }
  }
}

}  // namespace tessera::cpu
