// `tessera serve --model NAME=PATH[:DEVICE]...`: the OpenAI-compatible API (GGUF models)
// and the Open Inference Protocol v2 (every model) over HTTP; docs/serving.md.
#include <fmt/format.h>
#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <thread>

#include "cli.h"
#include "vision.h"
#include "serve/api_error.h"
#include "serve/http_server.h"  // tools/tessera/serve
#include "serve/model_pool.h"

namespace tessera::cli {

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "Serve models over HTTP: OpenAI-compatible API (GGUF) and KServe v2 (all)");
  struct Args {
    std::vector<std::string> models;
    ServerOptions server;
    int parallel = 2;
    int threads = 2;
    std::vector<std::string> device_opts;
    int64_t ctx = 0;
    int64_t batch = 32;
    size_t max_queue = 16;
    std::vector<std::string> chat_templates;
    std::vector<std::string> labels;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--model,-m", a->models,
                  "Model to serve, NAME=PATH[:DEVICE] (.tflite or .gguf; device cpu, tile[:PRESET], rknpu; repeatable)")
      ->required();
  cmd->add_option("--host", a->server.host, "Address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)");
  cmd->add_option("--port", a->server.port, "Port (0: any free port, printed and written to --port-file)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--port-file", a->server.port_file, "Write the bound port to this file once listening");
  cmd->add_option("--parallel", a->parallel, "Sessions per model: requests that run at once (default 2)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--threads,-t", a->threads, "CPU threads per model, split between its sessions (default 2)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--device-opt", a->device_opts, "Device option KEY=VALUE for every model (repeatable)");
  cmd->add_option("--ctx-size,-c", a->ctx, "GGUF: context size (default: the file's context length, at most 4096)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--batch,-b", a->batch, "GGUF: prompt tokens per step")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-queue", a->max_queue, "Requests that may wait per model; more get 503 (default 16)")
      ->check(CLI::Range(size_t{0}, size_t{1} << 16));
  cmd->add_option("--max-body", a->server.max_body_bytes, "Largest request body in bytes; larger get 413 (default 16 MiB)")
      ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  cmd->add_option("--chat-template", a->chat_templates,
                  "GGUF chat template, NAME for every model or MODEL=NAME (llama3, chatml, llama2, phi3, gemma; "
                  "default: detected from the file)");
  cmd->add_option("--labels", a->labels,
                  "Class names of a tensor model, NAME=FILE (one a line, as `tessera classify --labels`), "
                  "given in its v2 metadata and shown by the web page (repeatable)");
  cmd->callback([a] {
    // SIGINT and SIGTERM are taken by one thread (sigwait), blocked everywhere else: the
    // threads started from here on inherit the mask. A client that disconnects must not
    // kill the server with SIGPIPE.
    std::signal(SIGPIPE, SIG_IGN);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);  // wakes the signal thread at the end
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::atomic<bool> stop{false};
    // The first SIGINT/SIGTERM drains; a second one exits at once (status 1).
    std::thread signals([&] {
      for (;;) {
        int sig = 0;
        sigwait(&set, &sig);
        if (sig == SIGUSR1) return;
        if (stop) {
          std::fprintf(stderr, "tessera serve: second signal, exiting without waiting\n");
          std::_Exit(1);
        }
        std::fprintf(stderr, "tessera serve: %s, finishing the requests in flight\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        stop = true;
      }
    });
    struct JoinSignals {
      std::thread& t;
      ~JoinSignals() {
        pthread_kill(t.native_handle(), SIGUSR1);
        t.join();
      }
    } join{signals};

    // Every option is checked before the server starts; the models then load while it
    // listens (serve_http), their progress on stderr, in GET /v1/models and on the page.
    serve::Metrics metrics;
    std::vector<ModelToServe> models;
    for (const auto& spec : a->models) {
      serve::ModelConfig c;
      try {
        c = serve::parse_model_spec(spec);
      } catch (const serve::ApiError& e) {
        take(error(StatusCode::invalid_argument, e.what()));
      }
      for (auto& m : models)
        if (m.config.name == c.name) take(error(StatusCode::invalid_argument, "--model: the name '", c.name, "' is given twice"));
      c.parallel = a->parallel;
      c.threads = std::max(1, a->threads / a->parallel);
      for (const auto& kv : a->device_opts) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0)
          take(error(StatusCode::invalid_argument, "--device-opt expects KEY=VALUE, got '", kv, "'"));
        c.device_options[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      c.ctx = a->ctx;
      c.batch = a->batch;
      c.max_queue = a->max_queue;
      for (const auto& t : a->chat_templates) {
        const auto eq = t.find('=');
        if (eq == std::string::npos) c.chat_template = t;
        else if (t.substr(0, eq) == c.name) c.chat_template = t.substr(eq + 1);
      }
      models.push_back({std::move(c), ""});
    }
    auto named = [&](const std::string& name) -> ModelToServe* {
      for (auto& m : models)
        if (m.config.name == name) return &m;
      return nullptr;
    };
    for (const auto& t : a->chat_templates) {
      const auto eq = t.find('=');
      if (eq == std::string::npos) continue;
      if (!named(t.substr(0, eq)))
        take(error(StatusCode::invalid_argument, "--chat-template '", t, "': no model named '", t.substr(0, eq), "'"));
    }
    for (const auto& spec : a->labels) {
      const auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0)
        take(error(StatusCode::invalid_argument, "--labels expects NAME=FILE, got '", spec, "'"));
      ModelToServe* m = named(spec.substr(0, eq));
      if (!m) take(error(StatusCode::invalid_argument, "--labels '", spec, "': no model named '", spec.substr(0, eq), "'"));
      m->labels_path = spec.substr(eq + 1);  // read once the model is loaded (its classes)
    }
    take(serve_http(std::move(models), metrics, a->server, stop));
    std::fprintf(stderr, "tessera serve: stopped\n");
  });
}

}  // namespace tessera::cli
