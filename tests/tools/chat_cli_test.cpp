// `tessera chat` through a pipe with the Llama-3-style and Qwen2-style fixtures: greedy
// replies are deterministic; with the KV cache kept across turns, every reply equals the
// one a fresh run over the whole formatted conversation gives (--no-cache-reuse), and the
// cache is really reused; a full context starts a new conversation; template errors are
// clear; Ctrl-C stops a reply, and twice at the prompt ends the program.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <regex>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>

#include "cli_fixture.h"
#include "fixtures.h"

namespace tessera::testing {
namespace {

class ChatCli : public CliTest {
 protected:
  // Runs `tessera chat ARGS` with `input` on stdin.
  int chat(const std::string& args, const std::string& input) {
    {
      std::ofstream f(path("stdin"), std::ios::binary);
      f << input;
    }
    return run("chat " + args + " <" + path("stdin"));
  }
  // "turn N: ... R reused from the KV cache, F fed" from stderr: {R, F}, or {-1, -1}.
  std::pair<int, int> reuse_of_turn(int n) const {
    std::smatch m;
    const std::regex re("turn " + std::to_string(n) + ": \\d+ tokens in the conversation, (\\d+) reused from the KV "
                        "cache, (\\d+) fed");
    if (!std::regex_search(err_, m, re)) return {-1, -1};
    return {std::stoi(m[1]), std::stoi(m[2])};
  }
  // Three turns: deterministic, the cache reused, the same replies as fresh runs.
  void check_cache_reuse(const std::string& model_args);
};

const char* kTurns = "Hello, who are you?\nTell me a story about a cat.\nAnd then?\n";

void ChatCli::check_cache_reuse(const std::string& model_args) {
  const std::string args = model_args + " --system 'You are a helpful assistant.' -n 6";
  ASSERT_EQ(chat(args, kTurns), 0) << err_;
  const std::string cached = out_;
  // One reply line per turn at least (a reply may hold newlines of its own).
  EXPECT_GE(std::count(cached.begin(), cached.end(), '\n'), 3) << cached;
  EXPECT_GT(cached.size(), 6u);
  // Turns 2 and 3 feed only what follows the cached tokens: the previous turns (all but the
  // last reply token, which is sampled but never fed) come from the cache.
  for (int turn = 2; turn <= 3; ++turn) {
    auto [reused, fed] = reuse_of_turn(turn);
    EXPECT_GT(reused, 20) << "turn " << turn << ":\n" << err_;
    EXPECT_GT(fed, 0) << err_;
    EXPECT_LT(fed, reused) << err_;
  }
  EXPECT_EQ(reuse_of_turn(1).first, 0) << err_;
  // Deterministic.
  ASSERT_EQ(chat(args, kTurns), 0) << err_;
  EXPECT_EQ(out_, cached);
  // A fresh run over the whole formatted conversation every turn gives the same replies.
  ASSERT_EQ(chat(args + " --no-cache-reuse", kTurns), 0) << err_;
  EXPECT_EQ(out_, cached);
  EXPECT_EQ(reuse_of_turn(2).first, 0) << err_;
  EXPECT_EQ(reuse_of_turn(3).first, 0) << err_;
}

TEST_F(ChatCli, Llama3KeepsTheCacheAcrossTurns) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/llama3-256d-2L-Q4_K_M-embQ3_K.gguf");
  check_cache_reuse(model + " --chat-template llama3");
  // The summary, as llama.cpp users expect it.
  EXPECT_NE(err_.find("arch llama, 2 layers, dim 256, 4 heads (1 KV, head size 64)"), std::string::npos) << err_;
  EXPECT_NE(err_.find("file type Q4_K_M; tensors: f32 x5, q3_K x1, q4_K x"), std::string::npos) << err_;
  EXPECT_NE(err_.find("vocab 128256 (byte-level BPE), BOS 128000 (added)"), std::string::npos) << err_;
  EXPECT_NE(err_.find("context 256 used / 256 trained, KV cache"), std::string::npos) << err_;
  EXPECT_NE(err_.find("chat template llama3 (--chat-template)"), std::string::npos) << err_;
}

TEST_F(ChatCli, Qwen2KeepsTheCacheAcrossTurns) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf");
  check_cache_reuse(model);
  EXPECT_NE(err_.find("chat template chatml (from tokenizer.chat_template)"), std::string::npos) << err_;
  EXPECT_NE(err_.find("arch qwen2"), std::string::npos) << err_;
}

TEST_F(ChatCli, TemplateErrorsAndQuiet) {
  TESSERA_REQUIRE_FIXTURE(llama3, "models/gguf/llama3-256d-2L-Q4_K_M-embQ3_K.gguf");
  TESSERA_REQUIRE_FIXTURE(qwen2, "models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf");
  // The Llama-3-style fixture carries no template: ChatML, with a warning (even with --quiet).
  EXPECT_EQ(chat(llama3 + " --quiet -n 4", "Hi\n"), 0) << err_;
  EXPECT_NE(err_.find("warning: "), std::string::npos) << err_;
  EXPECT_NE(err_.find("has no tokenizer.chat_template: using ChatML (as llama.cpp does)"), std::string::npos) << err_;
  EXPECT_NE(out_, "");
  EXPECT_NE(chat(qwen2 + " --chat-template vicuna", "Hi\n"), 0);
  EXPECT_NE(err_.find("unknown chat template 'vicuna'"), std::string::npos) << err_;
  // --quiet: replies only; end of input with no turns is a clean exit.
  ASSERT_EQ(chat(qwen2 + " --quiet -n 3", "Hi\n"), 0) << err_;
  EXPECT_EQ(err_, "");
  EXPECT_FALSE(out_.empty());
  ASSERT_EQ(chat(qwen2 + " --quiet", ""), 0) << err_;
  EXPECT_EQ(out_, "");
}

TEST_F(ChatCli, FullContextStartsANewConversation) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf");
  // 40 rows: turn 1 (about 25 tokens with its reply) fits, turn 2 does not.
  ASSERT_EQ(chat(model + " -c 40 -n 4 --system 'Be brief.'", "Hello, who are you?\nTell me a story.\n"), 0)
      << err_;
  EXPECT_NE(err_.find("turn 2: context full (40 tokens); starting a new conversation with the system prompt"),
            std::string::npos)
      << err_;
  EXPECT_EQ(reuse_of_turn(2).first, 11) << err_;  // the system turn's tokens are still cached
  // A message that cannot fit even alone is skipped with a clear line; the chat goes on.
  std::string longer;
  for (int i = 0; i < 60; ++i) longer += "word ";
  ASSERT_EQ(chat(model + " -c 40 -n 2", longer + "\nHi\n"), 0) << err_;
  EXPECT_NE(err_.find("the context holds 40 (-c): message skipped"), std::string::npos) << err_;
  EXPECT_NE(err_.find("turn 2: "), std::string::npos) << err_;
}

// Ctrl-C through a real process: the reply in progress stops and the chat goes on; at the
// prompt, a first Ctrl-C prints a hint and a second ends the program with status 0.
TEST_F(ChatCli, CtrlCStopsAReplyNotTheProgram) {
  TESSERA_REQUIRE_FIXTURE(model, "models/gguf/qwen2-256d-2L-Q4_K_M-embQ3_K.gguf");
  int in[2];
  ASSERT_EQ(::pipe(in), 0);
  const std::string out_path = path("stdout"), err_path = path("stderr");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::close(in[1]);
    const int o = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::execl(exe_.c_str(), exe_.c_str(), "chat", model.c_str(), "-n", "400", nullptr);
    ::_exit(127);
  }
  ::close(in[0]);
  auto wait_for = [&](const std::string& file, const std::string& what) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
      if (read_text(file).find(what) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  auto say = [&](const std::string& line) { ASSERT_EQ(::write(in[1], line.data(), line.size()), (ssize_t)line.size()); };
  say("Tell me a long story.\n");
  // The reply has started streaming: stop it.
  const auto t1 = std::chrono::steady_clock::now();
  while (read_text(out_path).empty() && std::chrono::steady_clock::now() - t1 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(read_text(out_path).empty()) << read_text(err_path);
  ::kill(pid, SIGINT);
  EXPECT_TRUE(wait_for(err_path, "turn 1: reply stopped (Ctrl-C) after")) << read_text(err_path);
  const size_t shown = read_text(out_path).size();
  say("Go on.\n");
  const auto t2 = std::chrono::steady_clock::now();
  while (read_text(out_path).size() <= shown + 1 && std::chrono::steady_clock::now() - t2 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, SIGINT);
  EXPECT_TRUE(wait_for(err_path, "turn 2: reply stopped (Ctrl-C) after")) << read_text(err_path);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGINT);  // right after the stopped reply: the second Ctrl-C in a row quits
  int status = -1;
  const auto t0 = std::chrono::steady_clock::now();
  while (::waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!WIFEXITED(status)) ::kill(pid, SIGKILL), ::waitpid(pid, &status, 0);
  ::close(in[1]);
  ASSERT_TRUE(WIFEXITED(status)) << "the chat did not exit on Ctrl-C at the prompt:\n" << read_text(err_path);
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_text(err_path);
  const std::string err = read_text(err_path);
  // Both replies stopped well before their 400 tokens; turn 2 reused turn 1 from the cache.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m, std::regex("turn 1: reply stopped \\(Ctrl-C\\) after (\\d+) tokens")));
  EXPECT_LT(std::stoi(m[1]), 400);
  EXPECT_EQ(err.find("(Ctrl-C again"), std::string::npos) << err;
}

}  // namespace
}  // namespace tessera::testing
