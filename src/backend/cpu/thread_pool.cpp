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

// Spins until done() or kSpinSeconds pass; true if done() became true. The clock is read
// every 64 pauses (a pause is tens of cycles), so the check itself costs little.
template <typename F>
bool spin_until(F&& done) {
  if (done()) return true;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (done()) return true;
    cpu_relax();
    if (i % 64 == 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > ThreadPool::kSpinSeconds)
      return done();
  }
}

constexpr uint64_t kChunkBits = 16;  // threads are at most 256 (cpu_device_info)
constexpr uint64_t kChunkMask = (uint64_t{1} << kChunkBits) - 1;

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

void ThreadPool::run(int64_t n, Job job, int64_t min_chunk) {
  const int chunks =
      static_cast<int>(std::min<int64_t>(threads(), std::max<int64_t>(n / std::max<int64_t>(min_chunk, 1), 1)));
  if (chunks <= 1 || workers_.empty()) {
    if (n > 0) job.call(job.fn, 0, n);
    return;
  }
  job_ = job;
  job_n_ = n;
  pending_.store(chunks - 1, std::memory_order_relaxed);
  const uint64_t word = ((generation_.load(std::memory_order_relaxed) >> kChunkBits) + 1) << kChunkBits;
  generation_.store(word | static_cast<uint64_t>(chunks), std::memory_order_seq_cst);
  // A worker that went to sleep counted itself under the lock before it checked the
  // generation; seeing no sleeper here means every worker will see the new generation.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mu_); }
    cv_.notify_all();
  }
  job.call(job.fn, 0, n / chunks);
  auto done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
  if (!spin_until(done)) {
    std::unique_lock<std::mutex> lock(mu_);
    caller_sleeping_.store(true, std::memory_order_seq_cst);
    done_cv_.wait(lock, done);
    caller_sleeping_.store(false, std::memory_order_relaxed);
  }
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] {
      return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!spin_until(ready)) {
      std::unique_lock<std::mutex> lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      cv_.wait(lock, ready);
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    const int chunks = static_cast<int>(seen & kChunkMask);
    if (index >= chunks) continue;  // not part of this region: the job's fields are not ours to read
    const int64_t n = job_n_;
    const int64_t b = n * index / chunks, e = n * (index + 1) / chunks;
    if (b < e) job_.call(job_.fn, b, e);
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_sleeping_.load(std::memory_order_seq_cst)) {
      { std::lock_guard<std::mutex> lock(mu_); }
      done_cv_.notify_all();
    }
  }
}

}  // namespace tessera::cpu
