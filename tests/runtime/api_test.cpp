// The embedding API (tessera/model.h, tessera/generate.h): model infos, sessions by index
// and by name, user buffers and errors, against the TFLite interpreter's own outputs and
// the internal generator the facade wraps.
#include <gtest/gtest.h>

#include <random>

#include "fixtures.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/generator.h"
#include "tessera/tessera.h"
#include "tessera/backend/plan.h"

namespace tessera {
namespace {

using Bytes = std::vector<uint8_t>;

TEST(EmbeddingApi, DevicesListCpuFirstAndTheNpus) {
  auto devs = list_devices();
  ASSERT_GE(devs.size(), 3u);
  EXPECT_EQ(devs[0].name, "cpu");
  EXPECT_FALSE(devs[0].is_model);
  bool tile = false, rknpu = false;
  for (const auto& d : devs) {
    EXPECT_TRUE(d.available) << d.name << ": " << d.error;
    EXPECT_FALSE(d.description.empty()) << d.name;
    tile = tile || d.name.rfind("tile:", 0) == 0;
    rknpu = rknpu || (d.name == "rknpu" && d.is_model);
  }
  EXPECT_TRUE(tile);
  EXPECT_TRUE(rknpu);
}

TEST(EmbeddingApi, LoadErrorsNameTheFile) {
  auto m = Model::load("/nonexistent/x.tflite");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::not_found);
  EXPECT_NE(m.status().message().find("/nonexistent/x.tflite"), std::string::npos);
  TESSERA_REQUIRE_FIXTURE(labels, "labels/coco_labels.txt");
  auto u = Model::load(labels);
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), StatusCode::unsupported);
  EXPECT_NE(u.status().message().find("'.txt'"), std::string::npos) << u.status().message();
}

TEST(EmbeddingApi, TfliteSessionMatchesTheInterpreterByIndexAndByName) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(in_path, "reference/mnv1_128_cat.input.bin");
  TESSERA_REQUIRE_FIXTURE(ref_path, "reference/mnv1_128_cat.tflite-output.bin");
  const Bytes input = testing::read_file(in_path), ref = testing::read_file(ref_path);
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const Model& m = **model;
  ASSERT_EQ(m.inputs().size(), 1u);
  ASSERT_EQ(m.outputs().size(), 1u);
  const TensorInfo& in = m.inputs()[0];
  EXPECT_EQ(in.dtype, DType::u8);
  EXPECT_EQ(in.shape, (std::vector<int64_t>{1, 128, 128, 3}));
  EXPECT_EQ(in.bytes, static_cast<int64_t>(input.size()));
  ASSERT_EQ(in.quant.scale.size(), 1u);
  EXPECT_GT(in.quant.scale[0], 0.0f);
  EXPECT_EQ(m.outputs()[0].bytes, static_cast<int64_t>(ref.size()));
  EXPECT_EQ(*m.input_index(in.name), 0u);
  auto bad = m.output_index("nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(m.outputs()[0].name), std::string::npos) << bad.status().message();

  auto s = ModelSession::create(*model);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_TRUE((*s)->set_input(in.name, input.data(), static_cast<int64_t>(input.size())).ok());
  ASSERT_TRUE((*s)->run().ok());
  auto out = (*s)->output(m.outputs()[0].name);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ(*out, ref);

  Status short_in = (*s)->set_input(0, input.data(), static_cast<int64_t>(input.size()) - 1);
  EXPECT_EQ(short_in.code(), StatusCode::invalid_argument);
  EXPECT_NE(short_in.message().find("bytes"), std::string::npos) << short_in.message();
  EXPECT_EQ((*s)->set_input(3, input.data(), 1).code(), StatusCode::out_of_range);
  Bytes small(ref.size() - 1);
  EXPECT_EQ((*s)->read_output(0, small.data(), static_cast<int64_t>(small.size())).code(),
            StatusCode::invalid_argument);
}

TEST(EmbeddingApi, BoundBuffersAreReadAndWrittenAtEveryRun) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const int64_t in_bytes = (*model)->inputs()[0].bytes, out_bytes = (*model)->outputs()[0].bytes;
  auto plain = ModelSession::create(*model);
  auto bound = ModelSession::create(*model);
  ASSERT_TRUE(plain.ok() && bound.ok());
  Bytes in(static_cast<size_t>(in_bytes)), out(static_cast<size_t>(out_bytes));
  ASSERT_TRUE((*bound)->bind_input(0, in.data(), in_bytes).ok());
  ASSERT_TRUE((*bound)->bind_output(0, out.data(), out_bytes).ok());
  EXPECT_EQ((*bound)->bind_output(0, out.data(), out_bytes + 1).code(), StatusCode::invalid_argument);
  Bytes previous;
  for (uint32_t seed : {1u, 2u}) {
    std::mt19937 rng(seed);
    for (auto& b : in) b = static_cast<uint8_t>(rng());  // changed in place: the binding sees it
    ASSERT_TRUE((*bound)->run().ok());
    ASSERT_TRUE((*plain)->set_input(0, in.data(), in_bytes).ok());
    ASSERT_TRUE((*plain)->run().ok());
    auto want = (*plain)->output(0);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(out, *want) << "seed " << seed;
    EXPECT_NE(out, previous);
    previous = out;
  }
}

TEST(EmbeddingApi, GgufModelIsItsDecodeStep) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K.gguf");
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  EXPECT_EQ((*model)->inputs().size(), static_cast<size_t>(llm::kNumStepInputs));
  ASSERT_EQ((*model)->outputs().size(), 1u);
  EXPECT_EQ((*model)->outputs()[0].dtype, DType::f32);
}

TEST(EmbeddingApi, LanguageModelGeneratesWhatTheGeneratorDoes) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K-Q8_0.gguf");
  auto lm = LanguageModel::load(path);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  GenerateOptions go;
  go.max_tokens = 24;
  std::string streamed;
  int pieces = 0;
  auto r = (*lm)->generate("The robot", go, [&](std::string_view p) {
    streamed += p;
    ++pieces;
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(streamed, r->text);
  EXPECT_EQ(pieces, static_cast<int>(r->tokens.size()));
  EXPECT_GT(r->tokens.size(), 0u);
  EXPECT_GE(r->prompt_tokens, static_cast<int64_t>((*lm)->tokenize("The robot", false).size()));

  // The same greedy tokens from the internal generator the facade wraps.
  auto llama = gguf::LlamaModel::open(path);
  ASSERT_TRUE(llama.ok());
  auto gen = llm::Generator::create(**llama, {});
  ASSERT_TRUE(gen.ok());
  llm::Sampler sampler(llm::SamplerOptions{});
  std::vector<int32_t> ids;
  auto st = (*gen)->generate((*llama)->tokenizer().encode("The robot", (*llama)->tokenizer().add_bos()), 24, sampler,
                             (*llama)->tokenizer().eos(), [&](int32_t id) {
                               ids.push_back(id);
                               return true;
                             });
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(r->tokens, ids);

  // Stopping from the callback, then a fresh generation from an empty cache.
  int n = 0;
  auto stopped = (*lm)->generate("The robot", go, [&](std::string_view) { return ++n < 4; });
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->tokens.size(), 4u);
  EXPECT_TRUE(std::equal(stopped->tokens.begin(), stopped->tokens.end(), r->tokens.begin()));

  go.temperature = 0.7f;
  go.top_p = 0;
  auto bad = (*lm)->generate("x", go);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::invalid_argument);
  EXPECT_EQ((*lm)->feed({-1}).status().code(), StatusCode::out_of_range);
}

}  // namespace
}  // namespace tessera
