// The public Tokenizer (include/tessera/tokenizer.h) over the gguf importer's.
#include "tessera/tokenizer.h"

#include "import/gguf/gguf_file.h"
#include "import/gguf/tokenizer.h"

namespace tessera {

struct Tokenizer::Impl {
  std::unique_ptr<gguf::Tokenizer> tok;
};

Tokenizer::Tokenizer() : impl_(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& path) {
  TS_ASSIGN_OR_RETURN(gguf::File f, gguf::File::open(path));
  TS_ASSIGN_OR_RETURN(gguf::Tokenizer t, gguf::Tokenizer::from_gguf(f));
  std::unique_ptr<Tokenizer> out(new Tokenizer());
  out->impl_->tok = std::make_unique<gguf::Tokenizer>(std::move(t));
  return out;
}

std::vector<int32_t> Tokenizer::tokenize(const std::string& text, bool add_bos, bool parse_special) const {
  return impl_->tok->encode(text, add_bos, parse_special);
}
std::string Tokenizer::piece(int32_t id, bool special) const {
  if (id < 0 || id >= vocab_size()) return {};
  if (special && impl_->tok->token_type(id) == gguf::TokenType::control) return impl_->tok->token_text(id);
  return impl_->tok->piece(id);
}
std::string Tokenizer::decode(const std::vector<int32_t>& ids) const { return impl_->tok->decode(ids); }
int32_t Tokenizer::vocab_size() const { return impl_->tok->vocab_size(); }
int32_t Tokenizer::bos() const { return impl_->tok->bos(); }
int32_t Tokenizer::eos() const { return impl_->tok->eos(); }
bool Tokenizer::add_bos() const { return impl_->tok->add_bos(); }

}  // namespace tessera
