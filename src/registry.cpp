// The devices built into this library. A new device adds one line here (and its folder).
#include <sstream>

#include "tessera/device.h"

namespace tessera {

DeviceInfo cpu_device_info();
#ifdef TESSERA_HAS_TILE
DeviceInfo tile_device_info();
#endif
#ifdef TESSERA_HAS_RKNPU
DeviceInfo rknpu_device_info();
#endif

const std::vector<DeviceInfo>& device_registry() {
  static const std::vector<DeviceInfo> kDevices = {
      cpu_device_info(),
#ifdef TESSERA_HAS_TILE
      tile_device_info(),
#endif
#ifdef TESSERA_HAS_RKNPU
      rknpu_device_info(),
#endif
  };
  return kDevices;
}

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
