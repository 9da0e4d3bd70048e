// Workload: a gang of identical members (a multi-node training job, a single pod, a Slurm job).
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/api/node.h"
#include "core/api/node_constraints.h"
#include "core/api/resources.h"

namespace tidal {

enum class WorkloadClass { kTraining, kInference, kBatch, kInteractive };
std::string_view WorkloadClassName(WorkloadClass c);
StatusOr<WorkloadClass> ParseWorkloadClass(std::string_view text, std::string_view field);

// Which front door submitted the workload; it may only use nodes of its pool or shared ones.
enum class FrontDoor { kKubernetes, kSlurm };
std::string_view FrontDoorName(FrontDoor d);  // "kubernetes", "slurm"

struct Workload {
  std::string id;                 // unique, e.g. "namespace/gang-name" or "slurm/1234"
  std::string queue = "default";
  int32_t queue_id = -1;          // the queue's index, resolved by the state owner; -1 = by name
  WorkloadClass workload_class = WorkloadClass::kBatch;
  FrontDoor front_door = FrontDoor::kKubernetes;
  int32_t members = 1;            // desired gang size
  int32_t min_members = 1;        // elastic lower bound; == members for a rigid gang
  int32_t arrived_members = -1;   // members the front door has seen so far; -1 = all of them
  Resources per_member;           // request of each member
  int32_t priority = 0;
  bool preemptible = false;
  int64_t runtime_limit_s = 0;    // declared limit; 0 = unknown (a per-class default applies)
  int64_t checkpoint_interval_s = 0;  // 0 = never checkpoints (all work since start is at risk)
  int64_t last_checkpoint_s = -1;     // reported checkpoint time; -1 = none reported
  bool checkpoints_on_notice = false;  // checkpoints when given notice: evicting it loses ~nothing
  int64_t submit_time_s = 0;      // seconds on the engine clock
  std::string required_level;     // topology level all members must share ("" = none)
  std::string preferred_level;    // topology level members should share ("" = none)
  std::string gpu_model;          // "" = any
  std::string home_pool;          // the named pool its queue owns ("" none; core/state/lending.h)
  // Which nodes the members may use beyond capacity, pool and model (node selector, affinity,
  // tolerations, exclusions; see core/api/node_constraints.h). nullptr = any node. Its
  // Signature() is constraints_sig, computed once by whoever builds the workload.
  std::shared_ptr<const NodeConstraints> constraints;
  std::string constraints_sig;

  Resources Total() const { return per_member * members; }
  int64_t TotalGpus() const { return per_member.gpus * members; }
  bool Elastic() const { return min_members < members; }
  // "16x(8 GPU)" style summary for tables.
  std::string ShapeString() const;
};

// May a workload from `door` run on a node of pool `pool`?
inline bool PoolAdmits(Pool pool, FrontDoor door) {
  return pool == Pool::kShared || (pool == Pool::kKubernetes && door == FrontDoor::kKubernetes) ||
         (pool == Pool::kSlurm && door == FrontDoor::kSlurm);
}

// May workload `w` use node `n` by its named pool? A named pool's node takes its owner queues'
// work while unlent and only the other queues' work while lent.
inline bool NamedPoolAdmits(const Node& n, const Workload& w) {
  return n.named_pool.empty() || (n.named_pool_lent ? w.home_pool != n.named_pool : w.home_pool == n.named_pool);
}

}  // namespace tidal
