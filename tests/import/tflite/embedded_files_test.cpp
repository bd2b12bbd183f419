// Files packed into a .tflite model (import/tflite/embedded_files.h): the class names of the
// shared models (an Ultralytics export's metadata, ImageNet labels packed by TFLite's
// metadata writer), and archives written here byte by byte, well-formed and broken.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fixtures.h"
#include "import/tflite/embedded_files.h"
#include "import/tflite/single_op_model.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/model.h"

namespace tessera {
namespace {

using tflite::EmbeddedFile;
using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, uint32_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(Bytes& b, uint32_t v) {
  put16(b, v & 0xFFFF);
  put16(b, v >> 16);
}

struct Entry {
  std::string name;
  std::string data;
  uint16_t method = 0;  // 0 stored; 8 marks it deflated (the bytes are not, nothing reads them)
};

// `prefix` followed by a zip archive of `entries`; offsets recorded from the archive's start
// (`absolute`: from the file's start, as a writer that knows the prefix records them).
Bytes with_archive(Bytes prefix, const std::vector<Entry>& entries, bool absolute = false) {
  Bytes b = std::move(prefix);
  const size_t start = b.size(), shift = absolute ? 0 : start;
  std::vector<size_t> local;
  for (const Entry& e : entries) {
    local.push_back(b.size() - shift);
    put32(b, 0x04034b50);
    put16(b, 10), put16(b, 0), put16(b, e.method), put16(b, 0), put16(b, 0);
    put32(b, 0), put32(b, static_cast<uint32_t>(e.data.size())), put32(b, static_cast<uint32_t>(e.data.size()));
    put16(b, static_cast<uint32_t>(e.name.size())), put16(b, 0);
    b.insert(b.end(), e.name.begin(), e.name.end());
    b.insert(b.end(), e.data.begin(), e.data.end());
  }
  const size_t dir = b.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    put32(b, 0x02014b50);
    put16(b, 20), put16(b, 10), put16(b, 0), put16(b, e.method), put16(b, 0), put16(b, 0);
    put32(b, 0), put32(b, static_cast<uint32_t>(e.data.size())), put32(b, static_cast<uint32_t>(e.data.size()));
    put16(b, static_cast<uint32_t>(e.name.size())), put16(b, 0), put16(b, 0), put16(b, 0), put16(b, 0);
    put32(b, 0), put32(b, static_cast<uint32_t>(local[i]));
    b.insert(b.end(), e.name.begin(), e.name.end());
  }
  const size_t dir_size = b.size() - dir;
  put32(b, 0x06054b50);
  put16(b, 0), put16(b, 0), put16(b, static_cast<uint32_t>(entries.size())), put16(b, static_cast<uint32_t>(entries.size()));
  put32(b, static_cast<uint32_t>(dir_size)), put32(b, static_cast<uint32_t>(dir - shift));
  put16(b, 0);
  return b;
}

Bytes some_prefix() {
  Bytes p(301);
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7 + 3);
  return p;
}

TEST(EmbeddedFiles, SharedModelsCarryTheirClassNames) {
  TESSERA_REQUIRE_FIXTURE(yolo, "models/tflite/corpus/yolov8n_full_integer_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(mnv2, "models/tflite/mobilenet_v2_1.0_224_quant.tflite");
  TESSERA_REQUIRE_FIXTURE(person, "models/tflite/person_detect.tflite");
  auto y = Model::load(yolo);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  const std::vector<std::string>& names = (*y)->labels();
  ASSERT_EQ(names.size(), 80u);
  EXPECT_EQ(names[0], "person");
  EXPECT_EQ(names[27], "tie");
  EXPECT_EQ(names[79], "toothbrush");
  tflite::ImportReport report;
  ASSERT_TRUE(tflite::load_tflite_file(mnv2, {}, &report).ok());
  EXPECT_EQ(report.labels_source, "imagenet_labels.txt");
  ASSERT_EQ(report.labels.size(), 1001u);  // as written: the background line first
  EXPECT_EQ(report.labels[0], "background");
  EXPECT_EQ(report.labels[653], "military uniform");  // the model has 1001 outputs, background first
  auto p = Model::load(person);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE((*p)->labels().empty());
}

TEST(EmbeddedFiles, StoredFilesAreReadAfterAnyPrefixCompressedOnesSkipped) {
  const std::vector<Entry> entries = {{"a.bin", std::string("\x01\x02\x00\x03", 4)},
                                      {"packed.txt", "not really deflated", 8},
                                      {"labels.txt", "cat\r\ndog\n\nbird\n\n"}};
  for (bool absolute : {false, true}) {
    const Bytes b = with_archive(some_prefix(), entries, absolute);
    auto files = tflite::embedded_files(b.data(), b.size());
    ASSERT_TRUE(files.ok()) << files.status().to_string();
    ASSERT_EQ(files->size(), 2u);
    EXPECT_EQ((*files)[0].name, "a.bin");
    EXPECT_EQ((*files)[0].bytes, std::string_view("\x01\x02\x00\x03", 4));
    EXPECT_EQ((*files)[1].name, "labels.txt");
    std::string source;
    // a.bin holds a zero byte (not text); the labels' blank line inside is kept, the trailing ones dropped
    EXPECT_EQ(tflite::embedded_class_names(*files, &source), (std::vector<std::string>{"cat", "dog", "", "bird"}));
    EXPECT_EQ(source, "labels.txt");
  }
  // No archive at all, or one whose end record's comment length does not reach the end.
  const Bytes none = some_prefix();
  auto f0 = tflite::embedded_files(none.data(), none.size());
  ASSERT_TRUE(f0.ok());
  EXPECT_TRUE(f0->empty());
  Bytes trailing = with_archive(some_prefix(), entries);
  trailing.push_back(0);
  auto f1 = tflite::embedded_files(trailing.data(), trailing.size());
  ASSERT_TRUE(f1.ok());
  EXPECT_TRUE(f1->empty());
}

// A rewritten model (tessera quantize) keeps the archive: moved behind another prefix with
// its offsets rewritten, it gives the same files, whichever way the original recorded them.
TEST(EmbeddedFiles, AnArchiveMovesBehindAnotherFlatbuffer) {
  const std::vector<Entry> entries = {{"a.bin", std::string("\x01\x02\x00\x03", 4)}, {"labels.txt", "cat\ndog\n"}};
  for (bool absolute : {false, true}) {
    SCOPED_TRACE(absolute ? "offsets from the file's start" : "offsets from the archive's start");
    const Bytes b = with_archive(some_prefix(), entries, absolute);
    Bytes other(1000, 0x5a);
    auto moved = tflite::embedded_archive_moved(b.data(), b.size(), other.size());
    ASSERT_TRUE(moved.ok()) << moved.status().to_string();
    EXPECT_EQ(moved->size(), b.size() - some_prefix().size());
    other.insert(other.end(), moved->begin(), moved->end());
    auto files = tflite::embedded_files(other.data(), other.size());
    ASSERT_TRUE(files.ok()) << files.status().to_string();
    ASSERT_EQ(files->size(), 2u);
    EXPECT_EQ((*files)[0].bytes, std::string_view("\x01\x02\x00\x03", 4));
    EXPECT_EQ((*files)[1].bytes, "cat\ndog\n");
  }
  const Bytes none = some_prefix();
  auto empty = tflite::embedded_archive_moved(none.data(), none.size(), 10);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  // A directory entry pointing past the directory is an error, not a copy.
  Bytes bad = with_archive(some_prefix(), entries);
  const size_t end = bad.size() - 22, dir = end - (bad[end + 12] | bad[end + 13] << 8);
  bad[dir + 42] = 0xff, bad[dir + 43] = 0xff;
  EXPECT_FALSE(tflite::embedded_archive_moved(bad.data(), bad.size(), 10).ok());
}

TEST(EmbeddedFiles, BrokenArchivesAreErrorsNamingWhere) {
  const std::vector<Entry> entries = {{"temp_meta.txt", "{'names': {0: 'a', 1: 'b'}}"}, {"x.txt", "x"}};
  const Bytes good = with_archive(some_prefix(), entries);
  // The end record's fields: entries at +10, directory size at +12, offset at +16.
  const size_t end = good.size() - 22;
  auto expect_error = [](Bytes b, const std::string& words) {
    auto f = tflite::embedded_files(b.data(), b.size());
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.status().message().find(words), std::string::npos) << f.status().message();
  };
  {
    Bytes b = good;
    b[end + 10] = 3;  // three entries, two written
    expect_error(b, "directory entry 2");
  }
  {
    Bytes b = good;
    b[end + 12] = 0xFF, b[end + 13] = 0xFF, b[end + 14] = 0xFF;  // a directory larger than the file
    expect_error(b, "starts before the file");
  }
  {
    Bytes b = good;
    b[end + 19] = 0x7F;  // the directory's offset past its position
    expect_error(b, "past its position");
  }
  {
    // the first entry's local header offset (directory + 42) far away
    Bytes b = good;
    const size_t dir = end - (good[end + 12] | good[end + 13] << 8);
    b[dir + 45] = 0x40;
    expect_error(b, "'temp_meta.txt' has no local header");
  }
  {
    // the first entry claims more bytes than the archive holds (sizes at +20 and +24)
    Bytes b = good;
    const size_t dir = end - (good[end + 12] | good[end + 13] << 8);
    b[dir + 22] = b[dir + 26] = 0x01;
    expect_error(b, "runs past the archive");
  }
  // The importer keeps loading a model whose archive is broken, and says why.
  testing::SingleOpModel m;
  m.tensors = {testing::activation("x", ::tflite::TensorType_FLOAT32, {4}),
               testing::activation("y", ::tflite::TensorType_FLOAT32, {4})};
  m.op_inputs = {0};
  m.op_outputs = {1};
  m.code = ::tflite::BuiltinOperator_RELU;
  Bytes model = with_archive(m.bytes(), entries);
  model[model.size() - 22 + 10] = 3;
  tflite::ImportReport report;
  auto g = tflite::load_tflite_buffer(ConstData::from_vector(model), {}, &report);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(report.labels.empty());
  EXPECT_NE(report.labels_note.find("directory entry 2"), std::string::npos) << report.labels_note;
  // and reads a good one's names
  Bytes ok_model = with_archive(m.bytes(), entries);
  auto g2 = tflite::load_tflite_buffer(ConstData::from_vector(ok_model), {}, &report);
  ASSERT_TRUE(g2.ok());
  EXPECT_EQ(report.labels, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(report.labels_source, "temp_meta.txt");
}

TEST(EmbeddedFiles, UltralyticsNamesNeedEveryIdOnce) {
  using tflite::ultralytics_names;
  EXPECT_EQ(ultralytics_names("{'stride': 32, 'names': {1: \"it's\", 0: 'a\\'b', 2: 'c d'}, 'imgsz': [640, 640]}"),
            (std::vector<std::string>{"a'b", "it's", "c d"}));
  EXPECT_TRUE(ultralytics_names("{'names': {0: 'a', 2: 'c'}}").empty());           // a gap
  EXPECT_TRUE(ultralytics_names("{'names': {0: 'a', 0: 'b'}}").empty());           // an id twice
  EXPECT_TRUE(ultralytics_names("{'names': {0: 'a', 1: 'b").empty());              // not closed
  EXPECT_TRUE(ultralytics_names("{'names': {0: 'a', x: 'b'}}").empty());           // not an id
  EXPECT_TRUE(ultralytics_names("{'names': {99999999999999999999: 'a'}}").empty());  // too large
  EXPECT_TRUE(ultralytics_names("{'names': [0, 1]}").empty());
  EXPECT_TRUE(ultralytics_names("{'task': 'detect'}").empty());
  // A metadata dict without names is not taken for a list of labels.
  const std::vector<EmbeddedFile> files = {{"temp_meta.txt", "{'a':1}"}};
  EXPECT_TRUE(tflite::embedded_class_names(files).empty());
}

}  // namespace
}  // namespace tessera
