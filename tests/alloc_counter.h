// Heap allocations of a test program, counted: tests/alloc_counter.cpp replaces the global
// operator new of every test program (tests/CMakeLists.txt); while g_counting is set (one
// test at a time) each allocation on any thread (the pool's workers too) adds one to
// g_allocations. TESSERA_ALLOC_TRACE=1 prints the stack of each counted allocation.
#pragma once

#include <atomic>
#include <cstdint>

namespace tessera::testing {

extern std::atomic<bool> g_counting;
extern std::atomic<int64_t> g_allocations;

}  // namespace tessera::testing
