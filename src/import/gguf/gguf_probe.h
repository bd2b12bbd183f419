// probe_gguf: everything Tessera does with an untrusted GGUF file short of running it —
// parse, read the tokenizer and the llama hyperparameters, build a step graph, encode and
// decode a little text. The fuzz target (fuzz/gguf_fuzz.cpp) and the mutation test call it;
// its contract is that any bytes give a Status, never a crash or an unbounded allocation.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/status.h"

namespace tessera::gguf {

Status probe_gguf(const uint8_t* data, size_t size);

}  // namespace tessera::gguf
