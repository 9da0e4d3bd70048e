// Baseline `kube-default`: kube-scheduler's default behaviour for gang jobs WITHOUT a gang
// plugin (sim-only policy).
//
// Every member of a job is a pod. Pods are scheduled one at a time in queue order (priority, then
// creation time: a job's pods are created together, so they queue together); each binds to the
// least-allocated node that fits it (baseline_placement.h) and from then on HOLDS its GPUs. A job
// runs (its duration starts) only when all its members are bound; until then its bound pods hold
// GPUs doing nothing: the partial-gang GPU-time reported for this policy. A pod that does not fit
// waits and is retried whenever capacity is released (kube's unschedulable queue). Partly bound
// gangs can deadlock the cluster; the replay then ends with those jobs unfinished.
//
// Jobs that can never fit, even on the empty cluster, are rejected up front (kube would leave their
// pods pending forever, holding whatever they bound).
// Threading: single-threaded, owned by one Simulator.
#pragma once

#include <vector>

#include "sim/policies/baseline_placement.h"
#include "sim/policy.h"

namespace tidal::sim {

class KubeDefaultPolicy final : public Policy {
 public:
  std::string_view Name() const override { return "kube-default"; }
  Status Prepare(Simulator& sim) override;
  void Schedule(Simulator& sim, const Changes& changes) override;

 private:
  std::vector<std::vector<NodeId>> bound_;  // per job: nodes of its bound pods, in bind order
  std::vector<JobId> order_;
  bool uniform_ = true, priorities_ = false;
  int64_t held_ = 0;
};

}  // namespace tidal::sim
