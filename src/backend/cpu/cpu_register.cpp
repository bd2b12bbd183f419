// Registers the cpu device (cpu_device_info, cpu_device.cpp) with the runtime's device
// registry at static initialization. cmake/components.cmake (tessera_device) links this
// object whole into every program over Tessera, so nothing needs to refer to it.
#include "tessera/backend/device.h"

namespace tessera {

DeviceInfo cpu_device_info();

namespace {
// First in the registry: the reference every other device is compared with (tessera demo).
[[maybe_unused]] const bool kRegistered = [] {
  DeviceInfo info = cpu_device_info();
  info.order = 0;
  return register_device(std::move(info));
}();
}  // namespace

}  // namespace tessera
