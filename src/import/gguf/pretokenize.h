// Pre-tokenizers of byte-level BPE vocabularies: the regular expression a vocabulary's
// `tokenizer.ggml.pre` names splits the text into words before BPE merges inside each.
//
//   gpt-2:     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama-bpe: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//              ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:     as llama-bpe with \p{N} (one digit per word) instead of \p{N}{1,3}
//
// Each expression is matched as a regular expression engine would (leftmost alternative
// that matches, each quantifier greedy with backtracking), repeatedly from the end of the
// previous word; a character no alternative matches is a word of its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tessera::gguf {

enum class PreTokenizer { gpt2, llama3, qwen2 };

// The pre-tokenizer for a `tokenizer.ggml.pre` value ("gpt-2", "llama-bpe" or "llama3",
// "qwen2"), or nothing for a name Tessera does not know.
std::optional<PreTokenizer> pre_tokenizer_from_name(const std::string& name);
const char* pre_tokenizer_names();  // the accepted names, for error messages

// Splits UTF-8 text into words (byte substrings whose concatenation is `text`).
std::vector<std::string> pre_tokenize(PreTokenizer p, const std::string& text);

}  // namespace tessera::gguf
