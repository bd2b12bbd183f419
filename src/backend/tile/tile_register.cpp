// Registers the tile device (tile_device_info, tile_device.cpp) with the runtime's device
// registry at static initialization. cmake/components.cmake (tessera_device) links this
// object whole into every program over Tessera, so nothing needs to refer to it.
#include "tessera/backend/device.h"

namespace tessera {

DeviceInfo tile_device_info();

namespace {
// Second in the registry, after the cpu.
[[maybe_unused]] const bool kRegistered = [] {
  DeviceInfo info = tile_device_info();
  info.order = 1;
  return register_device(std::move(info));
}();
}  // namespace

}  // namespace tessera
