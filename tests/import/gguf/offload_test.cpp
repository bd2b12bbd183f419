// Layer offload (`--offload N`): the first N layers on the chosen device, the rest on the
// cpu, and the text still follows the cpu's greedy text.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"
#include "tessera/backend/plan.h"

namespace tessera::gguf {
namespace {

bool has_device(const std::string& name) {
  for (const auto& d : device_registry())
    if (d.name == name) return true;
  return false;
}

std::vector<int32_t> greedy_tokens(llm::Generator& gen, const std::vector<int32_t>& prompt, int n) {
  llm::Sampler s(llm::SamplerOptions{});
  std::vector<int32_t> out;
  auto st = gen.generate(prompt, n, s, -1, [&](int32_t t) {
    out.push_back(t);
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.status().to_string();
  return out;
}

TEST(LlamaOffload, FirstLayersOnTheDeviceRestOnCpu) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K.gguf");
  if (!has_device("tile")) GTEST_SKIP() << "no tile device in this build";
  auto model = LlamaModel::open(path);
  ASSERT_TRUE(model.ok());
  auto prompt = (*model)->tokenizer().encode("Once upon a time", true);
  auto cpu = llm::Generator::create(**model, llm::GeneratorOptions{});
  ASSERT_TRUE(cpu.ok());
  const auto want = greedy_tokens(**cpu, prompt, 20);

  llm::GeneratorOptions go;
  go.session.device = "tile";
  go.offload_layers = 2;
  auto gen = llm::Generator::create(**model, go);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  for (const Session* s : {&(*gen)->prompt_session(), &(*gen)->decode_session()}) {
    const Plan& plan = s->plan();
    ASSERT_EQ(plan.devices.size(), 2u);
    int on_device = 0;
    for (size_t i = 0; i < plan.graph.nodes().size(); ++i) {
      const Node& n = plan.graph.nodes()[i];
      if (n.op == OpKind::transfer) continue;
      const std::string dev = plan.devices[plan.nodes[i].device]->name();
      int layer = llm::layer_of_node(n);
      if (layer == 0 || layer == 1) {
        EXPECT_EQ(dev.rfind("tile", 0), 0u) << n.label() << " on " << dev;
        on_device++;
      } else {
        EXPECT_EQ(dev, "cpu") << n.label();
      }
    }
    EXPECT_GT(on_device, 40);  // two layers' worth of nodes
    EXPECT_GT(plan.transfers, 0);
    // Layers 0 and 1 keep their KV cache on the device, layers 2 and 3 on the cpu.
    EXPECT_GT(plan.memory[0].state_bytes, 0);
    EXPECT_GT(plan.memory[1].state_bytes, 0);
  }
  // The tile device keeps float weights as bf16 (lossy), so the text is checked on its
  // first tokens; on this model they agree with the cpu's.
  auto got = greedy_tokens(**gen, prompt, 20);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::vector<int32_t>(got.begin(), got.begin() + 10), std::vector<int32_t>(want.begin(), want.begin() + 10));
}

TEST(LlamaOffload, OffloadOnTheCpuIsEverythingOnTheCpu) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K-Q8_0.gguf");
  auto model = LlamaModel::open(path);
  ASSERT_TRUE(model.ok());
  llm::GeneratorOptions go;
  go.offload_layers = 1;
  auto gen = llm::Generator::create(**model, go);
  ASSERT_TRUE(gen.ok()) << gen.status().to_string();
  EXPECT_EQ((*gen)->decode_session().plan().devices.size(), 1u);
  EXPECT_EQ((*gen)->decode_session().plan().transfers, 0);
}

}  // namespace
}  // namespace tessera::gguf
