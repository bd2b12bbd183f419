// The SentencePiece ("llama", spm) tokenizer built from a GGUF vocabulary.
//
// Encoding follows the behaviour of llama.cpp's spm tokenizer, so that the same file gives
// the same ids:
//  - a space is prepended when the vocabulary asks for it (tokenizer.ggml.add_space_prefix,
//    default true), and every ' ' becomes U+2581 ("▁");
//  - the text is split into UTF-8 characters, then the adjacent pair whose concatenation is
//    a vocabulary token with the highest score is merged, repeatedly (ties: leftmost);
//  - a piece that is not a token is emitted as byte-fallback tokens "<0xXX>" (or the
//    unknown token when the vocabulary has no byte tokens).
// Control tokens in the text are not parsed (text is text). BOS is prepended on request.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "import/gguf/gguf_file.h"

namespace tessera::gguf {

// tokenizer.ggml.token_type values (llama.cpp: llama_token_type).
enum class TokenType : int32_t {
  undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.{model, tokens, scores, token_type, bos/eos/unknown_token_id,
  // add_bos_token, add_space_prefix}. Only the "llama" model is supported.
  static Result<Tokenizer> from_gguf(const File& f);

  // Token ids for `text`, with BOS first when add_bos.
  std::vector<int32_t> encode(const std::string& text, bool add_bos) const;
  // The bytes one token stands for: "▁" as ' ', "<0xXX>" byte tokens as that byte,
  // control tokens (BOS, EOS) as nothing.
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

 private:
  int32_t byte_token(uint8_t b) const;

  std::vector<std::string> tokens_;  // [vocab] token text, "▁" for spaces
  std::vector<float> scores_;        // [vocab] merge priority (higher merges first)
  std::vector<TokenType> types_;     // [vocab]
  std::unordered_map<std::string, int32_t> ids_;  // text -> id (the last id wins on duplicates)
  int32_t bos_ = 1, eos_ = 2, unk_ = 0;
  bool add_bos_ = true, add_space_prefix_ = true;
};

}  // namespace tessera::gguf
