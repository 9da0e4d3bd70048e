#include "plugins/topology/topology.h"

#include <algorithm>

#include "plugins/args.h"

namespace tidal::plugins {
namespace {
struct TopologyCycleData final : CycleStateData {
  int preferred_level = -1;
};
}  // namespace

Status Topology::PreFilter(CycleState& state, const Workload& w, const TopologyLevels& levels, PlacementConstraints& c) {
  auto resolve = [&](const std::string& name, const char* key, int* out) -> Status {
    if (name.empty()) return Status::Ok();
    const int l = levels.Find(name);
    if (l < 0) {
      return Status::Unresolvable(std::string("workload ") + w.id + ": " + key + ": unknown level \"" + name +
                                  "\" (accepted: " + levels.Accepted() + ")");
    }
    *out = l;
    return Status::Ok();
  };
  if (Status s = resolve(w.required_level, "topology-required", &c.required_level); !s.ok()) return s;
  if (Status s = resolve(w.preferred_level, "topology-preferred", &c.preferred_level); !s.ok()) return s;
  auto data = std::make_unique<TopologyCycleData>();
  data->preferred_level = c.preferred_level;
  state.Write(kName, std::move(data));
  return Status::Ok();
}

int64_t Topology::Score(const CycleState& state, const Workload& w, const Candidate& c) const {
  const int node_level = levels_.node_level();
  const auto* data = state.Read<TopologyCycleData>(kName);
  // Locality: how many vertices of the preferred (else the deepest configured) level the gang spans.
  int level = data != nullptr && data->preferred_level >= 0 ? data->preferred_level : node_level - 1;
  if (level < 0) level = node_level;
  int64_t spans = level < static_cast<int>(c.spans.size()) ? c.spans[static_cast<size_t>(level)] : 1;
  if (spans < 1) spans = 1;
  const int64_t locality = kMaxScore / spans;
  const int64_t used = w.per_member.gpus * c.PlacedMembers();
  const int64_t fit = c.domain_free_gpus > 0 ? std::min<int64_t>(kMaxScore, kMaxScore * used / c.domain_free_gpus)
                                             : kMaxScore;
  const int64_t whole = kMaxScore / (1 + c.whole_nodes_broken);
  const int64_t total_weight = w_.locality + w_.fit + w_.whole_node;
  return (w_.locality * locality + w_.fit * fit + w_.whole_node * whole) / total_weight;
}

StatusOr<std::unique_ptr<Plugin>> Topology::New(const nlohmann::json& args, const PluginContext& ctx) {
  if (Status s = plugin_args::OnlyKeys(args, {"localityWeight", "fitWeight", "wholeNodeWeight"}); !s.ok()) return s;
  Weights w;
  if (Status s = plugin_args::Int(args, "localityWeight", 0, 100, &w.locality); !s.ok()) return s;
  if (Status s = plugin_args::Int(args, "fitWeight", 0, 100, &w.fit); !s.ok()) return s;
  if (Status s = plugin_args::Int(args, "wholeNodeWeight", 0, 100, &w.whole_node); !s.ok()) return s;
  if (w.locality + w.fit + w.whole_node == 0) return Status::Error("localityWeight+fitWeight+wholeNodeWeight: must not all be 0");
  return std::unique_ptr<Plugin>(std::make_unique<Topology>(ctx.levels, w));
}

}  // namespace tidal::plugins
