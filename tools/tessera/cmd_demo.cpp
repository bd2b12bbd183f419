// `tessera demo`: the built-in models (src/runtime/demo_models.h) with seeded weights, run
// on every registered device (default preset), compared with the cpu within the
// tolerance the plan's formats allow, with host time, modelled device time (device
// models) and the bytes that went through conversions.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "backend/cpu/kernel.h"
#include "cli.h"
#include "vision.h"
#include "runtime/demo_models.h"
#include "tessera/backend/plan.h"

namespace tessera::cli {

namespace {

struct DeviceRun {
  std::string device;
  std::vector<double> output;  // output 0: real values (f32) or codes (u8)
  int on_device = 0, nodes = 0;
  double host_ms = 0, modelled_ms = -1;
  int64_t converted = 0, transferred = 0;
  double tolerance = 0;  // vs the cpu, from this plan's formats
};

std::vector<double> values_of(const Tensor& t, const std::vector<uint8_t>& bytes) {
  std::vector<double> v(t.elements());
  for (int64_t i = 0; i < t.elements(); ++i) {
    if (t.dtype == DType::f32) {
      float f;
      std::memcpy(&f, &bytes[4 * i], 4);
      v[i] = f;
    } else {
      v[i] = bytes[i];  // u8 codes
    }
  }
  return v;
}

// The op whose cpu kernel is missing (quantized kernels may not be built yet), or "".
std::string missing_cpu_kernel(const Graph& g) {
  for (const Node& n : g.nodes())
    if (!cpu::kernel_table().find(n.op, cpu::kernel_kind(g, n)))
      return std::string(op_name(n.op)) + " (" + dtype_name(g.tensor(n.inputs[0]).dtype) + ")";
  return "";
}

Result<DeviceRun> run_on(const demo::DemoModel& m, const std::string& device, int threads) {
  SessionOptions o;
  o.device = device;
  o.device_options["threads"] = std::to_string(threads);
  TS_ASSIGN_OR_RETURN(auto s, Session::create(m.graph, o));
  DeviceRun r;
  r.device = s->devices()[0]->name();
  const bool modelled = s->devices()[0]->properties().is_model;
  if (modelled) r.modelled_ms = 0;
  for (const auto& run : m.runs) {
    for (size_t i = 0; i < run.size(); ++i)
      TS_RETURN_IF_ERROR(s->set_input(i, run[i].data(), static_cast<int64_t>(run[i].size())));
    TS_RETURN_IF_ERROR(s->run());
    r.host_ms += s->profile().host_seconds * 1e3;
    if (modelled) r.modelled_ms += s->profile().modelled_seconds * 1e3;
    r.transferred += s->profile().transfer_bytes;
  }
  for (Device* d : s->devices()) r.converted += d->counters().bytes_converted;
  const Plan& p = s->plan();
  for (size_t i = 0; i < p.graph.nodes().size(); ++i) {
    if (p.graph.nodes()[i].op == OpKind::transfer) continue;
    ++r.nodes;
    r.on_device += p.nodes[i].device == 0;
  }
  TS_ASSIGN_OR_RETURN(auto out, s->output(0));
  const Tensor& ot = p.graph.tensor(p.graph.outputs[0]);
  r.output = values_of(ot, out);
  double scale = 0;
  for (double v : r.output) scale = std::max(scale, std::fabs(v));
  r.tolerance = demo::agreement_tolerance(p, scale, ot.dtype != DType::f32);
  return r;
}

// Runs one model on every device; returns false if a device disagrees with the cpu.
bool demo_model(const demo::DemoModel& m, int threads) {
  const Tensor& ot = m.graph.tensor(m.graph.outputs[0]);
  const bool codes = ot.dtype != DType::f32;
  fmt::print("\n{}: {}\n", m.name, m.description);
  fmt::print("  {} nodes, output {}{}, {} run(s)\n", m.graph.nodes().size(), dtype_name(ot.dtype), shape_str(ot.shape),
             m.runs.size());
  if (std::string op = missing_cpu_kernel(m.graph); !op.empty()) {
    fmt::print("  skipped: the cpu has no kernel for {} yet, so there is no reference to compare with\n", op);
    return true;
  }
  fmt::print("  {:<24} {:>9} {:>10} {:>14} {:>12} {:>12} {:>14} {:>12}\n", "device", "on device", "host ms",
             "device ms", "converted B", "moved B", codes ? "max|diff| code" : "max|diff|", "tolerance");
  std::vector<double> reference;
  bool all_agree = true;
  for (const DeviceInfo& info : device_registry()) {
    auto r = run_on(m, info.name, threads);
    if (!r.ok()) {
      fmt::print("  {:<24} failed: {}\n", info.name, r.status().to_string());
      all_agree = false;
      continue;
    }
    if (reference.empty()) reference = r->output;  // the cpu comes first in the registry
    double diff = 0;
    for (size_t i = 0; i < reference.size() && i < r->output.size(); ++i)
      diff = std::max(diff, std::fabs(r->output[i] - reference[i]));
    const bool agree = diff <= r->tolerance;
    all_agree = all_agree && agree;
    const std::string dev_ms = r->modelled_ms < 0 ? "-" : fmt::format("{:.3f} modelled", r->modelled_ms);
    fmt::print("  {:<24} {:>9} {:>10.3f} {:>14} {:>12} {:>12} {:>14.3g} {:>12.3g}  {}\n", r->device,
               fmt::format("{}/{}", r->on_device, r->nodes), r->host_ms, dev_ms, r->converted, r->transferred, diff,
               r->tolerance, agree ? "agrees" : "DISAGREES");
  }
  return all_agree;
}

}  // namespace

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Build small models in memory and run them on every device");
  static int threads = 1;
  static uint32_t seed = 1;
  cmd->add_option("--threads,-t", threads, "CPU threads")->check(CLI::Range(1, 256));
  cmd->add_option("--seed", seed, "Seed of the weights and inputs");
  cmd->callback([] {
    fmt::print("Tessera demo: two models built in memory with seeded weights (seed {}), run on every device.\n", seed);
    fmt::print("Each device's output is compared with the cpu's; the tolerance follows from the formats the\n"
               "plan chose there (codes for the quantized model). 'device ms' is modelled time on device models.\n");
    bool ok = demo_model(demo::quantized_cnn(seed), threads);
    ok = demo_model(demo::transformer_block(seed), threads) && ok;
    if (!ok) throw CommandFailed{error(StatusCode::internal, "demo: a device disagreed with the cpu or failed")};
    fmt::print("\nAll devices agree with the cpu within their formats' tolerances.\n");
    // With the shared fixtures beside the checkout, a real model on a real photo too.
    if (std::string dir = shared_dir(); !dir.empty()) {
      const std::string model = dir + "/models/tflite/mobilenet_v2_1.0_224_quant.tflite";
      const std::string image = dir + "/images/grace_hopper.bmp";
      const std::string labels = dir + "/labels/imagenet_labels.txt";
      for (const DeviceInfo& info : device_registry()) {
        const std::string& device = info.name;
        if (!create_device(device).ok()) continue;
        fmt::print("\nclassify {} with {} on {}:\n", image, model, device);
        DeviceArgs dev;
        dev.device = device;
        dev.threads = threads;
        print_classification(model, image, labels, 3, dev);
      }
    } else {
      fmt::print("\n(../shared is absent: skipping the MobileNetV2 classification of grace_hopper.bmp)\n");
    }
  });
}

}  // namespace tessera::cli
