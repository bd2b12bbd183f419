// ServedModel: one model loaded once, its sessions, and the bounded queue in front of them.
//
// A model file is loaded and planned once at start-up. `parallel` slots each hold a
// prepared session (tensor models: Session; GGUF llama models: a LanguageModel with its own
// KV cache, the slots after the first forks of it sharing its weights) and a thread that takes jobs from the model's queue, so `parallel` requests run at
// once and a long generation holds one slot while the others keep serving. Tensor
// sessions after the first share the first one's devices and weights (as
// `tessera bench --streams` does; several cores of one rknpu device model). At most
// `max_queue` jobs wait; one more is refused with 503 instead of growing a backlog.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/metrics.h"
#include "serve/tensor_json.h"
#include "tessera/generate.h"
#include "tessera/session.h"

namespace tessera::serve {

struct ModelConfig {
  std::string name;
  std::string path;
  std::string device = "cpu";
  int parallel = 1;        // sessions (slots), each with its own thread
  int threads = 1;         // cpu threads per session
  std::map<std::string, std::string> device_options;  // --device-opt KEY=VALUE
  int64_t ctx = 0;         // GGUF: context length (0: the file's, at most the loader's default)
  int64_t batch = 32;      // GGUF: prompt tokens per step
  size_t max_queue = 16;   // jobs waiting for a slot before 503
  std::string chat_template;  // GGUF: template name or file ("" = from the file's metadata)
};

// One prepared session and what it runs.
struct Slot {
  std::unique_ptr<Session> session;             // tensor models
  std::unique_ptr<LanguageModel> llm;           // GGUF llama models
};

// Work for one request; runs on a slot's thread with that slot to itself.
using Job = std::function<void(Slot&)>;

class ServedModel {
 public:
  // Loads, plans and compiles the model and starts its slot threads, reporting to
  // `progress` (optional; false from it cancels) as the file is read and the sessions made.
  static Result<std::unique_ptr<ServedModel>> load(const ModelConfig& config, Metrics& metrics,
                                                   const ProgressFn& progress = nullptr);
  ~ServedModel();

  const ModelConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  bool is_llm() const { return llm_ != nullptr; }
  // GGUF: slot 0's model, for what any thread may call while slots generate (tokenize,
  // render_chat, chat_template, info: the const methods).
  const LanguageModel* llm() const { return llm_; }
  const std::vector<TensorSpec>& inputs() const { return inputs_; }
  const std::vector<TensorSpec>& outputs() const { return outputs_; }
  // The class names a TFLite file carries (Model::labels), as written; empty for GGUF.
  const std::vector<std::string>& embedded_labels() const { return embedded_labels_; }

  // Queues `job` for the next free slot. Throws ApiError 503 when max_queue jobs already
  // wait or the model is stopping.
  void submit(Job job);
  QueueGauge gauge() const;
  // Refuses new jobs, lets queued and running ones finish, joins the slot threads.
  void stop();

 private:
  ServedModel(ModelConfig c, Metrics& m) : config_(std::move(c)), metrics_(m) {}
  void worker(size_t k);

  ModelConfig config_;
  Metrics& metrics_;
  const LanguageModel* llm_ = nullptr;  // slots_[0].llm
  std::vector<TensorSpec> inputs_, outputs_;
  std::vector<std::string> embedded_labels_;
  std::vector<Slot> slots_;
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  int64_t active_ = 0;
  bool stopping_ = false;
};

// The options of `tessera serve --model NAME=PATH[:DEVICE]`: splits the device off after
// the model file's extension (.tflite or .gguf), so device presets with ':' stay whole.
// Throws ApiError 400 (the CLI reports it) for a spec without NAME= or PATH.
ModelConfig parse_model_spec(const std::string& spec);

}  // namespace tessera::serve
