// Extension points of a Tidal scheduling profile: one abstract class per point, as in kube-scheduler.
// A plugin inherits only the points it serves; the framework discovers them with dynamic_cast when
// the profile is built (core/framework/profile.h), never per call.
//
// Order in one cycle, per workload (see docs/design.md):
//   QueueSort (orders the pending queue) -> Admit (quota) -> PreFilter (once per workload; may narrow
//   the placement constraints) -> candidate search over the topology tree, with Filter per visited
//   node -> Score (per candidate placement) -> Reserve -> Permit -> commit; on failure PostFilter.
//
// Thread-safety: plugins are owned by one Profile and called only from the cycle's thread. A plugin
// keeps per-workload data in CycleState, not in members, unless it documents its own locking.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/container/inlined_vector.h>

#include "core/api/node.h"
#include "core/api/status.h"
#include "core/api/topology_levels.h"
#include "core/api/workload.h"

namespace tidal {

// Data a plugin stores for the rest of one workload's placement attempt.
class CycleStateData {
 public:
  virtual ~CycleStateData() = default;
};

// Scratch space for one workload's attempt; typed entries under per-plugin keys. A profile has a
// handful of plugins that write here, and one is built per workload (a million in a deep cycle):
// a short flat list with room for a few entries inline, searched in order (no hash table, no
// allocation for the list itself).
class CycleState {
 public:
  void Write(const std::string& key, std::unique_ptr<CycleStateData> data) {
    for (auto& [k, d] : data_) {
      if (k == key) {
        d = std::move(data);
        return;
      }
    }
    data_.emplace_back(key, std::move(data));
  }
  // Returns nullptr when missing or of another type; callers turn that into Status::Error.
  template <typename T>
  T* Read(const std::string& key) const {
    for (const auto& [k, d] : data_) {
      if (k == key) return dynamic_cast<T*>(d.get());
    }
    return nullptr;
  }
  void Clear() { data_.clear(); }

 private:
  absl::InlinedVector<std::pair<std::string, std::unique_ptr<CycleStateData>>, 4> data_;
};

// Hard and soft topology constraints, resolved by PreFilter plugins from the workload's level names.
struct PlacementConstraints {
  int required_level = -1;   // index into TopologyLevels; -1 = no constraint
  int preferred_level = -1;  // index into TopologyLevels; -1 = none
  int32_t members = 0;       // how many members this attempt must place (members, or min_members)
  int32_t within = -1;       // a topology vertex the placement must stay inside; -1 = anywhere
  // Backfill: reserved_from[node] is the earliest start of a reservation on that node (INT64_MAX =
  // none). A workload expected to end after it may only use what the reservations leave free.
  const std::vector<int64_t>* reserved_from = nullptr;
  // GPUs those reservations need on each node: a workload that would run past a reservation's
  // start may still use a reserved node's GPUs beyond that amount (the reservation keeps its share).
  const std::vector<int64_t>* reserved_gpus = nullptr;
  // Per node (optional): 1 = its reserved_from is a close (a drain or maintenance window) rather
  // than a reservation; a node refused for it is counted as closing in the explanation.
  const std::vector<uint8_t>* closing = nullptr;
  int64_t ends_at = 0;       // expected end of this workload if it started now
  // Per-model quota of a workload that takes any GPU model: at most `members` members on nodes of
  // that GPU model (the queue's gpus.<model> quota admits no more), sorted by model; a model not
  // listed is unbounded. Set by the quota plugin's PreFilter, enforced by the search.
  struct ModelCap {
    std::string model;
    int32_t members = 0;
    bool operator==(const ModelCap&) const = default;
  };
  std::vector<ModelCap> model_caps;
  // The cap for `model`; -1 when unbounded.
  int32_t ModelCapOf(const std::string& model) const {
    for (const auto& m : model_caps) {
      if (m.model == model) return m.members;
    }
    return -1;
  }
};

struct MemberAssignment {
  NodeId node = kNoNode;
  int32_t members = 0;
};

// One complete placement of a workload that the search found; Score plugins rank these.
struct Candidate {
  int domain_level = -1;                   // level of the vertex holding every member (-1 = cluster)
  std::string domain;                      // its path, e.g. "block-0/leaf-2"
  std::vector<MemberAssignment> assignments;
  std::vector<int32_t> spans;              // spans[level]: distinct vertices used at that level
  int64_t domain_free_gpus = 0;            // free GPUs in the domain before this placement
  int32_t whole_nodes_broken = 0;          // wholly free nodes this placement only partly fills
  int64_t score = 0;                       // weighted sum, filled by the framework

  int32_t PlacedMembers() const {
    int32_t n = 0;
    for (const auto& a : assignments) n += a.members;
    return n;
  }
};

class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};

// Orders the pending queue. Less(a, b) == true puts a before b. Exactly one per profile.
class QueueSortPlugin : public virtual Plugin {
 public:
  // Called once before each sort, e.g. to cache per-queue shares.
  virtual void PrepareSort() {}
  virtual bool Less(const Workload& a, const Workload& b) const = 0;
  // Optional fast path: a key whose lexicographic order equals Less (valid until the next
  // PrepareSort). Returns false when the plugin has none; the framework then calls Less.
  virtual bool SortKey(const Workload&, std::array<int64_t, 3>*) const { return false; }
  // Optional: when SortKey's first element depends only on the workload's queue (its queue_id;
  // <= 0 or out of range: an unknown queue) and the other two only on the workload, sets *rank to
  // that first element for `queue_id` (valid until the next PrepareSort) and returns true. A caller
  // may then keep each queue's order across sorts and re-sort only when the ranks change (the
  // simulator). Returns false when the plugin gives no such split.
  virtual bool QueueRank(int32_t /*queue_id*/, int64_t* /*rank*/) const { return false; }
};

// Decides whether a workload may consume capacity now (quota). Unschedulable keeps it pending.
class AdmitPlugin : public virtual Plugin {
 public:
  virtual Status Admit(CycleState& state, const Workload& w) = 0;
};

// Runs once per workload before the search; validates it and narrows `constraints`.
class PreFilterPlugin : public virtual Plugin {
 public:
  virtual Status PreFilter(CycleState& state, const Workload& w, const TopologyLevels& levels,
                           PlacementConstraints& constraints) = 0;
};

// Per node visited by the search: may this node host members of `w`? Must be cheap.
class FilterPlugin : public virtual Plugin {
 public:
  virtual Status Filter(const CycleState& state, const Workload& w, const Node& node) const = 0;
};

// Ranks a complete candidate placement, returning 0..100; the profile multiplies by the weight.
class ScorePlugin : public virtual Plugin {
 public:
  static constexpr int64_t kMaxScore = 100;
  virtual int64_t Score(const CycleState& state, const Workload& w, const Candidate& c) const = 0;
};

class ClusterState;  // core/state/cluster_state.h

// Called after the chosen candidate is applied to the cycle's transaction (`cluster` is the state
// it was applied to: the nodes of the assignments); Unreserve undoes.
class ReservePlugin : public virtual Plugin {
 public:
  virtual Status Reserve(CycleState& state, const ClusterState& cluster, const Workload& w, const Candidate& c) = 0;
  virtual void Unreserve(CycleState& state, const ClusterState& cluster, const Workload& w, const Candidate& c) = 0;
};

// Last gate before commit: Success commits, Wait holds the reservation, others discard it.
class PermitPlugin : public virtual Plugin {
 public:
  virtual Status Permit(CycleState& state, const Workload& w, const Candidate& c) = 0;
};

// What a PostFilter (preemption) plugin proposes when the workload did not fit.
struct ShrinkAction {
  std::string workload;  // an elastic victim that gives back members instead of being evicted
  NodeId node = kNoNode;
  int32_t members = 0;
};
struct PostFilterResult {
  std::vector<std::string> victims;  // workload ids to evict, whole (never part of a gang)
  std::vector<ShrinkAction> shrinks; // elastic members to release first
  std::string nominated_domain;      // where the preemptor will land once they are gone
  std::string reason;                // "priority" or "reclaim"
  double lost_gpu_seconds = 0;       // work lost since the victims' last checkpoints
};

// What a PostFilter plugin may use: the cluster (trial evictions in a Transaction it discards; it
// must leave the cluster as it found it, the framework applies the result), the time, and the
// profile's own placement search ("would the workload fit under these constraints now?").
struct PostFilterContext {
  ClusterState& cluster;
  int64_t now_s = 0;
  std::function<bool(const PlacementConstraints&)> fits;
};

// Runs when no placement was found.
class PostFilterPlugin : public virtual Plugin {
 public:
  virtual Status PostFilter(CycleState& state, const Workload& w, const Status& failure, PostFilterContext& ctx,
                            const PlacementConstraints& constraints, PostFilterResult& result) = 0;
};

}  // namespace tidal
