// The socket layer of `tessera serve`: cpp-httplib routes onto the protocol logic of
// src/serve (requests, tensors, streaming, metrics, model queues).
#pragma once

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "serve/metrics.h"
#include "serve/model_pool.h"

namespace tessera::cli {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                          // 0: any free port (printed)
  size_t max_body_bytes = size_t{16} << 20; // larger bodies get 413
  std::string port_file;                    // when set, the bound port is written there
};

// A model to serve: its options and, for a tensor model, the file of its class names
// (--labels NAME=FILE, one a line; "" for none), given in its v2 metadata as
// parameters.labels for the web page and other clients.
struct ModelToServe {
  serve::ModelConfig config;
  std::string labels_path;
};

// Listens, then loads `models` in order on a thread of its own and serves them until
// SIGINT or SIGTERM (blocked in every thread by the caller, see cmd_serve.cpp;
// `stop_requested` is set by the signal thread). While a model loads, its progress is in
// GET /v1/models (and on the web page and stderr), requests for it get 503 naming the
// progress, and /v2/health/ready and /health answer 503; once every model is loaded they
// answer 200. Then it stops accepting, lets in-flight requests finish and returns.
// Errors: the address cannot be bound, a model fails to load (the server then stops).
Status serve_http(std::vector<ModelToServe> models, serve::Metrics& metrics, const ServerOptions& opts,
                  std::atomic<bool>& stop_requested);

}  // namespace tessera::cli
