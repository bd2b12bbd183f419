// Helpers for the tile device tests: building small graphs and running them on a device.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fixtures.h"
#include "tessera/session.h"
#include "tessera/backend/plan.h"

namespace tessera::tile_testing {

inline TensorId add_input(Graph& g, const std::string& name, Shape shape, DType dt = DType::f32) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dt;
  t.role = Role::input;
  TensorId id = g.add_tensor(t);
  g.inputs.push_back(id);
  return id;
}

inline TensorId add_weight(Graph& g, const std::string& name, Shape shape, const std::vector<float>& v) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.role = Role::weight;
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  t.data = ConstData::from_vector(std::move(bytes));
  return g.add_tensor(t);
}

inline TensorId add_raw_weight(Graph& g, const std::string& name, Shape shape, DType dt, std::vector<uint8_t> bytes) {
  Tensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.dtype = dt;
  t.role = Role::weight;
  t.data = ConstData::from_vector(std::move(bytes));
  return g.add_tensor(t);
}

inline void mark_output(Graph& g, TensorId id) {
  g.tensor(id).role = Role::output;
  g.outputs.push_back(id);
}

struct RunResult {
  std::vector<std::vector<float>> outputs;
  std::unique_ptr<Session> session;
};

// Runs `g` on `device` with the inputs given as raw bytes (one vector per graph input).
inline RunResult run_on(const Graph& g, const std::string& device, const std::vector<std::vector<uint8_t>>& inputs,
                        const DeviceOptions& opts = {}) {
  RunResult r;
  SessionOptions so;
  so.device = device;
  so.device_options = opts;
  auto s = Session::create(g, so);
  EXPECT_TRUE(s.ok()) << device << ": " << s.status().to_string();
  if (!s.ok()) return r;
  r.session = std::move(s).value();
  for (size_t i = 0; i < inputs.size(); ++i) {
    Status st = r.session->set_input(i, inputs[i].data(), static_cast<int64_t>(inputs[i].size()));
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  Status st = r.session->run();
  EXPECT_TRUE(st.ok()) << device << ": " << st.to_string();
  if (!st.ok()) return r;
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    auto out = r.session->output(o);
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    if (!out.ok()) continue;
    std::vector<float> v(out->size() / 4);
    std::memcpy(v.data(), out->data(), out->size());
    r.outputs.push_back(std::move(v));
  }
  return r;
}

inline std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
inline std::vector<uint8_t> bytes_of(const std::vector<int32_t>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Every node of the session's plan ran on a device whose name starts with `prefix`
// (transfers excepted).
inline bool all_nodes_on(const Session& s, const std::string& prefix) {
  const Plan& p = s.plan();
  for (size_t i = 0; i < p.graph.nodes().size(); ++i) {
    if (p.graph.nodes()[i].op == OpKind::transfer) continue;
    if (p.devices[p.nodes[i].device]->name().rfind(prefix, 0) != 0) return false;
  }
  return true;
}

}  // namespace tessera::tile_testing
