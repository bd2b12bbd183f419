// probe_gguf (the fuzz target's body) over seeded mutations of real and synthetic files:
// a short, deterministic fuzz run inside the test suite.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "fixtures.h"
#include "import/gguf/gguf_probe.h"
#include "import/gguf/synth.h"

namespace tessera::gguf {
namespace {

std::vector<uint8_t> small_model(DType t) {
  SynthOptions o;
  o.dim = 32;
  o.layers = 1;
  o.heads = 2;
  o.kv_heads = 1;
  o.ffn = 64;
  o.vocab = 260;
  o.context = 8;
  o.type = t;
  auto w = synth_llama(o);
  EXPECT_TRUE(w.ok());
  return *w->bytes();
}

TEST(GgufProbe, ValidFilesProbeClean) {
  for (DType t : {DType::f32, DType::q8_0, DType::q4_0}) {
    auto b = small_model(t);
    Status s = probe_gguf(b.data(), b.size());
    EXPECT_TRUE(s.ok()) << dtype_name(t) << ": " << s.to_string();
  }
  std::string real = testing::shared_path("models/gguf/aidreams260K-Q4_0.gguf");
  if (!real.empty()) {
    auto b = testing::read_file(real);
    EXPECT_TRUE(probe_gguf(b.data(), b.size()).ok());
  }
}

TEST(GgufProbe, MutationsGiveStatusesNotCrashes) {
  std::mt19937 rng(7);
  int ok = 0, failed = 0;
  for (DType t : {DType::f32, DType::q8_0, DType::q4_0}) {
    const auto base = small_model(t);
    for (int iter = 0; iter < 400; ++iter) {
      auto b = base;
      switch (rng() % 4) {
        case 0:  // flip bits
          for (int k = 0; k < 1 + static_cast<int>(rng() % 8); ++k) b[rng() % b.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:  // overwrite a word with an extreme value
        {
          size_t at = rng() % (b.size() - 8);
          uint64_t v = (rng() % 2) ? ~uint64_t{0} : (uint64_t{1} << (rng() % 64));
          std::memcpy(&b[at], &v, 8);
          break;
        }
        case 2:  // truncate
          b.resize(rng() % b.size());
          break;
        default:  // duplicate a slice
        {
          size_t a = rng() % b.size(), n = std::min<size_t>(rng() % 64, b.size() - a);
          b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng() % b.size()), base.begin() + static_cast<std::ptrdiff_t>(a),
                   base.begin() + static_cast<std::ptrdiff_t>(a + n));
        }
      }
      Status s = probe_gguf(b.data(), b.size());
      (s.ok() ? ok : failed)++;
      if (!s.ok()) {
        EXPECT_FALSE(s.message().empty());
      }
    }
  }
  // Both outcomes occur: mutations inside strings and weights still load; others are refused.
  EXPECT_GT(ok, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace tessera::gguf
