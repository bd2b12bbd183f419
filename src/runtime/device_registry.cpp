// The device registry: every device registers itself from its own folder
// (src/backend/NAME/NAME_register.cpp, a static registrar that cmake/components.cmake links
// whole into every program), so the runtime creates devices without knowing any.
#include <algorithm>
#include <sstream>

#include "tessera/device.h"

namespace tessera {

namespace {
std::vector<DeviceInfo>& registry() {
  static std::vector<DeviceInfo> devices;  // sorted by (order, name)
  return devices;
}
}  // namespace

bool register_device(DeviceInfo info) {
  std::vector<DeviceInfo>& devices = registry();
  for (const DeviceInfo& d : devices)
    if (d.name == info.name) return false;
  auto at = std::upper_bound(devices.begin(), devices.end(), info, [](const DeviceInfo& a, const DeviceInfo& b) {
    return a.order != b.order ? a.order < b.order : a.name < b.name;
  });
  devices.insert(at, std::move(info));
  return true;
}

const std::vector<DeviceInfo>& device_registry() { return registry(); }

Result<std::unique_ptr<Device>> create_device(const std::string& spec, const DeviceOptions& opts) {
  std::string name = spec, preset;
  if (auto c = spec.find(':'); c != std::string::npos) {
    name = spec.substr(0, c);
    preset = spec.substr(c + 1);
  }
  std::ostringstream known;
  for (const auto& d : device_registry()) {
    known << (known.tellp() > 0 ? ", " : "") << d.name;
    if (d.name != name) continue;
    if (!preset.empty() && std::find(d.presets.begin(), d.presets.end(), preset) == d.presets.end()) {
      std::ostringstream ps;
      for (const auto& p : d.presets) ps << (ps.tellp() > 0 ? ", " : "") << p;
      return error(StatusCode::not_found, "device '", name, "' has no preset '", preset, "' (presets: ",
                   d.presets.empty() ? std::string("none") : ps.str(), ")");
    }
    if (preset.empty() && !d.presets.empty()) preset = d.presets.front();
    return d.create(preset, opts);
  }
  return error(StatusCode::not_found, "no device named '", name, "' (devices: ", known.str(), ")");
}

}  // namespace tessera
