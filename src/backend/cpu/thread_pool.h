// A small fixed thread pool with a blocking parallel_for, for CPU kernels.
//
// An LLM decode step calls parallel_for about a hundred times, each region 20-60 us of
// work, so a region must cost far less than that to start and to finish:
// - dispatch is lock-free: the caller publishes the job and advances an atomic
//   generation; workers that are spinning see it within a cache-line transfer;
// - between regions the workers spin (with the CPU's pause hint) for up to kSpinSeconds,
//   then sleep on a condition variable; the caller takes the lock and notifies only when
//   a worker is actually asleep (sleepers_), so a busy pool makes no system calls;
// - the job is passed as a function reference (no std::function, nothing allocated).
// The spin is bounded so that an idle pool never holds a core from other processes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over [0, n) split into at most threads() contiguous chunks of at
  // least min_chunk items (chunk c is [n*c/k, n*(c+1)/k), so the split depends only on n,
  // k and min_chunk); returns when all chunks are done. Runs inline when one chunk
  // suffices or threads() == 1. One caller at a time (the cpu device serializes its
  // executes). `fn` is called by reference: nothing is copied or allocated.
  template <typename F>
  void parallel_for(int64_t n, F&& fn, int64_t min_chunk = 1) {
    using Fn = std::remove_reference_t<F>;
    run(n, Job{const_cast<void*>(static_cast<const void*>(&fn)),
               [](void* f, int64_t b, int64_t e) { (*static_cast<Fn*>(f))(b, e); }},
        min_chunk);
  }

  // How long an idle worker spins before it sleeps. Long enough to bridge the small
  // single-threaded ops between two regions of a decode step; short enough that a pool
  // between inferences gives its core back within a fraction of a millisecond.
  static constexpr double kSpinSeconds = 200e-6;

 private:
  struct Job {
    void* fn = nullptr;
    void (*call)(void*, int64_t, int64_t) = nullptr;
  };
  void run(int64_t n, Job job, int64_t min_chunk);
  void worker(int index);

  std::vector<std::thread> workers_;
  // The current job: written by the caller before generation_ advances (release), read by
  // the workers that take part after they see it (acquire). generation_ holds
  // (count << 16) | chunks, so a worker learns from one load whether it takes part; those
  // that do acknowledge through pending_ before the caller returns, so the fields are
  // never rewritten while a worker may still read them, and the others never read them.
  Job job_;
  int64_t job_n_ = 0;
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;       // workers sleep here between regions
  std::condition_variable done_cv_;  // the caller sleeps here when chunks run long
  std::atomic<bool> caller_sleeping_{false};
};

}  // namespace tessera::cpu
