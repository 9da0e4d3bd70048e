// topology: required level as a hard constraint, preferred level and fragmentation as a score.
//
// PreFilter: resolves the workload's required / preferred level names against the configured
// levels (unknown names are refused, naming the accepted ones) into PlacementConstraints; the
// framework's PlacementSearch then only considers domains of the required level.
// Score (0..100), a weighted mix, weights from args (defaults in brackets):
//   locality  [50]: 100 / (vertices of the preferred level the gang spans; without a preferred
//                   level, of the deepest configured level);
//   fit       [30]: 100 * GPUs used / free GPUs of the domain before placement (best fit: the domain
//                   left with the least stranded capacity wins);
//   wholeNode [20]: 100 / (1 + wholly free nodes the placement breaks), keeping whole nodes for
//                   whole-node jobs.
// Threading: immutable after construction; safe anywhere.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "core/api/plugin.h"
#include "core/framework/registry.h"

namespace tidal::plugins {

class Topology final : public PreFilterPlugin, public ScorePlugin {
 public:
  static constexpr const char* kName = "topology";
  struct Weights {
    int64_t locality = 50, fit = 30, whole_node = 20;
  };
  Topology(TopologyLevels levels, Weights w) : levels_(std::move(levels)), w_(w) {}
  std::string_view Name() const override { return kName; }
  Status PreFilter(CycleState& state, const Workload& w, const TopologyLevels& levels,
                   PlacementConstraints& constraints) override;
  int64_t Score(const CycleState& state, const Workload& w, const Candidate& c) const override;
  static StatusOr<std::unique_ptr<Plugin>> New(const nlohmann::json& args, const PluginContext& ctx);

 private:
  TopologyLevels levels_;
  Weights w_;
};

}  // namespace tidal::plugins
