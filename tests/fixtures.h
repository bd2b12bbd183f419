// Test helpers: locating ../shared fixtures and seeded random data.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace tessera::testing {

// Path of a file under ../shared, or "" if the fixture is absent. Tests call
// TESSERA_REQUIRE_FIXTURE(path), which skips, or fails when TESSERA_REQUIRE_FIXTURES=1.
inline std::string shared_path(const std::string& rel) {
  std::filesystem::path p = std::filesystem::path(TESSERA_SHARED_DIR) / rel;
  return std::filesystem::exists(p) ? p.string() : std::string();
}

inline bool fixtures_required() {
  const char* v = std::getenv("TESSERA_REQUIRE_FIXTURES");
  return v && std::string(v) == "1";
}

#define TESSERA_REQUIRE_FIXTURE(var, rel)                                                      \
  std::string var = ::tessera::testing::shared_path(rel);                                     \
  if (var.empty()) {                                                                           \
    if (::tessera::testing::fixtures_required()) FAIL() << "missing fixture ../shared/" << rel; \
    GTEST_SKIP() << "fixture ../shared/" << rel << " is absent";                               \
  }

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Seeded uniform floats in [lo, hi), never all zero.
inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace tessera::testing
