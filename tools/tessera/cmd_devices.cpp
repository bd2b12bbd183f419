// `tessera devices`: every device built in, with its properties.
#include <fmt/format.h>

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
}  // namespace

void add_devices_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "List the built-in devices and their properties");
  cmd->callback([] {
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
