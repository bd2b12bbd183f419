// The run path around the LLM kernels: weights read in place (resident once), a decode
// step that allocates nothing, and the q8_0 KV cache.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <new>

#include "import/gguf/llama_model.h"
#include "import/gguf/synth.h"
#include "runtime/llm/generator.h"

namespace tessera::gguf {
namespace {

std::unique_ptr<LlamaModel> synth_model(DType type, int64_t dim, int64_t ffn, int64_t vocab, int64_t ctx,
                                        uint64_t seed = 3) {
  SynthOptions o;
  o.dim = dim;
  o.layers = 2;
  o.heads = 4;
  o.kv_heads = 2;
  o.ffn = ffn;
  o.vocab = vocab;
  o.context = ctx;
  o.type = type;
  o.seed = seed;
  auto w = synth_llama(o);
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  auto bytes = w->bytes();
  EXPECT_TRUE(bytes.ok());
  auto f = File::parse(ConstData::from_vector(std::move(*bytes)), "synthetic");
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  auto m = LlamaModel::load(std::move(*f));
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(*m);
}

int64_t weight_bytes(const LlamaModel& m) {
  int64_t total = 0;
  for (const auto& t : m.file().tensors()) total += t.data.size;
  return total;
}

// The cpu reads the weights where the model's bytes are (a GGUF file's mapping): the plan
// allocates and uploads no copy, so weights are resident once. What the device allocates
// is the KV cache and the activation arenas of the two step graphs, nothing more.
TEST(LlmRun, CpuReadsWeightsInPlace) {
  for (DType type : {DType::q4_0, DType::q8_0, DType::f16}) {
    auto model = synth_model(type, 256, 512, 1024, 32);
    const int64_t weights = weight_bytes(*model);
    llm::GeneratorOptions go;
    go.batch = 4;
    auto gen = llm::Generator::create(*model, go);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    int64_t arenas = 0;
    for (const Session* s : {&(*gen)->prompt_session(), &(*gen)->decode_session()}) {
      const Plan& plan = s->plan();
      ASSERT_EQ(plan.devices.size(), 1u);
      const DeviceMemoryPlan& mp = plan.memory[0];
      EXPECT_EQ(mp.weight_bytes, 0) << dtype_name(type);
      EXPECT_EQ(mp.in_place_bytes, weights) << dtype_name(type);
      EXPECT_EQ(mp.in_place_constants, static_cast<int64_t>(model->file().tensors().size()));
      for (int64_t a : mp.arena_bytes) arenas += a;
    }
    const Device& cpu = *(*gen)->decode_session().plan().devices[0];
    // Each allocation is rounded up to the cpu's 64-byte alignment.
    const int64_t slack = 64 * cpu.counters().allocations;
    EXPECT_LE(cpu.counters().allocated_bytes, (*gen)->kv_cache_bytes() + arenas + slack) << dtype_name(type);
    EXPECT_LT(cpu.counters().allocated_bytes, weights / 2) << dtype_name(type);
    // And it runs: finite logits that depend on the token.
    auto a = (*gen)->feed({1, 5, 9, 3, 7});
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    auto b = (*gen)->step(11);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    double diff = 0;
    for (size_t i = 0; i < a->size(); ++i) {
      ASSERT_TRUE(std::isfinite((*b)[i]));
      diff += std::fabs((*a)[i] - (*b)[i]);
    }
    EXPECT_GT(diff, 0);
  }
}

}  // namespace
}  // namespace tessera::gguf
