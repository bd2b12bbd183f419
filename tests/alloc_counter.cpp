// The replaced global operator new and delete of the test programs (alloc_counter.h).
#include "alloc_counter.h"

#include <cstddef>
#include <cstdlib>
#include <new>

#include <execinfo.h>
#include <unistd.h>

namespace tessera::testing {

std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_allocations{0};

namespace {

const bool g_trace = std::getenv("TESSERA_ALLOC_TRACE") != nullptr;

void* counted_alloc(std::size_t n, std::size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (g_trace) {
      g_counting = false;  // backtrace_symbols_fd writes without allocating, but be sure
      void* frames[32];
      int k = backtrace(frames, 32);
      backtrace_symbols_fd(frames, k, 2);
      (void)!write(2, "----\n", 5);
      g_counting = true;
    }
  }
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n ? n : 1);
  if (!p) throw std::bad_alloc();
  return p;
}

}  // namespace
}  // namespace tessera::testing

using tessera::testing::counted_alloc;

void* operator new(std::size_t n) { return counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
