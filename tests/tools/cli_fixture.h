// A test fixture that runs the real `tessera` binary, as a user would, in a private
// temporary folder; stdout and stderr are captured into out_ and err_.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace tessera::testing {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    exe_ = std::filesystem::path(TESSERA_BINARY_DIR) / "tessera";
    if (!std::filesystem::exists(exe_))
      GTEST_SKIP() << "the tessera binary is not built (" << exe_ << "): build tessera_cli";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("tessera_cli_" + std::string(info->test_suite_name()) + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `tessera ARGS`; returns the exit status, fills out_ and err_.
  int run(const std::string& args) {
    std::string cmd = exe_.string() + " " + args + " >" + path("stdout") + " 2>" + path("stderr");
    int rc = std::system(cmd.c_str());
    out_ = read_text(path("stdout"));
    err_ = read_text(path("stderr"));
    return rc;
  }
  static std::string read_text(const std::string& p) {
    std::ifstream f(p);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  std::vector<uint8_t> read_bytes(const std::string& name) const {
    std::ifstream f(path(name), std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  template <typename T>
  void write(const std::string& name, const std::vector<T>& v) const {
    std::ofstream f(path(name), std::ios::binary);
    f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  }

  std::filesystem::path exe_, dir_;
  std::string out_, err_;
};

}  // namespace tessera::testing
