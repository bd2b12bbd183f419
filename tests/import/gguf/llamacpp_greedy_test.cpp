// Greedy decoding against llama.cpp's own (../shared/models/gguf/refs/llamacpp-greedy.tsv:
// 1 thread, f32 KV cache) on the shared random-weight llama files whose tensors Tessera
// reads. On Q8_0 weights the cpu rounds activations to 8-bit blocks as llama.cpp does,
// and on K-quant weights (q2_K ... q6_K) to Q8_K super-blocks (backend/cpu/kernels/linear_kq.h), so its
// greedy ids follow llama.cpp's token for token; F32 files take exact arithmetic.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"

namespace tessera::gguf {
namespace {

std::vector<int32_t> ids_of(const std::string& s) {
  std::vector<int32_t> v;
  std::istringstream in(s);
  for (int32_t x; in >> x;) v.push_back(x);
  return v;
}

TEST(LlamaCppGreedy, SameIdsAsLlamaCpp) {
  TESSERA_REQUIRE_FIXTURE(tsv, "models/gguf/refs/llamacpp-greedy.tsv");
  int compared = 0;
  for (const char* name :
       {"kq-llama-256d-4L-F32.gguf", "kq-llama-256d-4L-Q8_0.gguf", "kq-llama-256d-4L-Q4_K_M.gguf",
        "kq-llama-256d-4L-Q4_K-pure.gguf", "kq-llama-256d-4L-Q6_K.gguf", "kq-llama-256d-4L-Q3_K_M.gguf",
        "kq-llama-256d-4L-Q3_K-pure.gguf", "kq-llama-256d-4L-Q2_K.gguf", "kq-llama-256d-4L-Q2_K-pure.gguf"}) {
    TESSERA_REQUIRE_FIXTURE(path, std::string("models/gguf/kquant/") + name);
    auto model = LlamaModel::open(path);
    ASSERT_TRUE(model.ok()) << model.status().to_string();
    llm::GeneratorOptions go;
    go.kv_type = DType::f32;  // as the reference ran
    auto gen = llm::Generator::create(**model, go);
    ASSERT_TRUE(gen.ok()) << gen.status().to_string();
    std::ifstream in(tsv);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> f;
      std::istringstream ls(line);
      for (std::string c; std::getline(ls, c, '\t');) f.push_back(c);
      if (f.size() < 4 || f[0] != name) continue;
      SCOPED_TRACE(std::string(name) + ", prompt '" + f[1] + "'");
      const std::vector<int32_t> prompt = ids_of(f[2]);
      std::vector<int32_t> want = ids_of(f[3]);
      EXPECT_EQ((*model)->tokenizer().encode(f[1], true), prompt);
      (*gen)->reset();
      llm::Sampler greedy(llm::SamplerOptions{});
      std::vector<int32_t> got;
      auto st = (*gen)->generate(prompt, static_cast<int64_t>(want.size()), greedy, /*eos=*/-1, [&](int32_t id) {
        got.push_back(id);
        return true;
      });
      ASSERT_TRUE(st.ok()) << st.status().to_string();
      // Q6_K, "Once upon a time": llama.cpp's own top two differ by 0.0076 at step 22
      // (refs/llamacpp-greedy_detail.jsonl lists it as fragile, 0.1% of the logits' std), so
      // the ids are compared up to it. (With exact f32 activations this file and Q4_K_M
      // leave llama.cpp's ids after 4 and 1 tokens, Q3_K_M after 13, Q3_K-pure after 7, Q2_K
      // after 19 and Q2_K-pure after 4, each on one of the prompts.)
      if (std::string(name) == "kq-llama-256d-4L-Q6_K.gguf" && f[1] == "Once upon a time") got.resize(22), want.resize(22);
      EXPECT_EQ(got, want);
      ++compared;
    }
  }
  EXPECT_EQ(compared, 18);
}

}  // namespace
}  // namespace tessera::gguf
