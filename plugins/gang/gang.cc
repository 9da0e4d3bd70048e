#include "plugins/gang/gang.h"

#include "plugins/args.h"

namespace tidal::plugins {

Status Gang::PreFilter(CycleState&, const Workload& w, const TopologyLevels&, PlacementConstraints& c) {
  auto who = [&w] { return "gang " + w.id + ": "; };  // built only for a refusal
  if (w.members < 1) return Status::Unresolvable(who() + "members: must be at least 1, got " + std::to_string(w.members));
  if (w.min_members < 1 || w.min_members > w.members) {
    return Status::Unresolvable(who() + "minMembers: must be 1.." + std::to_string(w.members) + ", got " +
                                std::to_string(w.min_members));
  }
  if (w.per_member.AnyNegative()) return Status::Unresolvable(who() + "request: must not be negative");
  if (w.per_member.IsZero()) return Status::Unresolvable(who() + "request: must ask for at least one resource");
  if (w.arrived_members >= 0 && w.arrived_members < w.min_members) {
    return Status::Wait(who() + std::to_string(w.arrived_members) + " of " + std::to_string(w.min_members) +
                        " required members have arrived");
  }
  if (w.arrived_members >= 0 && w.arrived_members < c.members) c.members = w.arrived_members;
  return Status::Ok();
}

Status Gang::Permit(CycleState&, const Workload& w, const Candidate& c) {
  const int32_t placed = c.PlacedMembers();
  if (placed < w.min_members || placed > w.members) {
    return Status::Unschedulable("gang " + w.id + ": candidate places " + std::to_string(placed) + " members, need " +
                                 std::to_string(w.min_members) + ".." + std::to_string(w.members));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Plugin>> Gang::New(const nlohmann::json& args, const PluginContext&) {
  if (Status s = plugin_args::OnlyKeys(args, {}); !s.ok()) return s;
  return std::unique_ptr<Plugin>(std::make_unique<Gang>());
}

}  // namespace tidal::plugins
