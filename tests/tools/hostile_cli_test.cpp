// Issue 18's reproducers through the real `tessera` binary: each must end with one error
// line naming the file and the problem and a non-zero exit, never an abort, a crash, an
// endless read or a huge allocation.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "fixtures.h"
#include "hostile_models.h"
#include "tools/cli_fixture.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
namespace hostile = testing::hostile;

class HostileCli : public testing::CliTest {
 protected:
  // Runs `args`, which must fail cleanly: exit status 1 (not a signal), and stderr is one
  // "tessera: error: ..." line containing every string in `expect`.
  void expect_clean_failure(const std::string& args, const std::vector<std::string>& expect) {
    int rc = run(args);
    ASSERT_TRUE(WIFEXITED(rc)) << args << ": killed by a signal\n" << err_;
    EXPECT_EQ(WEXITSTATUS(rc), 1) << args << "\n" << err_;
    EXPECT_EQ(err_.rfind("tessera: error: ", 0), 0u) << args << "\n" << err_;
    EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << args << "\n" << err_;
    for (const auto& e : expect) EXPECT_NE(err_.find(e), std::string::npos) << args << ": no '" << e << "' in\n" << err_;
  }
  std::vector<uint8_t> bmp(int32_t width, int32_t height, size_t pixel_bytes) {
    std::vector<uint8_t> b(54 + pixel_bytes, 0);
    auto put = [&](size_t at, uint32_t v, int n) { std::memcpy(&b[at], &v, n); };
    b[0] = 'B';
    b[1] = 'M';
    put(2, static_cast<uint32_t>(b.size()), 4);
    put(10, 54, 4);
    put(14, 40, 4);
    put(18, static_cast<uint32_t>(width), 4);
    put(22, static_cast<uint32_t>(height), 4);
    put(26, 1, 2);
    put(28, 24, 2);
    for (size_t i = 54; i < b.size(); ++i) b[i] = static_cast<uint8_t>(i * 13 + 1);
    return b;
  }
};

#ifdef TESSERA_HOSTILE_TFLITE  // the schema-generated header is present
TEST_F(HostileCli, WrappedShapeIsRefusedByInspectRunAndClassify) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(cat, "images/cat.bmp");
  auto bytes = testing::read_file(model);
  auto site = hostile::find_tflite_tensor(bytes, hostile::kWrapOriginal);
  ASSERT_TRUE(site.has_value());
  write("wrapped.tflite", hostile::with_tflite_shape(bytes, *site, hostile::kWrapShape));
  std::vector<uint8_t> input(128 * 128 * 3, 77);
  write("in.bin", input);
  const std::vector<std::string> expect = {"wrapped.tflite", "tensor " + std::to_string(site->index), "elements"};
  // inspect refuses what run would.
  expect_clean_failure("inspect " + path("wrapped.tflite"), expect);
  expect_clean_failure("run " + path("wrapped.tflite") + " --input " + path("in.bin") + " --output " + path("o"), expect);
  expect_clean_failure("classify " + path("wrapped.tflite") + " " + cat, expect);
}

#endif  // TESSERA_HOSTILE_TFLITE

TEST_F(HostileCli, DirectoriesAndDevicesAreRefused) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/hello_world_int8.tflite");
  fs::create_directories(path("x.tflite"));
  fs::create_directories(path("indir"));
  expect_clean_failure("inspect " + path("x.tflite"), {"x.tflite", "directory"});
  expect_clean_failure("run " + path("x.tflite") + " --input " + path("indir") + " --output " + path("o"),
                       {"x.tflite", "directory"});
  // hello_world takes one int8 [1,1]: exactly one byte.
  expect_clean_failure("run " + model + " --input " + path("indir") + " --output " + path("o"),
                       {"indir", "directory"});
  auto t0 = std::chrono::steady_clock::now();
  expect_clean_failure("run " + model + " --input /dev/zero --output " + path("o"), {"/dev/zero", "1 bytes"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  write("short.bin", std::vector<uint8_t>{});
  expect_clean_failure("run " + model + " --input " + path("short.bin") + " --output " + path("o"),
                       {"short.bin", "has 0 bytes but needs 1"});
  // Its batch is dynamic (shape_signature [-1,1]): two bytes run at [2,1], unless
  // --input-shape fixes the shape.
  write("long.bin", std::vector<uint8_t>{1, 2});
  expect_clean_failure("run " + model + " --input-shape 0=1,1 --input " + path("long.bin") + " --output " + path("o"),
                       {"long.bin", "2 bytes, the input needs 1", "--input-shape"});
  EXPECT_EQ(run("run " + model + " --input " + path("long.bin") + " --output " + path("o")), 0) << err_;
  EXPECT_NE(out_.find("i8 [2,1], 2 bytes"), std::string::npos) << out_;
  write("one.bin", std::vector<uint8_t>{5});
  EXPECT_EQ(run("run " + model + " --input " + path("one.bin") + " --output " + path("o")), 0) << err_;
  expect_clean_failure("classify " + model + " " + path("indir"), {"indir", "directory"});
  expect_clean_failure("classify " + model + " /dev/zero", {"/dev/zero"});
}

TEST_F(HostileCli, ConvertShapesThatWrapAreErrors) {
  write("in.bin", std::vector<float>{1.5f, -2.0f, 3.25f, 0.5f});
  for (const std::string to : {"bf16/tile", "bfp8_b/tile", "f32", "i8/nc1hwc2"}) {
    expect_clean_failure("convert --shape 4611686018427387920 --from f32 --to " + to + " " + path("in.bin") + " " +
                             path("out.bin"),
                         {"overflows"});
  }
  expect_clean_failure("convert --shape 4294967296,4294967296 --from u8 --to u8/tile " + path("in.bin") + " " +
                           path("out.bin"),
                       {"overflows"});
  // Fits int64 but is far past what convert holds in memory.
  expect_clean_failure("convert --shape 1099511627776 --from u8 --to bf16/tile " + path("in.bin") + " " +
                           path("out.bin"),
                       {"bytes", "allowed"});
}

TEST_F(HostileCli, ImagesWithAZeroSideOrTooManyPixelsAreRefused) {
  TESSERA_REQUIRE_FIXTURE(model, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  write("zero.bmp", bmp(0, 16, 16 * 48));
  expect_clean_failure("classify " + model + " " + path("zero.bmp"), {"zero.bmp"});
  write("huge.bmp", bmp(20000, 20000, 900000));
  auto t0 = std::chrono::steady_clock::now();
  expect_clean_failure("classify " + model + " " + path("huge.bmp"), {"huge.bmp", "20000x20000", "allowed"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST_F(HostileCli, GgufSynthRefusesModelsPastItsBudget) {
  // dim 65536, 1024 layers, ffn 262144: about 5 x 10^13 bytes of q8_0 weights.
  expect_clean_failure("gguf-synth " + path("big.gguf") +
                           " --dim 65536 --layers 1024 --heads 1024 --ffn 262144 --vocab 1048576",
                       {"budget"});
  EXPECT_FALSE(fs::exists(path("big.gguf")));
  expect_clean_failure("gguf-synth " + path("mid.gguf") + " --dim 4096 --layers 32 --heads 32 --ffn 11008 --max-gib 1",
                       {"budget"});
}

}  // namespace
}  // namespace tessera
