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
  // Class names of tensor models (--labels NAME=FILE, one a line): given in the model's v2
  // metadata as parameters.labels, for the web page and other clients.
  std::map<std::string, std::vector<std::string>> labels;
};

// Listens and serves `models` until SIGINT or SIGTERM (blocked in every thread by the
// caller, see cmd_serve.cpp; `stop_requested` is set by the signal thread). Then it
// stops accepting, lets in-flight requests finish and returns. Errors: the address cannot
// be bound.
Status serve_http(std::vector<std::unique_ptr<serve::ServedModel>>& models, serve::Metrics& metrics,
                  const ServerOptions& opts, std::atomic<bool>& stop_requested);

}  // namespace tessera::cli
