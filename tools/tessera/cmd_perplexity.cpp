// `tessera perplexity MODEL.gguf -f TEXT [-c N] [-b N]`: the perplexity of a model over a
// text, computed as llama-perplexity computes it, so the numbers compare:
//  - the text is tokenized once (BOS first when the vocabulary adds it) and cut into
//    chunks of n_ctx tokens (-c); a partial last chunk is dropped, and at least two chunks
//    are needed;
//  - each chunk is evaluated from an empty KV cache, its first token replaced by BOS when
//    the vocabulary adds BOS;
//  - only the second half is scored: the logits at positions n_ctx/2 .. n_ctx-2 against the
//    next token, -log softmax in double (the max subtracted in float, as llama.cpp does);
//  - after each chunk the running estimate exp(mean NLL) is printed as "[i]ppl,"; at the
//    end "PPL = exp(mean) +/- ppl * sd(NLL) / sqrt(count - 1)".
// With --kl-divergence-base FILE the scored positions' log-probabilities are also written to
// FILE in llama-perplexity's format (kld.h); with --kl-divergence as well, FILE is read
// instead (no text: its tokens are used) and the model's distributions are compared with
// the base's: KL divergence, Δp, same top token, as llama-perplexity prints them.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include "cli.h"
#include "kld.h"

namespace tessera::cli {

namespace {

// log softmax(logits)[tok], as llama-perplexity computes it.
double log_prob(std::span<const float> logits, int32_t tok) {
  float max = logits[0];
  for (float v : logits) max = std::max(max, v);
  double sum = 0;
  for (float v : logits) sum += std::exp(v - max);
  return static_cast<double>(logits[static_cast<size_t>(tok)] - max) - std::log(sum);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("perplexity", "Perplexity over a text file, computed as llama-perplexity does");
  struct Args {
    std::string model, text_file, kv_type = "f16", kld_base;
    int64_t ctx = 0, batch = 512, chunks = -1;
    bool exact = false, quiet = false, kld = false;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--file,-f", a->text_file, "Text file to score (not with --kl-divergence)");
  cmd->add_option("--ctx-size,-c", a->ctx, "Tokens per chunk (default: the model's context, at most 4096)")
      ->check(CLI::Range(int64_t{4}, int64_t{1} << 20));
  cmd->add_option("--batch,-b", a->batch, "Tokens per step while reading the first half of a chunk")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--chunks", a->chunks, "Score at most this many chunks (default: all)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16 (default, as llama.cpp), f32 or q8_0 (blocks of 32, half the bytes of f16)");
  cmd->add_flag("--exact", a->exact,
                "f32 activations into every matrix product and an f32 KV cache (the reference arithmetic; "
                "by default matrix inputs are rounded to 8 bits as llama.cpp's CPU path does)");
  cmd->add_option("--kl-divergence-base", a->kld_base,
                  "With -f: also write the scored positions' log-probabilities to this file (llama-perplexity's "
                  "format); with --kl-divergence: read them from it");
  cmd->add_flag("--kl-divergence", a->kld,
                "Compare this model's token distributions with those in --kl-divergence-base (its tokens, no -f): "
                "KL divergence, probability differences and same top token, as llama-perplexity prints them");
  cmd->add_flag("--quiet,-q", a->quiet, "No model summary on stderr");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    if (a->kld && a->kld_base.empty())
      take(error(StatusCode::invalid_argument, "--kl-divergence needs --kl-divergence-base FILE (the base written by a "
                 "run with -f)"));
    if (a->kld && !a->text_file.empty())
      take(error(StatusCode::invalid_argument, "--kl-divergence reads its tokens from '", a->kld_base,
                 "'; drop -f ", a->text_file));
    if (!a->kld && a->text_file.empty())
      take(error(StatusCode::invalid_argument, "perplexity needs a text: -f FILE (or --kl-divergence with "
                 "--kl-divergence-base FILE)"));
    kld::Reader base;
    if (a->kld) {
      take(base.open(a->kld_base));
      if (a->ctx > 0 && a->ctx != base.header().n_ctx)
        take(error(StatusCode::invalid_argument, "'", a->kld_base, "' was written with a context of ",
                   base.header().n_ctx, "; -c ", a->ctx, " differs (drop -c)"));
    }
    // --exact: f32 activations into every matrix product and an f32 KV cache.
    const std::string kv_type = a->exact ? "f32" : a->kv_type;
    LanguageModelOptions lo = take(lm_options(a->dev, "", a->batch, kv_type));
    lo.context = a->kld ? base.header().n_ctx : a->ctx;
    lo.round_matmul_inputs = !a->exact;
    lo.session.progress = load_progress(a->model);
    auto lm = take(LanguageModel::load(a->model, lo));
    const int64_t n_ctx = lm->context_length();
    if (n_ctx < 4) take(error(StatusCode::invalid_argument, "perplexity needs a context of at least 4 tokens"));
    const bool add_bos = lm->info().add_bos;
    const int64_t n_vocab = lm->vocab_size();
    std::vector<int32_t> tokens;
    int64_t n_chunk = 0;
    if (a->kld) {
      if (n_ctx != base.header().n_ctx)
        take(error(StatusCode::invalid_argument, "the model runs a context of ", n_ctx, ", '", a->kld_base,
                   "' was written with ", base.header().n_ctx));
      if (base.header().n_vocab != n_vocab)
        take(error(StatusCode::invalid_argument, "'", a->kld_base, "' has a vocabulary of ", base.header().n_vocab,
                   " tokens, the model ", n_vocab, ": not the same vocabulary"));
      tokens = base.tokens();
      n_chunk = base.header().n_chunk;
    } else {
      std::ifstream f(a->text_file, std::ios::binary);
      if (!f) take(error(StatusCode::not_found, "cannot read the text file '", a->text_file, "'"));
      std::stringstream ss;
      ss << f.rdbuf();
      tokens = lm->tokenize(ss.str(), add_bos);
      if (static_cast<int64_t>(tokens.size()) < 2 * n_ctx)
        take(error(StatusCode::invalid_argument, "'", a->text_file, "' has ", tokens.size(),
                   " tokens; perplexity with a context of ", n_ctx, " needs at least ", 2 * n_ctx,
                   " (two chunks); pass a smaller -c or a longer text"));
      n_chunk = static_cast<int64_t>(tokens.size()) / n_ctx;
    }
    if (a->chunks > 0) n_chunk = std::min(n_chunk, a->chunks);

    if (!a->quiet) {
      print_model_summary(*lm, kv_type);
      if (a->kld)
        fmt::print(stderr, "kl-divergence: {} chunks of {} from '{}', batch {}, scoring the last {} of each{}\n", n_chunk,
                   n_ctx, a->kld_base, std::min(a->batch, n_ctx), kld::scored_per_chunk(n_ctx),
                   a->exact ? " (exact f32 arithmetic)" : "");
      else
        fmt::print(stderr, "perplexity: {} tokens, {} chunks of {}, batch {}, scoring the last {} of each{}\n",
                   tokens.size(), n_chunk, n_ctx, std::min(a->batch, n_ctx), n_ctx - 1 - n_ctx / 2,
                   a->exact ? " (exact f32 arithmetic)" : "");
    }
    kld::Writer writer;
    const bool write_base = !a->kld && !a->kld_base.empty();
    if (write_base)
      take(writer.open(a->kld_base, kld::Header{n_ctx, n_vocab, n_chunk},
                       std::span<const int32_t>(tokens.data(), static_cast<size_t>(n_chunk * n_ctx))));
    kld::Stats stats;
    std::vector<uint16_t> records;
    const int64_t nv = kld::record_values(n_vocab);
    if (a->kld) fmt::print("{}", kld::Stats::chunk_header());

    const int64_t first = n_ctx / 2;
    double nll = 0, nll2 = 0;
    int64_t count = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t c = 0; c < n_chunk; ++c) {
      std::vector<int32_t> chunk(tokens.begin() + c * n_ctx, tokens.begin() + (c + 1) * n_ctx);
      if (add_bos) chunk[0] = lm->bos_token();
      if (a->kld) take(base.chunk(c, records));
      lm->reset();
      // Positions 0..first in one feed: the logits at position `first`; then one token at a
      // time for the logits at first+1 .. n_ctx-2.
      take(lm->feed(std::vector<int32_t>(chunk.begin(), chunk.begin() + first + 1)));
      for (int64_t j = first; j <= n_ctx - 2; ++j) {
        const int32_t next = chunk[static_cast<size_t>(j + 1)];
        if (a->kld) {
          stats.add(lm->logits(), records.data() + (j - first) * nv, next);
        } else {
          const double lp = log_prob(lm->logits(), next);
          nll -= lp;
          nll2 += lp * lp;
          ++count;
          if (write_base) take(writer.add(lm->logits()));
        }
        if (j + 1 <= n_ctx - 2) take(lm->decode(next));
      }
      if (a->kld)
        fmt::print("{}", stats.chunk_line(c + 1));
      else
        fmt::print("[{}]{:.4f},", c + 1, std::exp(nll / count));
      std::fflush(stdout);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (a->kld) {
      fmt::print("\n{}", stats.summary());
      if (!a->quiet)
        fmt::print(stderr, "compared {} positions in {} chunks, {:.2f} s\n", stats.count(), n_chunk, seconds);
      return;
    }
    if (write_base) {
      take(writer.close());
      if (!a->quiet) fmt::print(stderr, "wrote the log-probabilities of {} positions to {}\n", count, a->kld_base);
    }
    const double mean = nll / count;
    const double ppl = std::exp(mean);
    const double var = nll2 / count - mean * mean;
    const double err = var > 0 && count > 1 ? ppl * std::sqrt(var / (count - 1)) : 0.0;
    fmt::print("\nFinal estimate: PPL = {:.4f} +/- {:.5f}\n", ppl, err);
    if (!a->quiet)
      fmt::print(stderr, "scored {} tokens in {} chunks, {:.2f} s ({:.1f} tokens/s)\n", count, n_chunk, seconds,
                 n_chunk * (n_ctx - 1) / std::max(seconds, 1e-9));
  });
}

}  // namespace tessera::cli
