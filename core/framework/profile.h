// Profile: a named, validated set of plugin instances, each enabled at every extension point it
// implements (like kube-scheduler's multiPoint), with weights for Score plugins.
//
// Decoding (FromJson) and building report every problem, one reason each, not the first.
// Validation when built (errors name the field):
//   - every plugin name is registered; no plugin is listed twice;
//   - exactly one enabled plugin implements QueueSort;
//   - weights are 1..100 and only given to Score plugins;
//   - a plugin's own args are checked by its factory;
//   - maxCandidates is 1..64.
// Threading: owned by the scheduler; used from the cycle thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/api/plugin.h"
#include "core/framework/registry.h"

namespace tidal {

struct PluginSpec {
  std::string name;
  int64_t weight = 0;  // 0 = default (1 for Score plugins)
  nlohmann::json args = nlohmann::json::object();
};

// Backfill (time-aware): blocked workloads get reservations at their earliest start; later work
// starts now only where it does not delay one. depth: 0 = off, 1 = EASY, N, -1 = all (conservative).
struct BackfillSpec {
  int depth = 16;
  // Only workloads asking for at least this many GPUs get reservations (0 = one whole node's
  // worth): smaller ones start in any GPUs that free up and never starve, while reserving for them
  // would only lock the queue order in for no gain.
  int64_t min_gpus = 0;
  // Aging (`agedAfter`): a workload big enough to reserve that has waited this long is walked
  // before the rest of the queue, oldest first, whatever its queue's fair-share rank: it is tried
  // first and, blocked, gets the first reservation. 0 = off (the default: docs/scheduling.md, "Aging",
  // gives what it trades).
  int64_t aged_after_s = 0;
  bool Aged(const Workload& w, int64_t now_s) const { return aged_after_s > 0 && now_s - w.submit_time_s >= aged_after_s; }
  // Expected run time when a workload declares no runtime limit, by class.
  int64_t default_runtime_s[4] = {24 * 3600, 7 * 24 * 3600, 3600, 8 * 3600};  // training, inference, batch, interactive
  int64_t RuntimeOf(const Workload& w) const {
    return w.runtime_limit_s > 0 ? w.runtime_limit_s : default_runtime_s[static_cast<int>(w.workload_class)];
  }
};

struct ProfileSpec {
  std::string name = "default";
  std::vector<PluginSpec> plugins;
  int max_candidates = 4;  // complete candidate placements scored per workload
  BackfillSpec backfill;

  static ProfileSpec Default();
  // Decodes {"name":..., "maxCandidates":..., "plugins":[{"name":..., "weight":..., "args":{...}}],
  //          "backfill": {"depth": 16, "defaultRuntime": {"training": "24h", ...}}}.
  // Errors name "field.key" ("key" when field is empty: a bare profile file). An explicit plugin
  // weight outside 1..100 (0 included) is an error; an absent one is the default, 1.
  static StatusOr<ProfileSpec> FromJson(const nlohmann::json& j, const std::string& field = "profile");
};

// The profile field (relative to the profile: "plugins[2]", "maxCandidates", "plugins") a reason
// of Profile::Build names ("profile NAME: plugins[2] (x): ..."), "" if none: for locating it in a file.
std::string ProfileErrorField(const std::string& reason);

class Profile {
 public:
  static StatusOr<std::unique_ptr<Profile>> Build(const ProfileSpec& spec, const Registry& registry,
                                                  const PluginContext& ctx);

  const std::string& name() const { return name_; }
  int max_candidates() const { return max_candidates_; }
  QueueSortPlugin& queue_sort() const { return *queue_sort_; }

  Status RunAdmit(CycleState& s, const Workload& w) const;
  Status RunPreFilter(CycleState& s, const Workload& w, const TopologyLevels& levels,
                      PlacementConstraints& c) const;
  Status RunFilter(const CycleState& s, const Workload& w, const Node& n) const;
  bool has_filters() const { return !filter_.empty(); }
  // Sets c.score to the weighted sum of all Score plugins.
  void RunScore(const CycleState& s, const Workload& w, Candidate& c) const;
  Status RunReserve(CycleState& s, const ClusterState& cluster, const Workload& w, const Candidate& c) const;
  void RunUnreserve(CycleState& s, const ClusterState& cluster, const Workload& w, const Candidate& c) const;
  Status RunPermit(CycleState& s, const Workload& w, const Candidate& c) const;
  // First PostFilter plugin that returns Success wins.
  Status RunPostFilter(CycleState& s, const Workload& w, const Status& failure, PostFilterContext& ctx,
                       const PlacementConstraints& c, PostFilterResult& r) const;
  bool has_postfilters() const { return !postfilter_.empty(); }
  const BackfillSpec& backfill() const { return backfill_; }
  std::vector<std::string> PluginNames() const;

 private:
  // Enables `plugin` at every extension point it implements; f names it in errors.
  Status Enable(const PluginSpec& ps, const std::string& f, std::unique_ptr<Plugin> plugin);

  std::string name_;
  int max_candidates_ = 4;
  BackfillSpec backfill_;
  std::vector<std::unique_ptr<Plugin>> owned_;
  QueueSortPlugin* queue_sort_ = nullptr;
  std::vector<AdmitPlugin*> admit_;
  std::vector<PreFilterPlugin*> prefilter_;
  std::vector<const FilterPlugin*> filter_;
  std::vector<std::pair<const ScorePlugin*, int64_t>> score_;
  std::vector<ReservePlugin*> reserve_;
  std::vector<PermitPlugin*> permit_;
  std::vector<PostFilterPlugin*> postfilter_;
};

}  // namespace tidal
