// micro_keyword_scrambled (../shared/models/tflite/corpus: 7 integer SVDF v3 operators, a
// FULLY_CONNECTED, an int8 -> int16 SOFTMAX and int16 QUANTIZEs) streamed frame by frame:
// several Invoke calls on one interpreter against several runs of one Tessera session, so
// that the SVDF states carry over as they do on a device listening for keywords. The model
// is compared up to the last operator Tessera imports (the whole model once every operator
// is supported), every output byte identical on every invoke.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "oracle/oracle.h"

namespace tessera::oracle {
namespace {

constexpr int kFrames = 8;

TEST(TfliteOracle, KeywordSvdfStreamMatchesTheInterpreter) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::string path = std::string(TESSERA_SHARED_DIR) + "/models/tflite/corpus/micro_keyword_scrambled.tflite";
  if (!fs::exists(path)) {
    if (testing::fixtures_required()) FAIL() << path << " is absent";
    GTEST_SKIP() << path << " is absent";
  }
  const std::vector<uint8_t> model = testing::read_file(path);
  const int ops = static_cast<int>(::tflite::GetModel(model.data())->subgraphs()->Get(0)->operators()->size());
  // The longest prefix Tessera imports.
  std::vector<uint8_t> cut;
  int last = -1;
  for (int op = ops - 1; op >= 0 && last < 0; --op) {
    auto c = op == ops - 1 ? Result<std::vector<uint8_t>>(model) : cut_after(model, op);
    if (!c.ok()) continue;
    auto owner = std::make_shared<std::vector<uint8_t>>(*c);
    ConstData cd{owner->data(), static_cast<int64_t>(owner->size()), owner};
    if (tflite::load_tflite_buffer(cd).ok()) {
      cut = *c;
      last = op;
    }
  }
  ASSERT_GE(last, 0) << "Tessera imports no prefix of the model";
  int svdfs = 0;
  for (int op = 0; op <= last; ++op) svdfs += operator_name(model, op) == "SVDF";
  EXPECT_GE(svdfs, 1);
  std::string names;
  for (int op = 0; op <= last; ++op) names += (op ? " " : "") + operator_name(model, op);
  std::printf("[oracle] keyword_scrambled: operators 0..%d of %d (%d SVDF): %s\n", last, ops, svdfs, names.c_str());
  TempDir dir("keyword_svdf");
  const fs::path file = dir.path / "cut.tflite";
  write_bytes(file, cut);
  const ::tflite::SubGraph* sg = ::tflite::GetModel(cut.data())->subgraphs()->Get(0);
  const ::tflite::Tensor* in = sg->tensors()->Get(sg->inputs()->Get(0));
  ASSERT_TRUE(in->type() == ::tflite::TensorType_INT8 || in->type() == ::tflite::TensorType_INT16)
      << ::tflite::EnumNameTensorType(in->type());
  size_t bytes = in->type() == ::tflite::TensorType_INT16 ? 2 : 1;
  for (int32_t d : *in->shape()) bytes *= static_cast<size_t>(d);
  std::vector<Job> jobs{Job{"stream", file.string(), {}, {}}};
  for (int f = 0; f < kFrames; ++f) jobs[0].inputs.push_back(random_bytes(bytes, 9100 + static_cast<uint32_t>(f)));
  ASSERT_EQ(run_batch_invokes(script, dir.path, jobs, kFrames, 1), "");
  auto outs = run_tessera_invokes(cut, jobs[0].inputs, kFrames, "cpu");
  ASSERT_TRUE(outs.ok()) << outs.status().to_string();
  ASSERT_EQ(outs->size(), static_cast<size_t>(kFrames));
  for (int f = 0; f < kFrames; ++f) {
    const auto& ours = (*outs)[static_cast<size_t>(f)];
    const auto& theirs = jobs[0].outputs[static_cast<size_t>(f)];
    ASSERT_EQ(ours.size(), theirs.size()) << "frame " << f;
    int64_t differ = 0;
    for (size_t k = 0; k < ours.size(); ++k) differ += ours[k] != theirs[k];
    EXPECT_EQ(differ, 0) << "frame " << f << ": " << differ << " of " << ours.size() << " bytes differ";
  }
  std::printf("[oracle] keyword_scrambled: %d frames x %zu bytes identical\n", kFrames, jobs[0].outputs[0].size());
}

}  // namespace
}  // namespace tessera::oracle
