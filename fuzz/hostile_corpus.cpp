// hostile_corpus: writes corrupted variants of one real model (tests/hostile_models.h):
// truncations, bit flips at seeded offsets, shape edits whose element counts wrap, vanish
// or go negative, and dtype edits. scripts/fuzz.sh replays them through the fuzz targets,
// which are built with ASan and UBSan, so that every variant runs once under the sanitizers.
//
//   hostile_corpus MODEL OUT_DIR [SCALE]
// MODEL is a .tflite or .gguf file; SCALE (default 1) multiplies the number of truncations
// and flips. Prints the number of variants written. Same input, same variants.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "hostile_models.h"

namespace {

using namespace tessera::testing::hostile;

// Fewer variants of larger files: each one that imports runs on the cpu under ASan, and the
// corpus of one model stays near 100 MB.
struct Budget {
  int truncations, flips, max_tensors;
};
Budget budget_for(size_t bytes, double scale) {
  Budget b{40, 500, 1000};
  if (bytes > 100000) b = {30, 150, 16};
  if (bytes > 400000) b = {20, 80, 12};
  if (bytes > 1000000) b = {10, 40, 6};
  b.truncations = static_cast<int>(b.truncations * scale);
  b.flips = static_cast<int>(b.flips * scale);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: hostile_corpus MODEL OUT_DIR [SCALE]\n");
    return 2;
  }
  const std::filesystem::path model = argv[1], out = argv[2];
  const double scale = argc > 3 ? std::atof(argv[3]) : 1.0;
  std::ifstream f(model, std::ios::binary);
  if (!f || std::filesystem::is_directory(model)) {
    std::fprintf(stderr, "hostile_corpus: cannot read '%s'\n", argv[1]);
    return 1;
  }
  const Bytes bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 16) {
    std::fprintf(stderr, "hostile_corpus: '%s' is too short to be a model\n", argv[1]);
    return 1;
  }
  const std::string ext = model.extension().string();
  const Budget b = budget_for(bytes.size(), scale);
  std::vector<Variant> variants;
  if (ext == ".tflite") {
    add_tflite_edits(bytes, b.max_tensors, variants);
  } else if (ext == ".gguf") {
    add_gguf_edits(bytes, b.max_tensors, variants);
  } else {
    std::fprintf(stderr, "hostile_corpus: '%s' is neither .tflite nor .gguf\n", argv[1]);
    return 1;
  }
  add_truncations(bytes, b.truncations, variants);
  add_bit_flips(bytes, b.flips, 18, variants);

  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  const std::string stem = model.stem().string();
  for (size_t i = 0; i < variants.size(); ++i) {
    const Variant& v = variants[i];
    std::ofstream o(out / (stem + "." + std::to_string(i) + "." + v.name + ext), std::ios::binary);
    o.write(reinterpret_cast<const char*>(v.bytes.data()), static_cast<std::streamsize>(v.bytes.size()));
    if (!o) {
      std::fprintf(stderr, "hostile_corpus: cannot write into '%s'\n", out.c_str());
      return 1;
    }
  }
  std::printf("%zu\n", variants.size());
  return 0;
}
