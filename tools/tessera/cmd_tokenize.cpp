// `tessera tokenize MODEL.gguf [--ids] [--no-bos] [--no-parse-special] [--file F | [--] TEXT]`:
// the tokens of a text, one line each as `ID -> 'PIECE'` (as llama.cpp's llama-tokenize
// prints them), or with --ids the ids alone as one list `[ID, ID, ...]` without BOS. The
// vocabulary's own rules decide BOS (tokenizer.ggml.add_bos_token); control-token texts
// become their tokens unless --no-parse-special. A vocab-only GGUF file is enough.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include "cli.h"
#include "tessera/tokenizer.h"

namespace tessera::cli {

namespace {
struct TokenizeArgs {
  std::string model;
  std::string text;
  std::string file;
  bool ids = false;
  bool no_bos = false;
  bool no_parse_special = false;
};

void run_tokenize(const TokenizeArgs& a) {
  std::string text = a.text;
  if (!a.file.empty()) {
    std::ifstream f(a.file, std::ios::binary);
    if (!f) take(error(StatusCode::not_found, "[tokenize] cannot read '", a.file, "'"));
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  auto tok = take(Tokenizer::load(a.model));
  const bool bos = !a.ids && !a.no_bos && tok->add_bos();
  const std::vector<int32_t> ids = tok->tokenize(text, bos, !a.no_parse_special);
  if (a.ids) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? ", " : "") + std::to_string(ids[i]);
    fmt::print("{}]\n", line);
    return;
  }
  for (int32_t id : ids) fmt::print("{:6d} -> '{}'\n", id, tok->piece(id, /*special=*/true));
}
}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto a = std::make_shared<TokenizeArgs>();
  auto* cmd = app.add_subcommand("tokenize", "Print the tokens of a text (as llama-tokenize), or with --ids the ids");
  cmd->add_option("model", a->model, "GGUF file (a vocab-only file is enough)")->required();
  cmd->add_option("text", a->text, "The text (may be empty; put -- before one that starts with a dash)");
  cmd->add_option("--file,-f", a->file, "Read the text from this file instead");
  cmd->add_flag("--ids", a->ids, "Print only the ids, as [ID, ID, ...], without BOS");
  cmd->add_flag("--no-bos", a->no_bos, "No BOS even when the vocabulary asks for it");
  cmd->add_flag("--no-parse-special", a->no_parse_special, "Control-token texts stay text");
  cmd->positionals_at_end(false);
  cmd->callback([a] { run_tokenize(*a); });
}

}  // namespace tessera::cli
