// The GGUF reader: real files, a writer round trip, and corrupted files (each a clear error).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "fixtures.h"
#include "import/gguf/gguf_file.h"
#include "import/gguf/gguf_writer.h"

namespace tessera::gguf {
namespace {

Result<File> parse_bytes(std::vector<uint8_t> b) { return File::parse(ConstData::from_vector(std::move(b)), "test"); }

template <typename T>
void poke(std::vector<uint8_t>& b, size_t at, T v) {
  ASSERT_LE(at + sizeof(T), b.size());
  std::memcpy(&b[at], &v, sizeof(T));
}

// File position of the tensor info of `name` (its u64 name length), found by its bytes.
size_t tensor_info_pos(const std::vector<uint8_t>& b, const std::string& name) {
  std::vector<uint8_t> pat(8 + name.size());
  uint64_t len = name.size();
  std::memcpy(pat.data(), &len, 8);
  std::memcpy(pat.data() + 8, name.data(), name.size());
  auto it = std::search(b.begin(), b.end(), pat.begin(), pat.end());
  return it == b.end() ? std::string::npos : static_cast<size_t>(it - b.begin());
}

TEST(GgufFile, ReadsTheRealModel) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K.gguf");
  auto f = File::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(f->version() == 2 || f->version() == 3);
  EXPECT_EQ(*f->get_string("general.architecture"), "llama");
  EXPECT_EQ(*f->get_int("llama.context_length"), 128);
  EXPECT_EQ(*f->get_int("llama.embedding_length"), 64);
  EXPECT_EQ(*f->get_int("llama.block_count"), 4);
  EXPECT_EQ(*f->get_int("llama.attention.head_count"), 4);
  const Value* toks = f->find("tokenizer.ggml.tokens");
  ASSERT_NE(toks, nullptr);
  EXPECT_EQ(toks->type, ValueType::array);
  EXPECT_EQ(toks->arr.size(), 512u);
  const TensorInfo* emb = f->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (Shape{512, 64}));
  EXPECT_EQ(emb->dtype, DType::f32);
  EXPECT_EQ(emb->bytes, 512 * 64 * 4);
  // Data lies inside the file, at an aligned offset after the header.
  for (const TensorInfo& t : f->tensors()) {
    EXPECT_EQ(t.offset % f->alignment(), 0u) << t.name;
    EXPECT_LE(f->data_offset() + static_cast<int64_t>(t.offset) + t.bytes, f->file_size()) << t.name;
  }
  // 4 layers x 9 weights + token_embd + output_norm (+ output when not tied).
  EXPECT_GE(f->tensors().size(), 38u);
}

// Read into (huge-page-advised) memory and mapped: the same file, byte for byte, and the
// read copy's tensors 2 MiB-aligned relative to the file start plus their offset.
TEST(GgufFile, ReadAndMapGiveTheSameBytes) {
  TESSERA_REQUIRE_FIXTURE(path, "models/gguf/aidreams260K-Q8_0.gguf");
  auto mapped = File::open(path, File::Load::map);
  auto read = File::open(path, File::Load::read);
  ASSERT_TRUE(mapped.ok()) << mapped.status().to_string();
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  ASSERT_EQ(mapped->file_size(), read->file_size());
  ASSERT_EQ(mapped->tensors().size(), read->tensors().size());
  for (size_t i = 0; i < mapped->tensors().size(); ++i) {
    const TensorInfo &a = mapped->tensors()[i], &b = read->tensors()[i];
    ASSERT_EQ(a.name, b.name);
    ASSERT_EQ(a.data.size, b.data.size) << a.name;
    EXPECT_EQ(0, std::memcmp(a.data.data, b.data.data, static_cast<size_t>(a.data.size))) << a.name;
  }
  if (File::huge_pages_available()) {
    // read copies the file to a 2 MiB boundary
    const TensorInfo& t = read->tensors()[0];
    const auto start = reinterpret_cast<uintptr_t>(t.data.data) - static_cast<uintptr_t>(read->data_offset()) - t.offset;
    EXPECT_EQ(start % (uintptr_t{2} << 20), 0u);
  }
  EXPECT_FALSE(File::open("/nonexistent/model.gguf", File::Load::read).ok());
}

TEST(GgufFile, QuantizedFilesMixTypesAsStored) {
  TESSERA_REQUIRE_FIXTURE(q8, "models/gguf/aidreams260K-Q8_0.gguf");
  TESSERA_REQUIRE_FIXTURE(q4, "models/gguf/aidreams260K-Q4_0.gguf");
  auto f8 = File::open(q8);
  ASSERT_TRUE(f8.ok()) << f8.status().to_string();
  EXPECT_EQ(f8->find_tensor("blk.0.attn_q.weight")->dtype, DType::q8_0);
  EXPECT_EQ(f8->find_tensor("blk.0.attn_q.weight")->bytes, 64 * (64 / 32) * kQ8_0BlockBytes);
  EXPECT_EQ(f8->find_tensor("blk.0.ffn_down.weight")->dtype, DType::f16);  // rows of 172: not blockable
  auto f4 = File::open(q4);
  ASSERT_TRUE(f4.ok()) << f4.status().to_string();
  EXPECT_EQ(f4->find_tensor("blk.0.attn_q.weight")->dtype, DType::q4_0);
  EXPECT_EQ(f4->find_tensor("blk.0.attn_q.weight")->bytes, 64 * 2 * kQ4_0BlockBytes);
}

TEST(GgufFile, WriterRoundTripEveryValueTypeAndDtype) {
  Writer w(64);
  w.set_u32("a.u32", 7);
  w.set_i32("a.i32", -5);
  w.set_f32("a.f32", 1.5f);
  w.set_bool("a.bool", true);
  w.set_string("a.str", "h\xc3\xa9llo");
  w.set_strings("a.strs", {"x", "", "yz"});
  w.set_f32s("a.f32s", {0.25f, -2.0f});
  w.set_i32s("a.i32s", {1, -1, 3});
  std::vector<uint8_t> f32(3 * 32 * 4, 1), q8(2 * kQ8_0BlockBytes, 2), q4(3 * kQ4_0BlockBytes, 3), h(5 * 2, 4);
  ASSERT_TRUE(w.add_tensor("t.f32", {3, 32}, DType::f32, f32).ok());
  ASSERT_TRUE(w.add_tensor("t.q8", {2, 32}, DType::q8_0, q8).ok());
  ASSERT_TRUE(w.add_tensor("t.q4", {3, 32}, DType::q4_0, q4).ok());
  ASSERT_TRUE(w.add_tensor("t.f16", {5}, DType::f16, h).ok());
  ASSERT_TRUE(w.add_tensor("t.bf16", {1, 5}, DType::bf16, h).ok());
  EXPECT_FALSE(w.add_tensor("bad", {2, 32}, DType::q8_0, q4).ok());  // wrong byte count
  auto bytes = w.bytes();
  ASSERT_TRUE(bytes.ok());
  for (uint32_t version : {2u, 3u}) {
    std::vector<uint8_t> b = *bytes;
    poke<uint32_t>(b, 4, version);
    auto f = parse_bytes(b);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_EQ(f->version(), version);
    EXPECT_EQ(f->alignment(), 64);
    EXPECT_EQ(*f->get_int("a.u32"), 7);
    EXPECT_EQ(*f->get_int("a.i32"), -5);
    EXPECT_EQ(*f->get_float("a.f32"), 1.5);
    EXPECT_EQ(*f->get_int("a.bool"), 1);
    EXPECT_EQ(*f->get_string("a.str"), "h\xc3\xa9llo");
    EXPECT_EQ(f->find("a.strs")->arr.at(2).s, "yz");
    EXPECT_EQ(f->find("a.f32s")->arr.at(1).f, -2.0);
    EXPECT_EQ(f->find("a.i32s")->arr.at(1).i, -1);
    EXPECT_FALSE(f->get_int("a.str").ok());
    EXPECT_EQ(f->get_int("missing").status().code(), StatusCode::not_found);
    ASSERT_EQ(f->tensors().size(), 5u);
    const TensorInfo* q = f->find_tensor("t.q4");
    EXPECT_EQ(q->shape, (Shape{3, 32}));
    EXPECT_EQ(q->dtype, DType::q4_0);
    EXPECT_EQ(q->bytes, 3 * kQ4_0BlockBytes);
    EXPECT_EQ(q->data.data[0], 3);
    EXPECT_EQ(f->find_tensor("t.bf16")->dtype, DType::bf16);
  }
}

// Every GGUF block type: its ggml number, the byte count of its rows, and rows that are
// not whole blocks refused by the writer.
TEST(GgufFile, EveryBlockTypeRoundTrips) {
  const std::pair<DType, uint32_t> types[] = {
      {DType::q8_0, kGgmlQ8_0}, {DType::q4_0, kGgmlQ4_0}, {DType::q4_1, kGgmlQ4_1}, {DType::q5_0, kGgmlQ5_0},
      {DType::q5_1, kGgmlQ5_1}, {DType::q2_k, kGgmlQ2_K}, {DType::q3_k, kGgmlQ3_K}, {DType::q4_k, kGgmlQ4_K},
      {DType::q5_k, kGgmlQ5_K}, {DType::q6_k, kGgmlQ6_K}};
  Writer w(32);
  for (auto [t, ggml] : types) {
    const int64_t row = 2 * dtype_block_values(t), bytes = 3 * 2 * dtype_block_bytes(t);
    std::vector<uint8_t> data(bytes, static_cast<uint8_t>(ggml));
    ASSERT_TRUE(w.add_tensor(std::string("t.") + dtype_name(t), {3, row}, t, data).ok()) << dtype_name(t);
    EXPECT_FALSE(w.add_tensor("odd", {3, row + 32}, t, data).ok()) << dtype_name(t);
  }
  auto bytes = w.bytes();
  ASSERT_TRUE(bytes.ok());
  auto f = parse_bytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  for (auto [t, ggml] : types) {
    const TensorInfo* info = f->find_tensor(std::string("t.") + dtype_name(t));
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->ggml_type, ggml);
    EXPECT_EQ(info->dtype, t);
    EXPECT_EQ(info->bytes, 3 * 2 * dtype_block_bytes(t)) << dtype_name(t);
    EXPECT_EQ(info->data.data[0], static_cast<uint8_t>(ggml));
  }
}

// ---- corrupted files, made from the real one ----

class GgufCorrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string p = testing::shared_path("models/gguf/aidreams260K.gguf");
    if (p.empty()) {
      if (testing::fixtures_required()) FAIL() << "missing fixture aidreams260K.gguf";
      GTEST_SKIP() << "fixture ../shared/models/gguf/aidreams260K.gguf is absent";
    }
    good_ = testing::read_file(p);
    auto f = parse_bytes(good_);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    data_offset_ = f->data_offset();
  }
  // Parses `b` and expects an error whose message contains `needle`.
  void expect_error(const std::vector<uint8_t>& b, const std::string& needle) {
    auto f = parse_bytes(b);
    ASSERT_FALSE(f.ok()) << "a corrupt file parsed (expected '" << needle << "')";
    EXPECT_NE(f.status().message().find(needle), std::string::npos) << f.status().message();
  }
  std::vector<uint8_t> good_;
  int64_t data_offset_ = 0;
};

TEST_F(GgufCorrupt, EveryTruncationIsAnError) {
  // Every cut in the header and tensor infos, and a spread of cuts in the data.
  for (size_t cut = 0; cut < good_.size(); cut += (cut < static_cast<size_t>(data_offset_) ? 1 : 997)) {
    std::vector<uint8_t> b(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(cut));
    auto f = parse_bytes(b);
    ASSERT_FALSE(f.ok()) << "truncated at " << cut << " of " << good_.size() << " parsed";
  }
  std::vector<uint8_t> b(good_.begin(), good_.begin() + 20);
  expect_error(b, "truncated or corrupt at byte 16: metadata count needs 8 bytes");
  b.assign(good_.begin(), good_.end() - 1);
  expect_error(b, "past the end of the data section");
}

TEST_F(GgufCorrupt, BadMagicAndVersion) {
  auto b = good_;
  std::memcpy(b.data(), "GGML", 4);
  expect_error(b, "not a GGUF file (magic 'GGML'");
  b = good_;
  poke<uint32_t>(b, 4, 1);
  expect_error(b, "GGUF version 1 is not supported");
  poke<uint32_t>(b, 4, 77);
  expect_error(b, "GGUF version 77 is not supported");
}

TEST_F(GgufCorrupt, AbsurdCounts) {
  auto b = good_;
  poke<uint64_t>(b, 8, uint64_t{1} << 62);
  expect_error(b, "tensor count 4611686018427387904 cannot fit");
  b = good_;
  poke<uint64_t>(b, 16, ~uint64_t{0});
  expect_error(b, "metadata count 18446744073709551615 cannot fit");
  b = good_;
  poke<uint64_t>(b, 24, uint64_t{1} << 60);  // the first key's length
  expect_error(b, "metadata key at byte 24 claims 1152921504606846976 bytes");
  // The vocabulary array's element count.
  const std::string key = "tokenizer.ggml.tokens";
  auto it = std::search(good_.begin(), good_.end(), key.begin(), key.end());
  ASSERT_NE(it, good_.end());
  size_t count_at = static_cast<size_t>(it - good_.begin()) + key.size() + 4 + 4;
  b = good_;
  poke<uint64_t>(b, count_at, uint64_t{1} << 50);
  expect_error(b, "key 'tokenizer.ggml.tokens': array of 1125899906842624 string");
  b = good_;
  poke<uint32_t>(b, count_at - 4, 13);  // element type
  expect_error(b, "unknown array element type 13");
}

TEST_F(GgufCorrupt, TensorInfoErrors) {
  const std::string name = "output_norm.weight";
  size_t at = tensor_info_pos(good_, name);
  ASSERT_NE(at, std::string::npos);
  const size_t ndims_at = at + 8 + name.size();
  ASSERT_EQ(good_[ndims_at], 1);  // a vector: one dim
  const size_t dim_at = ndims_at + 4, type_at = dim_at + 8, offset_at = type_at + 4;
  auto b = good_;
  poke<uint64_t>(b, offset_at, uint64_t{1} << 40);
  expect_error(b, "tensor 'output_norm.weight' data [1099511627776, +256) lies past the end");
  b = good_;
  poke<uint64_t>(b, offset_at, 3);
  expect_error(b, "offset 3 is not a multiple of the alignment 32");
  b = good_;
  poke<uint32_t>(b, type_at, 16);
  expect_error(b, "tensor 'output_norm.weight' has ggml type iq2_xxs (16); supported: f32, f16, bf16, q8_0, q4_0, "
                  "q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K");
  poke<uint32_t>(b, type_at, 12);  // q4_K: super-blocks of 256 values, the row has 64
  expect_error(b, "tensor 'output_norm.weight' (q4_K) has rows of 64 values, not a multiple of the block size 256");
  poke<uint32_t>(b, type_at, 99);
  expect_error(b, "has ggml type type 99 (99)");
  b = good_;
  poke<uint64_t>(b, dim_at, uint64_t{1} << 41);
  expect_error(b, "dim 0 = 2199023255552 is zero or too large");
  b = good_;
  poke<uint64_t>(b, dim_at, 0);
  expect_error(b, "dim 0 = 0 is zero");
  b = good_;
  poke<uint32_t>(b, ndims_at, 9);
  expect_error(b, "has 9 dims (1 to 4 allowed)");
  b = good_;
  poke<uint64_t>(b, at, uint64_t{1} << 56);  // the name's length
  expect_error(b, "tensor name at byte");
  b = good_;
  poke<uint32_t>(b, type_at, kGgmlQ8_0);  // 64 values per row is fine for q8_0 ...
  poke<uint64_t>(b, dim_at, 48);          // ... 48 is not a multiple of the block
  expect_error(b, "rows of 48 values, not a multiple of the block size 32");
}

TEST_F(GgufCorrupt, RandomByteFlipsNeverCrash) {
  std::mt19937 rng(20261129);
  int errors = 0;
  for (int iter = 0; iter < 300; ++iter) {
    auto b = good_;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % static_cast<uint32_t>(data_offset_)] ^= static_cast<uint8_t>(1u << (rng() % 8));
    auto f = parse_bytes(b);
    if (!f.ok()) {
      ++errors;
      EXPECT_FALSE(f.status().message().empty());
    }
  }
  // Most flips land in strings (any bytes are valid there); some must hit lengths and types.
  EXPECT_GT(errors, 0);
}

}  // namespace
}  // namespace tessera::gguf
