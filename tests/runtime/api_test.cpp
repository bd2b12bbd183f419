// The embedding API (tessera/model.h, tessera/generate.h): model infos, sessions by index
// and by name, user buffers and errors, against the TFLite interpreter's own outputs and
// the internal generator the facade wraps.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>
#include <set>

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

// Detection through the embedding API (tessera/detect.h, ModelSession::detect): a YOLOv8
// export's input is the letterboxed photo (grey 114 at its sides, quantized with the
// input's parameters), its detections the persons and the tie; an SSD model's the table's
// objects; a classifier, a missing image, bad options and a bound input are refused with
// the reason.
TEST(EmbeddingApi, DetectFindsThePersonsTheTieAndTheTable) {
  TESSERA_REQUIRE_FIXTURE(v8, "models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(ssd, "models/tflite/ssd_mobilenet_v1_coco_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(mnv1, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(hopper, "images/grace_hopper.bmp");
  TESSERA_REQUIRE_FIXTURE(table, "images/table.jpg");
  TESSERA_REQUIRE_FIXTURE(labels_path, "labels/coco_labels.txt");
  auto model = Model::load(v8);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto info = detector_info((*model)->graph());
  ASSERT_TRUE(info.ok()) << info.status().to_string();
  EXPECT_EQ(info->kind, DetectorKind::yolov8);
  EXPECT_EQ(info->classes, 80);
  EXPECT_EQ(info->anchors, 8400);
  // 512 x 600 onto 640 x 640: scaled by 16/15 to 546 x 640, 47 columns of padding on the left.
  auto in = (*model)->image_input(hopper);
  ASSERT_TRUE(in.ok()) << in.status().to_string();
  const TensorInfo& ti = (*model)->inputs()[0];
  ASSERT_EQ(ti.dtype, DType::i8);
  const int grey = static_cast<int>(std::lround(114.0 / 255.0 / ti.quant.scale[0])) + static_cast<int>(ti.quant.zero_point[0]);
  for (int y = 0; y < 640; y += 7)
    for (int x : {0, 46, 594, 639}) EXPECT_EQ(static_cast<int8_t>((*in)[(y * 640 + x) * 3]), grey) << x << "," << y;
  EXPECT_NE(static_cast<int8_t>((*in)[(320 * 640 + 320) * 3]), grey);  // the photo itself
  auto s = ModelSession::create(*model);
  ASSERT_TRUE(s.ok());
  DetectOptions o;
  o.threshold = 0.25f;
  auto found = (*s)->detect(hopper, o);
  ASSERT_TRUE(found.ok()) << found.status().to_string();
  ASSERT_EQ(found->size(), 3u);
  const Detection& person = (*found)[0];
  const Detection& tie = (*found)[1];
  EXPECT_EQ(person.class_id, 0);  // COCO's 80: person 0, tie 27
  EXPECT_GT(person.score, 0.85f);
  EXPECT_LT(person.left, 15);
  EXPECT_GT(person.right, 500);
  EXPECT_EQ(tie.class_id, 27);
  EXPECT_GT(tie.left, 200);
  EXPECT_LT(tie.right, 320);
  EXPECT_GT(tie.top, 380);
  EXPECT_LT(tie.bottom, 560);
  EXPECT_GE(tie.score, (*found)[2].score);
  // The same outputs decoded again, at a higher threshold and with fewer kept.
  o.threshold = 0.5f;
  auto again = read_detections((*s)->session(), 512, 600, o);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].score, person.score);
  o.threshold = 0.25f;
  o.max_detections = 2;
  again = read_detections((*s)->session(), 512, 600, o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 2u);
  // SSD: the post-process's classes (COCO's 90, the labels file's lines after the background).
  auto ssd_model = Model::load(ssd);
  ASSERT_TRUE(ssd_model.ok());
  auto ssd_session = ModelSession::create(*ssd_model);
  ASSERT_TRUE(ssd_session.ok());
  auto objects = (*ssd_session)->detect(table);
  ASSERT_TRUE(objects.ok()) << objects.status().to_string();
  std::vector<std::string> lines;
  {
    std::ifstream f(labels_path);
    for (std::string l; std::getline(f, l);) lines.push_back(l);
  }
  std::set<std::string> names;
  for (const Detection& d : *objects) {
    ASSERT_LT(static_cast<size_t>(d.class_id + 1), lines.size());
    names.insert(lines[static_cast<size_t>(d.class_id + 1)]);
    EXPECT_GE(d.left, 0);
    EXPECT_LE(d.right, 640);  // inside the 640 x 480 photo
    EXPECT_LE(d.bottom, 480);
  }
  for (const char* want : {"dining table", "cup", "book"}) EXPECT_TRUE(names.count(want)) << want;
  // Refusals.
  auto classifier = Model::load(mnv1);
  ASSERT_TRUE(classifier.ok());
  auto cs = ModelSession::create(*classifier);
  ASSERT_TRUE(cs.ok());
  auto not_detector = (*cs)->detect(hopper);
  EXPECT_EQ(not_detector.status().code(), StatusCode::unsupported);
  EXPECT_NE(not_detector.status().message().find("is not an object detector"), std::string::npos)
      << not_detector.status().to_string();
  auto no_image = (*s)->detect(hopper + ".missing");
  EXPECT_FALSE(no_image.ok());
  EXPECT_NE(no_image.status().message().find(".missing"), std::string::npos) << no_image.status().to_string();
  o.threshold = 1.5f;
  EXPECT_EQ((*s)->detect(hopper, o).status().code(), StatusCode::invalid_argument);
  EXPECT_EQ(read_detections((*s)->session(), 0, 600).status().code(), StatusCode::invalid_argument);
  Bytes buffer(static_cast<size_t>(ti.bytes));
  ASSERT_TRUE((*s)->bind_input(0, buffer.data(), ti.bytes).ok());
  auto bound = (*s)->detect(hopper);
  EXPECT_EQ(bound.status().code(), StatusCode::invalid_argument);
  EXPECT_NE(bound.status().message().find("bound"), std::string::npos) << bound.status().to_string();
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

namespace tessera {
namespace {

// Label lines matched to a model's classes, as classify / detect / Python's detect read
// them: a background line first (ImageNet's 1001 for 1000), COCO's 91 lines with "???"
// placeholders for 80 classes, trailing blanks, and lists that match nothing kept as written.
TEST(EmbeddingApi, LabelsForClassesDropsABackgroundLineAndPlaceholders) {
  EXPECT_EQ(labels_for_classes({"background", "cat", "dog"}, 2), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(labels_for_classes({"background", "cat", "dog"}, 3), (std::vector<std::string>{"background", "cat", "dog"}));
  EXPECT_EQ(labels_for_classes({"???", "person", "???", "car", "", ""}, 2), (std::vector<std::string>{"person", "car"}));
  EXPECT_EQ(labels_for_classes({"a", "b", "", ""}, 2), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(labels_for_classes({"a", "b", "c", "d"}, 2), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_TRUE(labels_for_classes({}, 80).empty());
}

}  // namespace
}  // namespace tessera
