// layer_of_node: reads the "blk.<i>/" prefix that decoder builders give layer nodes.
#include "runtime/llm/decoder.h"

namespace tessera::llm {

int layer_of_node(const Node& n) {
  constexpr char kPrefix[] = "blk.";
  constexpr size_t kLen = sizeof(kPrefix) - 1;
  if (n.name.compare(0, kLen, kPrefix) != 0) return -1;
  size_t i = kLen;
  int64_t v = 0;
  while (i < n.name.size() && n.name[i] >= '0' && n.name[i] <= '9' && v < (int64_t{1} << 30))
    v = v * 10 + (n.name[i++] - '0');
  if (i == kLen || i >= n.name.size() || n.name[i] != '/') return -1;
  return static_cast<int>(v);
}

}  // namespace tessera::llm
