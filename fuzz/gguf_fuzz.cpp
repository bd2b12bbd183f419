// libFuzzer target for the GGUF reader, tokenizer and llama graph builder: any input must
// give a Status, never a crash (scripts/fuzz.sh builds and runs it).
#include <cstddef>
#include <cstdint>

#include "import/gguf/gguf_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)tessera::gguf::probe_gguf(data, size);
  return 0;
}
