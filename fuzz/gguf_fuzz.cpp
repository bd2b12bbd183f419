// libFuzzer target for the GGUF reader, tokenizer and llama graph builder, and, for small
// models, a few decoding steps on the cpu device: any input must give a Status, never a
// crash, a sanitizer report or a hang (scripts/fuzz.sh builds and runs it).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fuzz_run.h"
#include "import/gguf/gguf_probe.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"

namespace {

// Models run when they are as small as the shared aidreams260K (dim 64, 4 layers, vocab
// 512, context 128) or a little larger: a step takes milliseconds under ASan.
bool small_model(const tessera::gguf::LlamaParams& p) {
  return p.dim <= 256 && p.layers <= 4 && p.vocab <= 4096 && p.context <= 256 && p.ffn <= 1024 && p.heads <= 16;
}

void decode_a_few_tokens(const uint8_t* data, size_t size) {
  using namespace tessera;
  std::vector<uint8_t> bytes(data, data + size);
  auto f = gguf::File::parse(ConstData::from_vector(std::move(bytes)), "fuzz input");
  if (!f.ok()) return;
  auto p = gguf::llama_params(*f);
  if (!p.ok() || !small_model(*p)) return;
  auto model = gguf::LlamaModel::load(std::move(*f));
  if (!model.ok()) return;
  auto step = (*model)->build_step(1);
  if (!step.ok() || !fuzz::small_enough(*step)) return;
  llm::GeneratorOptions opts;
  opts.batch = 4;
  auto gen = llm::Generator::create(**model, opts);
  if (!gen.ok()) return;
  const int32_t vocab = static_cast<int32_t>((*model)->vocab_size());
  std::vector<int32_t> prompt = {1 % vocab, static_cast<int32_t>(size % vocab), static_cast<int32_t>(7 % vocab)};
  if (!(*gen)->feed(prompt).ok()) return;
  (void)(*gen)->step(static_cast<int32_t>((size * 31) % vocab));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (!tessera::gguf::probe_gguf(data, size).ok()) return 0;
  decode_a_few_tokens(data, size);
  return 0;
}
