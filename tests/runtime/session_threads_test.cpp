// Sessions that share one device may run on different threads (the device serializes the
// calls; see tessera/backend/device.h). Each thread's outputs must equal what the same session
// computed alone, and nothing may crash or deadlock. The suite also runs under
// ThreadSanitizer (scripts/tsan.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "fixtures.h"
#include "import/tflite/tflite_importer.h"
#include "tessera/model.h"
#include "tessera/backend/plan.h"
#include "tessera/session.h"

namespace tessera {
namespace {

using Bytes = std::vector<uint8_t>;

void run_shared_device_sessions(const std::string& device, int iterations) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  auto g = tflite::load_tflite_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  SessionOptions o;
  o.device = device;
  if (device == "cpu") o.device_options = {{"threads", "2"}};
  auto first = Session::create(*g, o);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  auto second = Session::create(*g, o, first->get());  // the same device objects
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  ASSERT_EQ((*first)->devices(), (*second)->devices());
  Session* sessions[2] = {first->get(), second->get()};

  // Different seeded inputs per session, and each session's output when run alone.
  Bytes inputs[2], expected[2];
  auto in_bytes = g->tensor(g->inputs[0]).host_bytes();
  ASSERT_TRUE(in_bytes.ok());
  for (int k = 0; k < 2; ++k) {
    std::mt19937 rng(11 + k);
    inputs[k].resize(static_cast<size_t>(*in_bytes));
    for (auto& b : inputs[k]) b = static_cast<uint8_t>(rng());
    ASSERT_TRUE(sessions[k]->set_input(0, inputs[k].data(), *in_bytes).ok());
    ASSERT_TRUE(sessions[k]->run().ok());
    auto out = sessions[k]->output(0);
    ASSERT_TRUE(out.ok());
    expected[k] = *out;
  }
  ASSERT_NE(expected[0], expected[1]);

  std::atomic<int> mismatches{0}, failures{0};
  auto worker = [&](int k) {
    for (int i = 0; i < iterations; ++i) {
      if (!sessions[k]->set_input(0, inputs[k].data(), *in_bytes).ok() || !sessions[k]->run().ok()) {
        ++failures;
        continue;
      }
      auto out = sessions[k]->output(0);
      if (!out.ok()) ++failures;
      else if (*out != expected[k]) ++mismatches;
    }
  };
  std::thread t0(worker, 0), t1(worker, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(SessionThreads, SessionsSharingACpuDeviceRunOnTwoThreads) { run_shared_device_sessions("cpu", 20); }

TEST(SessionThreads, SessionsSharingAnRknpuDeviceRunOnTwoThreads) { run_shared_device_sessions("rknpu", 3); }

// Sessions created and destroyed on one thread while another session of the same device
// runs on a second thread: a destroyed session's programs free their device buffers (on
// rknpu: register streams, weight blocks and tables through the transport) under the
// device's lock, so the running session's outputs stay those it computed alone.
void create_and_destroy_beside_a_running_session(const std::string& device, int runs, int sessions) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  auto g = tflite::load_tflite_file(path);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  SessionOptions o;
  o.device = device;
  auto running = Session::create(*g, o);
  ASSERT_TRUE(running.ok()) << running.status().to_string();
  auto in_bytes = g->tensor(g->inputs[0]).host_bytes();
  ASSERT_TRUE(in_bytes.ok());
  Bytes input(static_cast<size_t>(*in_bytes));
  std::mt19937 rng(31);
  for (auto& b : input) b = static_cast<uint8_t>(rng());
  ASSERT_TRUE((*running)->set_input(0, input.data(), *in_bytes).ok());
  ASSERT_TRUE((*running)->run().ok());
  auto alone = (*running)->output(0);
  ASSERT_TRUE(alone.ok());

  std::atomic<int> mismatches{0}, failures{0};
  std::thread runner([&] {
    for (int i = 0; i < runs; ++i) {
      if (!(*running)->set_input(0, input.data(), *in_bytes).ok() || !(*running)->run().ok()) {
        ++failures;
        continue;
      }
      auto out = (*running)->output(0);
      if (!out.ok()) ++failures;
      else if (*out != *alone) ++mismatches;
    }
  });
  std::thread churn([&] {
    for (int i = 0; i < sessions; ++i) {
      auto s = Session::create(*g, o, running->get());  // same device objects; destroyed at once
      if (!s.ok() || !(*s)->set_input(0, input.data(), *in_bytes).ok() || !(*s)->run().ok()) ++failures;
    }
  });
  runner.join();
  churn.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(SessionThreads, RknpuSessionsDestroyedBesideARunningOne) { create_and_destroy_beside_a_running_session("rknpu", 6, 3); }

// One loaded Model (tessera/model.h) shared by three threads, each of which creates its own
// ModelSession from it at the same time and runs its own seeded inputs; every output must
// equal what a session computed alone, single-threaded, before.
void run_shared_model_sessions(const std::vector<std::string>& devices, int iterations) {
  TESSERA_REQUIRE_FIXTURE(path, "models/tflite/mobilenet_v1_0.25_128_quant.tflite");
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  const int n = static_cast<int>(devices.size());
  const int64_t in_bytes = (*model)->inputs()[0].bytes;
  std::vector<Bytes> inputs(n), expected(n);
  for (int k = 0; k < n; ++k) {
    std::mt19937 rng(101 + k);
    inputs[k].resize(static_cast<size_t>(in_bytes));
    for (auto& b : inputs[k]) b = static_cast<uint8_t>(rng());
    SessionOptions o;
    o.device = devices[k];
    auto s = ModelSession::create(*model, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_TRUE((*s)->set_input(0, inputs[k].data(), in_bytes).ok());
    ASSERT_TRUE((*s)->run().ok());
    auto out = (*s)->output(0);
    ASSERT_TRUE(out.ok());
    expected[k] = *out;
  }
  ASSERT_NE(expected[0], expected[1]);

  std::atomic<int> mismatches{0}, failures{0};
  auto worker = [&](int k) {
    SessionOptions o;
    o.device = devices[k];
    auto s = ModelSession::create(*model, o);  // concurrently with the other threads
    if (!s.ok()) {
      ++failures;
      return;
    }
    Bytes out(expected[k].size());
    if (!(*s)->bind_output(0, out.data(), static_cast<int64_t>(out.size())).ok()) ++failures;
    for (int i = 0; i < iterations; ++i) {
      if (!(*s)->set_input(0, inputs[k].data(), in_bytes).ok() || !(*s)->run().ok()) {
        ++failures;
        continue;
      }
      if (out != expected[k]) ++mismatches;
    }
  };
  std::vector<std::thread> threads;
  for (int k = 0; k < n; ++k) threads.emplace_back(worker, k);
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(model->use_count(), 1);  // the sessions released the shared model
}

TEST(SessionThreads, OneModelSharedBySessionsOnThreeThreads) { run_shared_model_sessions({"cpu", "cpu", "cpu"}, 6); }

TEST(SessionThreads, OneModelSharedByCpuTileAndRknpuSessions) { run_shared_model_sessions({"cpu", "tile", "rknpu"}, 2); }

}  // namespace
}  // namespace tessera
