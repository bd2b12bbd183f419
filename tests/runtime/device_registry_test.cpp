// The device registry (src/runtime/device_registry.cpp): the devices register themselves
// (src/backend/*/NAME_register.cpp, linked whole into this program through the umbrella) and
// come out in their fixed order; create_device's errors list the names and presets.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tessera/backend/device.h"

namespace tessera {
namespace {

std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (const DeviceInfo& d : device_registry()) names.push_back(d.name);
  return names;
}

TEST(DeviceRegistry, BuiltInDevicesRegisterThemselvesInOrder) {
  const std::vector<std::string> names = registered_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "cpu");
  // cpu, tile, rknpu (those built): `tessera devices` lists them so and `tessera demo` runs them so.
  std::vector<std::string> built, want = {"cpu", "tile", "rknpu"};
  for (const std::string& n : names)
    if (std::find(want.begin(), want.end(), n) != want.end()) built.push_back(n);
  std::erase_if(want, [&](const std::string& n) { return std::find(names.begin(), names.end(), n) == names.end(); });
  EXPECT_EQ(built, want);
  EXPECT_NE(std::find(names.begin(), names.end(), "tile"), names.end());  // always built
}

TEST(DeviceRegistry, CreateDeviceNamesTheUnknownDeviceOrPreset) {
  auto cpu = create_device("cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ((*cpu)->name(), "cpu");

  std::string known;
  for (const std::string& n : registered_names()) known += (known.empty() ? "" : ", ") + n;
  auto unknown = create_device("nope");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::not_found);
  EXPECT_NE(unknown.status().to_string().find("no device named 'nope' (devices: " + known + ")"), std::string::npos)
      << unknown.status().to_string();

  auto preset = create_device("cpu:fast");
  ASSERT_FALSE(preset.ok());
  EXPECT_NE(preset.status().to_string().find("device 'cpu' has no preset 'fast' (presets: none)"), std::string::npos)
      << preset.status().to_string();
}

// Registration itself: a name already registered is refused; a new device takes its place
// by order, then name. (The device stays registered for the rest of this program; it
// cannot be created, and no other test of runtime_tests walks the registry.)
TEST(DeviceRegistry, RegisterKeepsOrderAndRefusesDuplicates) {
  const size_t before = device_registry().size();
  DeviceInfo dup;
  dup.name = "cpu";
  EXPECT_FALSE(register_device(dup));
  EXPECT_EQ(device_registry().size(), before);

  DeviceInfo extra;
  extra.name = "x_registry_test";
  extra.summary = "a device of this test only";
  extra.order = 1;  // as tile: after it by name ("tile" < "x_registry_test"), before rknpu (2)
  extra.create = [](const std::string&, const DeviceOptions&) -> Result<std::unique_ptr<Device>> {
    return error(StatusCode::unsupported, "x_registry_test: not a real device");
  };
  ASSERT_TRUE(register_device(extra));
  const std::vector<std::string> names = registered_names();
  ASSERT_EQ(names.size(), before + 1);
  EXPECT_EQ(names.front(), "cpu");
  auto at = std::find(names.begin(), names.end(), "x_registry_test");
  ASSERT_NE(at, names.end());
  for (auto it = names.begin(); it != at; ++it) EXPECT_TRUE(*it == "cpu" || *it == "tile") << *it;
  for (auto it = at + 1; it != names.end(); ++it) EXPECT_EQ(*it, "rknpu");
  auto created = create_device("x_registry_test");
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().to_string().find("not a real device"), std::string::npos);
}


// Every built-in device declares its options; create_device checks the given ones against
// that list for every device alike (tessera devices --options prints it).
TEST(DeviceRegistry, EveryDeviceRejectsUnknownOptionsListingTheValidOnes) {
  for (const char* name : {"cpu", "tile", "rknpu"}) {
    SCOPED_TRACE(name);
    auto info = std::find_if(device_registry().begin(), device_registry().end(),
                             [&](const DeviceInfo& d) { return d.name == name; });
    ASSERT_NE(info, device_registry().end());
    ASSERT_FALSE(info->options.empty());
    std::string keys;
    for (const DeviceOption& o : info->options) {
      keys += (keys.empty() ? "" : ", ") + o.key;
      EXPECT_FALSE(o.meaning.empty()) << o.key;
      if (o.kind == DeviceOption::Kind::choice) {
        ASSERT_FALSE(o.values.empty()) << o.key;
        EXPECT_EQ(o.default_value, o.values.front()) << o.key;
      }
    }
    // `threads` is every device's (the CLI passes it whatever the device).
    EXPECT_NE(keys.find("threads"), std::string::npos);

    auto bad = create_device(name, {{"threds", "2"}});
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().message(), std::string(name) + ": unknown option 'threds' (options: " + keys + ")");

    // Each declared default is accepted as a value, and a value outside the list is not.
    for (const DeviceOption& o : info->options) {
      SCOPED_TRACE(o.key);
      if (o.key == "transport" || o.key == "node") continue;  // rocket needs the board
      auto ok = create_device(name, {{o.key, o.default_value}});
      EXPECT_TRUE(ok.ok()) << ok.status().message();
      if (o.kind == DeviceOption::Kind::text) continue;
      auto wrong = create_device(name, {{o.key, "9999x"}});
      ASSERT_FALSE(wrong.ok());
      EXPECT_NE(wrong.status().message().find(std::string(name) + ": " + o.key + " must be "), std::string::npos)
          << wrong.status().message();
      EXPECT_NE(wrong.status().message().find("got '9999x'"), std::string::npos);
    }
  }
  auto t = create_device("cpu", {{"threads", "257"}});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "cpu: threads must be 1..256, got '257'");
  auto c = create_device("rknpu", {{"schedule", "fifo"}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "rknpu: schedule must be 'tessera' or 'mesa', got 'fifo'");
}

}  // namespace
}  // namespace tessera
