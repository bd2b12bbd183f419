// probe_gguf (see gguf_probe.h).
#include "import/gguf/gguf_probe.h"

#include <vector>

#include "import/gguf/llama_model.h"

namespace tessera::gguf {

namespace {
// A step graph's mask input is [T, context]: refuse contexts whose graph alone would be
// large, so that a fuzzed header cannot ask for gigabytes (real files are far below this).
constexpr int64_t kProbeMaxContext = 1 << 16;
}  // namespace

Status probe_gguf(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  TS_ASSIGN_OR_RETURN(File f, File::parse(ConstData::from_vector(std::move(bytes)), "probe"));
  for (const auto& [key, v] : f.metadata()) (void)v.to_string();
  auto tok = Tokenizer::from_gguf(f);
  if (tok.ok()) {
    auto ids = tok->encode("Hello, world! \xc3\xa4 \xf0\x9f\xa6\x99", true);
    (void)tok->decode(ids);
  }
  TS_ASSIGN_OR_RETURN(LlamaParams p, llama_params(f));
  if (p.context > kProbeMaxContext) return error(StatusCode::unsupported, "probe: context too large to build");
  TS_ASSIGN_OR_RETURN(auto model, LlamaModel::load(std::move(f)));
  return model->build_step(1).status();
}

}  // namespace tessera::gguf
