// Model queues: the bound (503), slots running jobs in parallel on prepared sessions, the
// drain on stop, and the --model spec.
#include "serve/model_pool.h"

#include "fixtures.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <random>

#include "import/tflite/tflite_importer.h"
#include "serve/api_error.h"

namespace tessera::serve {
namespace {

constexpr const char* kModelRel = "models/tflite/mobilenet_v1_0.25_128_quant.tflite";

template <typename F>
int status_of(F&& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.status();
  }
  return 0;
}

TEST(ModelSpec, SplitsTheDeviceAfterTheExtension) {
  ModelConfig c = parse_model_spec("mb=/x/y.tflite");
  EXPECT_EQ(c.name, "mb");
  EXPECT_EQ(c.path, "/x/y.tflite");
  EXPECT_EQ(c.device, "cpu");
  c = parse_model_spec("llm=a:b/m.gguf:tile:blackhole_p150a");
  EXPECT_EQ(c.path, "a:b/m.gguf");
  EXPECT_EQ(c.device, "tile:blackhole_p150a");
  EXPECT_EQ(status_of([] { parse_model_spec("noname.tflite"); }), 400);
  EXPECT_EQ(status_of([] { parse_model_spec("=x.tflite"); }), 400);
  EXPECT_EQ(status_of([] { parse_model_spec("a b=x.tflite"); }), 400);
  EXPECT_EQ(status_of([] { parse_model_spec("m=x.tflite:"); }), 400);
}

TEST(ServedModel, QueueBoundAnswers503AndEveryAcceptedJobRuns) {
  TESSERA_REQUIRE_FIXTURE(kModel, kModelRel);
  Metrics metrics;
  ModelConfig c;
  c.name = "mb";
  c.path = kModel;
  c.parallel = 2;
  c.max_queue = 3;
  auto m = ServedModel::load(c, metrics);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ServedModel& model = **m;
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].dtype, DType::u8);

  // Two jobs hold both slots until released; three more fill the queue; the sixth is refused.
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> ran{0}, started{0};
  auto job = [&, gate](Slot& slot) {
    EXPECT_TRUE(slot.session);
    ++started;
    gate.wait();
    ++ran;
  };
  model.submit(job);
  model.submit(job);
  while (started < 2) std::this_thread::yield();
  for (int i = 0; i < 3; ++i) model.submit(job);
  const QueueGauge g = model.gauge();
  EXPECT_EQ(g.active, 2);
  EXPECT_EQ(g.queued, 3);
  EXPECT_EQ(status_of([&] { model.submit([](Slot&) {}); }), 503);
  release.set_value();
  model.stop();  // drains the queue before joining
  EXPECT_EQ(ran, 5);
  EXPECT_EQ(status_of([&] { model.submit([](Slot&) {}); }), 503);  // stopping
}

TEST(ServedModel, SlotsGiveTheSameOutputsAsOneSession) {
  TESSERA_REQUIRE_FIXTURE(kModel, kModelRel);
  Metrics metrics;
  ModelConfig c;
  c.name = "mb";
  c.path = kModel;
  c.parallel = 3;
  auto m = ServedModel::load(c, metrics);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  auto g = tflite::load_tflite_file(kModel);
  ASSERT_TRUE(g.ok());
  auto ref = Session::create(*g, SessionOptions{});
  ASSERT_TRUE(ref.ok());
  std::mt19937 rng(9);
  const int64_t n = num_elements((*m)->inputs()[0].shape);
  std::vector<std::vector<uint8_t>> inputs(6, std::vector<uint8_t>(static_cast<size_t>(n)));
  for (auto& in : inputs)
    for (auto& b : in) b = static_cast<uint8_t>(rng());
  std::vector<std::promise<std::vector<uint8_t>>> outs(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    (*m)->submit([&, i](Slot& slot) {
      EXPECT_TRUE(slot.session->set_input(0, inputs[i].data(), n).ok());
      EXPECT_TRUE(slot.session->run().ok());
      outs[i].set_value(*slot.session->output(0));
    });
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto got = outs[i].get_future().get();
    ASSERT_TRUE((*ref)->set_input(0, inputs[i].data(), n).ok());
    ASSERT_TRUE((*ref)->run().ok());
    EXPECT_EQ(got, *(*ref)->output(0)) << "request " << i;
  }
}

}  // namespace
}  // namespace tessera::serve
