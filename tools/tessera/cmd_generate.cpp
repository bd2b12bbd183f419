// `tessera generate MODEL.gguf -p PROMPT`: streams generated text, then tokens per second.
#include <fmt/format.h>

#include <cstdio>

#include "cli.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"

namespace tessera::cli {

void add_generate_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate text with a GGUF llama model (streams tokens as produced)");
  struct Args {
    std::string model;
    std::string prompt;
    int64_t n = 64;
    int64_t batch = 32;
    int64_t ctx = 0;
    std::string kv_type = "f16";
    bool mmap = false;
    std::string offload;
    bool quiet = false;
    llm::SamplerOptions so;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--prompt,-p", a->prompt, "Prompt text");
  cmd->add_option("--n-predict,-n", a->n, "Tokens to generate (stops earlier at end-of-sequence)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  add_sampler_options(cmd, a->so);
  cmd->add_option("--batch,-b", a->batch, "Prompt tokens per step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--ctx-size,-c", a->ctx,
                  "Context size: KV cache rows (default: the file's context length, at most 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--kv-type", a->kv_type, "KV cache type of the cpu layers: f16 (default), f32 or q8_0 (blocks of 32, half the bytes of f16)");
  cmd->add_flag("--mmap", a->mmap, kMmapHelp);
  cmd->add_option("--offload,--n-gpu-layers", a->offload,
                  "Run the first N layers (or 'all') on --device and the rest on the cpu");
  cmd->add_flag("--quiet,-q", a->quiet, "No model summary or speed line on stderr");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    auto model = take(gguf::LlamaModel::open(a->model, gguf_load(a->mmap)));
    if (a->ctx > 0) take(model->set_context(a->ctx));
    const gguf::Tokenizer& tok = model->tokenizer();
    const llm::SamplerOptions& so = a->so;
    take(llm::Sampler::validate(so));
    auto gen = take(llm::Generator::create(
        *model, take(generator_options(a->dev, a->offload, model->layers(), a->batch, a->kv_type))));
    if (!a->quiet) print_model_summary(*model, *gen, a->kv_type);
    std::vector<int32_t> prompt = tok.encode(a->prompt, tok.add_bos());
    if (prompt.empty()) prompt.push_back(tok.bos());
    if (static_cast<int64_t>(prompt.size()) > model->context_length())
      take(error(StatusCode::out_of_range, "the prompt has ", prompt.size(), " tokens but the context holds ",
                 model->context_length()));
    std::string shown = tok.decode(prompt);
    std::fputs(shown.c_str(), stdout);
    std::fflush(stdout);
    llm::Sampler sampler(so);
    auto stats = take(gen->generate(prompt, a->n, sampler, tok.eos(), [&](int32_t id) {
      std::string piece = tok.piece(id);
      if (shown.empty() && !piece.empty() && piece[0] == ' ' && tok.add_space_prefix()) piece.erase(0, 1);
      shown += piece;
      std::fputs(piece.c_str(), stdout);
      std::fflush(stdout);
      return true;
    }));
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (!a->quiet)
      fmt::print(stderr, "\nprompt: {} tokens, {:.1f} tokens/s | generation: {} tokens, {:.1f} tokens/s{}\n",
               stats.prompt_tokens, stats.prompt_tokens_per_second(), stats.generated_tokens,
               stats.generate_tokens_per_second(),
               stats.stopped_at_eos ? " (end of sequence)"
                                    : (stats.context_full ? " (context full)" : ""));
  });
}

}  // namespace tessera::cli
