// Registers the plugin device with the runtime's device registry at static initialization,
// exactly as src/backend/NAME/NAME_register.cpp does; tests/CMakeLists.txt links this object
// into the programs that test devices (its one line there: the folder in TESSERA_TEST_DEVICES).
#include "tessera/backend/device.h"

namespace tessera::plugin {
DeviceInfo plugin_device_info();
}  // namespace tessera::plugin

namespace tessera {
namespace {
// After the built-in devices.
[[maybe_unused]] const bool kRegistered = [] {
  DeviceInfo info = plugin::plugin_device_info();
  info.order = 100;
  return register_device(std::move(info));
}();
}  // namespace
}  // namespace tessera
