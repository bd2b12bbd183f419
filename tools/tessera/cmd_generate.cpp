// `tessera generate MODEL.gguf -p PROMPT`: streams generated text, then tokens per second.
#include <fmt/format.h>

#include <cstdio>

#include "cli.h"

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
    GenerateOptions go;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--prompt,-p", a->prompt, "Prompt text");
  cmd->add_option("--n-predict,-n", a->n, "Tokens to generate (stops earlier at end-of-sequence)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  add_sampler_options(cmd, a->go);
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
    LanguageModelOptions lo = take(lm_options(a->dev, a->offload, a->batch, a->kv_type, a->mmap));
    lo.context = a->ctx;
    GenerateOptions go = a->go;
    go.max_tokens = a->n;
    if (!a->quiet) lo.session.progress = load_progress(a->model);
    auto lm = take(LanguageModel::load(a->model, lo));
    take(go.validate());
    if (!a->quiet) print_model_summary(*lm, a->kv_type);
    std::vector<int32_t> prompt = lm->tokenize(a->prompt, lm->info().add_bos);
    if (prompt.empty()) prompt.push_back(lm->bos_token());
    if (static_cast<int64_t>(prompt.size()) > lm->context_length())
      take(error(StatusCode::out_of_range, "the prompt has ", prompt.size(), " tokens but the context holds ",
                 lm->context_length()));
    std::fputs(lm->detokenize(prompt).c_str(), stdout);
    std::fflush(stdout);
    auto r = take(lm->generate_tokens(prompt, go, [](std::string_view piece) {
      std::fputs(std::string(piece).c_str(), stdout);
      std::fflush(stdout);
      return true;
    }));
    std::fputs("\n", stdout);
    std::fflush(stdout);
    if (!a->quiet)
      fmt::print(stderr, "\nprompt: {} tokens, {:.1f} tokens/s | generation: {} tokens, {:.1f} tokens/s{}\n",
                 r.prompt_tokens, r.prompt_tokens_per_second(), r.tokens.size(), r.generate_tokens_per_second(),
                 r.stopped_at_eos ? " (end of sequence)" : (r.context_full ? " (context full)" : ""));
  });
}

}  // namespace tessera::cli
