// `tessera chat MODEL.gguf [--system TEXT]`: an interactive conversation. Each line on stdin
// is a user turn (end of input ends the chat); the reply streams to stdout, one line per turn
// ending with a newline.
//
// The conversation is formatted with the model's chat template (chat_template.h) and
// tokenized whole every turn; the KV cache keeps the tokens of the turns before, and only
// the tokens after the longest common prefix of the cached and the new tokens are fed (the
// reply's own tokens stay cached unless its text tokenizes differently). When the next turn
// does not fit in the context, the conversation starts over with the system prompt and
// that turn (said on stderr); a reply that fills the context is cut there.
//
// Ctrl-C (SIGINT) stops the reply being written; at the prompt, a Ctrl-C right after another
// (with no turn between) ends the program.
#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>

#include <unistd.h>

#include "cli.h"

namespace tessera::cli {

namespace {

volatile std::sig_atomic_t g_interrupts = 0;  // SIGINTs not yet handled
std::atomic<bool> g_stop_reply{false};         // the reply being written stops (GenerateOptions::cancel)
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
void on_sigint(int) {
  g_interrupts = g_interrupts + 1;
  g_stop_reply.store(true);
}

// Reads lines from fd 0 with read(2), so that SIGINT (installed without SA_RESTART) wakes
// a blocked read instead of being retried silently.
class LineReader {
 public:
  enum class Got { line, eof, interrupted };
  Got next(std::string& line) {
    for (;;) {
      const size_t nl = buf_.find('\n');
      if (nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return Got::line;
      }
      if (eof_) {
        if (buf_.empty()) return Got::eof;
        line = std::move(buf_);
        buf_.clear();
        return Got::line;
      }
      if (g_interrupts > 0) return Got::interrupted;  // a Ctrl-C that came before the read
      char chunk[4096];
      const ssize_t n = ::read(0, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) {
        if (g_interrupts > 0) return Got::interrupted;
        continue;
      }
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  std::string buf_;
  bool eof_ = false;
};

void show(const std::string& text) {
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("chat", "Chat with a GGUF model: one user turn per line on stdin, replies streamed");
  struct Args {
    std::string model, system, template_name;
    int64_t n = 256, ctx = 0, batch = 32;
    std::string kv_type = "f16";
    bool mmap = false;
    bool quiet = false, no_cache_reuse = false;
    GenerateOptions go;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--system", a->system, "System prompt");
  cmd->add_option("--chat-template", a->template_name,
                  "Template family: llama3, chatml (qwen), llama2, phi3, gemma, or a Jinja template file "
                  "(default: from the file's tokenizer.chat_template)");
  cmd->add_option("--n-predict,-n", a->n, "Most tokens per reply (stops earlier at end of turn)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--ctx-size,-c", a->ctx,
                  "Context size: KV cache rows (default: the file's context length, at most 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--batch,-b", a->batch, "Prompt tokens per step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  add_sampler_options(cmd, a->go);
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16 (default), f32 or q8_0 (blocks of 32, half the bytes of f16)");
  cmd->add_flag("--mmap", a->mmap, kMmapHelp);
  cmd->add_flag("--quiet,-q", a->quiet, "No model summary or per-turn statistics on stderr");
  cmd->add_flag("--no-cache-reuse", a->no_cache_reuse,
                "Feed the whole conversation every turn (slower; the replies are the same)");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    LanguageModelOptions lo = take(lm_options(a->dev, "", a->batch, a->kv_type, a->mmap));
    lo.context = a->ctx;
    lo.chat_template = a->template_name;
    lo.session.progress = load_progress(a->model);
    auto lm = take(LanguageModel::load(a->model, lo));
    const ChatTemplateInfo tmpl = take(lm->chat_template());
    GenerateOptions go = a->go;
    take(go.validate());
    go.max_tokens = a->n;
    // A reply ends at EOS or a stop string (as text, or as one token of the vocabulary); the
    // cached tokens the conversation still starts with are kept; Ctrl-C stops it; the
    // turns draw from one random sequence.
    go.stop = tmpl.stop_strings;
    go.stop_tokens = tmpl.stop_tokens;
    go.reuse_cache = !a->no_cache_reuse;
    go.cancel = &g_stop_reply;
    go.reseed = false;
    const int64_t ctx = lm->context_length();
    if (!tmpl.warning.empty()) fmt::print(stderr, "warning: {}\n", tmpl.warning);
    if (!a->quiet) {
      print_model_summary(*lm, a->kv_type);
      fmt::print(stderr, "chat template {}{}; a reply stops at", tmpl.name,
                 tmpl.from_file ? " (from tokenizer.chat_template)"
                 : tmpl.warning.empty() ? " (--chat-template)" : " (fallback)");
      for (const auto& s : tmpl.stop_strings) fmt::print(stderr, " {}", s);
      fmt::print(stderr, " or EOS; Ctrl-C stops a reply, twice at the prompt quits\n");
    }

    struct sigaction sa = {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a read at the prompt returns EINTR
    struct sigaction old_sa = {};
    sigaction(SIGINT, &sa, &old_sa);

    std::vector<ChatMessage> messages;
    if (!a->system.empty()) messages.push_back({"system", a->system});
    const size_t kept = messages.size();  // messages a new conversation starts with
    const bool add_bos = lm->info().add_bos;
    auto encode = [&] { return lm->tokenize(take(lm->render_chat(messages, true)), add_bos, true); };
    LineReader in;
    const bool tty = ::isatty(0);
    bool armed = false;  // the last event was a Ctrl-C
    int turn = 0;
    for (;;) {
      if (tty) show("> ");
      std::string line;
      const LineReader::Got got = in.next(line);
      if (got == LineReader::Got::eof) break;
      if (got == LineReader::Got::interrupted) {
        g_interrupts = 0;
        g_stop_reply = false;
        if (armed) {
          show("\n");
          break;
        }
        armed = true;
        fmt::print(stderr, "\n(Ctrl-C again or end of input to quit)\n");
        continue;
      }
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      armed = false;
      ++turn;
      messages.push_back({"user", line});
      std::vector<int32_t> ids = encode();
      if (static_cast<int64_t>(ids.size()) >= ctx) {
        // Start over: the system prompt and this turn.
        messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(kept), messages.end() - 1);
        ids = encode();
        if (static_cast<int64_t>(ids.size()) >= ctx) {
          fmt::print(stderr, "turn {}: the system prompt and this message take {} tokens; the context holds {} "
                     "(-c): message skipped\n", turn, ids.size(), ctx);
          messages.pop_back();
          show("\n");
          continue;
        }
        fmt::print(stderr, "turn {}: context full ({} tokens); starting a new conversation with the system prompt\n",
                   turn, ctx);
      }
      auto r = take(lm->generate_tokens(ids, go, [](std::string_view piece) {
        show(std::string(piece));
        return true;
      }));
      show("\n");
      messages.push_back({"assistant", r.text});
      std::string ended = "token limit";
      if (r.stop_reason == StopReason::eos || r.stop_reason == StopReason::stop_string) ended = "end of turn";
      if (r.stop_reason == StopReason::context_full) ended = "context full";
      if (r.stop_reason == StopReason::cancelled) {
        g_interrupts = 0;
        g_stop_reply = false;
        armed = true;
        ended = "Ctrl-C";
      }
      if (ended == "context full" || ended == "Ctrl-C")
        fmt::print(stderr, "turn {}: reply stopped ({}) after {} tokens\n", turn, ended, r.tokens.size());
      if (!a->quiet)
        fmt::print(stderr,
                   "turn {}: {} tokens in the conversation, {} reused from the KV cache, {} fed ({:.1f} tokens/s); "
                   "reply {} tokens ({:.1f} tokens/s), ended by {}\n",
                   turn, ids.size(), r.reused_tokens, r.fed_tokens(), r.fed_tokens() / std::max(r.prompt_seconds, 1e-9),
                   r.tokens.size(), r.tokens.size() / std::max(r.generate_seconds, 1e-9), ended);
    }
    sigaction(SIGINT, &old_sa, nullptr);
  });
}

}  // namespace tessera::cli
