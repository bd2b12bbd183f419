// Pre-tokenizers of BPE vocabularies: the regular expressions a vocabulary's
// `tokenizer.ggml.pre` names split the text into words before BPE merges inside each.
//
//   gpt-2, mpt:     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   llama-bpe:      (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//                   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   qwen2:          as llama-bpe with \p{N} (one digit per word) instead of \p{N}{1,3}
//   starcoder, refact: \p{N}, then the gpt-2 expression
//   falcon:         [\p{P}$+<=>^~|`]+, then the gpt-2 expression, then [0-9][0-9][0-9]
//   deepseek-coder: [\r\n], then \s?\p{L}+, then \s?\p{P}+, then [一-龥ࠀ-一가-퟿]+, then \p{N}
//   deepseek-llm:   [\r\n], then \s?[A-Za-zµÀ-ÖØ-öø-ƺ...𞤀-𞥃]+ (cased letters of many scripts:
//                   the list is in pretokenize.cpp), then \s?[!-/:-~！-／：-～‘-‟　-。]+, then
//                   \s+$, then [一-龥ࠀ-一가-퟿]+, then \p{N}+
//   gemma4:         [^\n]+|\n+ (the text's spaces are already "▁": see tokenizer.h)
//
// Each expression is matched as a regular expression engine would (leftmost alternative
// that matches, each quantifier greedy with backtracking), repeatedly from the end of the
// previous match; its matches and the runs of text between them are the words. A list of
// expressions applies one after another: each splits every word the one before produced,
// and in each word (?!\S) and $ see the word's end as the end of the text. \s is the
// Unicode White_Space property; a white-space character outside ASCII matches \s and
// nothing else, not a bracket list that spans it (deepseek-llm's U+3000 is only \s).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tessera::gguf {

enum class PreTokenizer { gpt2, llama3, qwen2, starcoder, falcon, deepseek_coder, deepseek_llm, gemma4 };

// The pre-tokenizer for a `tokenizer.ggml.pre` value (the names above, and "gpt2",
// "llama3", "llama-v3"), or nothing for a name Tessera does not know.
std::optional<PreTokenizer> pre_tokenizer_from_name(const std::string& name);
const char* pre_tokenizer_names();  // the accepted names, for error messages

// Splits UTF-8 text into words (byte substrings whose concatenation is `text`).
std::vector<std::string> pre_tokenize(PreTokenizer p, const std::string& text);

}  // namespace tessera::gguf
