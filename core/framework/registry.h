// Registry: the explicit list of plugin factories, by name. Registering a name twice is refused
// (no silent overwrite). Binaries build one with DefaultRegistry() (plugins/registry.cc).
// Threading: built once at start-up, then read-only; safe to read from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/plugin.h"
#include "core/api/status.h"

namespace tidal {

class ClusterState;
class QuotaLedger;

// What a factory may use while building a plugin.
struct PluginContext {
  TopologyLevels levels;
  QuotaLedger* ledger = nullptr;  // the state owner's queue ledger; nullptr = no queues configured
};

using PluginFactory =
    std::function<StatusOr<std::unique_ptr<Plugin>>(const nlohmann::json& args, const PluginContext& ctx)>;

class Registry {
 public:
  Status Register(const std::string& name, PluginFactory factory);
  const PluginFactory* Find(const std::string& name) const;
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, PluginFactory> factories_;
};

}  // namespace tidal
