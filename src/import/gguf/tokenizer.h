// Tokenizers built from a GGUF vocabulary, following llama.cpp's behaviour so that the
// same file gives the same ids. `tokenizer.ggml.model` selects one of two:
//
// SentencePiece ("llama", spm):
//  - a space is prepended when the vocabulary asks for it (tokenizer.ggml.add_space_prefix,
//    default true), and every ' ' becomes U+2581 ("▁");
//  - the text is split into UTF-8 characters, then the adjacent pair whose concatenation is
//    a vocabulary token with the highest score is merged, repeatedly (ties: leftmost);
//  - a piece that is not a token is emitted as byte-fallback tokens "<0xXX>" (or the
//    unknown token when the vocabulary has no byte tokens).
//
// Byte-level BPE ("gpt2"; Llama 3, Qwen2, GPT-2, DeepSeek, Falcon, MPT, StarCoder and
// their kin):
//  - the pre-tokenizer named by tokenizer.ggml.pre (pretokenize.h) splits the text into
//    words; each word's bytes are mapped to characters (bpe.h);
//  - a word that is a token as a whole is emitted as is when the pre-tokenizer is
//    llama-bpe (Llama 3 ignores merges there); otherwise tokenizer.ggml.merges merge it
//    and each piece is emitted (a piece that is not a token, as its characters' tokens).
//
// BPE over SentencePiece-style text ("gemma4", Gemma 4; its pre-tokenizer is gemma4
// whatever tokenizer.ggml.pre says):
//  - every ' ' becomes U+2581 ("▁"), no space is prepended, and the text is cut into
//    lines and runs of newlines; the bytes are not mapped;
//  - a run of newlines that is a token is emitted as is; otherwise tokenizer.ggml.merges
//    merge the word, and a piece that is not a token is emitted as its bytes' "<0xXX>"
//    tokens (a byte without one is dropped). BOS is always added.
//
// Special tokens: user-defined tokens found in the text are always emitted as themselves
// (the text is cut around them, longest first); control tokens (BOS, <|im_start|>, ...)
// only when the caller asks for parse_special, otherwise text is text. BOS is prepended
// on request.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/gguf/bpe.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/pretokenize.h"

namespace tessera::gguf {

// tokenizer.ggml.token_type values (llama.cpp: llama_token_type).
enum class TokenType : int32_t {
  undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

class Tokenizer {
 public:
  enum class Model { spm, bpe };

  // Reads tokenizer.ggml.{model, pre, tokens, scores, token_type, merges,
  // bos/eos/unknown_token_id, add_bos_token, add_space_prefix}. Models: "llama" (spm),
  // "gpt2" (byte-level BPE with a pre-tokenizer of pretokenize.h) and "gemma4" (bpe over
  // SentencePiece-style text); others, and pre-tokenizers Tessera does not know, are
  // refused naming the key and value.
  static Result<Tokenizer> from_gguf(const File& f);

  // Token ids for `text`, with BOS first when add_bos; control tokens written in the text
  // become their ids only with parse_special.
  std::vector<int32_t> encode(const std::string& text, bool add_bos, bool parse_special = false) const;
  // The bytes one token stands for: spm (and gemma4) "▁" as ' ' and "<0xXX>" byte tokens
  // as that byte; byte-level bpe mapped characters as their bytes; user-defined tokens as
  // their text; control tokens (BOS, EOS) as nothing.
  std::string piece(int32_t id) const;
  // The text of a sequence: the pieces joined, without the space the encoder prepended.
  std::string decode(const std::vector<int32_t>& ids) const;

  int32_t vocab_size() const { return static_cast<int32_t>(tokens_.size()); }
  int32_t bos() const { return bos_; }
  int32_t eos() const { return eos_; }
  int32_t unk() const { return unk_; }
  bool add_bos() const { return add_bos_; }
  bool add_space_prefix() const { return add_space_prefix_; }
  const std::string& token_text(int32_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  TokenType token_type(int32_t id) const { return types_.at(static_cast<size_t>(id)); }
  Model model() const { return model_; }
  // bpe whose token texts are mapped bytes (bpe.h); false for spm and gemma4.
  bool byte_level() const { return model_ == Model::bpe && byte_encode_; }
  // The id of a token text, or -1.
  int32_t find(const std::string& text) const;

 private:
  int32_t byte_token(uint8_t b) const;
  // Appends the ids of one run of plain text (no special tokens in it).
  void encode_spm(const std::string& text, bool prefix_space, std::vector<int32_t>& out) const;
  void encode_bpe(const std::string& text, std::vector<int32_t>& out) const;

  Model model_ = Model::spm;
  PreTokenizer pre_ = PreTokenizer::gpt2;  // bpe only
  bool ignore_merges_ = false;             // bpe: whole-word tokens skip merging (llama-bpe)
  bool byte_encode_ = true;                // bpe: words' bytes mapped to characters (not gemma4)
  bool escape_spaces_ = false;             // bpe: ' ' -> "▁" before pre-tokenizing (gemma4)
  BpeMerges merges_;                       // bpe only
  std::vector<int32_t> specials_;          // control and user-defined tokens, longest text first

  std::vector<std::string> tokens_;  // [vocab] token text, "▁" for spaces
  std::vector<float> scores_;        // [vocab] merge priority (higher merges first)
  std::vector<TokenType> types_;     // [vocab]
  std::unordered_map<std::string, int32_t> ids_;  // text -> id (the last id wins on duplicates)
  int32_t bos_ = 1, eos_ = 2, unk_ = 0;
  bool add_bos_ = true, add_space_prefix_ = true;
};

}  // namespace tessera::gguf
