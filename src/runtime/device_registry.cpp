// The device registry: every device registers itself from its own folder
// (src/backend/NAME/NAME_register.cpp, a static registrar that cmake/components.cmake links
// whole into every program), so the runtime creates devices without knowing any.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "tessera/backend/device.h"

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

DeviceOption DeviceOption::choice(std::string key, std::vector<std::string> values, std::string meaning) {
  DeviceOption o;
  o.key = std::move(key);
  o.kind = Kind::choice;
  o.default_value = values.empty() ? std::string() : values.front();
  o.values = std::move(values);
  o.meaning = std::move(meaning);
  return o;
}

DeviceOption DeviceOption::integer(std::string key, int64_t min, int64_t max, int64_t default_value,
                                   std::string meaning) {
  DeviceOption o;
  o.key = std::move(key);
  o.kind = Kind::integer;
  o.min = min;
  o.max = max;
  o.default_value = std::to_string(default_value);
  o.meaning = std::move(meaning);
  return o;
}

DeviceOption DeviceOption::text(std::string key, std::string default_value, std::string meaning) {
  DeviceOption o;
  o.key = std::move(key);
  o.kind = Kind::text;
  o.default_value = std::move(default_value);
  o.meaning = std::move(meaning);
  return o;
}

DeviceOption threads_option(int64_t default_value) {
  return DeviceOption::integer("threads", 1, 256, default_value,
                               "cpu threads (for a device other than cpu: those of the cpu device beside it)");
}

namespace {
// "'a' or 'b'", "'a', 'b' or 'c'".
std::string one_of(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + ("'" + v[i] + "'");
  return s;
}

Status check_options(const DeviceInfo& d, const DeviceOptions& opts) {
  for (const auto& kv : opts) {
    const std::string& key = kv.first;  // (not a structured binding: clang 14 cannot capture one)
    const std::string& value = kv.second;
    auto o = std::find_if(d.options.begin(), d.options.end(), [&](const DeviceOption& x) { return x.key == key; });
    if (o == d.options.end()) {
      std::string keys;
      for (const DeviceOption& x : d.options) keys += (keys.empty() ? "" : ", ") + x.key;
      return error(StatusCode::invalid_argument, d.name, ": unknown option '", key, "' (options: ",
                   keys.empty() ? std::string("none") : keys, ")");
    }
    switch (o->kind) {
      case DeviceOption::Kind::choice:
        if (std::find(o->values.begin(), o->values.end(), value) == o->values.end())
          return error(StatusCode::invalid_argument, d.name, ": ", key, " must be ", one_of(o->values), ", got '", value,
                       "'");
        break;
      case DeviceOption::Kind::integer: {
        char* end = nullptr;
        errno = 0;
        const long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || !end || *end || errno == ERANGE || v < o->min || v > o->max)
          return error(StatusCode::invalid_argument, d.name, ": ", key, " must be ", o->min, "..", o->max, ", got '",
                       value, "'");
        break;
      }
      case DeviceOption::Kind::text: break;
    }
  }
  return Status::Ok();
}
}  // namespace

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
    TS_RETURN_IF_ERROR(check_options(d, opts));
    return d.create(preset, opts);
  }
  return error(StatusCode::not_found, "no device named '", name, "' (devices: ", known.str(), ")");
}

}  // namespace tessera
