// `tessera score MODEL.gguf --ids FILE --logits-out OUT.f32`: the logits after every prefix
// of a given token sequence, as people compare quantizations of a model along the same
// tokens.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli.h"

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
    int64_t agreement = 0;
    std::string prompt = "Once upon a time";
    std::string offload = "all";
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--ids", a->ids, "File of whitespace-separated token ids");
  cmd->add_option("--logits-out", a->out, "Output: float32 little-endian [n_ids, n_vocab]; row i after ids 0..i");
  cmd->add_option("--agreement", a->agreement,
                  "Instead: compare --device (with --offload, --device-opt) against the cpu in f32 over N greedy "
                  "positions of the cpu from -p; prints top-1 agreement and mean KL divergence");
  cmd->add_option("-p,--prompt", a->prompt, "Prompt for --agreement");
  cmd->add_option("--offload", a->offload, "Layers on --device for --agreement: N or all (default all)");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    if (a->agreement > 0) {
      // Both sides score exact f32 activations with an f32 KV cache; the reference is the
      // cpu, the other the device flags given (a fork: the file is loaded once).
      DeviceArgs cpu_args;
      cpu_args.threads = a->dev.threads;
      LanguageModelOptions ro = take(lm_options(cpu_args, "", 8, "f32"));
      LanguageModelOptions to = take(lm_options(a->dev, a->offload, 8, "f32"));
      ro.round_matmul_inputs = to.round_matmul_inputs = false;
      auto ref = take(LanguageModel::load(a->model, ro));
      auto test = take(ref->fork(to));
      const std::vector<int32_t> prompt = ref->tokenize(a->prompt, true);
      const Agreement ag = take(compare_greedy(*ref, *test, prompt, a->agreement));
      fmt::print("positions {}\ntop-1 agreement {} / {} ({:.2f} %)\nmean KL divergence {:.6g}\nmax KL divergence {:.6g}\n",
                 ag.positions, ag.top1_agree, ag.positions, 100.0 * ag.top1_rate(), ag.mean_kl, ag.max_kl);
      return;
    }
    // Scoring checks a file's weights: every matrix product takes f32 activations (no 8-bit
    // rounding of its input, which generate does as llama.cpp does) and the KV cache is f32.
    // One token per step (batch 1): every prefix's logits come from the decode step.
    LanguageModelOptions lo = take(lm_options(a->dev, "", 1, "f32"));
    lo.round_matmul_inputs = false;
    auto lm = take(LanguageModel::load(a->model, lo));
    if (a->ids.empty() || a->out.empty()) take(error(StatusCode::invalid_argument, "score needs --ids and --logits-out (or --agreement N)"));
    const std::vector<int32_t> ids = take(read_ids(a->ids, lm->vocab_size()));
    if (static_cast<int64_t>(ids.size()) > lm->context_length())
      take(error(StatusCode::out_of_range, "'", a->ids, "' has ", ids.size(), " ids but the context holds ",
                 lm->context_length()));
    std::FILE* out = std::fopen(a->out.c_str(), "wb");
    if (!out) take(error(StatusCode::invalid_argument, "cannot write '", a->out, "'"));
    for (int32_t id : ids) {
      if (Status s = lm->decode(id); !s.ok()) {
        std::fclose(out);
        take(s);
      }
      const std::span<const float> logits = lm->logits();
      if (std::fwrite(logits.data(), sizeof(float), logits.size(), out) != logits.size()) {
        std::fclose(out);
        take(error(StatusCode::internal, "writing '", a->out, "' failed"));
      }
    }
    if (std::fclose(out) != 0) take(error(StatusCode::internal, "writing '", a->out, "' failed"));
    fmt::print(stderr, "scored {} tokens: {} x {} float32 logits in {}\n", ids.size(), ids.size(),
               lm->vocab_size(), a->out);
  });
}

}  // namespace tessera::cli
