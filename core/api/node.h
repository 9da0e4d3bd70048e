// Node: one machine of the fleet as the engine sees it (plain data, no behaviour beyond queries).
// Thread-safety: plain value; owned by ClusterState (core/state/cluster_state.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/node_constraints.h"
#include "core/api/resources.h"

namespace tidal {

using NodeId = int32_t;
inline constexpr NodeId kNoNode = -1;

// Health as the engine uses it. Only kReady and kDegraded nodes receive new work (a degraded node
// only single-member work: core/framework/placement.cc), and kCordoned ones (spec.unschedulable)
// from workloads that tolerate the node.kubernetes.io/unschedulable taint (kube-scheduler's
// NodeUnschedulable: DaemonSet-like pods). kUnhealthy: no new work, and the gangs running there
// are disrupted whole (engine/engine_health.cc); kDraining: no new work (a door's resync awaited,
// or tidalctl drain).
enum class NodeHealth { kReady, kDegraded, kUnhealthy, kDraining, kCordoned };
std::string_view NodeHealthName(NodeHealth h);
StatusOr<NodeHealth> ParseNodeHealth(std::string_view text, std::string_view field);

// Which front door owns the node's capacity. kShared nodes serve both.
enum class Pool { kKubernetes, kSlurm, kShared };
std::string_view PoolName(Pool p);
StatusOr<Pool> ParsePool(std::string_view text, std::string_view field);

// Kubernetes label value rules: 1-63 characters of [A-Za-z0-9._-], starting and ending alphanumeric.
bool IsValidLabelValue(const std::string& v);

struct Node {
  std::string name;
  std::map<std::string, std::string> labels;
  Resources capacity;
  Resources allocated;
  NodeHealth health = NodeHealth::kReady;
  Pool pool = Pool::kShared;
  // A node its owner pool lends to the other door (core/state/lending.h): pool is the borrower's and
  // lent_by the owner; the borrower's work may use it only if preemptible when lent_preemptible_only.
  Pool lent_by = Pool::kShared;
  bool lent_preemptible_only = false;
  // The named pool that owns it ("" none; core/state/lending.h): only its owner queues' work
  // (Workload::home_pool) may use it, and while named_pool_lent only the other queues' work.
  std::string named_pool;
  bool named_pool_lent = false;
  std::string gpu_model;
  std::vector<Taint> taints;  // Kubernetes spec.taints (see core/api/node_constraints.h)

  bool Schedulable() const { return health == NodeHealth::kReady || health == NodeHealth::kDegraded; }
  Resources Free() const { return capacity - allocated; }
  // Free resources as seen by the scheduler: zero for a node that takes no new work.
  Resources SchedulableFree() const { return Schedulable() ? Free() : Resources{}; }
  int64_t FreeGpus() const { return Schedulable() ? capacity.gpus - allocated.gpus : 0; }
  bool WhollyFree() const { return Schedulable() && allocated.IsZero(); }
  // The same for a workload that does or does not tolerate node.kubernetes.io/unschedulable
  // (NodeConstraints::ToleratesUnschedulable): a cordoned node takes work only from one that does.
  bool SchedulableFor(bool tolerates_unschedulable) const {
    return Schedulable() || (tolerates_unschedulable && health == NodeHealth::kCordoned);
  }
  int64_t FreeGpusFor(bool tolerates_unschedulable) const {
    return SchedulableFor(tolerates_unschedulable) ? capacity.gpus - allocated.gpus : 0;
  }
};

}  // namespace tidal
