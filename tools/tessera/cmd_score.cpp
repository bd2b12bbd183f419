// `tessera score MODEL.gguf --ids FILE --logits-out OUT.f32`: the logits after every prefix
// of a given token sequence, as people compare quantizations of a model along the same
// tokens.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"

namespace tessera::cli {

namespace {

// Whitespace-separated token ids, each checked against the vocabulary.
Result<std::vector<int32_t>> read_ids(const std::string& path, int64_t vocab) {
  std::ifstream f(path);
  if (!f) return error(StatusCode::not_found, "cannot read the ids file '", path, "'");
  std::vector<int32_t> ids;
  std::string word;
  while (f >> word) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(word, &used);
    } catch (...) {
      used = 0;
    }
    if (used != word.size() || v < 0 || v >= vocab)
      return error(StatusCode::invalid_argument, "'", path, "': token ", ids.size(), " ('", word,
                   "') is not an id in 0..", vocab - 1);
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return error(StatusCode::invalid_argument, "'", path, "' holds no token ids");
  return ids;
}

}  // namespace

void add_score_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("score", "Logits after each prefix of a token sequence (float32 [n_ids, n_vocab])");
  struct Args {
    std::string model, ids, out;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--ids", a->ids, "File of whitespace-separated token ids")->required();
  cmd->add_option("--logits-out", a->out, "Output: float32 little-endian [n_ids, n_vocab]; row i after ids 0..i")
      ->required();
  a->dev.add_to(cmd);
  cmd->callback([a] {
    auto model = take(gguf::LlamaModel::open(a->model));
    const std::vector<int32_t> ids = take(read_ids(a->ids, model->vocab_size()));
    if (static_cast<int64_t>(ids.size()) > model->context_length())
      take(error(StatusCode::out_of_range, "'", a->ids, "' has ", ids.size(), " ids but the context holds ",
                 model->context_length()));
    // Scoring checks a file's weights: every matrix product takes f32 activations (no 8-bit
    // rounding of its input, which generate does as llama.cpp does) and the KV cache is f32.
    model->set_input_rounding(false);
    llm::GeneratorOptions go = take(generator_options(a->dev, "", model->layers(), 1));
    go.kv_type = DType::f32;
    // One token per step: every prefix's logits come from the decode session.
    auto gen = take(llm::Generator::create(*model, go));
    std::FILE* out = std::fopen(a->out.c_str(), "wb");
    if (!out) take(error(StatusCode::invalid_argument, "cannot write '", a->out, "'"));
    for (int32_t id : ids) {
      auto logits = gen->step(id);
      if (!logits.ok()) {
        std::fclose(out);
        take(logits.status());
      }
      if (std::fwrite(logits->data(), sizeof(float), logits->size(), out) != logits->size()) {
        std::fclose(out);
        take(error(StatusCode::internal, "writing '", a->out, "' failed"));
      }
    }
    if (std::fclose(out) != 0) take(error(StatusCode::internal, "writing '", a->out, "' failed"));
    fmt::print(stderr, "scored {} tokens: {} x {} float32 logits in {}\n", ids.size(), ids.size(),
               model->vocab_size(), a->out);
  });
}

}  // namespace tessera::cli
