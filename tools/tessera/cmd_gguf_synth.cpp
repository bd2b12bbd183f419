// `tessera gguf-synth OUT.gguf --dim .. --layers ..`: a random-weight llama model of any shape.
#include <fmt/format.h>

#include "cli.h"
#include "import/gguf/synth.h"

namespace tessera::cli {

void add_gguf_synth_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("gguf-synth", "Write a llama GGUF model of a given shape with seeded random weights");
  struct Args {
    gguf::SynthOptions o;
    std::string type = "q8_0";
    std::string out;
    int64_t max_gib = 4;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("out", a->out, "Output .gguf file")->required();
  cmd->add_option("--arch", a->o.arch, "Architecture: llama, or qwen2 (q/k/v biases, NEOX rope; add --tied for Qwen2.5's tied embeddings)");
  cmd->add_option("--dim", a->o.dim, "Embedding width")->check(CLI::Range(int64_t{2}, int64_t{1} << 16));
  cmd->add_option("--layers", a->o.layers, "Transformer layers")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->add_option("--heads", a->o.heads, "Attention heads")->check(CLI::Range(int64_t{1}, int64_t{1024}));
  cmd->add_option("--kv-heads", a->o.kv_heads, "KV heads (default: --heads)")->check(CLI::Range(int64_t{0}, int64_t{1024}));
  cmd->add_option("--ffn", a->o.ffn, "Feed-forward width")->check(CLI::Range(int64_t{1}, int64_t{1} << 18));
  cmd->add_option("--vocab", a->o.vocab, "Vocabulary size")->check(CLI::Range(int64_t{260}, int64_t{1} << 20));
  cmd->add_option("--ctx", a->o.context, "Context length")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--type", a->type, "Matrix weight type: f32, f16, q8_0, q4_0");
  cmd->add_option("--seed", a->o.seed, "Random seed");
  cmd->add_flag("--tied", a->o.tied_output, "No output matrix: logits use the token embedding");
  cmd->add_option("--max-gib", a->max_gib, "Refuse models whose weights need more GiB (built in memory)")
      ->check(CLI::Range(1, 1024));
  cmd->callback([a] {
    auto t = dtype_from_name(a->type);
    if (!t) take(error(StatusCode::invalid_argument, "--type '", a->type, "' is not a dtype (f32, f16, q8_0, q4_0)"));
    a->o.type = *t;
    a->o.max_bytes = a->max_gib << 30;
    gguf::Writer w = take(gguf::synth_llama(a->o));
    take(w.write(a->out));
    fmt::print("wrote {}: {}, dim {}, {} layers, {} heads ({} KV), ffn {}, vocab {}, context {}, {} weights{}\n",
               a->out, a->o.arch, a->o.dim, a->o.layers, a->o.heads, a->o.kv_heads ? a->o.kv_heads : a->o.heads, a->o.ffn,
               a->o.vocab, a->o.context, a->type, a->o.tied_output ? ", tied output" : "");
  });
}

}  // namespace tessera::cli
