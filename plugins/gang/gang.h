// gang: all members or none.
//
// PreFilter: validates the gang (members >= 1, 1 <= min_members <= members, a non-negative request
// that asks for something) and holds it (Wait) while fewer than min_members members have arrived at
// the front door. Permit: refuses a candidate that places fewer than min_members or more than
// members, a guard that no search bug can turn into a half-placed gang. Placement itself is atomic
// through the framework's Transaction.
// Threading: stateless; safe anywhere.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "core/api/plugin.h"
#include "core/framework/registry.h"

namespace tidal::plugins {

class Gang final : public PreFilterPlugin, public PermitPlugin {
 public:
  static constexpr const char* kName = "gang";
  std::string_view Name() const override { return kName; }
  Status PreFilter(CycleState& state, const Workload& w, const TopologyLevels& levels,
                   PlacementConstraints& constraints) override;
  Status Permit(CycleState& state, const Workload& w, const Candidate& c) override;
  static StatusOr<std::unique_ptr<Plugin>> New(const nlohmann::json& args, const PluginContext& ctx);
};

}  // namespace tidal::plugins
