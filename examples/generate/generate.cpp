// Generates text with a GGUF model through Tessera's C++ API, streaming each piece.
//   generate MODEL.gguf PROMPT [N] [DEVICE]
#include <tessera/tessera.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: generate MODEL.gguf PROMPT [N] [DEVICE]\n");
    return 2;
  }
  tessera::LanguageModelOptions lo;
  if (argc > 4) lo.session.device = argv[4];
  auto lm = tessera::LanguageModel::load(argv[1], lo);
  if (!lm.ok()) {
    std::fprintf(stderr, "generate: %s\n", lm.status().to_string().c_str());
    return 1;
  }
  tessera::GenerateOptions go;
  go.max_tokens = argc > 3 ? std::atoi(argv[3]) : 32;
  std::fputs(argv[2], stdout);
  auto r = (*lm)->generate(argv[2], go, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::fputs("\n", stdout);
  if (!r.ok()) {
    std::fprintf(stderr, "generate: %s\n", r.status().to_string().c_str());
    return 1;
  }
  std::fprintf(stderr, "%zu tokens in %.3f s\n", r->tokens.size(), r->generate_seconds);
  return 0;
}
