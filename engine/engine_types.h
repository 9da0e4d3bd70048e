// The engine's inputs as plain values: pods and nodes as the front doors report them, a Sync
// batch, and the engine config (engine_config.cc reads it). The gRPC layer converts messages
// into these; Engine (engine.h) owns every stored copy.
// Threading: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/rollout.h"
#include "core/api/node_constraints.h"
#include "core/api/resources.h"
#include "core/api/status.h"
#include "core/api/topology_levels.h"
#include "core/api/workload.h"
#include "core/framework/profile.h"
#include "core/io/queue_config.h"
#include "core/state/lending.h"
#include "core/state/runtime_history.h"
#include "engine/autoscalers.h"
#include "engine/maintenance.h"
#include "engine/node_health.h"
#include "engine/pod_spec.h"

namespace tidal {

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

struct PodInfo {
  std::string uid, ns, name, scheduler_name, node_name;
  // The front door that reported it. A Slurm job is a gang of members (one per node): uid
  // "slurm/<job>#<i>", namespace "slurm", its gang "slurm/<job>" (shim/slurm/convert.h).
  FrontDoor door = FrontDoor::kKubernetes;
  PodPhase phase = PodPhase::kPending;
  Resources request;
  int32_t priority = 0;
  std::map<std::string, std::string> labels, annotations;
  int64_t creation_unix = 0;
  int64_t start_unix = 0;  // status.startTime; 0 until the kubelet starts it
  bool terminating = false;
  // Node selector, node affinity, tolerations, self anti-affinity (nullptr = none), and why the
  // front door's spec could not be read (refused at CheckPod/PlanPod, naming the field).
  std::shared_ptr<const NodeConstraints> constraints;
  Status spec_error;
  // Its Tidal scheduling spec (labels and annotations read with the engine's topology levels):
  // set by the engine when it stores the pod, parsed once per change (input value ignored).
  std::shared_ptr<const StatusOr<PodSchedulingSpec>> spec;
  // A running pod's keys the engine could not read, not applied: it keeps the spec it ran with
  // (Engine::KeepRunningSpecLocked, engine_sync.cc); explain shows this. Ok = none.
  Status spec_not_applied;
  // Its last reported checkpoint (tidal.dev/last-checkpoint, unix s; -1 = none or unreadable):
  // set by the engine when it stores the pod (input value ignored).
  int64_t last_checkpoint_unix = -1;

  std::string Key() const { return ns + "/" + name; }
  bool UsesCapacity() const {
    return !node_name.empty() && phase != PodPhase::kSucceeded && phase != PodPhase::kFailed;
  }
};

struct NodeConditionInfo {
  std::string type, status, reason;  // status "True", "False", "Unknown"
  bool operator==(const NodeConditionInfo&) const = default;
};

struct NodeInfo {
  std::string name;
  FrontDoor door = FrontDoor::kKubernetes;  // the door that reported this record
  std::map<std::string, std::string> labels;
  Resources capacity;
  bool ready = true;
  bool unschedulable = false;
  std::string gpu_model;
  std::vector<Taint> taints;
  std::vector<NodeConditionInfo> conditions;  // other than Ready (engine/node_health.h judges them)
  // Its tidal.dev/drain-by and tidal.dev/decommission annotations (Kubernetes nodes only): a
  // drain every replica sees (engine_closes.cc, AnnotatedDrainLocked).
  std::map<std::string, std::string> annotations;
};

struct NodeWarningInfo {
  std::string node, reason, message;
};
// What the Kubernetes door's Disruptions poll carries about lending: what happened to nodes since
// the last poll (each event once), and the Kubernetes pool's nodes lent to Slurm now (lent or being
// reclaimed), which tidal-scheduler taints so that no other scheduler's pods land there.
struct NodeLendingInfo {
  std::vector<NodeWarningInfo> events;
  std::vector<std::string> lent_to_slurm;  // sorted
};

// A job the door saw finish (its own records), for the gap it may have missed (Engine::Sync).
struct FinishedJobInfo {
  std::string gang;
  int64_t start_unix = 0, end_unix = 0;
  int32_t members = 0;
  int64_t gpus_per_member = 0;  // 0 = unknown
  WorkloadEnd end = WorkloadEnd::kUnknown;  // how it ended (FinishedJob.end); unknown is never completed
};

// Whether two records of a node say the same (a re-sent record changes nothing).
inline bool SameNode(const NodeInfo& a, const NodeInfo& b) {
  return a.labels == b.labels && a.capacity == b.capacity && a.ready == b.ready &&
         a.unschedulable == b.unschedulable && a.gpu_model == b.gpu_model && a.taints == b.taints &&
         a.conditions == b.conditions && a.annotations == b.annotations;
}

struct SyncBatch {
  FrontDoor door = FrontDoor::kKubernetes;  // a resync replaces only this door's nodes and pods
  std::vector<FinishedJobInfo> finished;
  bool resync = false;
  // The snapshot continues in the door's next batch (SyncRequest.snapshot_continues): the door's
  // objects no batch of the snapshot named are removed at its last batch.
  bool snapshot_continues = false;
  std::vector<NodeInfo> upsert_nodes;
  std::vector<std::string> delete_nodes;
  std::vector<PodInfo> upsert_pods;
  std::vector<std::string> delete_pods;
  // Gone while the door was not watching (SyncRequest.vanished_pods): removed, never a lost member.
  std::vector<std::string> vanished_pods;
  // HPAs and what they scale (door KUBERNETES; engine/autoscalers.h), deletes by "namespace/name".
  std::vector<AutoscalerInfo> upsert_autoscalers;
  std::vector<std::string> delete_autoscalers;
};

struct EngineConfig {
  // How the next config is watched after a reload activates it (rollout: {watchSeconds, ...};
  // engine/rollout.h; server/config_watcher.cc rolls a breaching config back).
  RolloutPolicy rollout;
  TopologyLevels levels = TopologyLevels::Default();
  QueueConfig queues;
  ProfileSpec profile = ProfileSpec::Default();
  std::string scheduler_name = "tidal-scheduler";
  int64_t permit_timeout_ms = 60000;
  int64_t plan_ttl_s = 120;
  std::string pool_label = "tidal.dev/pool";
  // Declared runtime limits (tidal.dev/runtime-limit) are enforced: a pod of this scheduler still
  // running grace_s after its limit is reported by Overdue() and evicted by the front door.
  bool enforce_runtime_limit = true;
  int64_t runtime_limit_grace_s = 60;
  // The most notice a disruption gives (tidal.dev/checkpoint-on-notice asks for up to this;
  // disruption: {maxNoticeSeconds}).
  int64_t max_notice_s = 600;
  // Slurm jobs may be preemption victims of Kubernetes gangs (disruption: {preemptSlurmJobs}):
  // tidal-slurm requeues them. A job Slurm will not requeue (--no-requeue, an salloc/srun
  // allocation: slurm.tidal.dev/requeue "false") is never one.
  bool preempt_slurm_jobs = true;
  // Elastic gangs growing back (elastic: {growAfterSeconds, growMinMembers}): a running elastic
  // gang's waiting members are placed only once room for them has stayed free this long, and
  // only at least this many at once (fewer only when fewer complete the gang).
  int64_t elastic_grow_after_s = 30;
  int32_t elastic_grow_min_members = 1;
  // How node conditions and labels become degraded / unhealthy, and how long a node is unhealthy
  // before the gangs running there are disrupted (nodeHealth: engine/node_health.h).
  NodeHealthConfig node_health;
  // Maintenance windows (maintenance: {windows}; engine/maintenance.h): their nodes close.
  std::vector<MaintenanceWindow> maintenance;
  // Perishable windows (perishable: {fill, minSeconds}; engine/engine_perishable.cc): before a node
  // closes (a drain, a maintenance window, tidal.dev/available-until) it takes work that ends in
  // time and, by `fill`, preemptible work that checkpoints on notice (kCheckpointing), any
  // preemptible work (kPreemptible) or nothing more (kNone), while at least minSeconds are left
  // beyond the work's notice; that work is disrupted before the close, as late as its notice allows.
  enum class PerishableFill { kNone, kCheckpointing, kPreemptible };
  PerishableFill perishable_fill = PerishableFill::kCheckpointing;
  int64_t perishable_min_s = 300;
  // perishable.runtimeCorrection (core/state/runtime_history.h; engine/engine_runtime.cc): a
  // preemptible workload also fills a window its declared runtime x its queue's learned ratio fits.
  RuntimeCorrectionConfig runtime_correction;
  // Pools that lend idle nodes to the other door and reclaim them (pools: {kubernetes|slurm:
  // {lend, keep, to, idleSeconds, graceCapSeconds}}; core/state/lending.h). Empty: nothing is lent.
  std::vector<LendingPolicy> pools;
  // How long a node the front door's filters refused stays excluded for that gang.
  int64_t exclusion_ttl_s = 120;
  // Explain's dry run considers at most this many pending gangs ahead of the asked one.
  int32_t explain_max_ahead = 2000;
  // The reservation refresh's dry cycle walks the first this many pending gangs in queue order
  // (and those holding reservations) and the whole queue only when they did not settle the book
  // (engine_refresh.cc); the prefix doubles when it was short. 0: always the whole queue.
  int32_t refresh_prefix = 1024;
  // reservations.refreshInBackground (read at start only): the refresh's dry cycle runs on the
  // engine's refresher thread, outside its mutex, so no PlanPod call waits for it; the book it
  // leaves is installed when it ends (engine_refresh.cc). false: in the call that asked.
  bool refresh_in_background = false;
  // The doors expected to connect (frontDoors; read at start only): one not yet resynced since
  // the start, whose nodes the state file does not name, keeps every node from new work.
  std::vector<FrontDoor> front_doors;
};
// Reads the engine config (YAML/JSON): {schedulerName, permitTimeoutSeconds, planTtlSeconds,
// poolLabel, exclusionTtlSeconds, explain: {maxAhead}, runtimeLimit: {enforce, graceSeconds},
// disruption: {maxNoticeSeconds}, elastic: {growAfterSeconds, growMinMembers}, nodeHealth, maintenance: {windows},
// perishable: {fill, minSeconds, runtimeCorrection}, pools, topology: {levels}, profile, resources,
// usageHalfLife, queues, frontDoors: [kubernetes, slurm], reservations: {refreshInBackground}}. Every problem is one
// reason of the returned status, "file:line: field: reason" (see core/io/queue_config.h).
StatusOr<EngineConfig> LoadEngineConfig(const std::string& path);
StatusOr<EngineConfig> ParseEngineConfig(const std::string& text, const std::string& file);

}  // namespace tidal
