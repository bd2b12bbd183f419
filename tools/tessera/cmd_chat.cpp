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
#include <chrono>
#include <csignal>
#include <cstdio>

#include <unistd.h>

#include "cli.h"
#include "import/gguf/gguf_chat_template.h"
#include "import/gguf/llama_model.h"
#include "runtime/llm/chat_template.h"
#include "runtime/llm/generator.h"
#include "runtime/llm/stop_scanner.h"

namespace tessera::cli {

namespace {

volatile std::sig_atomic_t g_interrupts = 0;  // SIGINTs not yet handled
void on_sigint(int) { g_interrupts = g_interrupts + 1; }

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

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

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
    llm::SamplerOptions so;
    DeviceArgs dev;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("model", a->model, "GGUF model file")->required();
  cmd->add_option("--system", a->system, "System prompt");
  cmd->add_option("--chat-template", a->template_name,
                  "Template family: llama3, chatml (qwen), llama2, phi3, gemma (default: from the file's "
                  "tokenizer.chat_template)");
  cmd->add_option("--n-predict,-n", a->n, "Most tokens per reply (stops earlier at end of turn)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--ctx-size,-c", a->ctx,
                  "Context size: KV cache rows (default: the file's context length, at most 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--batch,-b", a->batch, "Prompt tokens per step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  add_sampler_options(cmd, a->so);
  cmd->add_option("--kv-type", a->kv_type, "KV cache type: f16 (default), f32 or q8_0 (blocks of 32, half the bytes of f16)");
  cmd->add_flag("--mmap", a->mmap, kMmapHelp);
  cmd->add_flag("--quiet,-q", a->quiet, "No model summary or per-turn statistics on stderr");
  cmd->add_flag("--no-cache-reuse", a->no_cache_reuse,
                "Feed the whole conversation every turn (slower; the replies are the same)");
  a->dev.add_to(cmd);
  cmd->callback([a] {
    auto model = take(gguf::LlamaModel::open(a->model, gguf_load(a->mmap)));
    if (a->ctx > 0) take(model->set_context(a->ctx));
    const llm::ChatTemplate tmpl = take(gguf::chat_template_for(model->file(), a->template_name));
    const gguf::Tokenizer& tok = model->tokenizer();
    const llm::SamplerOptions& so = a->so;
    take(llm::Sampler::validate(so));
    auto gen = take(llm::Generator::create(*model, take(generator_options(a->dev, "", model->layers(), a->batch,
                                                                           a->kv_type))));
    const int64_t ctx = gen->context_length();
    // A reply ends at EOS or at a stop string that is one token of the vocabulary.
    std::vector<int32_t> stop_ids = {tok.eos()};
    for (const auto& s : tmpl.stop_strings())
      if (int32_t id = tok.find(s); id >= 0) stop_ids.push_back(id);
    if (!a->quiet) {
      print_model_summary(*model, *gen, a->kv_type);
      fmt::print(stderr, "chat template {}{}; a reply stops at", tmpl.name(),
                 a->template_name.empty() ? " (from tokenizer.chat_template)" : " (--chat-template)");
      for (const auto& s : tmpl.stop_strings()) fmt::print(stderr, " {}", s);
      fmt::print(stderr, " or EOS; Ctrl-C stops a reply, twice at the prompt quits\n");
    }

    struct sigaction sa = {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: a read at the prompt returns EINTR
    struct sigaction old_sa = {};
    sigaction(SIGINT, &sa, &old_sa);

    std::vector<llm::ChatMessage> messages;
    if (!a->system.empty()) messages.push_back({"system", a->system});
    const size_t kept = messages.size();  // messages a new conversation starts with
    std::vector<int32_t> cached;          // the tokens in the KV cache, in order
    llm::Sampler sampler(so);
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
      std::vector<int32_t> ids = tok.encode(tmpl.apply(messages, true), tok.add_bos(), true);
      if (static_cast<int64_t>(ids.size()) >= ctx) {
        // Start over: the system prompt and this turn.
        messages.erase(messages.begin() + static_cast<std::ptrdiff_t>(kept), messages.end() - 1);
        ids = tok.encode(tmpl.apply(messages, true), tok.add_bos(), true);
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
      // Keep the cached tokens this conversation still starts with; feed the rest (at least
      // one token, for the logits).
      size_t reuse = a->no_cache_reuse ? 0 : common_prefix(cached, ids);
      if (reuse == ids.size()) --reuse;
      take(gen->rewind(static_cast<int64_t>(reuse)));
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<float> logits = take(gen->feed(std::vector<int32_t>(ids.begin() + reuse, ids.end())));
      cached = ids;
      const auto t1 = std::chrono::steady_clock::now();

      llm::StopScanner scan(tmpl.stop_strings());
      int64_t generated = 0;
      std::string ended = "token limit";
      for (;;) {
        if (g_interrupts > 0) {
          g_interrupts = 0;
          armed = true;
          ended = "Ctrl-C";
          break;
        }
        const int32_t id = sampler.sample(logits, cached);
        if (std::find(stop_ids.begin(), stop_ids.end(), id) != stop_ids.end()) {
          ended = "end of turn";
          break;
        }
        show(scan.add(tok.piece(id)));
        ++generated;
        if (scan.stopped()) {
          ended = "end of turn";
          break;
        }
        if (generated >= a->n) break;
        if (gen->position() >= ctx) {
          ended = "context full";
          break;
        }
        logits = take(gen->step(id));
        cached.push_back(id);
      }
      show(scan.flush());
      show("\n");
      messages.push_back({"assistant", scan.text()});
      const double prompt_s = std::chrono::duration<double>(t1 - t0).count();
      const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
      if (ended == "context full" || ended == "Ctrl-C")
        fmt::print(stderr, "turn {}: reply stopped ({}) after {} tokens\n", turn, ended, generated);
      if (!a->quiet)
        fmt::print(stderr,
                   "turn {}: {} tokens in the conversation, {} reused from the KV cache, {} fed ({:.1f} tokens/s); "
                   "reply {} tokens ({:.1f} tokens/s), ended by {}\n",
                   turn, ids.size(), reuse, ids.size() - reuse, (ids.size() - reuse) / std::max(prompt_s, 1e-9),
                   generated, generated / std::max(gen_s, 1e-9), ended);
    }
    sigaction(SIGINT, &old_sa, nullptr);
  });
}

}  // namespace tessera::cli
