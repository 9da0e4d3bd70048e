// DisruptionBook: the one record of work the engine takes off GPUs, whatever the cause
// (preemption, reclaim, runtime limit, a gang that lost a member, ...). Each disruption is one
// victim workload (a gang whole, or the surplus members of an elastic gang) and goes through
// the same steps:
//   opened   the engine chose it (Open): cause, pods, the GPU-seconds at risk, the notice it gets;
//   notice   a workload that checkpoints on notice (tidal.dev/checkpoint-on-notice) is told first
//            and given until deadline_s; Due() answers NOTICE for it until then;
//   acked    a member reports a checkpoint taken after the notice (tidal.dev/last-checkpoint):
//            Checkpointed() marks it, and the work at risk drops to what ran since that checkpoint;
//   evict    Due() answers EVICT once it is acknowledged, the deadline passed, or it gets no notice
//            (every poll, until its pods are gone: the front door skips pods already going);
//   closed   its last pod is gone (PodGone): the record leaves the book and is returned, with the
//            time from opening to eviction, for the metrics and the decision log.
// A workload has at most one open disruption: the first cause stands (Open of an id already open
// changes nothing). Cancel drops one (its reason went away, or PDBs refused a preemption victim).
//
// Threading: plain data owned by Engine and guarded by Engine::mu_ (engine.h); no locking here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/api/workload.h"
#include "engine/engine_results.h"

namespace tidal {

enum class DisruptionCause {
  kPreemption, kReclaim, kRuntimeLimit, kMemberLost, kUnhealthyNode, kDrain, kMaintenance, kDecommission,
  kWindowEnd,   // a perishable window closed (tidal.dev/available-until): its owner takes the node back
  kReservation  // a filler in the gap before a reserved start gives the nodes back (engine_gap_fill.cc)
};
inline constexpr const char* kDisruptionCauses[] = {"preemption",     "reclaim", "runtime-limit", "member-lost",
                                                    "unhealthy-node", "drain",   "maintenance",   "decommission",
                                                    "window-end",     "reservation"};
std::string_view DisruptionCauseName(DisruptionCause c);

// How far a tidal.dev/last-checkpoint stamp may be ahead of the engine's clock (clock skew
// between the job's host and the engine); a stamp further ahead is ignored.
inline constexpr int64_t kCheckpointSkewS = 300;
// A tidal.dev/last-checkpoint stamp as work saved at now_s: one beyond the skew allowance is none
// (-1), so it neither ends a notice nor makes its pod look cheap to evict or to take back.
inline int64_t UsableCheckpoint(int64_t stamp_s, int64_t now_s) { return stamp_s > now_s + kCheckpointSkewS ? -1 : stamp_s; }

struct DisruptionRecord {
  std::string id;  // the victim workload: "ns/gang" or "pod:ns/name"
  DisruptionCause cause = DisruptionCause::kPreemption;
  FrontDoor door = FrontDoor::kKubernetes;
  std::vector<PodRefInfo> pods;  // still there (PodGone removes them)
  size_t pods_at_open = 0;
  bool whole_gang = false;       // every member of a gang of more than one (requeued whole)
  std::string reason;
  int64_t opened_s = 0;
  int64_t notice_s = 0;          // 0 = evicted at once
  int64_t deadline_s = 0;        // opened_s + notice_s
  bool acknowledged = false;
  int64_t evicted_s = 0;         // when eviction was first asked for or reported (0 = not yet)
  int64_t gpus = 0;
  int64_t at_risk_since_s = 0;   // work since then is lost (start, or the last checkpoint)
  double LostGpuSeconds() const;  // gpus x (eviction - at_risk_since), 0 before eviction
};

class DisruptionBook {
 public:
  // Opens a disruption; false (nothing changed) when one is open for the id already.
  bool Open(DisruptionRecord r);
  // A member reported a checkpoint at `at_s`: one taken at or after the opening acknowledges the
  // notice; any newer checkpoint moves the work at risk. A stamp more than kCheckpointSkewS after
  // now_s is from the future (local time written with a Z, a wrong clock): it is ignored, never
  // ending a notice before the job saved anything; false then, true otherwise.
  bool Checkpointed(const std::string& uid, int64_t at_s, int64_t now_s);
  // The actions for `door` now, sorted by id; marks evicted_s on the first EVICT.
  std::vector<DisruptionAction> Due(FrontDoor door, int64_t now_s);
  // The front door reports it evicted this pod.
  void Evicted(const std::string& uid, int64_t now_s);
  // The pod is gone or finished: the closed record when it was its disruption's last pod.
  std::optional<DisruptionRecord> PodGone(const std::string& uid);
  // Drops an open disruption (true when dropped): its reason went away, or the front door could
  // not evict it (PodDisruptionBudgets refuse a preemption victim whole).
  bool Cancel(const std::string& id);
  const DisruptionRecord* Find(const std::string& id) const;
  // Every open record, by id.
  std::vector<const DisruptionRecord*> All() const;
  const DisruptionRecord* ForPod(const std::string& uid) const;
  size_t size() const { return open_.size(); }
  size_t pod_index_size() const { return by_pod_.size(); }

 private:
  std::map<std::string, DisruptionRecord> open_;           // id -> record
  std::unordered_map<std::string, std::string> by_pod_;    // uid -> id
};

}  // namespace tidal
