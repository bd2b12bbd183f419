// The TensorFlow Lite interpreter as a test oracle: ../shared/tools/tflite-oracle runs the
// TFLite C++ runtime (compiled to WebAssembly, builtin kernels only) under Node. setup.sh
// installs it into build/tflite-oracle (scripts/setup.sh does this in CI); the tests find
// it there or at $TESSERA_ORACLE_DIR, and skip when it is absent (fail with
// TESSERA_REQUIRE_FIXTURES=1).
//
// Helpers: running a batch of models through the oracle in one Node process, running the
// same model through a Tessera Session, and cutting a model before one of its operators
// (so that a tensor the oracle cannot return, such as ARG_MAX's int64 output, is compared
// through the tensor that feeds it).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

#include "fixtures.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/session.h"
#include "tflite_schema_generated.h"

namespace tessera::oracle {

namespace fs = std::filesystem;

// The oracle's run_tflite.js, or "" when it is not installed.
inline std::string oracle_script() {
  std::vector<fs::path> dirs;
  if (const char* d = std::getenv("TESSERA_ORACLE_DIR")) dirs.emplace_back(d);
  dirs.emplace_back(fs::path(TESSERA_BINARY_DIR) / "tflite-oracle");
  for (const fs::path& d : dirs) {
    const fs::path js = d / "run_tflite.js";
    if (fs::exists(js) && fs::exists(d / "patch" / "tflite_web_api_cc_noxnn.wasm")) return js.string();
  }
  return "";
}

#define TESSERA_REQUIRE_ORACLE(var)                                                                   \
  const std::string var = ::tessera::oracle::oracle_script();                                        \
  if (var.empty() || std::system("node --version >/dev/null 2>&1") != 0) {                           \
    if (::tessera::testing::fixtures_required())                                                     \
      FAIL() << "the TFLite oracle is not installed (node, and build/tflite-oracle from "            \
                "../shared/tools/tflite-oracle/setup.sh): scripts/setup.sh installs both";           \
    GTEST_SKIP() << "the TFLite oracle is not installed (run ../shared/tools/tflite-oracle/setup.sh " \
                    "build/tflite-oracle)";                                                          \
  }

// A scratch folder for one test, removed by the destructor.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("tessera_oracle_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

inline void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// One oracle run: a model file, its inputs (raw tensors), and the outputs it wrote.
struct Job {
  std::string name;    // unique within a batch
  std::string model;   // .tflite path
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<std::vector<uint8_t>> outputs;  // filled by run_batch
};

// Runs every job through the oracle in one Node process. Returns "" or an error message.
inline std::string run_batch(const std::string& script, const fs::path& dir, std::vector<Job>& jobs) {
  std::ofstream tsv(dir / "cases.tsv");
  for (Job& j : jobs) {
    tsv << (dir / j.name).string() << '\t' << j.model;
    for (size_t k = 0; k < j.inputs.size(); ++k) {
      const fs::path in = dir / (j.name + ".in" + std::to_string(k) + ".bin");
      write_bytes(in, j.inputs[k]);
      tsv << '\t' << in.string();
    }
    tsv << '\n';
  }
  tsv.close();
  const std::string log = (dir / "oracle.log").string();
  const std::string cmd = "node '" + script + "' --batch '" + (dir / "cases.tsv").string() + "' >'" + log + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream f(log);
    return "the oracle failed: " + std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  for (Job& j : jobs) {
    j.outputs.clear();
    for (int k = 0;; ++k) {
      const fs::path out = dir / (j.name + "." + std::to_string(k) + ".bin");
      if (!fs::exists(out)) break;
      j.outputs.push_back(testing::read_file(out.string()));
    }
    if (j.outputs.empty()) return j.name + ": the oracle wrote no outputs";
  }
  return "";
}

// Runs every job through `invokes` Invoke calls of one interpreter each (for operators with
// state, which persists from one Invoke to the next): tests/oracle/run_invokes.js, on the
// oracle's interpreter (the same patched wasm as `script`, run_tflite.js, which invokes
// once). job.inputs holds invokes x model inputs, invoke-major; job.outputs gets invokes x
// `num_outputs` tensors, invoke-major. Returns "" or an error message.
inline std::string run_batch_invokes(const std::string& script, const fs::path& dir, std::vector<Job>& jobs, int invokes,
                                     int num_outputs) {
  std::ofstream tsv(dir / "invokes.tsv");
  for (Job& j : jobs) {
    tsv << (dir / j.name).string() << '\t' << j.model << '\t' << invokes;
    for (size_t k = 0; k < j.inputs.size(); ++k) {
      const fs::path in = dir / (j.name + ".in" + std::to_string(k) + ".bin");
      write_bytes(in, j.inputs[k]);
      tsv << '\t' << in.string();
    }
    tsv << '\n';
  }
  tsv.close();
  const std::string js = (fs::path(TESSERA_TESTS_DIR) / "oracle" / "run_invokes.js").string();
  const std::string log = (dir / "invokes.log").string();
  const std::string cmd = "node '" + js + "' '" + fs::path(script).parent_path().string() + "' '" +
                          (dir / "invokes.tsv").string() + "' >'" + log + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream f(log);
    return "the oracle failed: " + std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  for (Job& j : jobs) {
    j.outputs.clear();
    for (int n = 0; n < invokes; ++n)
      for (int k = 0; k < num_outputs; ++k) {
        const fs::path out = dir / (j.name + "." + std::to_string(n) + "." + std::to_string(k) + ".bin");
        if (!fs::exists(out)) return j.name + ": the oracle wrote no output " + out.filename().string();
        j.outputs.push_back(testing::read_file(out.string()));
      }
  }
  return "";
}

// Runs `model` through one Tessera Session `invokes` times (inputs and outputs as in
// run_batch_invokes: invoke-major), so that state tensors carry from one run to the next.
inline Result<std::vector<std::vector<uint8_t>>> run_tessera_invokes(const std::vector<uint8_t>& model,
                                                                     const std::vector<std::vector<uint8_t>>& inputs,
                                                                     int invokes, const std::string& device) {
  auto owner = std::make_shared<std::vector<uint8_t>>(model);
  ConstData cd;
  cd.data = owner->data();
  cd.size = static_cast<int64_t>(owner->size());
  cd.owner = owner;
  TS_ASSIGN_OR_RETURN(Graph g, tflite::load_tflite_buffer(cd));
  SessionOptions so;
  so.device = device;
  TS_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, Session::create(std::move(g), so));
  const size_t per = inputs.size() / static_cast<size_t>(invokes);
  std::vector<std::vector<uint8_t>> outs;
  for (int n = 0; n < invokes; ++n) {
    for (size_t k = 0; k < per; ++k) {
      const auto& in = inputs[static_cast<size_t>(n) * per + k];
      TS_RETURN_IF_ERROR(s->set_input(k, in.data(), static_cast<int64_t>(in.size())));
    }
    TS_RETURN_IF_ERROR(s->run());
    for (size_t k = 0; k < s->graph().outputs.size(); ++k) {
      TS_ASSIGN_OR_RETURN(std::vector<uint8_t> o, s->output(k));
      outs.push_back(std::move(o));
    }
  }
  return outs;
}

// Runs `model` (bytes of a .tflite file) through a Tessera Session on `device`, imported
// with `opts` (input shapes for dynamic inputs).
inline Result<std::vector<std::vector<uint8_t>>> run_tessera(const std::vector<uint8_t>& model,
                                                             const std::vector<std::vector<uint8_t>>& inputs,
                                                             const std::string& device,
                                                             const tflite::ImportOptions& opts = {}) {
  auto owner = std::make_shared<std::vector<uint8_t>>(model);
  ConstData cd;
  cd.data = owner->data();
  cd.size = static_cast<int64_t>(owner->size());
  cd.owner = owner;
  TS_ASSIGN_OR_RETURN(Graph g, tflite::load_tflite_buffer(cd, opts));
  SessionOptions so;
  so.device = device;
  TS_ASSIGN_OR_RETURN(std::unique_ptr<Session> s, Session::create(std::move(g), so));
  for (size_t k = 0; k < inputs.size(); ++k)
    TS_RETURN_IF_ERROR(s->set_input(k, inputs[k].data(), static_cast<int64_t>(inputs[k].size())));
  TS_RETURN_IF_ERROR(s->run());
  std::vector<std::vector<uint8_t>> outs;
  for (size_t k = 0; k < s->graph().outputs.size(); ++k) {
    TS_ASSIGN_OR_RETURN(std::vector<uint8_t> o, s->output(k));
    outs.push_back(std::move(o));
  }
  return outs;
}

// The index of the first operator of subgraph 0 whose builtin code is `code`
// (tflite::BuiltinOperator_CUSTOM matches custom operators), or -1.
inline int find_operator(const std::vector<uint8_t>& model, int32_t code) {
  const ::tflite::Model* m = ::tflite::GetModel(model.data());
  const auto* ops = m->subgraphs()->Get(0)->operators();
  for (flatbuffers::uoffset_t i = 0; i < ops->size(); ++i) {
    const auto* oc = m->operator_codes()->Get(ops->Get(i)->opcode_index());
    if (std::max<int32_t>(oc->builtin_code(), oc->deprecated_builtin_code()) == code) return static_cast<int>(i);
  }
  return -1;
}

// A copy of `model` cut before operator `op` of subgraph 0: that operator and every one
// after it are dropped (the vector's length is lowered in place), and the model's outputs
// become the operator's non-constant inputs. The outputs vector is rewritten in place, so
// the operator must have at most as many such inputs as the model has outputs.
inline Result<std::vector<uint8_t>> cut_before(const std::vector<uint8_t>& model, int op) {
  std::vector<uint8_t> out = model;
  const ::tflite::Model* m = ::tflite::GetModel(out.data());
  const ::tflite::SubGraph* sg = m->subgraphs()->Get(0);
  if (op < 0 || op >= static_cast<int>(sg->operators()->size())) return error(StatusCode::invalid_argument, "cut_before: no operator ", op);
  std::vector<int32_t> feeds;
  for (int32_t t : *sg->operators()->Get(op)->inputs()) {
    if (t < 0) continue;
    const auto* buf = m->buffers()->Get(sg->tensors()->Get(t)->buffer());
    if (!buf->data() || buf->data()->size() == 0) feeds.push_back(t);
  }
  if (feeds.empty() || feeds.size() > sg->outputs()->size())
    return error(StatusCode::invalid_argument, "cut_before: operator ", op, " has ", feeds.size(),
                 " activation inputs, the model ", sg->outputs()->size(), " outputs");
  auto set_u32 = [](const uint8_t* p, uint32_t v) { std::memcpy(const_cast<uint8_t*>(p), &v, 4); };
  const uint8_t* outs = reinterpret_cast<const uint8_t*>(sg->outputs()->Data());
  set_u32(outs - 4, static_cast<uint32_t>(feeds.size()));
  for (size_t k = 0; k < feeds.size(); ++k) set_u32(outs + 4 * k, static_cast<uint32_t>(feeds[k]));
  set_u32(reinterpret_cast<const uint8_t*>(sg->operators()->Data()) - 4, static_cast<uint32_t>(op));
  return out;
}

// A copy of `model` cut after operator `op` of subgraph 0: the operators after it are
// dropped and the model's outputs become that operator's outputs (at most as many as the
// model has outputs). TFLite orders operators topologically, so the rest still runs.
inline Result<std::vector<uint8_t>> cut_after(const std::vector<uint8_t>& model, int op) {
  std::vector<uint8_t> out = model;
  const ::tflite::Model* m = ::tflite::GetModel(out.data());
  const ::tflite::SubGraph* sg = m->subgraphs()->Get(0);
  if (op < 0 || op >= static_cast<int>(sg->operators()->size()))
    return error(StatusCode::invalid_argument, "cut_after: no operator ", op);
  const auto* produced = sg->operators()->Get(op)->outputs();
  if (produced->size() > sg->outputs()->size())
    return error(StatusCode::invalid_argument, "cut_after: operator ", op, " has more outputs than the model");
  auto set_u32 = [](const uint8_t* p, uint32_t v) { std::memcpy(const_cast<uint8_t*>(p), &v, 4); };
  const uint8_t* outs = reinterpret_cast<const uint8_t*>(sg->outputs()->Data());
  set_u32(outs - 4, produced->size());
  for (flatbuffers::uoffset_t k = 0; k < produced->size(); ++k) set_u32(outs + 4 * k, static_cast<uint32_t>(produced->Get(k)));
  set_u32(reinterpret_cast<const uint8_t*>(sg->operators()->Data()) - 4, static_cast<uint32_t>(op + 1));
  return out;
}

// The builtin name of operator `op` of subgraph 0 ("CONV_2D", or the custom code).
inline std::string operator_name(const std::vector<uint8_t>& model, int op) {
  const ::tflite::Model* m = ::tflite::GetModel(model.data());
  const auto* oc = m->operator_codes()->Get(m->subgraphs()->Get(0)->operators()->Get(op)->opcode_index());
  const auto code = static_cast<::tflite::BuiltinOperator>(std::max<int32_t>(oc->builtin_code(), oc->deprecated_builtin_code()));
  if (code == ::tflite::BuiltinOperator_CUSTOM && oc->custom_code()) return oc->custom_code()->str();
  return ::tflite::EnumNameBuiltinOperator(code);
}

// Seeded random bytes for an input tensor, never all zero.
inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng() >> 24);
  v[0] |= 1;
  return v;
}

}  // namespace tessera::oracle
