// `tessera devices`: every device built in, with its properties.
#include <fmt/format.h>

#include <memory>

#include "cli.h"

namespace tessera::cli {

namespace {
std::string bytes_str(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.1f} GiB", b / double(int64_t{1} << 30));
  if (b >= (1 << 20)) return fmt::format("{:.1f} MiB", b / double(1 << 20));
  return fmt::format("{} B", b);
}
std::string regions_str(uint32_t r) {
  std::string s;
  if (r & kRegionWhole) s += "whole ";
  if (r & kRegionRows) s += "rows ";
  if (r & kRegionBox) s += "box ";
  return s;
}

// "  kernels      packed | reference (default packed)   packed: the fast kernels ..."
void print_options(const DeviceInfo& info) {
  fmt::print("{}  options (--device-opt KEY=VALUE):\n", info.name);
  for (const DeviceOption& o : info.options) {
    std::string values;
    switch (o.kind) {
      case DeviceOption::Kind::choice:
        for (const std::string& v : o.values) values += (values.empty() ? "" : " | ") + v;
        break;
      case DeviceOption::Kind::integer: values = fmt::format("{}..{}", o.min, o.max); break;
      case DeviceOption::Kind::text: values = "text"; break;
    }
    const std::string def = o.default_value.empty() ? "none" : o.default_value;
    fmt::print("  {:<12} {:<44} default {:<8} {}\n", o.key, values, def, o.meaning);
  }
}
}  // namespace

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List the built-in devices and their properties");
  auto options = std::make_shared<bool>(false);
  cmd->add_flag("--options", *options, "List each device's options (key, values, default, meaning) instead");
  cmd->callback([options] {
    if (*options) {
      for (const DeviceInfo& info : device_registry()) print_options(info);
      return;
    }
    for (const DeviceInfo& info : device_registry()) {
      std::vector<std::string> presets = info.presets.empty() ? std::vector<std::string>{""} : info.presets;
      for (const std::string& preset : presets) {
        std::string spec = preset.empty() ? info.name : info.name + ":" + preset;
        auto dev = create_device(spec);
        if (!dev.ok()) {
          fmt::print("{}\n  unavailable: {}\n", spec, dev.status().message());
          continue;
        }
        const DeviceProperties& p = (*dev)->properties();
        fmt::print("{}{}\n  {}\n", p.name, p.is_model ? "  (device model: times are modelled)" : "", p.description);
        fmt::print("  capacity {}, max single allocation {}, alignment {} B, sub-allocation {}, cores {}\n",
                   bytes_str(p.capacity_bytes), bytes_str(p.max_allocation_bytes), p.alignment_bytes,
                   p.sub_allocation ? "yes" : "no (one allocation per tensor)", p.cores);
        fmt::print("  region writes: {}\n", regions_str(p.regions));
        for (const auto& [k, v] : p.extra) fmt::print("  {}: {}\n", k, v);
      }
    }
  });
}

}  // namespace tessera::cli
