// Scheduler: runs scheduling cycles of one Profile over a ClusterState.
//
// One cycle (RunCycle):
//   1. order the pending workloads with the profile's QueueSort;
//   2. for each, in order, through the whole queue: Admit -> PreFilter -> PlacementSearch (all
//      members, or for an elastic gang down to min_members) -> Score -> apply the best candidate in
//      a Transaction -> Reserve -> Permit -> Commit, or Discard on any refusal; when nothing fits,
//      PostFilter (preemption) may propose victims;
//   3. return one Decision per workload: where it landed and why, or why it waits.
// A gang is never half-placed: every member's allocation goes through one Transaction.
//
// Threading: a Scheduler is used by one thread at a time (the engine's cycle thread, tidalctl, the
// simulator). RunCycle mutates only the ClusterState passed in, which that thread owns.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/api/plugin.h"
#include "core/framework/profile.h"
#include "core/state/cluster_state.h"

namespace tidal {

enum class Outcome { kPlaced, kWaiting, kPending, kRejected, kError };
std::string_view OutcomeName(Outcome o);

struct Decision {
  std::string workload_id;
  Outcome outcome = Outcome::kPending;
  Status status;               // Success when placed; otherwise why not
  Candidate placement;         // when placed or waiting
  PostFilterResult preemption; // victims proposed by PostFilter, if any
  std::string explanation;     // one human-readable line: where and why, or why not
};

struct CycleResult {
  uint64_t generation = 0;
  std::vector<Decision> decisions;  // in queue order
};

// Within one cycle capacity only shrinks (placements), so a request shape that found no placement
// fails again for every later workload of the same shape: the cycle remembers failed shapes and
// answers them without searching ("equal shapes fail once"). Anything that frees capacity during
// the cycle must Clear() it.
class ShapeCache {
 public:
  struct Key {
    Resources per_member;
    int32_t members = 0, min_members = 0;
    int required = -1, preferred = -1;
    std::string gpu_model;
    FrontDoor door = FrontDoor::kKubernetes;
    bool operator==(const Key&) const = default;
  };
  const Status* Find(const Key& k) const;
  void Insert(const Key& k, Status s);
  void Clear() { map_.clear(); }
  int64_t hits() const { return hits_; }

 private:
  struct Hash {
    size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, Status, Hash> map_;
  mutable int64_t hits_ = 0;
};

class Scheduler {
 public:
  explicit Scheduler(std::unique_ptr<Profile> profile) : profile_(std::move(profile)) {}

  const Profile& profile() const { return *profile_; }

  // Places what it can of `pending` on `state` (placed workloads become running allocations).
  CycleResult RunCycle(ClusterState& state, std::vector<Workload> pending, int64_t now_s) const;
  // The same over workloads the caller keeps (no copies); they must outlive the call.
  CycleResult RunCycle(ClusterState& state, std::vector<const Workload*> pending, int64_t now_s) const;
  // One workload: the body of the cycle loop. `cache` (optional) memoizes failed shapes.
  Decision ScheduleOne(ClusterState& state, const Workload& w, int64_t now_s, ShapeCache* cache = nullptr) const;
  // Sorts with the profile's QueueSort (stable, ties by id).
  void SortQueue(std::vector<Workload>& pending) const;
  void SortQueue(std::vector<const Workload*>& pending) const;

 private:
  std::string DescribePlacement(const ClusterState& state, const Workload& w, const PlacementConstraints& c,
                                const Candidate& cand, size_t alternatives) const;
  std::unique_ptr<Profile> profile_;
};

}  // namespace tidal
