// Malformed templates never crash the Jinja engine: every chat template of
// ../shared/templates/chat, mutated at seeded random places (pieces cut, repeated, or tag
// and bracket characters inserted), renders or fails with a Status, within small limits.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>

#include "fixtures.h"
#include "runtime/llm/jinja.h"

namespace tessera::llm::jinja {
namespace {

Value conversation() {
  Value vars{Dict{}};
  vars.set("messages", Value(List{Value(Dict{{"role", Value("system")}, {"content", Value("Be brief.")}}),
                                  Value(Dict{{"role", Value("user")}, {"content", Value("Hi ü")}}),
                                  Value(Dict{{"role", Value("assistant")}, {"content", Value("Hello")}}),
                                  Value(Dict{{"role", Value("user")}, {"content", Value("Bye")}})}));
  vars.set("add_generation_prompt", Value(true));
  vars.set("bos_token", Value("<s>"));
  vars.set("eos_token", Value("</s>"));
  return vars;
}

std::string mutate(const std::string& src, std::mt19937& rng) {
  static const char* kPieces[] = {"{%", "%}", "{{", "}}", "{#", "#}", "(", ")", "[", "]", "{", "}", "'", "\"",
                                  "-", "|", ".", ",", "if ", "for ", "endfor", "endif", "in ", "is ", "not ", "\\"};
  std::string s = src;
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t at = rng() % s.size();
    const size_t len = std::min<size_t>(1 + rng() % 40, s.size() - at);
    switch (rng() % 3) {
      case 0: s.erase(at, len); break;
      case 1: s.insert(at, s.substr(at, len)); break;
      default: s.insert(at, kPieces[rng() % (sizeof kPieces / sizeof kPieces[0])]); break;
    }
  }
  return s;
}

TEST(JinjaMutation, MutatedChatTemplatesRenderOrFail) {
  TESSERA_REQUIRE_FIXTURE(dir, "templates/chat");
  RenderOptions limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_iterations = 1 << 16;
  std::mt19937 rng(20260115);
  const Value vars = conversation();
  int rendered = 0, failed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".jinja") continue;
    const std::vector<uint8_t> bytes = ::tessera::testing::read_file(entry.path().string());
    const std::string src(bytes.begin(), bytes.end());
    for (int k = 0; k < 40; ++k) {
      Result<std::string> r = render(mutate(src, rng), vars, limits);
      if (r.ok()) {
        ++rendered;
      } else {
        ++failed;
        EXPECT_EQ(r.status().message().rfind("[jinja] ", 0), 0u) << r.status().message();
        EXPECT_NE(r.status().code(), StatusCode::internal) << entry.path() << ": " << r.status().message();
      }
    }
  }
  EXPECT_GT(rendered + failed, 0);
  std::printf("mutated templates: %d rendered, %d failed with an error\n", rendered, failed);
}

}  // namespace
}  // namespace tessera::llm::jinja
