// Registers the rknpu device (rknpu_device_info, rknpu_device.cpp) with the runtime's device
// registry at static initialization. cmake/components.cmake (tessera_device) links this
// object whole into every program over Tessera, so nothing needs to refer to it.
#include "tessera/backend/device.h"

namespace tessera {

DeviceInfo rknpu_device_info();

namespace {
// Third in the registry, after the cpu and the tile device.
[[maybe_unused]] const bool kRegistered = [] {
  DeviceInfo info = rknpu_device_info();
  info.order = 2;
  return register_device(std::move(info));
}();
}  // namespace

}  // namespace tessera
