#include "http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "../cli.h"
#include "../vision.h"
#include "serve/api_error.h"
#include "tessera/model.h"
#include "tessera/backend/plan.h"
#include "serve/openai.h"
#include "serve/tensor_json.h"

// The page served at GET / (tools/tessera/serve/web/index.html, embedded by cmake/embed_file.cmake).
std::string_view tessera_serve_web_page();

namespace tessera::cli {

namespace {

using nlohmann::json;
using serve::ApiError;
using serve::ServedModel;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// How long a stream waits for the next token before it writes an SSE comment, which both
// keeps proxies from timing out and finds a client that has gone.
constexpr auto kStreamHeartbeat = std::chrono::seconds(1);
// Retry-After of a 503 (queue full), in seconds: about one short request's time.
constexpr int kRetryAfterSeconds = 1;

void send_json(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(serve::dump_json(j), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  if (status == 503) res.set_header("Retry-After", std::to_string(kRetryAfterSeconds));
  send_json(res, status, serve::error_json(status, message));
}

// One generation's results, filled by the slot thread and read by the request's thread.
struct Generation {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> pieces;  // final text not yet sent (streaming)
  std::string text;                // all the text (non-streaming)
  std::string finish_reason;
  std::string error;
  serve::Usage usage;
  bool done = false;
  std::atomic<bool> cancel{false};  // the client has gone: stop at the next token
};

// The models being served. specs is fixed; the loader thread fills models[i] and labels[i]
// and then raises `loaded` past i, so a reader that sees i < loaded may use them (the
// vectors are sized once and never reallocated).
struct Server {
  std::vector<ModelToServe> specs;
  serve::Metrics& metrics;
  ServerOptions opts;
  std::vector<std::unique_ptr<ServedModel>> models;
  std::vector<std::vector<std::string>> labels;
  std::unique_ptr<std::atomic<double>[]> progress;  // of the model loading (0..1)
  std::atomic<size_t> loaded{0};
  std::atomic<uint64_t> next_id{1};
  std::atomic<bool> ready{false};     // every model loaded and not draining
  std::atomic<bool> draining{false};  // a signal came: answers close their connections

  Server(std::vector<ModelToServe> s, serve::Metrics& m, ServerOptions o)
      : specs(std::move(s)), metrics(m), opts(std::move(o)), models(specs.size()), labels(specs.size()),
        progress(new std::atomic<double>[specs.size()]) {
    for (size_t i = 0; i < specs.size(); ++i) progress[i] = 0.0;
  }
  // The index of the model named `name`; 404 naming the models served when there is none.
  size_t index(const std::string& name) const {
    for (size_t i = 0; i < specs.size(); ++i)
      if (specs[i].config.name == name) return i;
    std::string names;
    for (const auto& sp : specs) names += (names.empty() ? "'" : ", '") + sp.config.name + "'";
    throw ApiError(404, "unknown model '" + name + "' (serving " + names + ")");
  }
  bool is_loaded(size_t i) const { return i < loaded.load(std::memory_order_acquire); }
  int percent(size_t i) const { return static_cast<int>(progress[i].load() * 100.0); }
  // The model named `name`; 503 with its progress while it loads.
  ServedModel& find(const std::string& name) {
    const size_t i = index(name);
    if (!is_loaded(i))
      throw ApiError(503, "model '" + name + "' is loading (" + std::to_string(percent(i)) +
                              "%); retry when GET /v2/health/ready answers 200");
    return *models[i];
  }
  const std::vector<std::string>* labels_of(const ServedModel& m) const {
    const size_t i = index(m.name());
    return is_loaded(i) && !labels[i].empty() ? &labels[i] : nullptr;
  }
  std::vector<serve::QueueGauge> gauges() const {
    std::vector<serve::QueueGauge> g;
    for (size_t i = 0, n = loaded.load(std::memory_order_acquire); i < n; ++i) g.push_back(models[i]->gauge());
    return g;
  }
};

// The slot job of a generation: the same prompt handling and sampling as `tessera
// generate` (LanguageModel::generate_tokens), stopping at the stop strings and tokens,
// results into `g`. TextStream holds back an incomplete UTF-8 character between pieces.
serve::Job generation_job(ServedModel& m, serve::Metrics& metrics, const serve::CompletionRequest& req,
                          std::vector<int32_t> prompt, std::vector<std::string> stop_strings,
                          std::vector<int32_t> stop_tokens, std::shared_ptr<Generation> g) {
  return [&m, &metrics, req, prompt = std::move(prompt), stop_strings = std::move(stop_strings),
          stop_tokens = std::move(stop_tokens), g](serve::Slot& slot) {
    auto finish = [&](std::string reason, std::string error) {
      std::lock_guard<std::mutex> lock(g->mu);
      g->finish_reason = std::move(reason);
      g->error = std::move(error);
      g->done = true;
      g->cv.notify_all();
    };
    if (g->cancel) return finish("cancelled", "");
    LanguageModel& lm = *slot.llm;
    GenerateOptions go = req.sampling;
    go.max_tokens = req.max_tokens.value_or(lm.context_length());
    go.stop = req.stop;
    go.stop.insert(go.stop.end(), stop_strings.begin(), stop_strings.end());
    go.stop_tokens = stop_tokens;
    serve::TextStream text({});
    auto emit = [&](const std::string& out) {
      if (out.empty()) return;
      std::lock_guard<std::mutex> lock(g->mu);
      g->pieces.push_back(out);
      g->text += out;
      g->cv.notify_all();
    };
    auto r = lm.generate_tokens(prompt, go, [&](std::string_view piece) {
      if (g->cancel) return false;
      emit(text.push(std::string(piece)));
      return true;
    });
    emit(text.finish());
    if (!r.ok()) return finish("error", r.status().to_string());
    // Usage counts the token that ended the reply when it is a template's end-of-turn token
    // (not the model's EOS), as it always has.
    const bool stop_token = r->stop_reason == StopReason::eos && r->stop_token != lm.eos_token();
    const int64_t completion = static_cast<int64_t>(r->tokens.size()) + (stop_token ? 1 : 0);
    {
      std::lock_guard<std::mutex> lock(g->mu);
      g->usage = {r->prompt_tokens, completion};
    }
    metrics.tokens(m.name(), r->prompt_tokens, completion, r->generate_seconds);
    if (r->stop_reason == StopReason::stop_string || r->stop_reason == StopReason::eos) return finish("stop", "");
    finish(g->cancel ? "cancelled" : "length", "");
  };
}

// Starts a completion (OpenAI or v2 text): the prompt, then either a stream of SSE chunks
// or one JSON answer made by `answer`.
void run_generation(Server& s, ServedModel& m, serve::CompletionRequest req, httplib::Response& res, bool& streaming,
                    const std::string& endpoint, const std::function<json(const Generation&)>& answer) {
  const LanguageModel& lm = *m.llm();
  std::string text = req.prompt;
  bool special = false;
  std::vector<std::string> stop_strings;
  std::vector<int32_t> stop_tokens;
  if (req.chat) {
    auto t = lm.chat_template();
    if (!t.ok())
      throw ApiError(400, "model '" + m.name() + "' has no chat template (" + t.status().message() +
                              "); start the server with --chat-template " + m.name() + "=NAME");
    std::vector<ChatMessage> msgs;
    for (const auto& msg : req.messages) msgs.push_back({msg.role == "developer" ? "system" : msg.role, msg.content});
    auto rendered = lm.render_chat(msgs, true);
    if (!rendered.ok()) throw ApiError(500, rendered.status().message());
    text = std::move(rendered).value();
    special = true;
    stop_strings = t->stop_strings;
    stop_tokens = t->stop_tokens;
  }
  std::vector<int32_t> prompt = lm.tokenize(text, lm.info().add_bos, special);
  if (prompt.empty()) prompt.push_back(lm.bos_token());
  const int64_t ctx = lm.context_length();
  if (static_cast<int64_t>(prompt.size()) > ctx)
    throw ApiError(422, "model '" + m.name() + "': the prompt has " + std::to_string(prompt.size()) +
                            " tokens but the context holds " + std::to_string(ctx));
  if (Status v = req.sampling.validate(); !v.ok()) throw ApiError(400, v.message());
  if (!req.seeded) req.sampling.seed = std::random_device{}();
  auto g = std::make_shared<Generation>();
  m.submit(generation_job(m, s.metrics, req, std::move(prompt), std::move(stop_strings), std::move(stop_tokens), g));

  const std::string id = std::string(req.chat ? "chatcmpl-" : "cmpl-") + std::to_string(s.next_id++);
  const int64_t created = static_cast<int64_t>(std::time(nullptr));
  if (!req.stream) {
    std::unique_lock<std::mutex> lock(g->mu);
    g->cv.wait(lock, [&] { return g->done; });
    if (!g->error.empty()) throw std::runtime_error(g->error);
    if (answer) return send_json(res, 200, answer(*g));
    return send_json(res, 200, serve::completion_response(req, id, created, g->text, g->finish_reason, g->usage));
  }
  streaming = true;
  const auto t0 = Clock::now();
  auto first = std::make_shared<bool>(true);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [g, req, id, created, first](size_t, httplib::DataSink& sink) {
        std::unique_lock<std::mutex> lock(g->mu);
        g->cv.wait_for(lock, kStreamHeartbeat, [&] { return !g->pieces.empty() || g->done; });
        std::deque<std::string> out;
        out.swap(g->pieces);
        const bool done = g->done;
        lock.unlock();
        auto write = [&](const std::string& data) {
          if (sink.write(data.data(), data.size())) return true;
          g->cancel = true;  // the client has gone: the slot stops at the next token
          return false;
        };
        if (out.empty() && !done) return write(": keep-alive\n\n");
        for (const auto& piece : out) {
          if (!write(serve::sse_event(serve::completion_chunk(req, id, created, piece, "", *first)))) return false;
          *first = false;
        }
        if (!done) return true;
        const bool ok = g->error.empty()
                            ? write(serve::sse_event(serve::completion_chunk(req, id, created, "", g->finish_reason, *first)))
                            : write(serve::sse_event(serve::error_json(500, g->error)));
        if (!ok) return false;
        if (req.include_usage && !write(serve::sse_event(serve::usage_chunk(req, id, created, g->usage)))) return false;
        if (!write(serve::sse_done())) return false;
        sink.done();
        return true;
      },
      [g, &s, model = m.name(), endpoint, t0](bool success) {
        if (!success) g->cancel = true;
        s.metrics.request(model, endpoint, success ? 200 : 499, seconds_since(t0));
      });
}

using Handler = std::function<void(const httplib::Request&, httplib::Response&, std::string& model, bool& streaming)>;

// Times the request, turns ApiError and other exceptions into JSON errors, counts it.
httplib::Server::Handler wrap(Server& s, std::string endpoint, Handler h) {
  return [&s, endpoint = std::move(endpoint), h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    const auto t0 = Clock::now();
    std::string model;
    bool streaming = false;
    if (s.draining) res.set_header("Connection", "close");  // clients reconnect to another server
    try {
      h(req, res, model, streaming);
    } catch (const ApiError& e) {
      send_error(res, e.status(), e.what());
    } catch (const nlohmann::json::exception& e) {
      send_error(res, 400, std::string("bad JSON value: ") + e.what());
    } catch (const std::exception& e) {
      send_error(res, 500, e.what());
    }
    if (!streaming) s.metrics.request(model, endpoint, res.status, seconds_since(t0));
  };
}

json v2_model_metadata(const ServedModel& m, const Server& s) {
  json j = {{"name", m.name()}, {"versions", {"1"}}, {"parameters", {{"device", m.config().device}}}};
  if (const auto* labels = s.labels_of(m)) j["parameters"]["labels"] = *labels;
  if (m.is_llm()) {
    j["platform"] = "tessera_gguf";
    j["inputs"] = json::array({{{"name", serve::kV2TextInput}, {"datatype", "BYTES"}, {"shape", {1}}}});
    j["outputs"] = json::array({{{"name", serve::kV2TextOutput}, {"datatype", "BYTES"}, {"shape", {1}}}});
  } else {
    j["platform"] = "tessera_tflite";
    j["inputs"] = json::array();
    j["outputs"] = json::array();
    for (const auto& t : m.inputs()) j["inputs"].push_back(serve::tensor_metadata(t));
    for (const auto& t : m.outputs()) j["outputs"].push_back(serve::tensor_metadata(t));
  }
  return j;
}

void v2_infer(Server& s, const httplib::Request& req, httplib::Response& res, std::string& label, bool& streaming) {
  ServedModel& m = s.find(req.matches[1]);
  label = m.name();
  if (m.is_llm()) {
    std::string id;
    const json j = serve::parse_json_body(req.body, "model '" + m.name() + "' infer request");
    serve::CompletionRequest cr = serve::parse_v2_text_request(j, m.name(), id);
    return run_generation(s, m, std::move(cr), res, streaming, "v2_infer", [&](const Generation& g) {
      return serve::v2_text_response(m.name(), id, g.text);
    });
  }
  std::optional<size_t> header_length;
  if (req.has_header("Inference-Header-Content-Length")) {
    const std::string v = req.get_header_value("Inference-Header-Content-Length");
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || !end || *end || v[0] == '-')
      throw ApiError(400, "Inference-Header-Content-Length must be a byte count, got '" + v + "'");
    header_length = static_cast<size_t>(n);
  }
  auto ir = std::make_shared<serve::InferRequest>(
      serve::parse_infer_request(req.body, header_length, m.name(), m.inputs(), m.outputs()));
  struct Run {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::vector<std::vector<uint8_t>> outputs;
    std::string error;
  };
  auto run = std::make_shared<Run>();
  m.submit([ir, run](serve::Slot& slot) {
    Session& session = *slot.session;
    Status st;
    for (size_t k = 0; k < ir->inputs.size() && st.ok(); ++k)
      st = session.set_input(k, ir->inputs[k].data(), static_cast<int64_t>(ir->inputs[k].size()));
    if (st.ok()) st = session.run();
    std::vector<std::vector<uint8_t>> outs;
    for (size_t k = 0; k < session.graph().outputs.size() && st.ok(); ++k) {
      auto o = session.output(k);
      if (o.ok()) outs.push_back(std::move(o).value());
      else st = o.status();
    }
    std::lock_guard<std::mutex> lock(run->mu);
    run->outputs = std::move(outs);
    if (!st.ok()) run->error = st.to_string();
    run->done = true;
    run->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(run->mu);
  run->cv.wait(lock, [&] { return run->done; });
  if (!run->error.empty()) throw std::runtime_error("model '" + m.name() + "': " + run->error);
  serve::InferResponse r = serve::make_infer_response(m.name(), *ir, m.outputs(), run->outputs);
  res.status = 200;
  if (r.header_length) {
    res.set_header("Inference-Header-Content-Length", std::to_string(*r.header_length));
    res.set_content(r.body, "application/octet-stream");
  } else {
    res.set_content(r.body, "application/json");
  }
}

void add_routes(httplib::Server& svr, Server& s) {
  // The web page: chat with a GGUF model, run a TFLite classifier or detector on a photo.
  for (const char* path : {"/", "/index.html"})
    svr.Get(path, wrap(s, "web", [](auto&, auto& res, auto&, auto&) {
      const std::string_view page = tessera_serve_web_page();
      res.status = 200;
      res.set_header("Cache-Control", "no-cache");
      res.set_header("Content-Security-Policy",
                     "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' blob: data:");
      res.set_content(std::string(page), "text/html; charset=utf-8");
    }));
  svr.Get("/health", wrap(s, "health", [&](auto&, auto& res, auto&, auto&) {
    if (s.is_loaded(s.specs.size() - 1)) return send_json(res, 200, {{"status", "ok"}});
    send_error(res, 503, "loading models");
  }));
  svr.Get("/v2/health/live", wrap(s, "health", [&](auto&, auto& res, auto&, auto&) {
    send_json(res, 200, {{"live", true}});
  }));
  svr.Get("/v2/health/ready", wrap(s, "health", [&](auto&, auto& res, auto&, auto&) {
    send_json(res, s.ready ? 200 : 503, {{"ready", s.ready.load()}});
  }));
  svr.Get("/v2", wrap(s, "v2_metadata", [&](auto&, auto& res, auto&, auto&) {
    send_json(res, 200, {{"name", "tessera"}, {"version", "0.1.0"}, {"extensions", {"binary_tensor_data"}}});
  }));
  // Each model has one version, "1"; the paths with /versions/V name it explicitly.
  for (const std::string model : {"/v2/models/([^/]+)", "/v2/models/([^/]+)/versions/1"}) {
    svr.Get(model, wrap(s, "v2_metadata", [&](const auto& req, auto& res, auto& label, auto&) {
      ServedModel& m = s.find(req.matches[1]);
      label = m.name();
      send_json(res, 200, v2_model_metadata(m, s));
    }));
    svr.Get(model + "/ready", wrap(s, "v2_metadata", [&](const auto& req, auto& res, auto& label, auto&) {
      const size_t i = s.index(req.matches[1]);
      label = s.specs[i].config.name;
      send_json(res, s.is_loaded(i) ? 200 : 503, {{"name", label}, {"ready", s.is_loaded(i)}});
    }));
    svr.Post(model + "/infer", wrap(s, "v2_infer", [&](const auto& req, auto& res, auto& label, auto& st) {
      v2_infer(s, req, res, label, st);
    }));
  }
  // A model still loading is listed with its state and progress (tessera.state "loading",
  // tessera.progress 0..1) so that clients and the web page can show it.
  auto model_entry = [&s](size_t i) {
    const serve::ModelConfig& c = s.specs[i].config;
    const bool loaded = s.is_loaded(i);
    auto format = model_format(c.path);
    const bool llm = loaded ? s.models[i]->is_llm() : format.ok() && *format == ModelFormat::gguf;
    return json{{"id", c.name},
                {"object", "model"},
                {"created", 0},
                {"owned_by", "tessera"},
                {"tessera", {{"kind", llm ? "llm" : "tensor"}, {"device", c.device}, {"parallel", c.parallel},
                             {"state", loaded ? "ready" : "loading"}, {"progress", loaded ? 1.0 : s.progress[i].load()}}}};
  };
  svr.Get("/v1/models", wrap(s, "models", [&, model_entry](auto&, auto& res, auto&, auto&) {
    json data = json::array();
    for (size_t i = 0; i < s.specs.size(); ++i) data.push_back(model_entry(i));
    send_json(res, 200, {{"object", "list"}, {"data", data}});
  }));
  svr.Get(R"(/v1/models/([^/]+))", wrap(s, "models", [&, model_entry](const auto& req, auto& res, auto& label, auto&) {
    const size_t i = s.index(req.matches[1]);
    label = s.specs[i].config.name;
    send_json(res, 200, model_entry(i));
  }));
  for (bool chat : {false, true}) {
    const std::string endpoint = chat ? "chat_completions" : "completions";
    svr.Post(chat ? "/v1/chat/completions" : "/v1/completions",
             wrap(s, endpoint, [&, chat, endpoint](const auto& req, auto& res, auto& label, auto& st) {
               const json j = serve::parse_json_body(req.body, chat ? "chat completion request" : "completion request");
               serve::CompletionRequest cr = serve::parse_completion_request(j, chat);
               ServedModel& m = s.find(cr.model);
               label = m.name();
               if (!m.is_llm())
                 throw ApiError(400, "model '" + m.name() + "' is a tensor model, not a GGUF language model; it answers "
                                     "POST /v2/models/" + m.name() + "/infer");
               run_generation(s, m, std::move(cr), res, st, endpoint, nullptr);
             }));
  }
  svr.Get("/metrics", wrap(s, "metrics", [&](auto&, auto& res, auto&, auto&) {
    res.status = 200;
    res.set_content(s.metrics.render(s.gauges()), "text/plain; version=0.0.4");
  }));
}

// The listening socket on `port` among this process's descriptors, or -1.
int listening_socket(int port) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = -1;
    try {
      fd = std::stoi(e.path().filename().string());
    } catch (...) {
      continue;
    }
    int accepting = 0;
    socklen_t len = sizeof accepting;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || !accepting) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int p = -1;
    if (addr.ss_family == AF_INET) p = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6) p = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (p == port) return fd;
  }
  return -1;
}


// Class names from --labels as `tessera classify` and `tessera detect` read them: a
// classifier's file with one line more than its classes starts with the background class; a
// detector's classes (SSD post-processing) never include it, so a leading "???" or
// "background" line is skipped.
// Without --labels, the names the model file carries (Model::labels) are read the same way.
Result<std::vector<std::string>> read_labels(const ServedModel& m, const std::string& path) {
  const std::string what = "--labels '" + m.name() + "=" + path + "'";
  if (m.is_llm()) {
    if (path.empty()) return std::vector<std::string>{};
    return error(StatusCode::invalid_argument, what, ": '", m.name(), "' is a GGUF model");
  }
  int64_t classes = 0;
  if (m.outputs().size() == 1 && !m.outputs()[0].shape.empty()) classes = m.outputs()[0].shape.back();
  Result<Labels> file = path.empty() ? Labels::from_lines(m.embedded_labels(), classes) : Labels::load(path, classes);
  if (!file.ok()) return file.status().with_context(what);
  std::vector<std::string> lines;
  for (size_t i = 0; i < file->size(); ++i) lines.push_back((*file)[static_cast<int64_t>(i)]);
  if (m.outputs().size() == 4 && !lines.empty() && (lines[0] == "???" || lines[0] == "background"))
    lines.erase(lines.begin());
  return lines;
}

// Loads the models in order (the loader thread), logging on stderr; the first failure
// stops the server.
Status load_models(Server& s, std::atomic<bool>& stop_requested) {
  for (size_t i = 0; i < s.specs.size(); ++i) {
    const serve::ModelConfig& c = s.specs[i].config;
    std::fprintf(stderr, "tessera serve: loading '%s' from %s on %s (%d session%s, %d thread%s each)\n", c.name.c_str(),
                 c.path.c_str(), c.device.c_str(), c.parallel, c.parallel == 1 ? "" : "s", c.threads,
                 c.threads == 1 ? "" : "s");
    const ProgressFn log = load_progress(c.path, /*log=*/true);
    const ProgressFn progress = [&](double f) {
      s.progress[i] = f;
      if (log) log(f);
      return !stop_requested.load();
    };
    auto m = ServedModel::load(c, s.metrics, progress);
    end_progress_line();
    if (!m.ok()) return m.status();
    if (const LanguageModel* lm = (*m)->llm())
      if (auto t = lm->chat_template(); t.ok() && !t->warning.empty())
        std::fprintf(stderr, "tessera serve: warning: model '%s': %s\n", c.name.c_str(), t->warning.c_str());
    {
      auto lines = read_labels(**m, s.specs[i].labels_path);
      if (!lines.ok()) {
        (*m)->stop();
        return lines.status();
      }
      s.labels[i] = std::move(*lines);
    }
    s.models[i] = std::move(*m);
    s.progress[i] = 1.0;
    s.loaded.store(i + 1, std::memory_order_release);
  }
  return Status::Ok();
}

}  // namespace

Status serve_http(std::vector<ModelToServe> models, serve::Metrics& metrics, const ServerOptions& opts,
                  std::atomic<bool>& stop_requested) {
  if (models.empty()) return error(StatusCode::invalid_argument, "serve: no models to serve");
  Server s(std::move(models), metrics, opts);
  httplib::Server svr;
  // Every request waiting in a model queue holds an HTTP thread: enough threads for every
  // slot and queue place, plus a few for health, metadata and metrics, so that the queue
  // limit (503) is what bounds the backlog.
  size_t threads = 8;
  for (const auto& m : s.specs) threads += static_cast<size_t>(m.config.parallel) + m.config.max_queue;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(opts.max_body_bytes);
  svr.set_error_handler([&](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;  // an answer of ours already
    std::string msg;
    if (res.status == 404) msg = "no endpoint " + req.method + " " + req.path + " (see docs/serving.md)";
    else if (res.status == 413 && req.get_header_value("Content-Type") == "application/x-www-form-urlencoded")
      // cpp-httplib parses form bodies itself and caps them at CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH.
      msg = "a form-urlencoded body is limited to " + std::to_string(CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH) +
            " bytes; send Content-Type: application/json (or application/octet-stream for binary tensor data)";
    else if (res.status == 413)
      msg = "request body larger than the limit of " + std::to_string(opts.max_body_bytes) + " bytes (--max-body)";
    else if (res.status == 405) msg = "method " + req.method + " not allowed on " + req.path;
    else msg = "bad request (HTTP status " + std::to_string(res.status) + ")";
    res.set_content(serve::dump_json(serve::error_json(res.status, msg)), "application/json");
    metrics.request("", "error", res.status, 0);
  });
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string msg = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      msg = e.what();
    } catch (...) {
    }
    send_error(res, 500, msg);
  });
  add_routes(svr, s);

  int port = opts.port;
  if (port == 0) {
    port = svr.bind_to_any_port(opts.host);
    if (port < 0) return error(StatusCode::io_error, "serve: cannot bind to '", opts.host, "'");
  } else if (!svr.bind_to_port(opts.host, port)) {
    return error(StatusCode::io_error, "serve: cannot bind to ", opts.host, ":", port, " (in use or not allowed?)");
  }
  if (!opts.port_file.empty()) {
    std::ofstream f(opts.port_file);
    f << port << "\n";
    if (!f) return error(StatusCode::io_error, "serve: cannot write --port-file '", opts.port_file, "'");
  }
  std::fprintf(stderr, "tessera serve: listening on http://%s:%d (%zu model%s to load)\n", opts.host.c_str(), port,
               s.specs.size(), s.specs.size() == 1 ? "" : "s");
  std::fflush(stderr);
  // The models load while the server answers: health and the model list say how far.
  Status load_status;
  std::thread loader([&] {
    load_status = load_models(s, stop_requested);
    // A signal during a load cancels it (its progress callback says stop): not an error.
    if (load_status.code() == StatusCode::cancelled && stop_requested) load_status = Status::Ok();
    if (!load_status.ok()) {
      stop_requested = true;  // the watcher below stops the listener
      return;
    }
    if (!stop_requested) {
      s.ready = true;
      std::fprintf(stderr, "tessera serve: ready: %zu model%s loaded\n", s.specs.size(), s.specs.size() == 1 ? "" : "s");
      std::fflush(stderr);
    }
  });
  std::atomic<bool> listening_done{false};
  // Stops the listener when a signal has been seen. httplib's stop() would also cut the
  // streams in flight (its chunked writer ends when the server socket is invalidated), so
  // the listening socket is shut down instead: accept() fails, the accept loop ends, and
  // the thread pool finishes every request already taken before listen_after_bind
  // returns. (stop() is the fallback, repeated: one made before listening would be lost.)
  std::thread watcher([&] {
    bool stopped = false;
    while (!listening_done) {
      if (stop_requested && !stopped) {
        s.ready = false;
        s.draining = true;
        const int fd = listening_socket(port);
        if (fd >= 0) {
          ::shutdown(fd, SHUT_RDWR);
          stopped = true;
        } else {
          svr.stop();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  const bool ok = svr.listen_after_bind();
  listening_done = true;
  watcher.join();
  loader.join();  // a load in progress stops at its next progress report
  for (size_t i = 0, n = s.loaded.load(); i < n; ++i) s.models[i]->stop();
  if (!load_status.ok()) return load_status;
  if (!ok && !stop_requested) return error(StatusCode::io_error, "serve: the listener failed");
  return Status();
}

}  // namespace tessera::cli
