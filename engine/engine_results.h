// The results the engine's calls return (plain C++; the gRPC layer converts them): plans, permits,
// gauges, runtime-limit and preemption reports, the Slurm door's admissions, stats.
// Threading: values, copied out of the engine under its mutex (engine.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/api/status.h"
#include "core/api/workload.h"

namespace tidal {

struct PodRefInfo {
  std::string uid, ns, name;
};

struct PlanResult {
  Status status;
  std::string node, gang, domain, explanation;
  // Pods of gangs planned ahead of this one by fair share: the front door moves them to its
  // active queue (kube-scheduler's Activate) so they bind on the capacity held for them.
  std::vector<PodRefInfo> activate;
};

struct PermitResult {
  Status status;
  int64_t wait_timeout_ms = 0;
  std::vector<PodRefInfo> allow;
};

// State-derived gauges, sampled at scrape time.
struct EngineGauges {
  struct Row {
    std::vector<std::string> labels;
    double value = 0;
  };
  std::vector<Row> gpus;            // state, pool
  std::vector<Row> node_health;     // health: nodes by NodeHealthName (ready, degraded, unhealthy, ...)
  std::vector<Row> pending;         // queue, class
  std::vector<Row> reservations;    // queue: pending gangs holding a backfill reservation
  std::vector<Row> queue_usage, queue_nominal, queue_borrowed;  // queue, resource
  std::vector<Row> fair_share;      // queue
  std::vector<Row> queue_headroom;  // queue: GPUs it may grow to (headroom, configured or from HPAs)
  std::vector<Row> largest_gang;    // level (GPUs of the largest whole-node gang placeable now)
  double unusable_free_gpus = 0;    // free GPUs on nodes too small for every pending member shape
  std::vector<Row> missing_topology;  // level: nodes without that level's label (own domains)
  std::vector<Row> door_members;    // door, state ("pending", "bound"): pods / Slurm job members
  std::vector<Row> door_gpus;       // door: GPUs of bound members
  std::vector<Row> queue_door_gpus; // queue, door: GPUs the queue's bound members hold, per door
  std::vector<Row> door_nodes;      // door: nodes the door reports
  std::vector<Row> door_awaiting;   // door: 1 while its first resync since the start gates nodes
  std::vector<Row> lent_gpus;       // from (owner pool), to (borrower door): GPUs of lent nodes
  std::vector<Row> runtime_correction;  // queue: the learned actual/declared runtime ratio (engine_runtime.cc)
};

// A bound pod that outran its declared runtime limit (plus the grace): the front door evicts it.
struct OverduePod {
  PodRefInfo pod;
  std::string reason;  // "ran 12m0s, over its tidal.dev/runtime-limit of 10m (grace 1m)"
};

// --- preemption (engine_preempt.cc)
struct PreemptResult {
  Status status;                  // Success when victims were chosen
  // Every pod of every victim gang the caller (the Kubernetes shim) evicts; gangs go whole.
  std::vector<PodRefInfo> victims;
  // The same pods by victim workload: id ("ns/gang" for a Tidal gang, "pod:ns/name" for a lone
  // pod of another scheduler) -> its pods. The front door evicts a workload whole or not at all.
  std::vector<std::pair<std::string, std::vector<PodRefInfo>>> victim_gangs;
  // Per victim_gangs entry: the notice it gets (s; 0 = evict now) and its deadline (unix s).
  std::vector<std::pair<int64_t, int64_t>> victim_notice;
  // Per victim_gangs entry: the front door that evicts it. Slurm jobs are requeued by tidal-slurm
  // (its Disruptions poll), not by the caller; their pods are not in `victims`.
  std::vector<FrontDoor> victim_doors;
  // Per victim_gangs entry: its queue ("" unknown); and the preemptor's queue. The front door
  // names them in its events (a reclaim takes quota back from the victim's queue).
  std::vector<std::string> victim_queues;
  std::string queue;
  // A node name when the preemptor's held capacity is on one node; else the topology domain.
  std::string nominated_domain, reason;
  double lost_gpu_seconds = 0;
};

// What the front door did with a preemption's victims (Engine::Evicted).
struct EvictionReport {
  std::string preemptor_uid;            // the pod whose Preempt chose them ("" = unknown)
  std::vector<PodRefInfo> evicted;      // pods the Eviction API accepted
  std::string reason;                   // the preemption's reason as Preempt reported it
  std::vector<std::string> protected_gangs;  // victim workloads skipped: PDBs refuse them whole
  std::string disruption;                    // the DisruptionAction id it evicted for ("" = PostFilter)
};
// --- end preemption

// --- the disruption path (engine_disruptions.cc)
// What the front door should do now with one disruption (Engine::Disruptions).
struct DisruptionAction {
  enum class Kind { kNotice, kEvict };
  std::string id, cause;
  Kind kind = Kind::kEvict;
  std::vector<PodRefInfo> pods;
  std::string reason;
  int64_t deadline_unix = 0;  // kNotice: evicted at this time at the latest
};
// One drained node as Engine::Drain reports it.
struct NodeDrainInfo {
  std::string node;
  int64_t by_unix = 0;
  std::string state;          // "draining", "drained", "unknown-node"
  int64_t free_at_unix = 0;   // when its last work is expected gone (0 = free now)
  int32_t workloads_left = 0;
  std::string note;
};
// --- end disruption path

// --- the Slurm door's decisions (engine_admit.cc)
struct AdmissionInfo {
  std::string gang;                // "slurm/123"
  std::vector<std::string> nodes;  // one per member
  std::string domain, explanation;
};
struct WaitingInfo {
  std::string gang, reason;
};
struct AdmitResult {
  Status status;
  std::vector<AdmissionInfo> admitted;
  std::vector<WaitingInfo> waiting;
  int32_t tried = 0;  // gangs a placement was tried for
  std::vector<std::string> lent_nodes;  // the door's nodes lent to the other door (sorted)
};
// --- end Slurm door

struct EngineStats {
  int32_t nodes = 0, pods = 0, gangs = 0, plans = 0;
  uint64_t generation = 0;
  bool synced = false;
  // Doors whose first resync since the start is awaited: nodes they may run work on take none new.
  std::vector<std::string> awaiting_doors;
  // Reservation book refreshes whose dry cycle ran, and how long they held the engine's mutex in
  // all (in place: the whole refresh; on the refresher thread: its capture and install only).
  int64_t book_refreshes = 0;
  int64_t refresh_locked_ns = 0;
};

}  // namespace tidal
