// Running what a fuzz target parsed on the cpu device, within bounds: only small graphs
// (the fuzzer must stay fast and within its memory limit), inputs filled from the fuzz
// bytes. Any Status is an acceptable answer; a crash, a sanitizer report or a hang is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "tessera/graph.h"
#include "tessera/session.h"

namespace tessera::fuzz {

// Graphs are run when every tensor holds at most kMaxTensorBytes and the graph's tensors
// together at most kMaxGraphBytes, so that one run takes milliseconds under ASan.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 20;
constexpr int64_t kMaxGraphBytes = int64_t{4} << 20;
constexpr size_t kMaxNodes = 256;

inline bool small_enough(const Graph& g) {
  if (g.nodes().size() > kMaxNodes) return false;
  int64_t total = 0;
  for (const Tensor& t : g.tensors()) {
    auto b = t.host_bytes();
    if (!b.ok() || *b > kMaxTensorBytes) return false;
    total += *b;
    if (total > kMaxGraphBytes) return false;
  }
  return true;
}

// Plans `g` for the cpu, fills its inputs from `seed` bytes (repeated) and runs it once.
inline void run_on_cpu(Graph g, const uint8_t* seed, size_t seed_size) {
  if (!small_enough(g)) return;
  auto s = Session::create(std::move(g), SessionOptions{});
  if (!s.ok()) return;
  for (size_t i = 0; i < (*s)->graph().inputs.size(); ++i) {
    const Tensor& t = (*s)->graph().tensor((*s)->graph().inputs[i]);
    auto bytes = t.host_bytes();
    if (!bytes.ok()) return;
    std::vector<uint8_t> in(static_cast<size_t>(*bytes));
    for (size_t k = 0; k < in.size(); ++k)
      in[k] = static_cast<uint8_t>((seed_size ? seed[(k * 7919) % seed_size] : 0) + k * 131 + 7);
    if (!(*s)->set_input(i, in.data(), *bytes).ok()) return;
  }
  (void)(*s)->run();
}

}  // namespace tessera::fuzz
