// Hostile GGUF files (issue 18): the corpus generator's structured corruptions of a real
// file (tests/hostile_models.h) — dims whose product wraps, zero or all-ones dims, bad dim
// counts, unsupported and unknown types — each refused with a message naming the tensor;
// and gguf-synth's size budget, checked before anything is allocated.
#include <gtest/gtest.h>

#include <cstring>

#include "fixtures.h"
#include "hostile_models.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/gguf_probe.h"
#include "import/gguf/synth.h"

namespace tessera::gguf {
namespace {

namespace hostile = testing::hostile;

// A block scale set to infinity or NaN (binary16 exponent all ones) in a q8_0 and a q4_0
// tensor: refused at open, naming the tensor and the block.
TEST(HostileGguf, NonFiniteBlockScalesAreRefusedNamingTheTensor) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K-Q4_0.gguf");
  const hostile::Bytes file = testing::read_file(path);
  auto f = File::parse(ConstData::from_vector(file), "ok");
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  int checked = 0;
  for (const TensorInfo& t : f->tensors()) {
    if (t.dtype != DType::q8_0 && t.dtype != DType::q4_0) continue;
    if (t.bytes < 4 * dtype_block_bytes(t.dtype)) continue;
    const int64_t at = f->data_offset() + static_cast<int64_t>(t.offset) + 3 * dtype_block_bytes(t.dtype);  // block 3's d
    for (uint16_t bad : {uint16_t{0x7c00}, uint16_t{0xfe00}}) {
      hostile::Bytes edited = file;
      std::memcpy(&edited[static_cast<size_t>(at)], &bad, 2);
      auto e = File::parse(ConstData::from_vector(edited), "'edited.gguf'");
      ASSERT_FALSE(e.ok()) << t.name;
      EXPECT_NE(e.status().message().find("tensor '" + t.name + "' (" + dtype_name(t.dtype) +
                                          ") block 3 has a non-finite scale"),
                std::string::npos)
          << e.status().message();
    }
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

TEST(HostileGguf, DimsThatWrapAreRefusedNamingTheTensor) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K-Q4_0.gguf");
  const hostile::Bytes file = testing::read_file(path);
  auto sites = hostile::gguf_tensor_sites(file);
  ASSERT_GT(sites.size(), 10u);
  ASSERT_TRUE(File::parse(ConstData::from_vector(file), "ok").ok());
  for (const auto& site : sites) {
    ASSERT_EQ(site.n_dims >= 1 && site.n_dims <= 4, true) << site.name;
    // 2^32 x 2^32 wraps to 0 in 64 bits; 2^64 - 1 and 2^63 x 2 overflow on their own.
    for (std::vector<uint64_t> dims :
         {std::vector<uint64_t>{uint64_t{1} << 32, uint64_t{1} << 32}, {~uint64_t{0}}, {uint64_t{1} << 63, 2}, {0}}) {
      auto f = File::parse(ConstData::from_vector(hostile::with_gguf_dims(file, site, dims)), "'edited.gguf'");
      ASSERT_FALSE(f.ok()) << site.name << " dims[0] " << dims[0];
      EXPECT_NE(f.status().message().find("'" + site.name + "'"), std::string::npos) << f.status().message();
    }
  }
}

TEST(HostileGguf, StructuredCorruptionsProbeCleanly) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K-Q4_0.gguf");
  const hostile::Bytes file = testing::read_file(path);
  std::vector<hostile::Variant> variants;
  hostile::add_gguf_edits(file, 1000, variants);
  hostile::add_truncations(file, 30, variants);
  ASSERT_GT(variants.size(), 300u);
  int refused = 0, type_edits = 0;
  for (const auto& v : variants) {
    Status s = probe_gguf(v.bytes.data(), v.bytes.size());
    const bool type_edit = v.name.rfind("type-", 0) == 0;
    type_edits += type_edit;
    if (!s.ok()) {
      ++refused;
      EXPECT_FALSE(s.message().empty()) << v.name;
    } else {
      // A dims, n_dims or truncation edit can never describe a valid model; a type edit to
      // another supported type may, when the tensor's bytes still fit the data section.
      EXPECT_TRUE(type_edit) << v.name << " was accepted";
    }
  }
  EXPECT_GE(refused, static_cast<int>(variants.size()) - type_edits) << refused << " of " << variants.size();
}

TEST(HostileGguf, SynthRefusesModelsPastItsBudgetBeforeAllocating) {
  SynthOptions o;
  o.dim = 65536;
  o.layers = 1024;
  o.heads = 1024;
  o.ffn = 262144;
  o.vocab = 1 << 20;
  auto bytes = synth_weight_bytes(o);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  EXPECT_GT(*bytes, int64_t{40} << 40);  // tens of terabytes
  auto w = synth_llama(o);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("budget"), std::string::npos) << w.status().message();
  // Shapes whose size overflows int64 are an error too, not a wrapped budget check.
  o.type = DType::f32;
  o.dim = int64_t{1} << 40;
  o.heads = 1;
  o.vocab = int64_t{1} << 40;
  EXPECT_FALSE(synth_weight_bytes(o).ok());
  EXPECT_FALSE(synth_llama(o).ok());
  // A small model is within it and its size is what the writer holds.
  SynthOptions s;
  s.dim = 32;
  s.layers = 1;
  s.heads = 2;
  s.ffn = 64;
  s.vocab = 260;
  s.type = DType::q8_0;
  auto small = synth_weight_bytes(s);
  ASSERT_TRUE(small.ok());
  // token_embd, output (260 x 32) and 7 layer matrices in q8_0, three f32 norms of 32.
  const int64_t row = 34;  // one q8_0 block per 32 values
  EXPECT_EQ(*small, 2 * 260 * row + 4 * 32 * row + 2 * 64 * row + 32 * 2 * row + 3 * 32 * 4);
}

}  // namespace
}  // namespace tessera::gguf
