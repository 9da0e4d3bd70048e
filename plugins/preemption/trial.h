// The scratch view one preemption trial works on (the victim search of preemption.cc), and the
// reprieve that puts back the victims a trial took but the preemptor does not need. Internal to
// the preemption plugin.
// Threading: owned by one VictimSearch, on the cycle's thread.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/state/cluster_state.h"
#include "core/state/transaction.h"

namespace tidal::plugins::preemption_internal {

// The cycle's cluster under a Transaction that is always discarded (the destructor undoes every
// trial eviction, shrink and restore), so PostFilter leaves the cluster as it found it, as
// PostFilterContext requires. It is the cluster itself, not a copy, because the profile's search
// (PostFilterContext::fits) reads that one, and a copy per victim search would cost a cluster copy
// each; nothing here can commit.
class Trial {
 public:
  explicit Trial(ClusterState& cluster) : txn_(cluster) {}
  bool Evict(const std::string& id) { return txn_.Evict(id).ok(); }
  void EvictAll(const std::vector<std::string>& ids) {
    for (const auto& id : ids) (void)txn_.Evict(id);
  }
  // Re-places `w` (fewer members) where its remaining members are.
  bool Place(const Workload& w, const std::vector<MemberAssignment>& at, int64_t start_s) {
    return txn_.Place(w, at, start_s).ok();
  }
  // Puts a workload this trial evicted back as it ran before (undone with the rest).
  bool Restore(const Allocation& before) { return txn_.Place(before.workload, before.assignments, before.start_time_s).ok(); }

 private:
  Transaction txn_;
};

// A victim a trial evicted whole: as it ran before the trial touched it (an elastic one may have
// been shrunk first), and the work its taking added to the proposal's loss.
struct Evicted {
  std::string id;
  Allocation before;
  double lost = 0;
};

// A trial takes victims in victim order until the preemptor fits, so a victim taken early (the
// cheapest) may be needless once a later one freed room enough: a 1-node job evicted before the
// 2-node gang that alone makes room. Walking the evicted victims backwards (the most valuable
// first, as victim order goes), each is put back while the preemptor still fits without it
// (`fits`, on the trial's cluster); the others stay evicted. Removes the reprieved from `evicted`
// and returns the work they no longer lose.
inline double Reprieve(Trial& trial, std::vector<Evicted>& evicted, const std::function<bool()>& fits) {
  double spared = 0;
  for (size_t i = evicted.size(); i-- > 0;) {
    if (!trial.Restore(evicted[i].before)) continue;
    if (fits()) {
      spared += evicted[i].lost;
      evicted.erase(evicted.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      (void)trial.Evict(evicted[i].id);
    }
  }
  return spared;
}

}  // namespace tidal::plugins::preemption_internal
