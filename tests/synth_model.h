// A synthetic llama model (import/gguf/synth.h) serialized to GGUF bytes and loaded back,
// as a file from disk would be; test failures are reported through gtest.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "import/gguf/llama_model.h"
#include "import/gguf/synth.h"

namespace tessera::gguf {

inline std::unique_ptr<LlamaModel> synth_model(const SynthOptions& o) {
  auto w = synth_llama(o);
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  if (!w.ok()) return nullptr;
  auto bytes = w->bytes();
  EXPECT_TRUE(bytes.ok());
  if (!bytes.ok()) return nullptr;
  auto f = File::parse(ConstData::from_vector(std::move(*bytes)), "synthetic");
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return nullptr;
  auto m = LlamaModel::load(std::move(*f));
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  if (!m.ok()) return nullptr;
  return std::move(*m);
}

}  // namespace tessera::gguf
