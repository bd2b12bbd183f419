// `tessera generate`, `gguf-synth`, `inspect` and `bench` on GGUF models, run as a user would.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "fixtures.h"
#include "tessera/backend/device.h"
#include "tools/cli_fixture.h"

namespace tessera {
namespace {


class GenerateCli : public testing::CliTest {};

TEST_F(GenerateCli, GreedyTextAndSpeedLine) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/aidreams260K.gguf");
  ASSERT_EQ(run("generate " + model + " -p 'Once upon a time' -n 53"), 0) << err_;
  EXPECT_EQ(out_,
            "Once upon a time, pixels unfolding like petals. Classifications unfold, a kaleidoscope of probability "
            "revealing hidden patterns.\n");
  EXPECT_NE(err_.find("prompt: 13 tokens"), std::string::npos) << err_;
  EXPECT_NE(err_.find("generation: 53 tokens"), std::string::npos) << err_;
  EXPECT_NE(err_.find("tokens/s"), std::string::npos) << err_;
}

// Load progress on stderr: lines at each 20% with TESSERA_PROGRESS=1 (what a log gets),
// nothing on a file by default, with TESSERA_PROGRESS=0 or with --quiet; the text is the same.
TEST_F(GenerateCli, LoadProgressLines) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf");
  const std::string args = "generate " + model + " -p 'Once upon a time' -n 4";
  ASSERT_EQ(run(args), 0) << err_;
  const std::string text = out_;
  EXPECT_EQ(err_.find("loading qwen2"), std::string::npos) << err_;
  struct Env {  // TESSERA_PROGRESS for the commands run below, unset at the end
    ~Env() { unsetenv("TESSERA_PROGRESS"); }
  } env;
  setenv("TESSERA_PROGRESS", "1", 1);
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_EQ(out_, text);
  size_t at = 0;
  // 0% first, then (the file is read 8 MiB at a time) steps of 20% going up, 100% last.
  const std::string prefix = "loading qwen2-256d-2L-Q4_K_M-embQ3_K.gguf: ";
  std::vector<int> steps;
  std::istringstream lines(err_);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(prefix, 0) == 0) steps.push_back(std::stoi(line.substr(prefix.size())));
  ASSERT_GE(steps.size(), 3u) << err_;
  EXPECT_EQ(steps.front(), 0);
  EXPECT_EQ(steps.back(), 100);
  for (size_t i = 1; i < steps.size(); ++i) {
    EXPECT_GT(steps[i], steps[i - 1]) << err_;
    EXPECT_EQ(steps[i] % 20, 0) << err_;
  }
  EXPECT_NE(err_.find(prefix + "100% ("), std::string::npos) << err_;
  ASSERT_EQ(run(args + " -q"), 0) << err_;
  EXPECT_EQ(err_.find("loading qwen2"), std::string::npos) << err_;
  setenv("TESSERA_PROGRESS", "0", 1);
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_EQ(err_.find("loading qwen2"), std::string::npos) << err_;
}

TEST_F(GenerateCli, SeededSamplingRepeats) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/aidreams260K-Q8_0.gguf");
  const std::string args = "generate " + model + " -p 'The robot' -n 20 --temp 0.9 --top-k 20 --top-p 0.9 --seed 4";
  ASSERT_EQ(run(args), 0) << err_;
  std::string first = out_;
  ASSERT_EQ(run(args), 0) << err_;
  EXPECT_EQ(out_, first);
  EXPECT_EQ(first.rfind("The robot", 0), 0u) << first;
}

// The rknpu device: every matrix of an F16 model as an fp16 matmul on the NPU (inspect says
// so), the cpu's greedy text, and bench's modelled tokens/s.
TEST_F(GenerateCli, RknpuRunsTheMatricesWithTheCpuTextAndModelledSpeed) {
  bool rknpu = false;
  for (const auto& d : device_registry()) rknpu = rknpu || d.name == "rknpu";
  if (!rknpu) GTEST_SKIP() << "no rknpu device in this build";
  ASSERT_EQ(run("gguf-synth --dim 128 --layers 2 --heads 4 --ffn 256 --vocab 300 --ctx 32 --type f16 " + path("r.gguf")), 0)
      << err_;
  ASSERT_EQ(run("inspect --brief --device rknpu " + path("r.gguf")), 0) << err_;
  EXPECT_NE(out_.find("blk.1/ffn_down -> f32[1,128]  [npu matmul fp16 x fp16 -> fp32]"), std::string::npos) << out_;
  ASSERT_EQ(run("generate " + path("r.gguf") + " -p 'abc' -n 12"), 0) << err_;
  const std::string cpu = out_;
  ASSERT_EQ(run("generate " + path("r.gguf") + " -p 'abc' -n 12 --device rknpu --offload all"), 0) << err_;
  EXPECT_EQ(out_, cpu);
  // The output matrix (vocabulary 300) stays on the cpu: the NPU's fp16 matmul needs N % 16 == 0.
  EXPECT_NE(err_.find("offloaded 2/2 layers to rknpu (output matrix on the cpu); "), std::string::npos) << err_;
  // --offload 1: the plan as generate makes it, per layer, with the reasons ops stay on the cpu.
  ASSERT_EQ(run("generate " + path("r.gguf") + " -p 'abc' -n 12 --device rknpu --offload 1"), 0) << err_;
  EXPECT_EQ(out_, cpu);
  EXPECT_NE(err_.find("offloaded 1/2 layers to rknpu (output matrix on the cpu); "), std::string::npos) << err_;
  ASSERT_EQ(run("inspect --brief --device rknpu --offload 1 " + path("r.gguf")), 0) << err_;
  EXPECT_NE(out_.find("placement of the 1-token decode step on rknpu"), std::string::npos) << out_;
  EXPECT_NE(out_.find("offloaded 1/2 layers to rknpu (output matrix on the cpu)"), std::string::npos) << out_;
  EXPECT_NE(out_.find("rms_norm x2: no NPU lowering for rms_norm"), std::string::npos) << out_;  // layer 0
  EXPECT_NE(out_.find("fully_connected x7: offload_layers keeps this layer on the cpu"), std::string::npos) << out_;
  EXPECT_NE(out_.find("fully_connected x1: offload_layers: outside the layers, on the device only when every layer is"),
            std::string::npos) << out_;
  EXPECT_NE(out_.find("blk.0/ffn_down -> f32[1,128]  [npu matmul fp16 x fp16 -> fp32]"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("blk.1/ffn_down -> f32[1,128]  [npu"), std::string::npos) << out_;
  ASSERT_EQ(run("inspect --brief --device rknpu --offload all " + path("r.gguf")), 0) << err_;
  EXPECT_NE(out_.find("fully_connected x1: N = 300 is not a multiple of 16"), std::string::npos) << out_;
  ASSERT_EQ(run("generate " + path("r.gguf") + " -p 'abc' -n 2"), 0) << err_;
  EXPECT_EQ(err_.find("offloaded"), std::string::npos) << err_;  // nothing to offload on the cpu
  EXPECT_NE(run("inspect --offload 1 ../no-such.tflite"), 0);
  ASSERT_EQ(run("bench " + path("r.gguf") + " --device rknpu --offload all -p 8 -n 2 -r 1 -t 1"), 0) << err_;
  EXPECT_NE(out_.find("pp8 (modelled, not measured): "), std::string::npos) << out_;
  EXPECT_NE(out_.find("tg2 (modelled, not measured): "), std::string::npos) << out_;
  // The decode step with the cpu's share (norms, RoPE, attention, transfers) modelled on the
  // board's Cortex-A76, the host's measured times beside it.
  {
    const size_t at = out_.find("tg2 with the cpu's share: ");
    ASSERT_NE(at, std::string::npos) << out_;
    double rate = 0, step = 0, npu = 0, cpu = 0, transfers = 0, tr = 0, io = 0, host_cpu = 0, host_tr = 0;
    ASSERT_EQ(std::sscanf(out_.c_str() + at,
                          "tg2 with the cpu's share: %lf tokens/s = %lf ms per token: rknpu %lf ms (modelled) + cpu ops "
                          "%lf ms + %lf transfers %lf ms + input/output conversions %lf ms (the cpu's share modelled on "
                          "one Cortex-A76 core of the RK3588 at 2.4 GHz; measured on this host, 1 thread: cpu ops %lf "
                          "ms, transfers %lf ms)",
                          &rate, &step, &npu, &cpu, &transfers, &tr, &io, &host_cpu, &host_tr),
              9)
        << out_.substr(at, 400);
    EXPECT_NEAR(step, npu + cpu + tr + io, 0.0021);
    EXPECT_GT(cpu, 0.0);
    EXPECT_GT(transfers, 0);
    EXPECT_GT(tr, 0.0);
    EXPECT_GT(io, 0.0);  // the token in, the logits out
    EXPECT_GT(host_cpu, 0.0);
    EXPECT_NEAR(rate, 1000.0 / step, 0.006 + 1e-3 * rate);
  }
  // weights=int8: inspect says so, generate and bench run, score --agreement reports.
  ASSERT_EQ(run("inspect --brief --device rknpu --device-opt weights=int8 " + path("r.gguf")), 0) << err_;
  EXPECT_NE(out_.find("blk.1/ffn_down -> f32[1,128]  [npu matmul int8 x int8 -> int32]"), std::string::npos) << out_;
  ASSERT_EQ(run("generate " + path("r.gguf") + " -p 'abc' -n 4 --device rknpu --offload all --device-opt weights=int8"), 0)
      << err_;
  ASSERT_EQ(run("bench " + path("r.gguf") + " --device rknpu --offload all --device-opt weights=int8 -p 8 -n 2 -r 1 -t 1"), 0)
      << err_;
  EXPECT_NE(out_.find("tg2 (modelled, not measured): "), std::string::npos) << out_;
  ASSERT_EQ(run("score " + path("r.gguf") + " --agreement 8 -p 'abc' --device rknpu --device-opt weights=int8"), 0) << err_;
  EXPECT_NE(out_.find("positions 8\ntop-1 agreement "), std::string::npos) << out_;
  EXPECT_NE(out_.find("mean KL divergence "), std::string::npos) << out_;
  EXPECT_NE(run("generate " + path("r.gguf") + " -p 'abc' -n 2 --device rknpu --device-opt weights=int4"), 0);
  EXPECT_NE(err_.find("weights must be 'fp16' or 'int8', got 'int4'"), std::string::npos) << err_;
}

// gguf-synth --arch qwen2: the keys under "qwen2.", f32 q/k/v biases, tied output; the model
// loads as qwen2 (biases, NEOX rope) and generates; another architecture is refused by name.
TEST_F(GenerateCli, SynthQwen2) {
  ASSERT_EQ(run("gguf-synth --arch qwen2 --tied --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 300 "
                "--ctx 32 --type q8_0 " + path("q.gguf")),
            0)
      << err_;
  EXPECT_NE(out_.find(": qwen2, dim 64, 2 layers, 4 heads (2 KV)"), std::string::npos) << out_;
  EXPECT_NE(out_.find(", tied output"), std::string::npos) << out_;
  ASSERT_EQ(run("inspect --brief " + path("q.gguf")), 0) << err_;
  EXPECT_NE(out_.find("\"qwen2\""), std::string::npos) << out_;
  EXPECT_NE(out_.find("qwen2.attention.head_count_kv"), std::string::npos) << out_;
  EXPECT_NE(out_.find("blk.1.attn_k.bias                f32   [32]"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("\n  output.weight"), std::string::npos) << out_;  // tied: no output matrix
  EXPECT_NE(out_.find("\nqwen2: dim 64, 2 layers, 4 heads (2 KV, head size 16)"), std::string::npos) << out_;
  ASSERT_EQ(run("generate " + path("q.gguf") + " -p 'abc' -n 4"), 0) << err_;
  EXPECT_NE(err_.find("arch qwen2"), std::string::npos) << err_;
  EXPECT_NE(run("gguf-synth --arch phi3 " + path("p.gguf")), 0);
  EXPECT_NE(err_.find("architecture 'phi3' (llama or qwen2)"), std::string::npos) << err_;
}

// The architectures beyond llama (../shared/models/gguf/families): inspect names what each
// adds, and generate writes llama.cpp's greedy text (refs/llamacpp-greedy.tsv: gemma2 F32,
// "Once upon a time": 430 x5 = "e", 367 x5 = "tern"; qwen3 Q8_0's first 5 ids).
TEST_F(GenerateCli, NewArchitecturesInspectAndGenerateLlamaCppsText) {
  TESSERA_REQUIRE_FIXTURE(gemma2, "models/gguf/families/gemma2-256d-2L-F32.gguf");
  TESSERA_REQUIRE_FIXTURE(qwen3, "models/gguf/families/qwen3-256d-2L-Q8_0.gguf");
  TESSERA_REQUIRE_FIXTURE(phi3, "models/gguf/families/phi3-256d-2L-Q4_K_M.gguf");
  ASSERT_EQ(run("inspect --brief " + phi3), 0) << err_;
  EXPECT_NE(out_.find("\nphi3: dim 256, 2 layers, 4 heads (2 KV, head size 64)"), std::string::npos) << out_;
  EXPECT_NE(out_.find("\n  fused q/k/v, fused gate/up, NEOX rope\n"), std::string::npos) << out_;
  ASSERT_EQ(run("generate " + gemma2 + " -p 'Once upon a time' -n 10 --kv-type f32"), 0) << err_;
  EXPECT_EQ(out_, "Once upon a timeeeeeeternternternterntern\n");
  EXPECT_NE(err_.find("post-attention and post-FFN norms, embeddings x 16, sliding window 16 on 1 of 2 layers, "
                      "attention soft-cap 50, logit soft-cap 30, GELU FFN, NEOX rope"),
            std::string::npos)
      << err_;
  ASSERT_EQ(run("generate " + qwen3 + " -p 'Once upon a time' -n 5"), 0) << err_;
  EXPECT_EQ(out_, std::string("Once upon a time co\x16u patI\n"));
  EXPECT_NE(err_.find("arch qwen3, 2 layers, dim 256, 6 heads (2 KV, head size 64)"), std::string::npos) << err_;
}

TEST_F(GenerateCli, SynthInspectBench) {
  ASSERT_EQ(run("gguf-synth --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --vocab 300 --ctx 32 --type q4_0 " +
                path("s.gguf")),
            0)
      << err_;
  ASSERT_EQ(run("inspect --brief " + path("s.gguf")), 0) << err_;
  EXPECT_NE(out_.find("general.architecture"), std::string::npos) << out_;
  EXPECT_NE(out_.find("blk.1.ffn_down.weight"), std::string::npos) << out_;
  EXPECT_NE(out_.find("q4_0"), std::string::npos) << out_;
  EXPECT_NE(out_.find("4 heads (2 KV"), std::string::npos) << out_;
  EXPECT_NE(out_.find("state"), std::string::npos) << out_;  // the KV cache in the memory plan
  ASSERT_EQ(run("bench " + path("s.gguf") + " -p 8 -n 4 -r 1"), 0) << err_;
  EXPECT_NE(out_.find("prompt tokens/s"), std::string::npos) << out_;
  EXPECT_NE(out_.find("generation tokens/s"), std::string::npos) << out_;
  EXPECT_NE(out_.find(" pp8 |"), std::string::npos) << out_;  // llama-bench's test names
  EXPECT_NE(out_.find(" tg4 |"), std::string::npos) << out_;
  EXPECT_NE(out_.find("threads 2:"), std::string::npos) << out_;  // 1 and 2 threads without -t
  // -t picks the thread count; --depth starts each test behind cached tokens.
  ASSERT_EQ(run("bench " + path("s.gguf") + " -p 4 -n 2 -t 2 --depth 5 -b 4 -r 1"), 0) << err_;
  EXPECT_NE(out_.find("threads 2:"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("threads 1:"), std::string::npos) << out_;
  EXPECT_NE(out_.find("tg2 @ d5"), std::string::npos) << out_;
  ASSERT_EQ(run("generate " + path("s.gguf") + " -p 'abc' -n 4"), 0) << err_;
  // The context: the file's (32) by default, -c sets it; the KV cache is sized by it:
  // 2 layers x K and V x 2 KV heads x 16 dims x 32 rows x 2 bytes (f16) = 8 KiB.
  EXPECT_NE(err_.find("context 32 used / 32 trained, KV cache 0.01 MiB (8192 bytes, f16)"), std::string::npos) << err_;
  ASSERT_EQ(run("generate " + path("s.gguf") + " -p 'abc' -n 2 -c 8"), 0) << err_;
  EXPECT_NE(err_.find("context 8 used / 32 trained, KV cache 0.00 MiB (2048 bytes, f16)"), std::string::npos) << err_;
  EXPECT_NE(run("generate " + path("s.gguf") + " -p 'a b c d e f g h i j' -n 2 -c 4"), 0);
  EXPECT_NE(err_.find("the context holds 4"), std::string::npos) << err_;
}

TEST_F(GenerateCli, ClearErrors) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/aidreams260K.gguf");
  EXPECT_NE(run("generate " + path("missing.gguf") + " -p x"), 0);
  EXPECT_NE(err_.find("cannot open"), std::string::npos) << err_;
  std::ofstream(path("bad.gguf")) << "GGML this is not a gguf file";
  EXPECT_NE(run("generate " + path("bad.gguf") + " -p x"), 0);
  EXPECT_NE(err_.find("not a GGUF file"), std::string::npos) << err_;
  std::string long_prompt;
  for (int i = 0; i < 100; ++i) long_prompt += "word ";
  EXPECT_NE(run("generate " + model + " -p '" + long_prompt + "'"), 0);
  EXPECT_NE(err_.find("the context holds 128"), std::string::npos) << err_;
  EXPECT_NE(run("generate " + model + " -p x --top-p 0"), 0);
  EXPECT_NE(err_.find("top-p"), std::string::npos) << err_;
  // A q8_0 KV cache needs whole 32-value blocks per head (this model's heads have 16).
  EXPECT_NE(run("generate " + model + " -p x --kv-type q8_0"), 0);
  EXPECT_NE(err_.find("multiple of 32"), std::string::npos) << err_;
  EXPECT_NE(run("generate " + model + " -p x --kv-type q4_0"), 0);
  EXPECT_NE(err_.find("f16, f32 or q8_0"), std::string::npos) << err_;
}

}  // namespace
}  // namespace tessera
