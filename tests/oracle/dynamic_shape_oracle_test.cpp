// A dynamic input (shape_signature -1 on batch and length) through the SHAPE ->
// GATHER / STRIDED_SLICE -> MUL -> PACK -> CONCATENATION -> RESHAPE chain, against the
// TFLite interpreter. The oracle cannot resize an input, so it runs the same model written
// at each target size; Tessera runs the dynamic model (declared [1,4,6]) loaded at that
// size (ImportOptions::input_shapes), and at its declared size without options.
#include <gtest/gtest.h>

#include "import/tflite/shape_chain_model.h"
#include "oracle/op_checks.h"

namespace tessera::oracle {
namespace {

TEST(DynamicShapeOracle, ReshapeChainAtTheGivenInputShape) {
  TESSERA_REQUIRE_ORACLE(script);
  const std::vector<uint8_t> dynamic = testing::reshape_chain_model(1, 4, true).bytes();
  struct Target {
    int32_t batch, length;
  };
  const std::vector<Target> targets = {{1, 4}, {3, 5}, {2, 1}, {4, 7}, {1, 16}};
  TempDir dir("dynamic_shape");
  std::vector<Job> jobs;
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target& t = targets[i];
    const std::string name = "b" + std::to_string(t.batch) + "_l" + std::to_string(t.length);
    const fs::path file = dir.path / (name + ".tflite");
    write_bytes(file, testing::reshape_chain_model(t.batch, t.length, false).bytes());
    jobs.push_back(Job{name, file.string(), {random_bytes(static_cast<size_t>(t.batch) * t.length * 6 * 4, 40 + i)}, {}});
  }
  // The interpreter also runs the dynamic model itself at its declared size.
  const fs::path own = dir.path / "declared.tflite";
  write_bytes(own, dynamic);
  jobs.push_back(Job{"declared", own.string(), {jobs[0].inputs[0]}, {}});
  for (Job& j : jobs) {
    // Finite floats: random bytes may spell NaN or huge values; keep them as the oracle reads them.
    for (size_t k = 0; k + 4 <= j.inputs[0].size(); k += 4) j.inputs[0][k + 3] &= 0x3f;
  }
  jobs.back().inputs = {jobs[0].inputs[0]};
  ASSERT_EQ(run_batch(script, dir.path, jobs), "");
  for (size_t i = 0; i < jobs.size(); ++i) {
    SCOPED_TRACE(jobs[i].name);
    tflite::ImportOptions opts;
    if (i < targets.size()) opts.input_shapes = {{"x", Shape{targets[i].batch, targets[i].length, 6}}};
    auto outs = run_tessera(dynamic, jobs[i].inputs, "cpu", opts);
    ASSERT_TRUE(outs.ok()) << outs.status().to_string();
    ASSERT_EQ(outs->size(), 1u);
    const std::vector<uint8_t>& want = jobs[i].outputs[0];
    ASSERT_EQ((*outs)[0].size(), want.size());
    // ADD of the same floats: the interpreter's result bit for bit.
    EXPECT_EQ((*outs)[0], want);
    EXPECT_NE(std::count(want.begin(), want.end(), want[0]), static_cast<std::ptrdiff_t>(want.size()));
    std::printf("[oracle] dynamic_shape %-12s %zu bytes %s\n", jobs[i].name.c_str(), want.size(),
                (*outs)[0] == want ? "match" : "DIFFER");
  }
}

}  // namespace
}  // namespace tessera::oracle
