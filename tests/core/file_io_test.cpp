// Bounded file reads (core/file_io.h): exact sizes, limits checked before reading, devices
// read one byte past the limit at most, directories refused; errors name the file.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/file_io.h"

namespace tessera {
namespace {

class FileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("tessera_file_io_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(file(), std::ios::binary) << "0123456789";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file() const { return (dir_ / "ten.bin").string(); }
  std::filesystem::path dir_;
};

TEST_F(FileIo, ReadsWholeFilesWithinTheLimit) {
  auto r = read_file_bounded(file(), 10, "test file");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(std::string(r->begin(), r->end()), "0123456789");
  auto e = read_file_exact(file(), 10, "tensor file");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->size(), 10u);
}

TEST_F(FileIo, RefusesLargerFilesShortFilesAndDirectories) {
  auto big = read_file_bounded(file(), 9, "test file");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("ten.bin"), std::string::npos) << big.status().message();
  EXPECT_NE(big.status().message().find("10 bytes"), std::string::npos) << big.status().message();
  auto shorter = read_file_exact(file(), 11, "tensor file");
  ASSERT_FALSE(shorter.ok());
  EXPECT_NE(shorter.status().message().find("has 10 bytes but needs 11"), std::string::npos)
      << shorter.status().message();
  EXPECT_FALSE(read_file_exact(file(), 9, "tensor file").ok());
  auto d = read_file_bounded(dir_.string(), 100, "model file");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos) << d.status().message();
  auto missing = read_file_bounded((dir_ / "absent").string(), 100, "model file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::not_found);
}

TEST_F(FileIo, EndlessDevicesAreReadOnlyUpToTheLimit) {
  if (!std::filesystem::exists("/dev/zero")) GTEST_SKIP() << "no /dev/zero";
  auto z = read_file_bounded("/dev/zero", 1 << 20, "input file");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("/dev/zero"), std::string::npos) << z.status().message();
  auto exact = read_file_exact("/dev/zero", 4, "input file");
  ASSERT_FALSE(exact.ok());
  EXPECT_NE(exact.status().message().find("larger than the 4 bytes"), std::string::npos) << exact.status().message();
}

}  // namespace
}  // namespace tessera
