// The LLM embedding API's pieces (tessera/generate.h) against the layers beneath it:
// feed/decode logits equal the generator's steps (the path `tessera score` used), a q8_0
// KV cache is accepted and generates what the generator does with one, stop strings, stop
// tokens and cancellation end generation where they should, chat rendering equals the
// chat template's own, cache reuse and forks change nothing in the output, and
// model_format picks the importer by magic, then extension.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixtures.h"
#include "import/gguf/gguf_chat_template.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/chat_template.h"
#include "runtime/llm/generator.h"
#include "tessera/generate.h"
#include "tessera/backend/plan.h"
#include "tessera/model.h"
#include "tessera/tessera_c.h"

namespace tessera {
namespace {

constexpr const char* kAidreams = "models/gguf/aidreams260K.gguf";
constexpr const char* kQwen = "models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf";
constexpr const char* kLlama3 = "models/gguf/llama3-256d-2L-Q4_K_M-embQ3_K.gguf";

std::unique_ptr<LanguageModel> load_or_die(const std::string& path, const LanguageModelOptions& lo = {}) {
  auto lm = LanguageModel::load(path, lo);
  EXPECT_TRUE(lm.ok()) << lm.status().to_string();
  return lm.ok() ? std::move(lm).value() : nullptr;
}

// Greedy tokens of the lower layers: a Generator over the same file and options.
std::vector<int32_t> generator_tokens(const std::string& path, const llm::GeneratorOptions& go,
                                      const std::vector<int32_t>& prompt, int64_t n, llm::Sampler* shared = nullptr) {
  auto model = gguf::LlamaModel::open(path);
  EXPECT_TRUE(model.ok());
  auto gen = llm::Generator::create(**model, go);
  EXPECT_TRUE(gen.ok());
  llm::Sampler fresh(llm::SamplerOptions{});
  std::vector<int32_t> ids;
  auto st = (*gen)->generate(prompt, n, shared ? *shared : fresh, (*model)->tokenizer().eos(), [&](int32_t id) {
    ids.push_back(id);
    return true;
  });
  EXPECT_TRUE(st.ok());
  return ids;
}

// The C API's initializers (tessera_c.h, inline in the caller) give the C++ API's defaults.
TEST(LanguageModelApi, CInitializersGiveTheCppDefaults) {
  const tessera_generate_options c = TESSERA_GENERATE_OPTIONS_INIT;
  const GenerateOptions g;
  EXPECT_EQ(c.struct_size, sizeof(tessera_generate_options));
  EXPECT_EQ(c.max_tokens, g.max_tokens);
  EXPECT_EQ(c.temperature, g.temperature);
  EXPECT_EQ(c.top_k, g.top_k);
  EXPECT_EQ(c.top_p, g.top_p);
  EXPECT_EQ(c.repeat_penalty, g.repeat_penalty);
  EXPECT_EQ(c.repeat_last_n, g.repeat_last_n);
  EXPECT_EQ(c.seed, g.seed);
  const tessera_lm_options lc = TESSERA_LM_OPTIONS_INIT;
  const LanguageModelOptions l;
  EXPECT_EQ(lc.struct_size, sizeof(tessera_lm_options));
  EXPECT_EQ(lc.context, l.context);
  EXPECT_EQ(lc.batch, l.batch);
  EXPECT_EQ(lc.offload_layers, l.offload_layers);
  EXPECT_EQ(lc.device, nullptr);
  EXPECT_EQ(l.session.device, "cpu");
  EXPECT_EQ(lc.kv_type, nullptr);  // f16
  EXPECT_EQ(l.kv_type, DType::f16);
  EXPECT_EQ(lc.progress, nullptr);
}

TEST(LanguageModelApi, FeedAndDecodeLogitsEqualTheGeneratorSteps) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/kquant/kq-llama-256d-4L-Q4_K_M.gguf");
  // As `tessera score` scores: batch 1, f32 cache, exact matmul inputs.
  LanguageModelOptions lo;
  lo.batch = 1;
  lo.kv_type = DType::f32;
  lo.round_matmul_inputs = false;
  auto lm = load_or_die(path, lo);
  ASSERT_TRUE(lm);
  auto model = gguf::LlamaModel::open(path);
  ASSERT_TRUE(model.ok());
  (*model)->set_input_rounding(false);
  llm::GeneratorOptions go;
  go.batch = 1;
  go.kv_type = DType::f32;
  auto gen = llm::Generator::create(**model, go);
  ASSERT_TRUE(gen.ok());
  const std::vector<int32_t> ids = {1, 429, 491, 433, 295, 429, 444, 445};
  for (size_t i = 0; i < ids.size(); ++i) {
    auto want = (*gen)->step(ids[i]);
    ASSERT_TRUE(want.ok());
    std::vector<float> got;
    if (i % 2 == 0) {
      auto f = lm->feed({ids[i]});
      ASSERT_TRUE(f.ok()) << f.status().to_string();
      got = *f;
    } else {
      ASSERT_TRUE(lm->decode(ids[i]).ok());
      got.assign(lm->logits().begin(), lm->logits().end());
    }
    EXPECT_EQ(got, *want) << "after token " << i;
  }
  EXPECT_EQ(lm->position(), static_cast<int64_t>(ids.size()));
  EXPECT_EQ(lm->decode(-3).code(), StatusCode::out_of_range);
  lm->reset();
  EXPECT_EQ(lm->position(), 0);
}

TEST(LanguageModelApi, Q8KvCacheIsAcceptedAndGeneratesWhatTheGeneratorDoes) {
  // Head size 32 (a q8_0 cache takes whole blocks of 32; aidreams260K's heads are 16).
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/kquant/kq-llama-256d-4L-Q8_0.gguf");
  LanguageModelOptions lo;
  lo.kv_type = DType::q8_0;
  auto lm = load_or_die(path, lo);
  ASSERT_TRUE(lm);
  EXPECT_EQ(lm->kv_type(), DType::q8_0);
  auto f16 = load_or_die(path);
  ASSERT_TRUE(f16);
  EXPECT_LT(lm->kv_cache_bytes(), f16->kv_cache_bytes());  // 34 bytes per 32 values against 64
  GenerateOptions go;
  go.max_tokens = 20;
  auto r = lm->generate("Once upon a time", go);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  llm::GeneratorOptions gopt;
  gopt.kv_type = DType::q8_0;
  EXPECT_EQ(r->tokens, generator_tokens(path, gopt, lm->tokenize("Once upon a time"), 20));

  lo.kv_type = DType::bf16;
  auto bad = LanguageModel::load(path, lo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kv_type must be f16, f32 or q8_0"), std::string::npos);
}

TEST(LanguageModelApi, StopStringsEndTheTextBeforeThem) {
  TESSERA_REQUIRE_FIXTURE(path, kAidreams);
  auto lm = load_or_die(path);
  ASSERT_TRUE(lm);
  GenerateOptions go;
  go.max_tokens = 40;
  auto full = lm->generate("Once upon a time", go);
  ASSERT_TRUE(full.ok());
  ASSERT_GT(full->text.size(), 30u);
  // A stop string from the middle of the greedy text, spanning token boundaries.
  const std::string stop = full->text.substr(15, 6);
  const size_t at = full->text.find(stop);
  go.stop = {"never appears \x01", stop};
  std::string streamed;
  auto r = lm->generate("Once upon a time", go, [&](std::string_view p) {
    streamed += p;
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, full->text.substr(0, at));
  EXPECT_EQ(streamed, r->text);
  EXPECT_EQ(r->stop_reason, StopReason::stop_string);
  EXPECT_LT(r->tokens.size(), full->tokens.size());
  EXPECT_TRUE(std::equal(r->tokens.begin(), r->tokens.end(), full->tokens.begin()));
  // No stop string in the text: the same text, its held-back tail flushed at the end.
  go.stop = {full->text.substr(full->text.size() - 3) + "\x01"};
  streamed.clear();
  auto none = lm->generate("Once upon a time", go, [&](std::string_view p) {
    streamed += p;
    return true;
  });
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->text, full->text);
  EXPECT_EQ(streamed, full->text);
  EXPECT_EQ(none->stop_reason, full->stop_reason);
}

TEST(LanguageModelApi, StopTokensEndGenerationAsEosDoes) {
  TESSERA_REQUIRE_FIXTURE(path, kAidreams);
  auto lm = load_or_die(path);
  ASSERT_TRUE(lm);
  GenerateOptions go;
  go.max_tokens = 30;
  auto full = lm->generate("Once upon a time", go);
  ASSERT_TRUE(full.ok());
  ASSERT_GT(full->tokens.size(), 6u);
  const int32_t stop = full->tokens[5];
  const size_t first = std::find(full->tokens.begin(), full->tokens.end(), stop) - full->tokens.begin();
  go.stop_tokens = {stop};
  auto r = lm->generate("Once upon a time", go);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens, std::vector<int32_t>(full->tokens.begin(), full->tokens.begin() + first));
  EXPECT_EQ(r->stop_reason, StopReason::eos);
  EXPECT_TRUE(r->stopped_at_eos);
  EXPECT_EQ(r->stop_token, stop);
}

TEST(LanguageModelApi, CancellationStopsBeforeTheNextToken) {
  TESSERA_REQUIRE_FIXTURE(path, kAidreams);
  auto lm = load_or_die(path);
  ASSERT_TRUE(lm);
  std::atomic<bool> cancel{false};
  GenerateOptions go;
  go.max_tokens = 30;
  go.cancel = &cancel;
  int pieces = 0;
  auto r = lm->generate("Once upon a time", go, [&](std::string_view) {
    if (++pieces == 3) cancel = true;  // as another thread or a signal handler would
    return true;
  });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tokens.size(), 3u);
  EXPECT_EQ(r->stop_reason, StopReason::cancelled);
  auto none = lm->generate("Once upon a time", go);  // still set: nothing is sampled
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->tokens.empty());
  EXPECT_EQ(none->stop_reason, StopReason::cancelled);
  cancel = false;
  auto again = lm->generate("Once upon a time", go, [](std::string_view) { return false; });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->tokens.size(), 1u);
  EXPECT_EQ(again->stop_reason, StopReason::callback);
}

TEST(LanguageModelApi, ChatRenderingEqualsTheTemplateOfTheFile) {
  const std::vector<ChatMessage> conv = {
      {"system", "You are terse."}, {"user", " Hello! "}, {"assistant", "Hi."}, {"user", "And then?"}};
  std::vector<llm::ChatMessage> low;
  for (const auto& m : conv) low.push_back({m.role, m.content});
  for (const char* rel : {kQwen}) {
    TESSERA_REQUIRE_FIXTURE(path, rel);
    auto lm = load_or_die(path);
    ASSERT_TRUE(lm);
    auto model = gguf::LlamaModel::open(path);
    ASSERT_TRUE(model.ok());
    auto want = gguf::chat_template_for((*model)->file(), "");
    ASSERT_TRUE(want.ok());
    // The file's own Jinja source renders, with the vocabulary's BOS and EOS texts.
    const gguf::Tokenizer& tok = (*model)->tokenizer();
    want->set_special_tokens(tok.token_text(tok.bos()), tok.token_text(tok.eos()), tok.add_bos());
    auto got = lm->render_chat(conv, true);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(*got, *want->render(low, true)) << rel;
    EXPECT_EQ(*lm->render_chat(conv, false), *want->render(low, false));
    auto info = lm->chat_template();
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->name, want->name());
    EXPECT_TRUE(info->from_file);
    EXPECT_EQ(info->stop_strings, want->stop_strings());
    ASSERT_EQ(info->stop_tokens.size(), 1u);
    EXPECT_EQ(info->stop_tokens[0], (*model)->tokenizer().find(want->stop_strings()[0]));
  }
  TESSERA_REQUIRE_FIXTURE(qwen, kQwen);
  // An override by name, and by a Jinja file.
  LanguageModelOptions lo;
  lo.chat_template = "gemma";
  auto gemma = load_or_die(qwen, lo);
  ASSERT_TRUE(gemma);
  EXPECT_EQ(*gemma->render_chat(conv), llm::ChatTemplate::by_name("gemma")->apply(low, true));
  EXPECT_FALSE(gemma->chat_template()->from_file);
  TESSERA_REQUIRE_FIXTURE(jinja, "templates/chat/meta-llama-Llama-3.1-8B-Instruct.jinja");
  lo.chat_template = jinja;
  auto from_jinja = load_or_die(qwen, lo);
  ASSERT_TRUE(from_jinja);
  std::ifstream f(jinja);
  std::stringstream src;
  src << f.rdbuf();
  // Llama 3.1's template writes its knowledge-cutoff header into the system turn: the
  // source renders, not the llama3 family's native format.
  const std::string rendered = *from_jinja->render_chat(conv);
  EXPECT_NE(rendered, llm::ChatTemplate::by_name("llama3")->apply(low, true));
  EXPECT_NE(rendered.find("<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
                          "Today Date: 26 Jul 2024\n\nYou are terse.<|eot_id|>"),
            std::string::npos)
      << rendered;
  EXPECT_EQ(from_jinja->chat_template()->name, "llama3");
  EXPECT_EQ(from_jinja->chat_template()->stop_strings, std::vector<std::string>{"<|eot_id|>"});
  // A bad name fails load, naming the known ones; a file without a template renders as
  // ChatML (llama.cpp's fallback), with a warning.
  lo.chat_template = "nonesuch";
  auto bad = LanguageModel::load(qwen, lo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown chat template 'nonesuch'"), std::string::npos);
  TESSERA_REQUIRE_FIXTURE(plain, kLlama3);  // its file has no tokenizer.chat_template
  auto lm = load_or_die(plain);
  ASSERT_TRUE(lm);
  auto none = lm->render_chat(conv);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_EQ(*none, llm::ChatTemplate::by_name("chatml")->apply(low, true));
  auto info = lm->chat_template();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->name, "chatml");
  EXPECT_FALSE(info->from_file);
  EXPECT_NE(info->warning.find("has no tokenizer.chat_template: using ChatML"), std::string::npos) << info->warning;
}

// A template of no native family (here DeepSeek-R1-Distill's, given as a file) renders from
// its Jinja source with the vocabulary's BOS / EOS texts; its reply stops at the EOS text.
TEST(LanguageModelApi, OtherTemplatesRenderThroughTheJinjaEngine) {
  TESSERA_REQUIRE_FIXTURE(path, kQwen);
  TESSERA_REQUIRE_FIXTURE(jinja, "templates/chat/deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja");
  LanguageModelOptions lo;
  lo.chat_template = jinja;
  auto lm = LanguageModel::load(path, lo);
  ASSERT_TRUE(lm.ok()) << lm.status().to_string();
  auto info = (*lm)->chat_template();
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->name, "jinja");
  std::vector<ChatMessage> conv = {{"user", "Tell me a story."}, {"assistant", "Once"}, {"user", "More"}};
  auto text = (*lm)->render_chat(conv);
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  std::ifstream f(jinja);
  std::stringstream src;
  src << f.rdbuf();
  auto t = llm::ChatTemplate::from_jinja(src.str());
  ASSERT_TRUE(t.ok());
  // The Qwen2 fixture's BOS and EOS are both <|endoftext|>; its tokenizer adds no BOS.
  t->set_special_tokens("<|endoftext|>", "<|endoftext|>", false);
  std::vector<llm::ChatMessage> low = {{"user", "Tell me a story."}, {"assistant", "Once"}, {"user", "More"}};
  EXPECT_EQ(*text, *t->render(low, true));
  EXPECT_TRUE(text->starts_with("<|endoftext|>")) << *text;
  EXPECT_NE(text->find("Tell me a story."), std::string::npos);
  EXPECT_EQ(info->stop_strings, std::vector<std::string>{"<|endoftext|>"});
}

TEST(LanguageModelApi, ReusedCacheAndForksGiveTheSameTokens) {
  TESSERA_REQUIRE_FIXTURE(path, kQwen);
  auto lm = load_or_die(path);
  ASSERT_TRUE(lm);
  std::vector<ChatMessage> conv = {{"user", "Tell me a story."}};
  GenerateOptions go;
  go.max_tokens = 8;
  go.reuse_cache = true;
  auto ids1 = lm->tokenize(*lm->render_chat(conv), lm->info().add_bos, true);
  auto r1 = lm->generate_tokens(ids1, go);
  ASSERT_TRUE(r1.ok());
  EXPECT_EQ(r1->reused_tokens, 0);
  conv.push_back({"assistant", r1->text});
  conv.push_back({"user", "And then?"});
  auto ids2 = lm->tokenize(*lm->render_chat(conv), lm->info().add_bos, true);
  auto r2 = lm->generate_tokens(ids2, go);
  ASSERT_TRUE(r2.ok());
  EXPECT_GT(r2->reused_tokens, static_cast<int64_t>(ids1.size()) / 2);
  EXPECT_EQ(r2->fed_tokens(), static_cast<int64_t>(ids2.size()) - r2->reused_tokens);
  // A fork (its own cache over the same weights) from an empty cache: the same reply.
  LanguageModelOptions lo;
  auto fork = lm->fork(lo);
  ASSERT_TRUE(fork.ok()) << fork.status().to_string();
  go.reuse_cache = false;
  auto fresh = (*fork)->generate_tokens(ids2, go);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->tokens, r2->tokens);
  EXPECT_EQ(fresh->reused_tokens, 0);
  lo.context = 64;
  auto differs = lm->fork(lo);
  ASSERT_FALSE(differs.ok());
  EXPECT_NE(differs.status().message().find("context"), std::string::npos);
}

TEST(LanguageModelApi, KeepingTheSamplerContinuesOneRandomSequence) {
  TESSERA_REQUIRE_FIXTURE(path, kAidreams);
  auto lm = load_or_die(path);
  ASSERT_TRUE(lm);
  GenerateOptions go;
  go.max_tokens = 12;
  go.temperature = 0.9f;
  go.seed = 7;
  go.reseed = false;
  const std::vector<int32_t> prompt = lm->tokenize("The robot");
  auto a = lm->generate_tokens(prompt, go);
  auto b = lm->generate_tokens(prompt, go);
  ASSERT_TRUE(a.ok() && b.ok());
  // The lower layers with one sampler across both generations.
  llm::SamplerOptions so;
  so.temperature = 0.9f;
  so.seed = 7;
  llm::Sampler one(so);
  EXPECT_EQ(a->tokens, generator_tokens(path, {}, prompt, 12, &one));
  EXPECT_EQ(b->tokens, generator_tokens(path, {}, prompt, 12, &one));
  go.reseed = true;
  auto c = lm->generate_tokens(prompt, go);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->tokens, a->tokens);
}

TEST(LanguageModelApi, InfoAndCompareGreedyDescribeTheFile) {
  TESSERA_REQUIRE_FIXTURE(path, kAidreams);
  LanguageModelOptions lo;
  lo.kv_type = DType::f32;
  lo.round_matmul_inputs = false;
  auto lm = load_or_die(path, lo);
  ASSERT_TRUE(lm);
  auto model = gguf::LlamaModel::open(path);
  ASSERT_TRUE(model.ok());
  const LanguageModelInfo& i = lm->info();
  EXPECT_EQ(i.file, (*model)->file().what());
  EXPECT_EQ(i.layers, 4);
  EXPECT_EQ(i.dim, 64);
  EXPECT_EQ(i.vocab, 512);
  EXPECT_EQ(i.trained_context, 128);
  EXPECT_EQ(i.tensors.size(), (*model)->file().tensors().size());
  EXPECT_FALSE(i.byte_level_bpe);
  EXPECT_EQ(i.bos, (*model)->tokenizer().bos());
  EXPECT_EQ(lm->token_piece(429), (*model)->tokenizer().piece(429));
  EXPECT_EQ(lm->token_piece(-1), "");
  EXPECT_EQ(lm->batch(), 32);
  ASSERT_NE(lm->prompt_session(), nullptr);
  EXPECT_FALSE(lm->decode_session().devices().empty());
  LanguageModelOptions one = lo;
  one.batch = 1;
  auto single = lm->fork(one);
  ASSERT_TRUE(single.ok());
  EXPECT_EQ((*single)->batch(), 1);
  EXPECT_EQ((*single)->prompt_session(), nullptr);  // every token takes the decode step
  auto test = lm->fork(lo);
  ASSERT_TRUE(test.ok());
  auto ag = compare_greedy(*lm, **test, lm->tokenize("Once upon a time"), 10);
  ASSERT_TRUE(ag.ok()) << ag.status().to_string();
  EXPECT_EQ(ag->positions, 10);
  EXPECT_EQ(ag->top1_agree, 10);
  EXPECT_LT(ag->max_kl, 1e-9);
  EXPECT_EQ(lm->position(), 0);
}

TEST(LanguageModelApi, OptionErrorsNameTheField) {
  GenerateOptions go;
  EXPECT_TRUE(go.validate().ok());
  go.max_tokens = -1;
  EXPECT_NE(go.validate().message().find("GenerateOptions::max_tokens"), std::string::npos);
  go.max_tokens = 4;
  go.temperature = 0.5f;
  go.top_p = 0;
  EXPECT_EQ(go.validate().code(), StatusCode::invalid_argument);
  EXPECT_STREQ(stop_reason_name(StopReason::stop_string), "stop_string");
  TESSERA_REQUIRE_FIXTURE(path, kAidreams);
  LanguageModelOptions lo;
  lo.batch = 0;
  auto bad = LanguageModel::load(path, lo);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("LanguageModelOptions::batch"), std::string::npos);
  auto lm = load_or_die(path);
  ASSERT_TRUE(lm);
  EXPECT_EQ(lm->generate_tokens({}, {}).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(lm->generate_tokens({1, 9999}, {}).status().code(), StatusCode::out_of_range);
  std::vector<int32_t> too_long(static_cast<size_t>(lm->context_length()) + 1, 5);
  EXPECT_EQ(lm->generate_tokens(too_long, {}).status().code(), StatusCode::out_of_range);
}

TEST(ModelFormat, MagicFirstThenTheExtension) {
  TESSERA_REQUIRE_FIXTURE(gguf, kAidreams);
  TESSERA_REQUIRE_FIXTURE(tflite, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  EXPECT_EQ(*model_format(gguf), ModelFormat::gguf);
  EXPECT_EQ(*model_format(tflite), ModelFormat::tflite);
  const auto dir = std::filesystem::temp_directory_path() / ("tessera_format_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // Renamed files are still recognized by their first bytes.
  std::filesystem::copy_file(gguf, dir / "model.bin", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(tflite, dir / "model.dat", std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(*model_format((dir / "model.bin").string()), ModelFormat::gguf);
  EXPECT_EQ(*model_format((dir / "model.dat").string()), ModelFormat::tflite);
  // A damaged file goes by its extension, to its importer's error.
  std::ofstream(dir / "bad.gguf") << "not a model";
  EXPECT_EQ(*model_format((dir / "bad.gguf").string()), ModelFormat::gguf);
  std::ofstream(dir / "notes.txt") << "not a model";
  auto txt = model_format((dir / "notes.txt").string());
  ASSERT_FALSE(txt.ok());
  EXPECT_EQ(txt.status().code(), StatusCode::unsupported);
  EXPECT_NE(txt.status().message().find("'.txt'"), std::string::npos);
  EXPECT_EQ(model_format((dir / "absent.gguf").string()).status().code(), StatusCode::not_found);
  EXPECT_EQ(model_format(dir.string()).status().code(), StatusCode::invalid_argument);
  EXPECT_STREQ(model_format_name(ModelFormat::gguf), "gguf");
  std::filesystem::remove_all(dir);
}

// LanguageModelOptions::session.progress over a whole load (reading the file, checking its
// blocks, both sessions): never decreasing, ending at 1, with reports from the file part
// and the session part; false at any report cancels the load with StatusCode::cancelled.
TEST(LanguageModelApi, LoadProgressRisesToOneAndFalseCancels) {
  TESSERA_REQUIRE_FIXTURE(path, kQwen);
  for (bool mmap : {false, true}) {
    SCOPED_TRACE(mmap ? "mmap" : "read");
    std::vector<double> seen;
    LanguageModelOptions lo;
    lo.mmap = mmap;
    lo.session.progress = [&](double f) {
      seen.push_back(f);
      return true;
    };
    auto lm = load_or_die(path, lo);
    ASSERT_TRUE(lm);
    ASSERT_GE(seen.size(), 4u);
    EXPECT_EQ(seen.back(), 1.0);
    for (size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i], seen[i - 1]) << "report " << i;
    EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [](double f) { return f > 0 && f < 0.7; }));  // the file
    EXPECT_TRUE(std::any_of(seen.begin(), seen.end(), [](double f) { return f > 0.7 && f < 1; }));  // sessions
    const size_t reports = seen.size();
    GenerateOptions go;
    go.max_tokens = 2;
    auto r = lm->generate("Once", go);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(seen.size(), reports);  // generation reports nothing: the callback was load()'s
    // Cancelling at the first, a middle and the last report.
    for (size_t stop_at : {size_t{1}, reports / 2, reports}) {
      size_t calls = 0;
      LanguageModelOptions co = lo;
      co.session.progress = [&](double) { return ++calls < stop_at; };
      auto c = LanguageModel::load(path, co);
      ASSERT_FALSE(c.ok()) << "stop at " << stop_at;
      EXPECT_EQ(c.status().code(), StatusCode::cancelled) << c.status().to_string();
      EXPECT_EQ(calls, stop_at);
    }
  }
}

}  // namespace
}  // namespace tessera
