// A GGUF file's tokenizer on its own (no weights needed: llama.cpp's vocab-only files load).
//
//   auto tok = tessera::Tokenizer::load("model.gguf");
//   std::vector<int32_t> ids = (*tok)->tokenize("Hello", (*tok)->add_bos());
//
// The same tokenizer as LanguageModel::tokenize (byte-level BPE with the pre-tokenizer that
// tokenizer.ggml.pre names, SentencePiece, or Gemma 4's BPE over SentencePiece-style text).
// Const methods may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/export.h"
#include "tessera/status.h"

namespace tessera {

class TESSERA_API Tokenizer {
 public:
  // Reads the tokenizer.ggml.* metadata of a GGUF file; errors name the file and the key.
  static Result<std::unique_ptr<Tokenizer>> load(const std::string& path);
  ~Tokenizer();

  // Text to ids: with the BOS token first when add_bos; control tokens written in the text
  // ("<|im_start|>") become their ids only with parse_special.
  std::vector<int32_t> tokenize(const std::string& text, bool add_bos, bool parse_special = false) const;
  // The bytes one token stands for; control tokens give nothing, or with `special` their
  // text ("<|im_start|>"). ids back to text.
  std::string piece(int32_t id, bool special = false) const;
  std::string decode(const std::vector<int32_t>& ids) const;
  int32_t vocab_size() const;
  int32_t bos() const;
  int32_t eos() const;
  bool add_bos() const;  // the vocabulary asks for BOS (tokenizer.ggml.add_bos_token)

 private:
  Tokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera
