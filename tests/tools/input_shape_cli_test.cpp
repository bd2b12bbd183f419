// `--input-shape` of run, inspect and bench, and `run` with an input file of another size
// along a dynamic dim, on a model with a dynamic input (shape_signature -1) and the shape
// arithmetic converters emit before a RESHAPE (import/tflite/shape_chain_model.h).
#include <gtest/gtest.h>

#include <random>

#include "import/tflite/shape_chain_model.h"
#include "tools/cli_fixture.h"

namespace tessera {
namespace {

class InputShapeCli : public testing::CliTest {
 protected:
  // Writes the chain model (declared x [1,4,6]) with `signature` on x as model.tflite.
  void write_model(std::vector<int32_t> signature) {
    testing::MultiOpModel m = testing::reshape_chain_model(1, 4, true);
    m.tensors[0].shape_signature = std::move(signature);
    write("model.tflite", m.bytes());
  }
  // Seeded input values for `n` floats, written as `name`.
  std::vector<float> write_input(const std::string& name, size_t n) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::uniform_real_distribution<float> d(-3, 3);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    write(name, v);
    return v;
  }
  // out.0.bin must be x + bias (bias [0.25, -1.5, 3] over the last dim), computed in double.
  void expect_output(const std::vector<float>& x) {
    const std::vector<uint8_t> bytes = read_bytes("out.0.bin");
    ASSERT_EQ(bytes.size(), x.size() * 4);
    std::vector<float> y(x.size());
    std::memcpy(y.data(), bytes.data(), bytes.size());
    const double bias[3] = {0.25, -1.5, 3.0};
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], static_cast<float>(double(x[i]) + bias[i % 3])) << i;
  }
  std::string model() const { return path("model.tflite"); }
};

TEST_F(InputShapeCli, RunAndInspectAtTheGivenShape) {
  write_model({-1, -1, 6});
  ASSERT_EQ(run("inspect --brief " + model()), 0) << err_;
  EXPECT_NE(out_.find("input  'x' f32[1,4,6]  dynamic dims 0,1 (--input-shape)"), std::string::npos) << out_;
  ASSERT_EQ(run("inspect --brief " + model() + " --input-shape x=3,5,6"), 0) << err_;
  EXPECT_NE(out_.find("input  'x' f32[3,5,6]"), std::string::npos) << out_;
  EXPECT_NE(out_.find("output 'y' f32[3,10,3]"), std::string::npos) << out_;
  const std::vector<float> x = write_input("x.bin", 3 * 5 * 6);
  ASSERT_EQ(run("run " + model() + " --input-shape 0=3,5,6 --input " + path("x.bin") + " --output " + path("out")), 0) << err_;
  EXPECT_NE(out_.find("f32 [3,10,3], 360 bytes"), std::string::npos) << out_;
  expect_output(x);
  ASSERT_EQ(run("bench " + model() + " --input-shape x=2,3,6 --runs 1 --warmup 0"), 0) << err_;
}

TEST_F(InputShapeCli, RunTakesTheOneDynamicDimFromTheInputFile) {
  write_model({-1, 4, 6});
  const std::vector<float> x = write_input("x.bin", 5 * 4 * 6);
  ASSERT_EQ(run("run " + model() + " --input " + path("x.bin") + " --output " + path("out")), 0) << err_;
  EXPECT_NE(err_.find("input 0: loading the model at x=5,4,6"), std::string::npos) << err_;
  EXPECT_NE(out_.find("f32 [5,8,3]"), std::string::npos) << out_;
  expect_output(x);
  // 25 floats are no whole number of [4,6] steps.
  write_input("odd.bin", 25);
  EXPECT_NE(run("run " + model() + " --input " + path("odd.bin") + " --output " + path("out")), 0);
  EXPECT_NE(err_.find("input file '" + path("odd.bin") + "' for input 0 'x' f32 [1,4,6]: 100 bytes, the input needs 96; dim 0 "
                      "is dynamic but 100 bytes are no whole number of its 96-byte steps"),
            std::string::npos)
      << err_;
}

TEST_F(InputShapeCli, ErrorsNameTheInputTheDimAndTheOption) {
  write_model({-1, -1, 6});
  write_input("x.bin", 3 * 4 * 6);
  const std::string io = " --input " + path("x.bin") + " --output " + path("out");
  // Two dynamic dims: the file's size cannot say which.
  EXPECT_NE(run("run " + model() + io), 0);
  EXPECT_NE(err_.find("its dims 0,1 are dynamic: give its shape with --input-shape x=D0,D1,..."), std::string::npos) << err_;
  // A shape given, and a file of another size.
  EXPECT_NE(run("run " + model() + " --input-shape x=2,4,6" + io), 0);
  EXPECT_NE(err_.find("(the shape --input-shape gives it)"), std::string::npos) << err_;
  struct Case {
    std::string spec, phrase;
  };
  for (const Case& c : std::vector<Case>{{"x=3,4,7", "input 0 'x' [-1,-1,6]: dim 2 is fixed at 6 by the model, got 7"},
                                        {"x=3,4", "[3,4] has rank 2, the input has rank 3"},
                                        {"x=0,4,6", "dim 0 is 0, it must be in [1, 2147483647]"},
                                        {"nope=3,4,6", "input shape for 'nope': the model has no such input (inputs: 0 'x')"},
                                        {"x=3,a,6", "input shape 'x=3,a,6': dim 1 'a' is not an integer"},
                                        {"x=999999,999999,6", "more than 1099511627776 elements"}}) {
    SCOPED_TRACE(c.spec);
    EXPECT_NE(run("inspect --brief " + model() + " --input-shape " + c.spec), 0);
    EXPECT_NE(err_.find("--input-shape"), std::string::npos) << err_;
    EXPECT_NE(err_.find(c.phrase), std::string::npos) << err_;
  }
}

}  // namespace
}  // namespace tessera
