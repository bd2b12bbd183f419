#include "serve/model_pool.h"

#include <algorithm>
#include <cctype>
#include <chrono>

#include "import/tflite/tflite_importer.h"
#include "tessera/model.h"
#include "tessera/backend/plan.h"
#include "serve/api_error.h"

namespace tessera::serve {

namespace {

SessionOptions session_options(const ModelConfig& c) {
  SessionOptions o;
  o.device = c.device;
  o.device_options["threads"] = std::to_string(c.threads);
  for (const auto& [k, v] : c.device_options) o.device_options[k] = v;
  return o;
}

std::vector<TensorSpec> specs(const Graph& g, const std::vector<TensorId>& ids) {
  std::vector<TensorSpec> out;
  for (TensorId id : ids) {
    const Tensor& t = g.tensor(id);
    out.push_back({t.name, t.dtype, t.shape});
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<ServedModel>> ServedModel::load(const ModelConfig& config, Metrics& metrics,
                                                       const ProgressFn& progress) {
  // The first slot reads the file and places the weights (most of the time); the others
  // share them and only compile.
  const ProgressPart whole(&progress, 0.0, 1.0);
  auto slot_part = [&](int k) {
    if (k == 0) return whole.sub(0.0, 0.9);
    const double w = 0.1 / std::max(1, config.parallel - 1);
    return whole.sub(0.9 + w * (k - 1), 0.9 + w * k);
  };
  std::unique_ptr<ServedModel> m(new ServedModel(config, metrics));
  const std::string what = "model '" + config.name + "' ('" + config.path + "')";
  if (config.parallel < 1) return error(StatusCode::invalid_argument, what, ": --parallel must be at least 1");
  const SessionOptions opts = session_options(config);
  Result<ModelFormat> format = model_format(config.path);
  if (!format.ok()) {
    if (format.status().code() == StatusCode::unsupported)
      return error(StatusCode::unsupported, what, ": serves .tflite and .gguf files");
    return format.status().with_context(what);
  }
  if (*format == ModelFormat::gguf) {
    LanguageModelOptions lo;
    lo.session = opts;
    lo.context = config.ctx;
    lo.batch = config.batch;
    lo.chat_template = config.chat_template;  // a bad name or file fails here
    lo.session.progress = slot_part(0).as_fn();
    auto lm = LanguageModel::load(config.path, lo);
    if (!lm.ok()) return lm.status().with_context(what);
    m->slots_.push_back(Slot{nullptr, std::move(lm).value()});
    for (int k = 1; k < config.parallel; ++k) {
      lo.session.progress = slot_part(k).as_fn();
      auto fork = m->slots_[0].llm->fork(lo);
      if (!fork.ok()) return fork.status().with_context(what);
      m->slots_.push_back(Slot{nullptr, std::move(fork).value()});
    }
    m->llm_ = m->slots_[0].llm.get();
  } else {
    tflite::ImportReport report;
    auto g = tflite::load_tflite_file(config.path, {}, &report);
    if (!g.ok()) return g.status().with_context(what);
    m->embedded_labels_ = std::move(report.labels);
    m->inputs_ = specs(*g, g->inputs);
    m->outputs_ = specs(*g, g->outputs);
    for (const auto* list : {&m->inputs_, &m->outputs_})
      for (const auto& t : *list)
        try {
          (void)v2_datatype(t.dtype);
        } catch (const ApiError& e) {
          return error(StatusCode::unsupported, what, ": tensor '", t.name, "': ", e.what());
        }
    for (int k = 0; k < config.parallel; ++k) {
      SessionOptions so = opts;
      so.progress = slot_part(k).as_fn();
      auto s = Session::create(*g, so, k == 0 ? nullptr : m->slots_[0].session.get());
      if (!s.ok()) return s.status().with_context(what);
      m->slots_.push_back(Slot{std::move(s).value(), nullptr});
    }
  }
  TS_RETURN_IF_ERROR(whole.report(1.0, what));
  for (size_t k = 0; k < m->slots_.size(); ++k) m->threads_.emplace_back([p = m.get(), k] { p->worker(k); });
  return m;
}

ServedModel::~ServedModel() { stop(); }

void ServedModel::submit(Job job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) throw ApiError(503, "model '" + name() + "' is shutting down");
  if (queue_.size() >= config_.max_queue)
    throw ApiError(503, "model '" + name() + "': " + std::to_string(queue_.size()) +
                            " requests already wait (the queue limit); retry later");
  queue_.push_back(std::move(job));
  cv_.notify_one();
}

QueueGauge ServedModel::gauge() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {name(), static_cast<int64_t>(queue_.size()), active_};
}

void ServedModel::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void ServedModel::worker(size_t k) {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and every queued job has been taken
      job = std::move(queue_.front());
      queue_.pop_front();
      ++active_;
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      job(slots_[k]);
    } catch (...) {
      // A job reports its own errors to its request; nothing may escape the slot thread.
    }
    metrics_.busy(name(), config_.device,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
  }
}

ModelConfig parse_model_spec(const std::string& spec) {
  ModelConfig c;
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw ApiError(400, "--model expects NAME=PATH[:DEVICE], got '" + spec + "'");
  c.name = spec.substr(0, eq);
  for (char ch : c.name)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.'))
      throw ApiError(400, "--model '" + spec + "': the name may hold letters, digits, '-', '_' and '.'");
  std::string rest = spec.substr(eq + 1);
  c.path = rest;
  for (const char* ext : {".tflite:", ".gguf:"}) {
    const size_t at = rest.rfind(ext);
    if (at != std::string::npos) {
      c.path = rest.substr(0, at + std::string(ext).size() - 1);
      c.device = rest.substr(at + std::string(ext).size());
      if (c.device.empty()) throw ApiError(400, "--model '" + spec + "': empty device after ':'");
      break;
    }
  }
  return c;
}

}  // namespace tessera::serve
