// Replay: one trace, one fabric, one config, run under one or several policies (each on its own
// copy of the fabric and a fresh ledger), for `tidalctl sim` and the tests.
//
// Policies: "fifo", "easy-backfill", "kube-default" (sim-only baselines, sim/policies/) and
// "tidal" (the engine's Scheduler with the configured profile, default ProfileSpec::Default()).
// "all" expands to all four, in that order. With two pools (a fabric split between the doors,
// sim/fabric.h SplitPools) every policy runs on the static partition, and "tidal+lending" is the
// tidal policy with the pools lending to each other by the engine's rules (sim/lending.h).
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
#include "core/state/lending.h"
#include "core/state/queues.h"
#include "sim/metrics.h"
#include "sim/simulator.h"

namespace tidal::sim {

inline const std::vector<std::string>& PolicyNames() {
  static const std::vector<std::string> kNames = {"fifo", "easy-backfill", "kube-default", "tidal"};
  return kNames;
}
inline constexpr const char* kLendingPolicyName = "tidal+lending";
// "all" or a comma-separated list of policy names (PolicyNames() or kLendingPolicyName); errors
// name the unknown one, an empty item, a name given twice, or "all" in a list.
StatusOr<std::vector<std::string>> ParsePolicies(const std::string& text);

// Both pools lend, to any work, after 60 s idle, with 120 s of notice on reclaim (the engine's
// defaults with `to: any`: the traces mark no job preemptible).
std::vector<LendingPolicy> DefaultSimLending();

struct ReplaySpec {
  const ClusterState* fabric = nullptr;   // copied for each policy
  const std::vector<SimJob>* jobs = nullptr;
  QueueConfig queues;                     // no queues = one per trace queue (see above)
  ProfileSpec profile = ProfileSpec::Default();
  int64_t sample_interval_s = 0;          // 0 = auto: about 2,000 samples over the trace
  bool series = true;                     // false: no time series at all (nothing will read it)
  bool tidal_shortcuts = true;            // the tidal policy's exact shortcuts (policies/tidal.h)
  std::vector<LendingPolicy> lending = DefaultSimLending();  // for kLendingPolicyName
};

// A simulator with what it needs kept alive (the ledger the tidal profile charges).
struct Replay {
  std::unique_ptr<QuotaLedger> ledger;
  std::unique_ptr<Simulator> sim;
};

// Seconds from the first submit to the last submit + duration (0 without jobs): the span the
// automatic sample interval divides, and the least a replay lasts.
int64_t TraceSpan(const std::vector<SimJob>& jobs);
StatusOr<Replay> MakeReplay(const ReplaySpec& spec, const std::string& policy);
// The queue config actually used (the auto-generated one when the spec has no queues).
QueueConfig EffectiveQueues(const ReplaySpec& spec);
// Jobs that name a queue's former name (queues[].formerNames: a trace from before a rename) get
// the queue's name, as the engine reads such pods; every per-queue figure then has one row for
// it. Returns how many jobs changed.
int64_t UseQueueNames(const QueueConfig& queues, std::vector<SimJob>* jobs);
// MakeReplay + Run + ComputeMetrics.
StatusOr<nlohmann::json> RunPolicy(const ReplaySpec& spec, const std::string& policy, const MetricsOptions& mopts = {});

}  // namespace tidal::sim
