// Byte-level BPE (GPT-2 style, `tokenizer.ggml.model` = "gpt2"): the byte <-> character
// mapping and the merge step. The vocabulary's token texts are strings of mapped
// characters: every byte of the text stands for one printable character (bytes
// '!'..'~', 0xA1..0xAC and 0xAE..0xFF for themselves, the other 68 bytes, in order, for
// U+0100, U+0101, ...), so a space is "Ġ" (U+0120) and a newline "Ċ" (U+010A).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "import/gguf/gguf_file.h"

namespace tessera::gguf {

// Bytes -> their mapped characters (UTF-8), and back (characters that are not a byte's
// mapping are kept as their UTF-8 bytes).
std::string bpe_map_bytes(const std::string& bytes);
std::string bpe_unmap(const std::string& mapped);

class BpeMerges {
 public:
  // Reads tokenizer.ggml.merges: "left right" strings, earlier merges first.
  Status load(const File& f);
  // Splits a mapped word into UTF-8 characters and merges, repeatedly, the adjacent pair
  // with the earliest merge (ties: the leftmost) until no pair has one. Returns the pieces.
  std::vector<std::string> merge(const std::string& mapped_word) const;
  size_t size() const { return ranks_.size(); }

 private:
  int rank(const std::string& left, const std::string& right) const;
  std::unordered_map<std::string, int> ranks_;  // "left right" -> position in the list
};

}  // namespace tessera::gguf
