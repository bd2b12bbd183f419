// libFuzzer target for the chat-template Jinja engine (src/runtime/llm/jinja.h): any input,
// taken as a template, must parse or give a Status, and render a fixed conversation or give
// a Status, within the engine's limits: never a crash, a sanitizer report or a hang
// (scripts/fuzz.sh seeds it with ../shared/templates/chat).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/llm/jinja.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera::llm::jinja;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  if (!check_syntax(source).ok()) return 0;
  List messages;
  for (const char* role : {"system", "user", "assistant", "user"})
    messages.push_back(Value(Dict{{"role", role}, {"content", std::string("text of ") + role + " \xc3\xa9"}}));
  Value vars{Dict{}};
  vars.set("messages", Value(std::move(messages)));
  vars.set("add_generation_prompt", Value(true));
  vars.set("bos_token", Value("<s>"));
  vars.set("eos_token", Value("</s>"));
  RenderOptions opts;
  opts.max_output_bytes = size_t{1} << 20;  // small limits keep each run short under ASan
  opts.max_iterations = int64_t{1} << 16;
  std::tm fixed{};
  fixed.tm_year = 126;
  opts.now = fixed;
  (void)render(source, vars, opts);
  return 0;
}
