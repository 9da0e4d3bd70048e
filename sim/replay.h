// Replay: one trace, one fabric, one config, run under one or several policies (each on its own
// copy of the fabric and a fresh ledger), for `tidalctl sim` and the tests.
//
// Policies: "fifo", "easy-backfill", "kube-default" (sim-only baselines, sim/policies/) and
// "tidal" (the engine's Scheduler with the configured profile, default ProfileSpec::Default()).
// "all" expands to all four, in that order.
//
// Queues: the config's queue tree when it has queues (jobs of an unconfigured queue are then
// rejected by the quota plugin, as tidal-engine would); otherwise one queue per trace queue
// (a Philly virtual cluster), weight 1, no quota limits: fair share only.
// Threading: single-threaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/framework/profile.h"
#include "core/state/queues.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace tidal::sim {

inline const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {"fifo", "easy-backfill", "kube-default", "tidal"};
  return kNames;
}
// "all" or a comma-separated list of policy names; errors name the unknown one.
StatusOr<std::vector<std::string>> ParsePolicies(const std::string& text);

struct ReplaySpec {
  const ClusterState* fabric = nullptr;   // copied for each policy
  const std::vector<SimJob>* jobs = nullptr;
  QueueConfig queues;                     // no queues = one per trace queue (see above)
  ProfileSpec profile = ProfileSpec::Default();
  int64_t sample_interval_s = 0;          // 0 = auto: about 2,000 samples over the trace
  bool tidal_shortcuts = true;            // the tidal policy's exact shortcuts (policies/tidal.h)
};

// A simulator with what it needs kept alive (the ledger the tidal profile charges).
struct Replay {
  std::unique_ptr<QuotaLedger> ledger;
  std::unique_ptr<Simulator> sim;
};

StatusOr<Replay> MakeReplay(const ReplaySpec& spec, const std::string& policy);
// The queue config actually used (the auto-generated one when the spec has no queues).
QueueConfig EffectiveQueues(const ReplaySpec& spec);
// MakeReplay + Run + ComputeMetrics.
StatusOr<nlohmann::json> RunPolicy(const ReplaySpec& spec, const std::string& policy, const MetricsOptions& mopts = {});

}  // namespace tidal::sim
