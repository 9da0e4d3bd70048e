#include "core/framework/registry.h"

namespace tidal {

Status Registry::Register(const std::string& name, PluginFactory factory) {
  if (name.empty()) return Status::Error("registry: plugin name must not be empty");
  if (!factory) return Status::Error("registry: plugin " + name + ": factory must not be empty");
  if (!factories_.emplace(name, std::move(factory)).second) {
    return Status::Error("registry: plugin " + name + " is already registered");
  }
  return Status::Ok();
}

const PluginFactory* Registry::Find(const std::string& name) const {
  auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> out;
  for (const auto& [n, _] : factories_) out.push_back(n);
  return out;
}

}  // namespace tidal
